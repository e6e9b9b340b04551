package io.ferrite.kernel;

import java.util.Random;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * A test's seed: {@code -Dtests.seed=N} replays a run; a failing test prints its seed. Register
 * with {@code @RegisterExtension final Seed seed = new Seed();} and draw from {@link #random()}.
 */
public final class Seed implements TestWatcher {
  private final long value = Long.getLong("tests.seed", System.nanoTime());
  private final Random random = new Random(value);

  public long value() {
    return value;
  }

  public Random random() {
    return random;
  }

  @Override
  public void testFailed(ExtensionContext context, Throwable cause) {
    System.err.println(
        context.getDisplayName()
            + " failed with seed "
            + value
            + ": reproduce with -Dtests.seed="
            + value);
  }

  @Override
  public String toString() {
    return "seed " + value;
  }
}
