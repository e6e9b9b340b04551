package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kernel.testing.RegisterChecker;
import io.ferrite.kernel.testing.RegisterChecker.Op;
import io.ferrite.kv.TableOptions.Durability;
import io.ferrite.kv.master.KvDirectory.Move;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Re-sharding: a second memory server joins a one-server cluster and {@link KvRebalancer} moves the
 * shards its ring arcs took over, while client threads put, get, delete and compare-and-set; a
 * register history across moves is checked for linearizability; a new server killed mid-copy leaves
 * the table on the old one; a mover that dies after the retire is completed from the master's
 * journal; durable tables keep exactly their keys across restarts of both servers. Both layouts,
 * seeded. The mover and the set-up clients hold the root (moves are the operator's); the readers
 * and writers beside them are CLIENTs.
 */
@ExtendWith(SeedExtension.class)
class RebalanceTest {
  @TempDir Path dir;
  KvCluster cluster;

  @BeforeEach
  void start() throws Exception {
    cluster = new KvCluster(dir, 1);
  }

  @AfterEach
  void stop() throws Exception {
    cluster.network.faults().heal();
    cluster.close();
  }

  static TableOptions options(TableOptions.Layout layout) {
    return TableOptions.DEFAULTS
        .withLayout(layout)
        .withShards(8)
        .withSlotsPerShard(256)
        .withExtents(1 << 20, 8)
        .withLimits(256, 64 << 10);
  }

  /** A binary key with zero bytes, unique per (owner, i). */
  static byte[] key(int owner, int i) {
    return new byte[] {0, (byte) owner, 0, (byte) (i >>> 8), (byte) i, 0, 'k'};
  }

  static byte[] value(Random r) {
    int len = r.nextInt(4) == 0 ? 200 + r.nextInt(3000) : r.nextInt(40);
    byte[] v = new byte[len];
    r.nextBytes(v);
    return v;
  }

  /** Live shards per table id hosted by {@code server}, from the server's own list. */
  static Map<Integer, Integer> liveShards(FerriteClient c, int server, long tableId) {
    ByteBuffer b =
        Futures.join(
            c.call(server, KvProtocol.SERVER_SERVICE, KvProtocol.SHARDS, ByteBuffer.allocate(0)));
    Wire.Reader r = new Wire.Reader(b, "shards");
    int n = r.i32("n");
    Map<Integer, Integer> out = new HashMap<>();
    for (int i = 0; i < n; i++) {
      long id = r.i64("tableId");
      int shard = r.i32("shard");
      int state = r.u8("state");
      int count = r.i32("count");
      if (id == tableId && state == 0) {
        out.put(shard, count);
      }
    }
    return out;
  }

  private int addServer() throws InterruptedException {
    MemoryServer s = cluster.startServer("kv" + cluster.servers.size());
    cluster.awaitServers(cluster.servers.size());
    return s.serverId();
  }

  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void aJoiningServerTakesItsShardsWhileClientsWrite(TableOptions.Layout layout, TestSeed seed)
      throws Exception {
    FerriteClient setup = cluster.adminClient();
    KvClient kv = new KvClient(setup);
    KvTable table = kv.createTable("grow", options(layout));
    int writers = 3;
    int keysPerWriter = 120;
    List<Map<ByteBuffer, byte[]>> expected = new ArrayList<>();
    Random fill = new Random(seed.value());
    for (int w = 0; w < writers; w++) {
      Map<ByteBuffer, byte[]> m = new ConcurrentHashMap<>();
      for (int i = 0; i < keysPerWriter; i++) {
        byte[] v = value(fill);
        table.put(key(w, i), v);
        m.put(ByteBuffer.wrap(key(w, i)), v);
      }
      expected.add(m);
    }
    int first = table.serverOf(0);
    assertTrue(new KvRebalancer(kv, line -> {}).plan(List.of()).isEmpty(), "one server: no plan");

    // Each writer owns its keys, so its last acknowledged operation is each key's state, and its
    // own reads must see it (a read after an acknowledged write).
    AtomicBoolean moved = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    List<KvTable> handles = new ArrayList<>();
    AtomicInteger opsAfter = new AtomicInteger();
    for (int w = 0; w < writers; w++) {
      KvTable h = new KvClient(cluster.client()).table("grow");
      handles.add(h);
      Map<ByteBuffer, byte[]> mine = expected.get(w);
      Random r = new Random(seed.value() * 31 + w);
      int owner = w;
      threads.add(
          new Thread(
              () -> {
                try {
                  for (int op = 0; !moved.get() || op < 400 || opsAfter.get() < 300; op++) {
                    if (moved.get()) {
                      opsAfter.incrementAndGet();
                    }
                    int i = r.nextInt(keysPerWriter);
                    byte[] k = key(owner, i);
                    ByteBuffer kb = ByteBuffer.wrap(k);
                    byte[] have = mine.get(kb);
                    int p = r.nextInt(100);
                    if (p < 35) {
                      byte[] got = p < 25 ? h.get(k) : h.multiGet(List.of(k)).get(0);
                      assertArrayEquals(have, got, "own key " + i + " of writer " + owner);
                    } else if (p < 65) {
                      byte[] v = value(r);
                      assertEquals(have == null, h.put(k, v));
                      mine.put(kb, v);
                    } else if (p < 75) {
                      assertEquals(have != null, h.delete(k));
                      mine.remove(kb);
                    } else if (p < 90) {
                      byte[] v = value(r);
                      boolean ok = have != null && h.compareAndSet(k, have, v);
                      if (have != null) {
                        assertTrue(ok, "CAS from the value last written");
                        mine.put(kb, v);
                      }
                    } else {
                      byte[] v = value(r);
                      assertEquals(have == null, h.putIfAbsent(k, v));
                      if (have == null) {
                        mine.put(kb, v);
                      }
                    }
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "kv-rebalance-writer-" + w));
    }
    for (Thread t : threads) {
      t.start();
    }
    int second = addServer();
    List<String> lines = Collections.synchronizedList(new ArrayList<>());
    KvRebalancer rebalancer = new KvRebalancer(new KvClient(cluster.adminClient()), lines::add);
    List<Move> plan = rebalancer.plan(List.of("grow"));
    assertFalse(plan.isEmpty(), "the new server owns arcs of the ring");
    KvRebalancer.Report report;
    try {
      report = rebalancer.rebalance(List.of("grow"));
    } finally {
      moved.set(true);
      for (Thread t : threads) {
        t.join();
      }
    }
    if (failure.get() != null) {
      throw new AssertionError("a client failed", failure.get());
    }
    assertTrue(report.ok(), "failures: " + report.failures() + "\n" + lines);
    assertEquals(plan.size(), report.moved().size(), String.join("\n", lines));
    assertTrue(new KvRebalancer(kv, line -> {}).plan(List.of()).isEmpty(), "nothing left");
    assertTrue(rebalancer.pending().isEmpty());

    // Every acknowledged key with its last acknowledged value, through a fresh handle and through
    // the stale one made before the move.
    KvTable fresh = kv.table("grow");
    assertEquals(plan.size(), fresh.placementVersion());
    for (KvTable t : List.of(fresh, table)) {
      for (int w = 0; w < writers; w++) {
        for (int i = 0; i < keysPerWriter; i++) {
          assertArrayEquals(
              expected.get(w).get(ByteBuffer.wrap(key(w, i))), t.get(key(w, i)), "key " + i);
        }
      }
    }
    assertTrue(table.lookupStats().placementFetches() > 0, "the stale handle refetched");
    long refetched = 0;
    for (KvTable h : handles) {
      refetched += h.lookupStats().placementFetches();
    }
    assertTrue(refetched > 0, "the writers' handles refetched the placement");

    // The new server's own list: the moved shards live there with their keys; the old one
    // serves the rest.
    Map<Integer, Integer> onNew = liveShards(setup, second, fresh.info().tableId());
    Map<Integer, Integer> onOld = liveShards(setup, first, fresh.info().tableId());
    int total = 0;
    for (Move m : plan) {
      assertEquals(second, m.to());
      assertTrue(onNew.containsKey(m.shard()), "shard " + m.shard() + " on the new server");
      assertFalse(onOld.containsKey(m.shard()), "shard " + m.shard() + " retired on the old one");
      assertEquals(second, fresh.serverOf(m.shard()));
    }
    for (int c : onNew.values()) {
      total += c;
    }
    for (int c : onOld.values()) {
      total += c;
    }
    int want = 0;
    for (Map<ByteBuffer, byte[]> m : expected) {
      want += m.size();
    }
    assertEquals(want, total, "keys on both servers");
    assertTrue(
        lines.stream().anyMatch(l -> l.contains("copied")), "progress was reported: " + lines);
  }

  static byte[] reg(int k) {
    return ("register-" + k).getBytes(StandardCharsets.UTF_8);
  }

  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void registersStayLinearizableAcrossMovesThereAndBack(TableOptions.Layout layout, TestSeed seed)
      throws Exception {
    KvClient kv = new KvClient(cluster.adminClient());
    kv.createTable("linear", options(layout).withShards(1));
    int first = kv.table("linear").serverOf(0);
    int second = addServer();
    int keys = 3;
    List<List<Op>> perKey = new ArrayList<>();
    AtomicInteger[] keyIds = new AtomicInteger[keys];
    for (int k = 0; k < keys; k++) {
      perKey.add(Collections.synchronizedList(new ArrayList<>()));
      keyIds[k] = new AtomicInteger();
    }
    AtomicInteger ids = new AtomicInteger();
    AtomicBoolean done = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    List<KvTable> handles = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      // Half the handles read by extent hints (the values are out of line): a hint into a retired
      // shard's extent must not answer once the shard moved (none of its extents is current).
      KvTable h = new KvClient(cluster.client()).extentHints(t % 2 == 0).table("linear");
      handles.add(h);
      Random r = new Random(seed.value() * 17 + t);
      int thread = t;
      threads.add(
          new Thread(
              () -> {
                try {
                  for (int i = 0; !done.get() || i < 200; i++) {
                    int k = r.nextInt(keys);
                    int p = r.nextInt(100);
                    long call = System.nanoTime();
                    long v;
                    boolean write;
                    if (p < 50) {
                      byte[] got = p < 35 ? h.get(reg(k)) : h.multiGet(List.of(reg(k))).get(0);
                      v = got == null ? RegisterChecker.ABSENT : ByteBuffer.wrap(got).getLong();
                      write = false;
                    } else if (p < 85) {
                      v = (long) thread << 32 | ids.incrementAndGet();
                      h.put(reg(k), outOfLine(v));
                      write = true;
                    } else {
                      v = RegisterChecker.ABSENT;
                      h.delete(reg(k));
                      write = true;
                    }
                    long ret = System.nanoTime();
                    perKey.get(k).add(new Op(keyIds[k].getAndIncrement(), call, ret, write, v));
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "kv-rebalance-linear-" + t));
    }
    for (Thread t : threads) {
      t.start();
    }
    KvRebalancer mover = new KvRebalancer(new KvClient(cluster.adminClient()), line -> {});
    try {
      mover.move("linear", 0, second);
      mover.move("linear", 0, first); // back: the import replaces the retired shard there
      mover.move("linear", 0, second);
    } finally {
      done.set(true);
      for (Thread t : threads) {
        t.join();
      }
    }
    if (failure.get() != null) {
      throw new AssertionError("a client failed", failure.get());
    }
    for (int k = 0; k < keys; k++) {
      List<Op> h = new ArrayList<>(perKey.get(k));
      h.sort(java.util.Comparator.comparingInt(Op::id));
      if (!RegisterChecker.check(h, RegisterChecker.ABSENT)) {
        fail("key " + k + " is not linearizable across the moves:" + RegisterChecker.describe(h));
      }
    }
    assertEquals(3, kv.table("linear").placementVersion());
    assertEquals(second, kv.table("linear").serverOf(0));
    long hits = 0;
    for (KvTable h : handles) {
      hits += h.lookupStats().hintHits();
    }
    assertTrue(hits > 0, "hinted gets were answered by their hints");
  }

  /** A register value of {@code v} too long for a slot: its own extent. */
  static byte[] outOfLine(long v) {
    byte[] b = new byte[300];
    ByteBuffer.wrap(b).putLong(v);
    return b;
  }

  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void killingTheNewServerMidCopyLeavesTheTableOnTheOldOne(TableOptions.Layout layout)
      throws Exception {
    KvClient kv = new KvClient(cluster.adminClient());
    KvTable t = kv.createTable("kill", options(layout).withShards(1));
    int first = t.serverOf(0);
    Random r = new Random(7);
    Map<Integer, byte[]> values = new HashMap<>();
    for (int i = 0; i < 100; i++) {
      byte[] v = new byte[32 << 10]; // 3.2 MiB: several pages of the copy
      r.nextBytes(v);
      t.put(key(0, i), v);
      values.put(i, v);
    }
    MemoryServer joining = cluster.startServer("kv1");
    cluster.awaitServers(2);
    int second = joining.serverId();
    AtomicBoolean killed = new AtomicBoolean();
    KvRebalancer mover =
        new KvRebalancer(
            new KvClient(cluster.adminClient()),
            line -> {
              if (line.contains("copied") && killed.compareAndSet(false, true)) {
                cluster.servers.remove(joining);
                joining.close();
              }
            });
    FerriteException e = assertThrows(FerriteException.class, () -> mover.move("kill", 0, second));
    assertTrue(killed.get());
    assertTrue(e.getMessage().contains("aborted"), e.getMessage());
    assertTrue(mover.pending().isEmpty(), "the move was aborted at the master");
    KvTable again = kv.table("kill");
    assertEquals(first, again.serverOf(0));
    assertEquals(0, again.placementVersion());
    for (int i = 0; i < 100; i++) {
      assertArrayEquals(values.get(i), t.get(key(0, i)), "key " + i);
    }
    assertTrue(t.put(key(9, 9), new byte[] {1}), "writes resumed: the freeze was lifted");
    assertArrayEquals(new byte[] {1}, again.get(key(9, 9)));
  }

  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void aMoveLeftPendingAfterTheRetireSurvivesAMasterRestartAndIsCompleted(
      TableOptions.Layout layout) throws Exception {
    KvClient kv = new KvClient(cluster.adminClient());
    KvTable t = kv.createTable("pending", options(layout).withShards(1));
    for (int i = 0; i < 50; i++) {
      t.put(key(1, i), new byte[i * 7]);
    }
    int second = addServer();
    FerriteClient c = cluster.adminClient();
    // A mover that dies right after the old server retired the shard (before the master's commit).
    ByteBuffer b =
        Futures.join(
            c.callMaster(
                KvProtocol.MASTER_SERVICE,
                KvProtocol.BEGIN_MOVE,
                new Wire.Writer().str("pending").i32(0).i32(second).toBuffer()));
    Move m = Move.read(new Wire.Reader(b, "move"));
    call(c, m.from(), KvProtocol.FREEZE, ids(m).i64(m.token()).i64(10_000));
    ByteBuffer page =
        call(c, m.from(), KvProtocol.EXPORT, ids(m).i64(m.token()).i32(0).i32(1 << 20));
    Wire.Reader pr = new Wire.Reader(page, "page");
    assertEquals(-1, pr.i32("next"));
    pr.i32("slots");
    assertEquals(50, pr.i32("n"));
    call(c, m.from(), KvProtocol.RETIRE, ids(m).i64(m.token()).i32(m.to()));
    // The master dies too; the intent is in its journal.
    cluster.startMaster();
    cluster.awaitServers(2);
    kv = new KvClient(cluster.adminClient());
    c = kv.ferrite();
    t = kv.table("pending");
    // A sweep leaves a retired shard alone while its move is pending: the move is completed from
    // it.
    assertEquals(0, new KvRebalancer(kv, l -> {}).sweepRetired(List.of()));
    assertEquals(2, shardState(c, m.from(), m.tableId(), 0), "retired, regions kept");
    // The shard is unavailable (retired, not committed) until a rebalance completes it.
    assertEquals(1, new KvRebalancer(kv, l -> {}).pending().size());
    KvRebalancer.Report rep = new KvRebalancer(kv, l -> {}).resolvePending(List.of());
    assertEquals(1, rep.resolved().size(), rep.failures().toString());
    assertTrue(rep.ok(), rep.failures().toString());
    assertEquals(second, kv.table("pending").serverOf(0));
    assertEquals(3, shardState(c, m.from(), m.tableId(), 0), "committed: regions freed");
    for (int i = 0; i < 50; i++) {
      assertArrayEquals(new byte[i * 7], t.get(key(1, i)), "key " + i + " (stale handle)");
    }
    // A pending move whose old server still serves (the mover died before the retire) is aborted.
    b =
        Futures.join(
            c.callMaster(
                KvProtocol.MASTER_SERVICE,
                KvProtocol.BEGIN_MOVE,
                new Wire.Writer().str("pending").i32(0).i32(m.from()).toBuffer()));
    Move back = Move.read(new Wire.Reader(b, "move"));
    call(c, back.from(), KvProtocol.FREEZE, ids(back).i64(back.token()).i64(60_000));
    rep = new KvRebalancer(kv, l -> {}).resolvePending(List.of("pending"));
    assertEquals(1, rep.resolved().size());
    assertEquals(second, kv.table("pending").serverOf(0), "aborted: stays");
    assertFalse(t.put(key(1, 0), new byte[] {5}), "the freeze was lifted by the cancel");
    // The cancelled mover cannot retire the shard any more.
    FerriteClient client = c;
    FerriteException late =
        assertThrows(
            FerriteException.class,
            () ->
                call(
                    client,
                    back.from(),
                    KvProtocol.RETIRE,
                    ids(back).i64(back.token()).i32(back.to())));
    assertEquals(ErrorCode.SESSION_EXPIRED, late.code());
  }

  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void durableTablesKeepExactlyTheirKeysAcrossRestartsOfBothServers(TableOptions.Layout layout)
      throws Exception {
    KvClient kv = new KvClient(cluster.adminClient());
    KvTable t = kv.createTable("logged", options(layout).withDurability(Durability.ALWAYS));
    for (int i = 0; i < 200; i++) {
      t.put(key(2, i), ("v" + i).getBytes(StandardCharsets.UTF_8));
    }
    addServer();
    KvRebalancer.Report rep = new KvRebalancer(kv, l -> {}).rebalance(List.of());
    assertTrue(rep.ok() && !rep.moved().isEmpty(), rep.toString());
    for (int i = 0; i < 200; i += 2) {
      t.delete(key(2, i));
    }
    for (int i = 1; i < 200; i += 4) {
      t.put(key(2, i), ("after" + i).getBytes(StandardCharsets.UTF_8));
    }
    for (int round = 0; round < 2; round++) {
      if (round == 1) {
        // The same restart once more, from compacted logs: each server's log is rewritten as a
        // snapshot (the old server's with the moved shards as OPEN, RETIRE and RELEASE, no pairs).
        for (MemoryServer m : cluster.servers) {
          Wire.Reader r =
              new Wire.Reader(
                  call(kv.ferrite(), m.serverId(), KvProtocol.COMPACT_LOG, new Wire.Writer()),
                  "compact-log");
          long before = r.i64("before");
          long after = r.i64("after");
          assertTrue(after < before, m.name() + ": log " + before + " B -> " + after + " B");
        }
      }
      restartBothAndCheck(kv, rep);
    }
  }

  private void restartBothAndCheck(KvClient kv, KvRebalancer.Report rep) throws Exception {
    for (int s = 0; s < 2; s++) {
      MemoryServer old = cluster.servers.remove(0);
      old.close();
      cluster.startServer(old.name());
    }
    cluster.awaitServers(2);
    // The old server replayed RETIRE and RELEASE: tombstones without regions.
    for (Move m : rep.moved()) {
      assertEquals(
          3, shardState(kv.ferrite(), m.from(), m.tableId(), m.shard()), "shard " + m.shard());
    }
    KvTable again = kv.table("logged");
    for (int i = 0; i < 200; i++) {
      byte[] want =
          i % 2 == 0 ? null : (i % 4 == 1 ? "after" + i : "v" + i).getBytes(StandardCharsets.UTF_8);
      assertArrayEquals(want, again.get(key(2, i)), "key " + i);
    }
    int total = 0;
    for (ShardStats s : again.stats()) {
      total += s.count();
    }
    assertEquals(100, total, "no key resurrected on either server");
  }

  @Test
  void badInputMovesNothingAndSaysSo() throws Exception {
    KvClient kv = new KvClient(cluster.adminClient());
    KvTable t = kv.createTable("still", options(TableOptions.Layout.HOPSCOTCH));
    t.put(key(0, 0), new byte[] {1});
    KvRebalancer r = new KvRebalancer(kv, l -> {});
    FerriteException e =
        assertThrows(FerriteException.class, () -> r.rebalance(List.of("no-such-table")));
    assertEquals(ErrorCode.NOT_FOUND, e.code());
    KvRebalancer.Report rep = r.rebalance(List.of());
    assertTrue(rep.ok() && rep.moved().isEmpty() && rep.resolved().isEmpty(), rep.toString());
    int only = t.serverOf(0);
    e = assertThrows(FerriteException.class, () -> r.move("still", 0, only));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    e = assertThrows(FerriteException.class, () -> r.move("still", 0, 999));
    assertEquals(ErrorCode.UNAVAILABLE, e.code());
    e = assertThrows(FerriteException.class, () -> r.move("still", 99, only));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertTrue(r.pending().isEmpty());
    assertEquals(0, kv.table("still").placementVersion());
    assertNull(t.get(key(0, 1)));
    assertArrayEquals(new byte[] {1}, t.get(key(0, 0)));
  }

  /** The SHARDS state of one shard on {@code server}, -1 if it is not listed there. */
  static int shardState(FerriteClient c, int server, long tableId, int shard) {
    Wire.Reader r =
        new Wire.Reader(call(c, server, KvProtocol.SHARDS, new Wire.Writer()), "shards");
    int n = r.i32("n");
    int state = -1;
    for (int i = 0; i < n; i++) {
      long id = r.i64("tableId");
      int s = r.i32("shard");
      int st = r.u8("state");
      r.i32("count");
      if (id == tableId && s == shard) {
        state = st;
      }
    }
    return state;
  }

  private static Wire.Writer ids(Move m) {
    return new Wire.Writer().i64(m.tableId()).i32(m.shard());
  }

  private static ByteBuffer call(FerriteClient c, int server, int opcode, Wire.Writer body) {
    return Futures.join(c.call(server, KvProtocol.SERVER_SERVICE, opcode, body.toBuffer()));
  }
}
