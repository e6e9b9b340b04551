package io.ferrite.apps.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The extra worker JVM options of {@value JvmLauncher#OPTIONS}: split at white space. */
class JvmLauncherTest {
  @Test
  void extraOptionsAreSplitAtWhiteSpaceWithoutEmptyParts() {
    assertEquals(List.of(), JvmLauncher.options(""));
    assertEquals(List.of(), JvmLauncher.options("  \t "));
    assertEquals(List.of("-XX:+UseSerialGC"), JvmLauncher.options("-XX:+UseSerialGC"));
    assertEquals(
        List.of("-XX:+UseSerialGC", "-XX:-TieredCompilation"),
        JvmLauncher.options(" -XX:+UseSerialGC \t -XX:-TieredCompilation\n"));
  }
}
