package io.ferrite.nodes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Counters;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.nodes.master.NodesMaster;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Leased lookups over tcp (docs/NODES.md, "Leased lookups"): a lookup a client has seen is answered
 * with no fabric op; every change to the node or an ancestor is seen by the client's next lookup
 * once the change returned; a client that stops answering costs a writer at most its lease; and a
 * seeded history of concurrent lookups, gets, puts and moves on separate clients is linearizable.
 */
@ExtendWith(SeedExtension.class)
class NodesLeasedLookupTest {
  @TempDir Path dir;
  @AutoClose ClusterHarness cluster;
  NodesMaster ext;

  private void start(Duration lease) throws Exception {
    start(lease, Map.of());
  }

  private void start(Duration lease, Map<String, String> more) throws Exception {
    Map<String, String> settings =
        new java.util.HashMap<>(
            Map.of(
                FerriteConfig.CAPACITY_DRAM, "4m",
                FerriteConfig.CAPACITY_DISK, "0",
                FerriteConfig.SERVICE_THREADS, "4",
                FerriteConfig.DEAD_TIMEOUT, "10s"));
    settings.putAll(more);
    cluster =
        new ClusterHarness(
            dir,
            new Credentials(
                "leased-lookups",
                "0123456789abcdef-leased-secret".getBytes(StandardCharsets.UTF_8)),
            true,
            settings);
    ext = new NodesMaster(Duration.ofMillis(50), lease);
    cluster.startMaster(List.of(ext));
    cluster.startServer("s1");
    cluster.awaitServers(1);
  }

  private Nodes nodes() {
    // A long RPC timeout: the client lets a WATCH be parked for half of it.
    Nodes n =
        new Nodes(
            cluster.client(
                ClientOptions.builder(cluster.credentials)
                    .fabric("tcp")
                    .rpcTimeout(Duration.ofSeconds(60))));
    assertEquals("tcp", n.client().masterFabric());
    return n;
  }

  private static Counters masterCounters(Nodes n) {
    return n.client().masterStub().connection().counters();
  }

  /** Looks {@code path} up until an answer comes from the cache (the first registers a holder). */
  private static NodeInfo cached(Nodes n, String path) {
    for (int i = 0; i < 1000; i++) {
      long hits = n.cacheCounters().hits();
      NodeInfo info = n.lookup(path);
      if (n.cacheCounters().hits() > hits) {
        return info;
      }
    }
    throw new AssertionError(path + " was never answered from the cache");
  }

  @Test
  void aLookupTheClientHasSeenMakesNoRpc() throws Exception {
    // A long lease: no WATCH is answered (and counted) while the lookups run.
    start(Duration.ofSeconds(60));
    Nodes a = nodes();
    a.mkdir("/d");
    a.createTable("/d/t", true);
    NodeInfo put = a.put("/d/t/k", new byte[] {1, 2, 3});
    cached(a, "/d/t/k");
    Counters.Snapshot before = masterCounters(a).snapshot();
    Nodes.CacheCounters c0 = a.cacheCounters();
    for (int i = 0; i < 100; i++) {
      NodeInfo n = a.lookup("/d/t/k");
      assertEquals(put.id(), n.id());
      assertArrayEquals(new byte[] {1, 2, 3}, a.getBytes("/d/t/k"));
    }
    Counters.Snapshot delta = masterCounters(a).snapshot().minus(before);
    assertEquals(0, delta.ops(OpKind.RPC), "cached lookups and gets made RPCs");
    assertEquals(200, a.cacheCounters().hits() - c0.hits());
    assertEquals(0, a.cacheCounters().misses() - c0.misses());
    // A container is answered, never kept: its size counts children.
    a.lookup("/d");
    long rpcs = masterCounters(a).ops(OpKind.RPC);
    a.lookup("/d");
    assertEquals(rpcs + 1, masterCounters(a).ops(OpKind.RPC));
  }

