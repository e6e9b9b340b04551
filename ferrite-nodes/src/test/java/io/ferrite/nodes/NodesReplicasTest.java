package io.ferrite.nodes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.MemoryServer;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replicated file blocks (issue #20): a File created with {@code replicas} N keeps each block on N
 * distinct servers, survives the death or the memory loss of any N-1 of them (reads return the
 * exact bytes, also while re-replication runs), and is brought back to N copies in the background.
 */
@ExtendWith(SeedExtension.class)
class NodesReplicasTest {
  static final int BS = 65536;

  @TempDir Path dir;
  NodesCluster cluster;
  Nodes nodes;
  final List<MemoryServer> servers = new ArrayList<>();

  /** Whether the cluster runs over tcp (and shm): a stopped server's copies then fail to read. */
  private boolean real;

  @BeforeEach
  void start() throws Exception {
    startCluster(false, Map.of());
  }

  /**
   * Three servers with 16 blocks of dram each and no disk; a DEAD server is declared after 400 ms
   * of silence unless {@code overrides} say otherwise. {@code real}: over tcp, where a stopped
   * server's copies fail to read (the local fabric keeps serving a closed server's memory, so only
   * a real one shows that reads fall back).
   */
  private void startCluster(boolean real, Map<String, String> overrides) throws Exception {
    if (cluster != null) {
      cluster.close();
      servers.clear();
    }
    this.real = real;
    Map<String, String> settings = new java.util.HashMap<>(overrides);
    settings.put(FerriteConfig.CAPACITY_DRAM, "1m");
    settings.put(FerriteConfig.CAPACITY_DISK, "0");
    cluster = new NodesCluster(dir.resolve("c" + System.nanoTime()), real, settings);
    startMaster();
    for (String name : List.of("s1", "s2", "s3")) {
      servers.add(cluster.startServer(name));
    }
    cluster.awaitServers(3);
    nodes = client();
  }

  /** A new client: over tcp on a real cluster. */
  private Nodes client() {
    return real ? new Nodes(cluster.client("tcp")) : cluster.nodes();
  }

  private void startMaster() {
    cluster.ext = new io.ferrite.nodes.master.NodesMaster(Duration.ofMillis(50));
    cluster.ext.replicatePeriod(Duration.ofMillis(20));
    cluster.startMaster(List.of(cluster.ext));
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  private byte[] write(String path, int replicas, int bytes, Random random) {
    byte[] data = new byte[bytes];
    random.nextBytes(data);
    try (NodeWriter w = nodes.create(path, CreateOptions.replicated(replicas))) {
      // In pieces that cross block boundaries, as a stream writes.
      int at = 0;
      while (at < bytes) {
        int n = Math.min(bytes - at, 1 + random.nextInt(BS + BS / 2));
        w.writeSync(ByteBuffer.wrap(data, at, n));
        at += n;
      }
    }
    return data;
  }

  private byte[] readAll(Nodes client, String path) throws Exception {
    return NodesTest.readAll(client.open(path).inputStream());
  }

  /** Server ids of each block's copies, block by block; asserts they are distinct per block. */
  private List<Set<Integer>> copies(String path) {
    NodeInfo n = nodes.lookupAtMaster(path);
    List<BlockRef> refs = nodes.blocks(n, 0, n.blockCount());
    assertEquals(n.blockCount() * n.replicas(), refs.size());
    List<Set<Integer>> out = new ArrayList<>();
    for (int i = 0; i < n.blockCount(); i++) {
      Set<Integer> s = new HashSet<>();
      for (int k = 0; k < n.replicas(); k++) {
        s.add(refs.get(i * n.replicas() + k).serverId());
      }
      assertEquals(n.replicas(), s.size(), "block " + i + "'s copies on distinct servers: " + s);
      out.add(s);
    }
    return out;
  }

  /** The index in {@link #servers} (name {@code s<index + 1>}) of the server with id {@code id}. */
  private int server(int id) {
    for (int i = 0; i < servers.size(); i++) {
      if (servers.get(i) != null && servers.get(i).serverId() == id) {
        return i;
      }
    }
    throw new AssertionError("no server " + id);
  }

  /** Stops server {@code i} for good: the master declares it DEAD after its timeout. */
  private void kill(int i) {
    MemoryServer s = servers.set(i, null);
    s.close();
    cluster.servers.remove(s);
  }

  /**
   * A new process for server {@code i} (same name, same id): its regions are new, so every block in
   * the old ones is lost (a reboot).
   */
  private void reboot(int i) throws Exception {
    kill(i);
    servers.set(i, cluster.startServer("s" + (i + 1)));
    cluster.awaitServers(3);
  }

  /** Waits until the master says {@code path} has all its copies and none on {@code gone}. */
  private void awaitWhole(String path, int gone) throws InterruptedException {
    for (int i = 0; i < 1000; i++) {
      NodeInfo n = nodes.lookupAtMaster(path);
      if (n.missingCopies() == 0) {
        boolean clean = true;
        for (Set<Integer> c : copies(path)) {
          clean &= !c.contains(gone);
        }
        if (clean) {
          return;
        }
      }
      Thread.sleep(10);
    }
    throw new AssertionError(path + " not back to its copies: " + nodes.lookupAtMaster(path));
  }

  /** Reads {@code path} in a loop on another client until stopped; any wrong byte or failure. */
  private final class Reader implements AutoCloseable {
    final AtomicBoolean stop = new AtomicBoolean();
    final AtomicReference<Throwable> failed = new AtomicReference<>();
    final AtomicLong reads = new AtomicLong();
    final Thread thread;

    Reader(String path, byte[] expect) {
      Nodes client = client();
      thread =
          new Thread(
              () -> {
                try {
                  while (!stop.get()) {
                    assertArrayEquals(expect, readAll(client, path), "a concurrent read");
                    reads.incrementAndGet();
                  }
                } catch (Throwable t) {
                  failed.set(t);
                }
              },
              "replica-reader");
      thread.start();
    }

    /** Waits until it completed two more whole reads (or failed): reads while things change. */
    void awaitMoreReads() throws InterruptedException {
      long from = reads.get();
      for (int i = 0; i < 3000 && reads.get() < from + 2 && failed.get() == null; i++) {
        Thread.sleep(5);
      }
      assertTrue(reads.get() >= from + 2 || failed.get() != null, "the reader is stuck");
    }

    @Override
    public void close() {
      stop.set(true);
      try {
        thread.join(30_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", e);
      }
      if (failed.get() != null) {
        throw new AssertionError("the concurrent reader failed", failed.get());
      }
      assertTrue(reads.get() > 0, "the concurrent reader read");
    }
  }

  @Test
  void survivesTheDeathOfEitherCopyIsMadeWholeAgainThenSurvivesTheOtherOriginal(Random random)
      throws Exception {
    startCluster(true, Map.of());
    byte[] data = write("/f", 2, 5 * BS + 123, random);
    List<Set<Integer>> before = copies("/f");
    NodeInfo info = nodes.lookup("/f");
    assertEquals(2, info.replicas());
    assertEquals(0, info.missingCopies());
    // Either copy's server: the copies of block 0, one of them by the seed.
    List<Integer> block0 = new ArrayList<>(before.get(0));
    int victim = block0.get(random.nextInt(2));
    int other = block0.get(0) == victim ? block0.get(1) : block0.get(0);
    try (Reader reader = new Reader("/f", data)) {
      kill(server(victim));
      // At once (not yet DEAD: the read of the dead copy fails and falls back), and while the
      // master declares it DEAD and makes the copies again.
      assertArrayEquals(data, readAll(nodes, "/f"), "right after the death");
      reader.awaitMoreReads();
      awaitWhole("/f", victim);
    }
    assertTrue(cluster.ext.copiesMade() > 0, "copies were made again");
    assertArrayEquals(data, readAll(nodes, "/f"), "back to 2 copies");
    kill(server(other));
    assertArrayEquals(data, readAll(nodes, "/f"), "after the other original server died too");
  }

  @Test
  void survivesAServerBackWithoutItsMemoryAndCopiesAreMadeAgain(Random random) throws Exception {
    byte[] data = write("/f", 2, 7 * BS + 5, random);
    byte[] three = write("/g", 3, 2 * BS + 9, random);
    try (Reader reader = new Reader("/f", data)) {
      reboot(random.nextInt(3));
      reader.awaitMoreReads();
      assertArrayEquals(data, readAll(nodes, "/f"));
      assertArrayEquals(three, readAll(nodes, "/g"));
      awaitWhole("/f", -1);
      awaitWhole("/g", -1);
    }
    Nodes.LostSummary l = nodes.lostSummary();
    assertEquals(0, l.nodes(), "nothing lost: another copy of every block survived");
    assertEquals(0, l.underReplicated());
    assertTrue(cluster.ext.copiesMade() > 0, "copies were made again");
    // Every server can lose its memory now, one at a time with a repair between: the bytes stay.
    for (int round = 0; round < 3; round++) {
      reboot(random.nextInt(3));
      assertArrayEquals(data, readAll(nodes, "/f"), "round " + round);
      awaitWhole("/f", -1);
      awaitWhole("/g", -1);
      assertArrayEquals(three, readAll(nodes, "/g"), "round " + round);
    }
  }

  @Test
  void oneCopyStillAnswersDataLost(Random random) throws Exception {
    byte[] data = new byte[3 * BS];
    random.nextBytes(data);
    try (NodeWriter w = nodes.create("/one", CreateOptions.at("s2"))) {
      w.writeSync(ByteBuffer.wrap(data));
    }
    reboot(1);
    java.io.IOException e = assertThrows(java.io.IOException.class, () -> readAll(nodes, "/one"));
    assertEquals(
        NodesException.Reason.DATA_LOST,
        ((NodesException) NodesException.from(e.getCause())).reason(),
        e.toString());
    assertEquals(1, nodes.lostSummary().nodes());
    assertEquals(0, nodes.lookup("/one").missingCopies(), "one copy: lost, not under-replicated");
  }

  @Test
  void aMasterRestartResumesReplication(Random random) throws Exception {
    // No server is declared DEAD around the restart (that would find the missing copies too): the
    // new master must find them in what it replayed.
    startCluster(false, Map.of(FerriteConfig.DEAD_TIMEOUT, "30s"));
    byte[] data = write("/f", 2, 4 * BS + 1, random);
    // First recovered from the log, then from a snapshot taken while copies were missing.
    for (boolean snapshot : new boolean[] {false, true}) {
      cluster.ext.pauseReplication(true);
      // A server holding a copy (of block 0, by the seed): the file's blocks need not be on all
      // three, and a reboot of the one without a copy loses nothing of it.
      List<Integer> holders = new ArrayList<>(copies("/f").get(0));
      java.util.Collections.sort(holders);
      reboot(server(holders.get(random.nextInt(holders.size()))));
      awaitMissing("/f");
      assertEquals(1, nodes.lostSummary().underReplicated());
      assertEquals(0, nodes.lostSummary().nodes(), "under-replicated, not lost");
      if (snapshot) {
        cluster.master.snapshot();
      }
      startMaster(); // a new extension, not paused: the LOST marks recovered, the copies made
      cluster.awaitServers(3);
      nodes = client();
      awaitWhole("/f", -1);
      assertEquals(2, nodes.lookupAtMaster("/f").replicas(), "replicas recovered");
      assertArrayEquals(data, readAll(nodes, "/f"));
    }
  }

  /** Waits until the master counts missing copies of {@code path} (a loss it heard of). */
  private void awaitMissing(String path) throws InterruptedException {
    for (int i = 0; i < 1000 && nodes.lookupAtMaster(path).missingCopies() == 0; i++) {
      Thread.sleep(10);
    }
    assertTrue(nodes.lookupAtMaster(path).missingCopies() > 0, "no copy of " + path + " missing");
  }

  @Test
  void aWriterWhoseCopyDiesFailsClearlyAndPublishesNothingUnwritten(Random random)
      throws Exception {
    startCluster(true, Map.of());
    byte[] data = new byte[6 * BS];
    random.nextBytes(data);
    NodeWriter w = nodes.create("/w", CreateOptions.replicated(2));
    w.writeSync(ByteBuffer.wrap(data, 0, 2 * BS + 10));
    w.flush();
    // The copies of the block being written: kill one of them.
    List<Set<Integer>> c = copies("/w");
    List<Integer> last = new ArrayList<>(c.get(c.size() - 1));
    kill(server(last.get(random.nextInt(2))));
    FerriteException failed = null;
    try {
      w.writeSync(ByteBuffer.wrap(data, 2 * BS + 10, 4 * BS - 10));
      w.close();
    } catch (FerriteException e) {
      failed = e;
    }
    if (failed != null) {
      // The clear error: the server of a copy is gone (or its block no longer answers).
      assertTrue(
          failed.code() == io.ferrite.fabric.ErrorCode.UNAVAILABLE
              || failed.code() == io.ferrite.fabric.ErrorCode.TIMEOUT
              || failed.code() == io.ferrite.fabric.ErrorCode.NO_SPACE,
          failed.toString());
      NodeInfo n = nodes.lookupAtMaster("/w");
      assertEquals(2 * BS + 10, n.size(), "only what was published before");
      byte[] back = readAll(nodes, "/w");
      assertArrayEquals(java.util.Arrays.copyOf(data, 2 * BS + 10), back);
    } else {
      assertArrayEquals(data, readAll(nodes, "/w"), "completed: every byte at some copy");
    }
    nodes.client().close(); // its session ends: the lease goes, re-replication takes the file
    nodes = client();
    awaitWhole("/w", -1);
  }

  @Test
  void badReplicasAreRefusedAndChangeNothing() throws Exception {
    assertThrows(IllegalArgumentException.class, () -> CreateOptions.replicated(0));
    assertThrows(IllegalArgumentException.class, () -> CreateOptions.replicated(4));
    // The master checks too: a raw CREATE with replicas 4, and 0.
    for (int bad : new int[] {0, 4}) {
      Wire.Writer w =
          new Wire.Writer()
              .str("/raw")
              .u8(NodeType.FILE.wire())
              .u8(NodesProtocol.FLAG_ENUMERABLE)
              .str("")
              .str("")
              .i64(nodes.client().sessionId())
              .i32(0)
              .u8(0)
              .u8(bad);
      NodesException e =
          assertThrows(
              NodesException.class,
              () -> {
                try {
                  io.ferrite.fabric.Futures.join(nodes.call(NodesProtocol.CREATE, w));
                } catch (RuntimeException x) {
                  throw NodesException.from(x);
                }
              });
      assertEquals(NodesException.Reason.INVALID_ARGUMENT, e.reason(), e.getMessage());
      assertTrue(e.getMessage().contains("replicas: " + bad), e.getMessage());
    }
    nodes.createTable("/t", true);
    java.util.concurrent.CompletionException kv =
        assertThrows(
            java.util.concurrent.CompletionException.class,
            () ->
                nodes
                    .putAsync(
                        "/t/k", ByteBuffer.wrap(new byte[BS + 1]), CreateOptions.replicated(2))
                    .join());
    assertEquals(
        NodesException.Reason.INVALID_ARGUMENT,
        ((NodesException) NodesException.from(kv)).reason());
    // More copies than ALIVE servers: 3 with one of the 3 DEAD.
    kill(0);
    for (int i = 0; i < 1000 && alive() > 2; i++) {
      Thread.sleep(10);
    }
    NodesException three =
        assertThrows(
            NodesException.class, () -> nodes.create("/three", CreateOptions.replicated(3)));
    assertEquals(NodesException.Reason.INVALID_ARGUMENT, three.reason(), three.getMessage());
    assertTrue(three.getMessage().contains("2 ALIVE"), three.getMessage());
    assertThrows(NodesException.class, () -> nodes.lookupAtMaster("/three"));
    assertThrows(NodesException.class, () -> nodes.lookupAtMaster("/raw"));
    assertEquals(NodeType.TABLE, nodes.lookupAtMaster("/t").type(), "the table is there");
    // Two still fit on the two left.
    try (NodeWriter w = nodes.create("/two", CreateOptions.replicated(2))) {
      w.writeSync(ByteBuffer.wrap(new byte[3 * BS]));
    }
    assertEquals(3, copies("/two").size());
  }

  private long alive() {
    return cluster.master.state().members().stream()
        .filter(m -> m.state() == io.ferrite.kernel.proto.ServerState.ALIVE)
        .count();
  }
}
