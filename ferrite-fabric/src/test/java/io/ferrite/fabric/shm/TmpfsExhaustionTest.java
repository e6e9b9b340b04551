package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.PrivateTmpfs;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
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
    return PrivateTmpfs.run(
        dir,
        tmpfsSize,
        Duration.ofSeconds(120),
        TmpfsFillChild.class.getName(),
        dir.toString(),
        Long.toString(regionLength));
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
