package io.ferrite.apps.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The options a started JVM gets: the application's ({@link WorkerLauncher.Jvm#options}), then
 * those of {@value JvmLauncher#OPTIONS}, split at white space.
 */
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

  @Test
  void aStartedJvmGetsTheJobsOptions() throws Exception {
    ByteArrayOutputStream lines = new ByteArrayOutputStream();
    PrintStream sink = new PrintStream(lines, true, StandardCharsets.UTF_8);
    Process p =
        new JvmLauncher(PrintJvmArguments.class.getName(), sink)
            .start(
                "child",
                List.of(),
                new WorkerLauncher.Jvm(
                    64L << 20, 64L << 20, 1, false, List.of("-XX:-TieredCompilation")));
    try {
      assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the child JVM did not exit");
      assertEquals(0, p.exitValue());
    } finally {
      p.destroyForcibly();
    }
    // The output pump is a daemon thread: wait for the child's last line to be copied.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    String out = lines.toString(StandardCharsets.UTF_8);
    while (!out.contains("child: done") && System.nanoTime() < deadline) {
      Thread.sleep(10);
      out = lines.toString(StandardCharsets.UTF_8);
    }
    assertTrue(out.contains("child: arg -XX:-TieredCompilation"), out);
    assertTrue(out.contains("child: arg -XX:MaxDirectMemorySize=64m"), out);
  }
}
