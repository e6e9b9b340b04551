package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Lost memory through the CLI, with real processes (issue #20): a master and a memory server, each
 * its own JVM; {@code fs put} a file, then stop the server (SIGTERM: a clean stop deletes its DRAM
 * region files; then SIGKILL: a new process makes new regions) and start it again. The file's bytes
 * are gone: {@code fs cat} fails with {@code error: DATA_LOST: ...} naming it, {@code fs stat} and
 * {@code fs df} say it is lost, {@code fs rm} works and {@code fs put} writes it again. Every
 * process is killed in {@link #stopAll()}.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class FsLostMultiProcessTest extends ProcessClusterTest {
  static final String CLUSTER = "fs-lost-test";

  private void ok(Ran r, String what) {
    assertEquals(0, r.code(), what + ": " + r + "\n" + logs());
  }

  private Process startS1() throws Exception {
    return startServer("s1", "64m", "0");
  }

  /** Puts {@code data} at /f and reads it back with fs get. */
  private void putAndCheck(byte[] data, Path local) throws Exception {
    Files.write(local, data);
    ok(fs("put", local.toString(), "/f"), "fs put");
    Path back = dir.resolve("back");
    Files.deleteIfExists(back);
    ok(fs("get", "/f", back.toString()), "fs get");
    assertArrayEquals(data, Files.readAllBytes(back));
  }

  /** After a server lost its memory: what the fs commands say of /f, then rm and put again. */
  private void lostThenWrittenAgain(String how, byte[] data, Path local) throws Exception {
    Ran stat =
        await(
            "fs stat /f saying lost after " + how,
            () -> {
              Ran r = fs("stat", "/f");
              return r.code() == 0 && r.out().contains("Lost:") ? r : null;
            });
    assertTrue(stat.out().contains("  Lost: "), stat.out());
    Ran cat = fs("cat", "/f");
    assertEquals(1, cat.code(), how + ": " + cat);
    assertTrue(cat.err().startsWith("error: DATA_LOST: /f: bytes 0-"), how + ": " + cat.err());
    Ran df = fs("df");
    ok(df, "fs df");
    assertTrue(df.out().contains("Lost: 1 node(s)") && df.out().contains("  /f"), df.out());
    Ran status = cli("status");
    ok(status, "status");
    assertTrue(status.out().contains("lost  nodes: 1 nodes, "), status.out());
    ok(fs("rm", "/f"), "fs rm of a lost file");
    Ran df2 = fs("df");
    assertTrue(!df2.out().contains("Lost:"), df2.out());
    assertTrue(!cli("status").out().contains("lost  "), "nothing lost after the rm");
    putAndCheck(data, local);
    assertTrue(!fs("stat", "/f").out().contains("Lost:"));
  }

  @Test
  void aFileOnAServerThatCameBackWithoutItsMemoryIsDeclaredLost(Random random) throws Exception {
    newCluster(CLUSTER, "ferrite-fs-lost-");
    startMaster("master", "server.dead.timeout=30s");
    Process s1 = startS1();
    await("an ALIVE server", () -> CliProcesses.oneServerAlive(port, credentials));
    byte[] data = new byte[300_000 + random.nextInt(100_000)];
    random.nextBytes(data);
    Path local = dir.resolve("data.bin");
    putAndCheck(data, local);

    // In a seeded order: a clean stop (SIGTERM: the server deletes its DRAM region files), a
    // SIGKILL (the files survive and the new process re-opens them: nothing is lost, and nothing
    // must be declared lost), and a SIGKILL followed by what a reboot does to /dev/shm.
    List<String> hows = new java.util.ArrayList<>(List.of("SIGTERM", "SIGKILL", "reboot"));
    java.util.Collections.shuffle(hows, random);
    for (String how : hows) {
      if (how.equals("SIGTERM")) {
        s1.destroy();
      } else {
        s1.destroyForcibly();
      }
      s1.waitFor();
      processes.remove(s1);
      if (how.equals("reboot")) {
        deleteRegionFiles();
      }
      s1 = startS1();
      if (how.equals("SIGKILL")) {
        Path back = dir.resolve("back");
        await(
            "fs get /f after SIGKILL",
            () -> {
              try {
                Files.deleteIfExists(back);
                return fs("get", "/f", back.toString()).code() == 0
                    && java.util.Arrays.equals(data, Files.readAllBytes(back));
              } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
              }
            });
        Ran stat = fs("stat", "/f");
        assertTrue(stat.code() == 0 && !stat.out().contains("Lost:"), stat.toString());
        assertTrue(!fs("df").out().contains("Lost:"));
      } else {
        lostThenWrittenAgain(how, data, local);
      }
    }
  }

  /** What a reboot does to the server's DRAM: its region files under /dev/shm are gone. */
  private void deleteRegionFiles() throws java.io.IOException {
    int deleted = 0;
    try (java.util.stream.Stream<Path> files = Files.walk(shmDir)) {
      for (Path p : files.filter(f -> f.getFileName().toString().startsWith("region-")).toList()) {
        Files.delete(p);
        deleted++;
      }
    }
    assertTrue(deleted > 0, "no region files under " + shmDir);
  }
}