  @Test
  void onceAChangeReturnsNoCachedLookupReturnsTheOldNode() throws Exception {
    start(Duration.ofSeconds(2));
    Nodes a = nodes();
    Nodes b = nodes();
    b.mkdir("/d");
    for (int round = 0; round < 20; round++) {
      // Removed.
      b.createTable("/d/t", true);
      b.put("/d/t/f", new byte[] {1});
      cached(a, "/d/t/f");
      b.remove("/d/t/f", false);
      assertNotFound(a, "/d/t/f");
      // Moved.
      NodeInfo put = b.put("/d/t/f", new byte[] {2});
      assertEquals(put.id(), cached(a, "/d/t/f").id());
      b.move("/d/t/f", "/d/t/g");
      assertNotFound(a, "/d/t/f");
      assertEquals(put.id(), a.lookup("/d/t/g").id());
      // Replaced with a new size, inline then in blocks.
      cached(a, "/d/t/g");
      NodeInfo bigger = b.put("/d/t/g", new byte[] {3, 3});
      NodeInfo seen = a.lookup("/d/t/g");
      assertEquals(bigger.id(), seen.id());
      assertEquals(2, seen.size());
      cached(a, "/d/t/g");
      byte[] large = new byte[70_000];
      large[0] = 7;
      NodeInfo blocks = b.put("/d/t/g", large);
      assertEquals(blocks.id(), a.lookup("/d/t/g").id());
      assertArrayEquals(large, a.getBytes("/d/t/g"));
      // An ancestor moved away.
      cached(a, "/d/t/g");
      b.move("/d/t", "/d/u");
      assertNotFound(a, "/d/t/g");
      // A File published again with a new size.
      NodeWriter w = b.create("/d/u-log-" + round);
      w.writeSync(ByteBuffer.wrap(new byte[] {1}));
      w.flush();
      assertEquals(1, cached(a, "/d/u-log-" + round).size());
      w.writeSync(ByteBuffer.wrap(new byte[] {2, 3}));
      w.flush();
      assertEquals(3, a.lookup("/d/u-log-" + round).size());
      w.close();
      b.remove("/d/u", true);
    }
    assertTrue(a.cacheCounters().invalidations() > 0, "no lease was ever revoked");
  }

