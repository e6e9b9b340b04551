package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A full tmpfs is a typed NO_SPACE when a region or ring file is created, never a SIGBUS when one
 * of its pages is first touched: a child JVM fills a small tmpfs of its own (a user and mount
 * namespace from {@code unshare -rm}, so the host's /dev/shm is never touched and the mount goes
 * with the process) and reports each step ({@link TmpfsFillChild}).
 */
@Tag("multiprocess")
class TmpfsExhaustionTest {
  /** Runs the child on a tmpfs of {@code tmpfsSize} (mount's syntax) with regions of a length. */
  private static List<String> run(String tmpfsSize, long regionLength) throws Exception {
    Path dir = Path.of("/tmp/ferrite-tmpfs-test-" + ProcessHandle.current().pid());
    String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String script =
        "mkdir -p "
            + dir
            + " && mount -t tmpfs -o size="
            + tmpfsSize
            + " tmpfs "
            + dir
            + " && exec \"$0\" -Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp \"$1\" "
            + TmpfsFillChild.class.getName()
            + " "
            + dir
            + " "
            + regionLength;
    List<String> cmd =
        List.of(
            "unshare", "-rm", "sh", "-c", script, javaBin, System.getProperty("java.class.path"));
    Process p;
    try {
      p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    } catch (java.io.IOException e) {
      Assumptions.abort("no unshare here: " + e);
      throw e;
    }
    try {
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the child hangs");
      if (out.contains("unshare failed") || out.contains("mount: ")) {
        Assumptions.abort("no private tmpfs possible here: " + out);
      }
      assertEquals(0, p.exitValue(), "the child died (a SIGBUS is exit 134):\n" + out);
      List<String> lines = new ArrayList<>(out.lines().toList());
      lines.removeIf(l -> l.startsWith("WARNING") || l.contains("System.Logger"));
      return lines;
    } finally {
      p.destroyForcibly();
      p.waitFor();
      java.nio.file.Files.deleteIfExists(dir); // the mount went with the namespace
    }
  }

  private static void check(List<String> out, int expected) {
    String all = String.join("\n", out);
    assertTrue(all.contains("created " + expected + " then NO_SPACE"), all);
    assertTrue(all.contains("client wrote every page"), all);
    assertTrue(all.contains("ring NO_SPACE"), all);
    assertTrue(all.contains("leftovers 0"), "a refused ring file is deleted:\n" + all);
    assertTrue(all.contains("again " + expected + " of " + expected + " then NO_SPACE"), all);
    assertTrue(all.contains("done"), all);
  }

  @Test
  void zeroFilledRegionsFillATmpfsWithNoFault() throws Exception {
    check(run("8m", 1 << 20), 8); // below FileSpace.SUBPROCESS_FROM: zeros
  }

  @Test
  void fallocatedRegionsFillATmpfsWithNoFault() throws Exception {
    check(run("64m", io.ferrite.fabric.FileSpace.SUBPROCESS_FROM), 2); // fallocate(1)
  }
}
