package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.testing.SeedExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link ShmConnection#close()} racing reads on 8 threads, 200 times, in a forked JVM ({@link
 * CloseRaceChild}): a close that unmapped memory under a copy would kill that JVM with SIGSEGV,
 * which here is a failed test instead of a dead surefire fork. Every op completes or fails with a
 * typed {@link io.ferrite.fabric.FerriteException}, and that is {@code UNAVAILABLE}: the connection
 * is gone, not the region.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class ShmCloseRaceTest {
  static final int ROUNDS = 200;

  @Test
  @Timeout(300)
  void aCloseRacingReadsNeverCrashesAndEveryOpEndsTyped(Random random) throws Exception {
    Path shm = Paths.get("/dev/shm");
    Path dir =
        Files.createTempDirectory(
            Files.isDirectory(shm) ? shm : Paths.get("/tmp"), "ferrite-close-race-");
    Process p = null;
    try {
      List<String> cmd = new ArrayList<>();
      cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      cmd.add("-Xmx256m");
      cmd.add("-XX:+UseSerialGC");
      // No hs_err file or core dump in the working directory when the child does crash.
      cmd.add("-XX:ErrorFile=" + dir.resolve("hs_err.log"));
      cmd.add("-XX:-CreateCoredumpOnCrash");
      cmd.add("-cp");
      cmd.add(System.getProperty("java.class.path"));
      cmd.add(CloseRaceChild.class.getName());
      cmd.add(dir.toString());
      cmd.add(Integer.toString(ROUNDS));
      cmd.add(Long.toString(random.nextLong()));
      p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      // Drained while it runs: a child blocked on a full pipe would look hung.
      byte[] out = p.getInputStream().readAllBytes();
      assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the child did not exit");
      String log = new String(out, StandardCharsets.UTF_8);
      assertEquals(
          0,
          p.exitValue(),
          "the child died (a crash, e.g. SIGSEGV in a copy from unmapped memory; or 2: an op ended"
              + " untyped); its output:\n"
              + log);
      assertTrue(
          log.lines().anyMatch(l -> l.matches("OK .* failed \\{UNAVAILABLE=\\d+\\}")),
          "every reader ends with UNAVAILABLE; output:\n" + log);
    } finally {
      if (p != null) {
        p.destroyForcibly();
        p.waitFor();
      }
      FileTrees.delete(dir);
    }
  }
}