  @Test
  void aRestartedMasterLeavesNothingStaleAndGrantsAgain() throws Exception {
    // The master comes back on the same tcp port, where the clients find it again.
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort();
    }
    Duration lease = Duration.ofMillis(500);
    start(lease, Map.of(FerriteConfig.MASTER_PORT, Integer.toString(port)));
    Nodes a = nodes();
    a.createTable("/t", true);
    NodeInfo before = a.put("/t/k", new byte[] {1});
    assertEquals(before.id(), cached(a, "/t/k").id());
    ext = new NodesMaster(Duration.ofMillis(50), lease);
    cluster.startMaster(List.of(ext));
    cluster.awaitServers(1);
    // A change of a node the new master recovered: it waits out the lease a client may still hold.
    Nodes b = nodes();
    NodeInfo after = b.put("/t/k", new byte[] {2});
    assertEquals(after.id(), a.lookup("/t/k").id());
    // The client registers with the new master and is answered from its cache again.
    assertEquals(after.id(), cached(a, "/t/k").id());
    assertArrayEquals(new byte[] {2}, a.getBytes("/t/k"));
  }

  private static void assertNotFound(Nodes n, String path) {
    assertEquals(
        NodesException.Reason.NOT_FOUND,
        assertThrows(NodesException.class, () -> n.lookup(path)).reason());
  }

  @Test
  @Timeout(120)
  void aHolderThatStopsAnsweringHoldsAWriterAtMostItsLease() throws Exception {
    start(Duration.ofMillis(400));
    Nodes b = nodes();
    b.createTable("/t", true);
    NodeInfo put = b.put("/t/k", new byte[] {1});
    // A holder made by hand: registered, granted a lease, and then silent (no WATCH re-armed).
    FerriteClient raw = cluster.client("tcp");
    Wire.Reader reg =
        new Wire.Reader(
            Futures.join(
                raw.callMaster(
                    NodesProtocol.SERVICE,
                    NodesProtocol.WATCH,
                    new Wire.Writer().i64(0).i64(0).i64(0).i64(0).toBuffer())),
            "watch");
    long holder = reg.i64("holder");
    Wire.Reader r =
        new Wire.Reader(
            Futures.join(
                raw.callMaster(
                    NodesProtocol.SERVICE,
                    NodesProtocol.LOOKUP_LEASED,
                    new Wire.Writer().str("/t/k").i32(0).i64(holder).toBuffer())),
            "leased");
    assertEquals(put.id(), NodesProtocol.readNode(r).id());
    r.i64("epoch");
    r.i64("seq");
    assertTrue(r.i64("lease") > 0, "no lease granted");
    long expired = ext.leaseCounts()[1];
    // Completes (the test's timeout says "not forever"), after the silent lease ran out.
    b.remove("/t/k", false);
    assertEquals(expired + 1, ext.leaseCounts()[1], "the writer did not wait for the lease");
    assertNotFound(b, "/t/k");
  }

  /**
   * Readers (each its own client: its own cache) look up and get /t/k0../t/k2 while writers put new
   * values there and move them away, and a third moves the table /t away and back. Node ids grow in
   * commit order, so for a linearizable store a lookup or get that finds a node must find one whose
   * id is at least that of every put to the path acknowledged before the call began, never one
   * whose move away was acknowledged before it began, and nothing at all if the call ran wholly
   * between a move of /t away being acknowledged and its move back starting.
   */
  @Test
  @Timeout(300)
  void concurrentLookupsGetsPutsAndMovesAreLinearizable(TestSeed seed) throws Exception {
    start(Duration.ofSeconds(2));
    int paths = 3;
    Nodes setup = nodes();
    setup.createTable("/t", true);
    setup.createTable("/gone", true);
    AtomicLong clock = new AtomicLong();
    // Per path: acknowledged puts as {ack time, id}; ids moved away: id -> ack time.
    List<ConcurrentLinkedQueue<long[]>> puts = new ArrayList<>();
    ConcurrentHashMap<Long, Long> dead = new ConcurrentHashMap<>();
    ConcurrentHashMap<Long, Long> idOfValue = new ConcurrentHashMap<>();
    // Windows where /t was away: {move away acknowledged, move back started (MAX: not yet)}.
    ConcurrentHashMap<Integer, long[]> away = new ConcurrentHashMap<>();
    for (int p = 0; p < paths; p++) {
      puts.add(new ConcurrentLinkedQueue<>());
    }
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicLong checked = new AtomicLong();
    AtomicLong values = new AtomicLong();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Nodes n = nodes();
      Random random = new Random(seed.value() + 100 + i);
      threads.add(
          new Thread(
              () -> {
                try {
                  while (!stop.get() && failure.get() == null) {
                    int p = random.nextInt(paths);
                    boolean get = random.nextBoolean();
                    long start = clock.get();
                    long id;
                    try {
                      if (get) {
                        long v = ByteBuffer.wrap(n.getBytes("/t/k" + p)).getLong();
                        id = idOfValue.getOrDefault(v, Long.MAX_VALUE); // unacknowledged: newest
                      } else {
                        id = n.lookup("/t/k" + p).id();
                      }
                    } catch (NodesException e) {
                      if (e.reason() != NodesException.Reason.NOT_FOUND) {
                        throw e;
                      }
                      continue;
                    }
                    for (long[] put : puts.get(p)) {
                      if (put[0] <= start && id < put[1]) {
                        throw new AssertionError(
                            (get ? "get" : "lookup")
                                + " of /t/k"
                                + p
                                + " found node "
                                + id
                                + " after the put of node "
                                + put[1]
                                + " was acknowledged");
                      }
                    }
                    long end = clock.get();
                    Long gone = dead.get(id);
                    if (gone != null && gone <= start) {
                      throw new AssertionError(
                          "found node " + id + " of /t/k" + p + " after its move away returned");
                    }
                    for (long[] w : away.values()) {
                      if (w[0] <= start && end < w[1]) {
                        throw new AssertionError(
                            "found /t/k"
                                + p
                                + " while /t was moved away ("
                                + w[0]
                                + ", "
                                + w[1]
                                + ")");
                      }
                    }
                    checked.incrementAndGet();
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "reader-" + i));
    }
    for (int i = 0; i < 2; i++) {
      Nodes n = nodes();
      Random random = new Random(seed.value() + i);
      int writer = i;
      threads.add(
          new Thread(
              () -> {
                try {
                  for (int op = 0; op < 150 && failure.get() == null; op++) {
                    int p = random.nextInt(paths);
                    if (random.nextInt(4) == 0) {
                      try {
                        NodeInfo moved = n.move("/t/k" + p, "/gone/w" + writer + "-" + op);
                        dead.put(moved.id(), clock.incrementAndGet());
                      } catch (NodesException e) {
                        if (e.reason() != NodesException.Reason.NOT_FOUND) {
                          throw e;
                        }
                      }
                    } else {
                      long v = values.incrementAndGet();
                      NodeInfo put;
                      try {
                        put = n.put("/t/k" + p, ByteBuffer.allocate(8).putLong(0, v).array());
                      } catch (NodesException e) {
                        if (e.reason() != NodesException.Reason.NOT_FOUND) {
                          throw e;
                        }
                        continue; // /t is away
                      }
                      idOfValue.put(v, put.id());
                      puts.get(p).add(new long[] {clock.incrementAndGet(), put.id()});
                    }
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "writer-" + i));
    }
    Nodes mover = nodes();
    mover.mkdir("/away");
    Random moves = new Random(seed.value() + 7);
    threads.add(
        new Thread(
            () -> {
              try {
                for (int i = 0; i < 15 && failure.get() == null; i++) {
                  Thread.sleep(moves.nextInt(20));
                  mover.move("/t", "/away/t");
                  away.put(i, new long[] {clock.incrementAndGet(), Long.MAX_VALUE});
                  Thread.sleep(moves.nextInt(20));
                  away.put(i, new long[] {away.get(i)[0], clock.incrementAndGet()});
                  mover.move("/away/t", "/t");
                }
              } catch (Throwable e) {
                failure.compareAndSet(null, e);
              }
            },
            "mover"));
    for (Thread t : threads) {
      t.start();
    }
    for (Thread t : threads.subList(3, threads.size())) {
      t.join();
    }
    stop.set(true);
    for (Thread t : threads) {
      t.join();
    }
    if (failure.get() != null) {
      throw new AssertionError(
          "not linearizable (replay with " + seed.reproduceOption() + ")", failure.get());
    }
    assertTrue(checked.get() > 0);
  }
}
