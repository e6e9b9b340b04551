package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.nodes.NodeInfo;
import io.ferrite.nodes.Nodes;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Replicated file blocks through the CLI, with real processes (issue #20): a master and two memory
 * servers, each its own JVM; {@code fs put --replicas 2} a file, then SIGKILL one server and delete
 * its DRAM region files (what a reboot does): {@code fs cat} still returns the exact bytes (from
 * the other copy). The server starts again without its memory, the master makes the lost copies
 * again ({@code fs stat}: 2 replicas, none missing), and then the <i>other</i> server is killed and
 * rebooted the same way: {@code fs cat} still returns the bytes, now from the copies made again.
 * Every process is killed in {@link #stopAll()}.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class FsReplicasMultiProcessTest extends ProcessClusterTest {
  private Process startS(String name) throws Exception {
    return startServer(name, "64m", "0");
  }

  /** {@code fs cat path}'s exit code and bytes (cat writes to System.out). */
  private byte[] cat(String path) {
    PrintStream was = System.out;
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    Ran r;
    try (PrintStream to = new PrintStream(bytes, true, java.nio.charset.StandardCharsets.UTF_8)) {
      System.setOut(to);
      r = fs("cat", path);
    } finally {
      System.setOut(was);
    }
    assertEquals(0, r.code(), "fs cat " + path + ": " + r + "\n" + logs());
    return bytes.toByteArray();
  }

  /** SIGKILL, then what a reboot does to the server's DRAM: its region files are gone. */
  private void killAndWipe(Process p, String name) throws Exception {
    p.destroyForcibly();
    p.waitFor();
    processes.remove(p);
    int deleted = 0;
    try (java.util.stream.Stream<Path> files = Files.walk(shmDir)) {
      for (Path f :
          files
              .filter(
                  f ->
                      f.getFileName().toString().startsWith("region-")
                          && f.getParent().getFileName().toString().equals(name))
              .toList()) {
        Files.delete(f);
        deleted++;
      }
    }
    assertTrue(deleted > 0, "no region files of " + name + " under " + shmDir);
  }

  /** The refs of /f's block copies, as the master has them now. */
  private java.util.List<BlockRef> refs(Nodes nodes) {
    NodeInfo n = nodes.lookupAtMaster("/f");
    return nodes.blocks(n, 0, n.blockCount());
  }

  /**
   * Waits until none of /f's copies is one of {@code gone} (the killed server's: the master heard
   * they were lost when it came back, and made them again elsewhere or anew), {@code fs stat} says
   * 2 replicas with none missing, and {@code fs df} counts nothing under-replicated.
   */
  private void awaitCopiesMadeAgain(Nodes nodes, java.util.List<BlockRef> gone)
      throws InterruptedException {
    await(
        "fs stat /f with both copies made again",
        () -> {
          java.util.List<BlockRef> now = refs(nodes);
          Ran r = fs("stat", "/f");
          return now.size() == gone.size() * 2
              && now.stream().noneMatch(gone::contains)
              && r.code() == 0
              && r.out().contains("  Replicas: 2\n")
              && !r.out().contains("under-replicated")
              && !fs("df").out().contains("Under-replicated");
        });
  }

  @Test
  void aReplicatedFileReadsBackAfterEitherServerIsKilledAndRebooted(Random random)
      throws Exception {
    newCluster("fs-replicas-test", "ferrite-fs-replicas-");
    startMaster("master", "server.dead.timeout=30s");
    Process[] s = {startS("s1"), startS("s2")};
    byte[] data = new byte[(3 << 20) + random.nextInt(1 << 20)]; // 4 blocks of 1 MiB
    random.nextBytes(data);
    Path local = dir.resolve("data.bin");
    Files.write(local, data);
    // Refused (fewer ALIVE servers than copies) until both servers registered.
    await(
        "fs put --replicas 2",
        () -> fs("put", "--replicas", "2", local.toString(), "/f").code() == 0);
    Ran stat = fs("stat", "/f");
    assertTrue(stat.out().contains("  Replicas: 2\n"), stat.out());
    assertArrayEquals(data, cat("/f"));

    Nodes nodes =
        new Nodes(
            Ferrite.connect(
                "ferrite://127.0.0.1:" + port,
                ClientOptions.builder(credentials).fabric("tcp").build()));
    clients.add(nodes.client());
    int first = random.nextInt(2);
    for (int victim : new int[] {first, 1 - first}) {
      String name = "s" + (victim + 1);
      java.util.List<BlockRef> all = refs(nodes);
      assertEquals(8, all.size(), "4 blocks, 2 copies each");
      int id =
          nodes.client().status().members().stream()
              .filter(m -> m.info().name().equals(name))
              .findFirst()
              .orElseThrow()
              .info()
              .serverId();
      java.util.List<BlockRef> gone = all.stream().filter(b -> b.serverId() == id).toList();
      assertEquals(4, gone.size(), "one copy of each block on " + name + ": " + all);
      killAndWipe(s[victim], name);
      // The master still calls it ALIVE (30 s dead timeout): the read of its copy fails and
      // falls back to the other server's.
      assertArrayEquals(data, cat("/f"), name + " killed and wiped");
      s[victim] = startS(name); // back without its memory: its copies are declared lost
      awaitCopiesMadeAgain(nodes, gone);
      assertArrayEquals(data, cat("/f"), name + " back, copies made again");
    }
    Ran again = fs("stat", "/f");
    assertTrue(!again.out().contains("Lost:"), again.out());
  }
}
