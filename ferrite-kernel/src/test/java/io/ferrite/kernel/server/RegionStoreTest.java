package io.ferrite.kernel.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.RegionTable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A memory server's region files across a restart. */
class RegionStoreTest {
  @TempDir Path tmp;

  /**
   * A listed region file replaced by a symlink (to a file someone else chose) is not followed: the
   * region is not re-opened, the link is removed and the file it pointed at is left alone.
   */
  @Test
  void aSymlinkedRegionFileIsNotFollowedAtRecovery() throws IOException {
    Path serverDir = Files.createDirectory(tmp.resolve("server"));
    Path dram = tmp.resolve("dram");
    long length = 1 << 20;
    RegionTable table = new RegionTable();
    RegionStore store = new RegionStore(serverDir, Map.of("dram", dram), table);
    store.recover();
    store.fill("dram", 2, length);
    List<Path> files;
    try (var s = Files.list(dram)) {
      files = s.filter(p -> p.getFileName().toString().startsWith("region-")).sorted().toList();
    }
    assertEquals(2, files.size());
    store.close(List.of()); // a crash-like stop: the files and the list stay

    Path victim = files.get(0);
    Path target = Files.write(tmp.resolve("someone-elses-file"), new byte[(int) length]);
    byte[] before = Files.readAllBytes(target);
    Files.delete(victim);
    Files.createSymbolicLink(victim, target);

    RegionTable again = new RegionTable();
    RegionStore reopened = new RegionStore(serverDir, Map.of("dram", dram), again);
    reopened.recover();
    assertEquals(1, again.all().size(), "only the real file is re-opened");
    assertFalse(Files.exists(victim, java.nio.file.LinkOption.NOFOLLOW_LINKS), "the link is gone");
    assertTrue(Files.exists(target));
    assertArrayEquals(before, Files.readAllBytes(target));
    reopened.close();
  }
}
