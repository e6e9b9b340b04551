package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
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
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Replicated kv shards (docs/KV.md "Replication"): backups are placed on other servers, every
 * acknowledged write is at every copy, a dead primary's backup is promoted and serves every
 * acknowledged write, and histories across the failover are linearizable. Seeded.
 */
@ExtendWith(SeedExtension.class)
class ReplicationTest {
  @TempDir Path dir;
  @AutoClose KvCluster cluster;

  private KvCluster start(int servers) throws Exception {
    cluster = new KvCluster(dir, servers);
    cluster.awaitServers(servers);
    return cluster;
  }

  private static TableOptions options(TableOptions.Layout layout, int shards, int replicas) {
    return TableOptions.DEFAULTS
        .withLayout(layout)
        .withShards(shards)
        .withSlotsPerShard(1024)
        .withExtents(1 << 20, 4)
        .withLimits(64, 4096)
        .withReplicas(replicas);
  }

  static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** The value of {@code key} in the copy of its shard on {@code server} (RPC GET), or null. */
  private static byte[] readCopy(FerriteClient c, KvTable t, int server, byte[] key) {
    int shard = t.shardOf(key);
    ByteBuffer b =
        leased(
            () ->
                c.callSync(
                    server,
                    KvProtocol.SERVER_SERVICE,
                    KvProtocol.GET,
                    // The newest placement version there is: the test reads each copy as what it
                    // is.
                    new Wire.Writer()
                        .i64(t.info().tableId())
                        .i32(shard)
                        .bytes(key)
                        .i64(Long.MAX_VALUE)
                        .toBuffer()));
    Wire.Reader r = new Wire.Reader(b, "get");
    int status = r.u8("status");
    byte[] v = r.bytes("value");
    return status == KvProtocol.FOUND ? v : null;
  }

  private static int[] copies(TableInfo t, int shard) {
    int[] b = t.backupsOf(shard);
    int[] out = new int[1 + b.length];
    out[0] = t.servers()[shard];
    System.arraycopy(b, 0, out, 1, b.length);
    return out;
  }

  @Test
  void badReplicaCountsAreRefused() throws Exception {
    start(2);
    for (int bad : new int[] {0, 4, -1}) {
      FerriteException e =
          assertThrows(FerriteException.class, () -> TableOptions.DEFAULTS.withReplicas(bad));
      assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
      assertTrue(e.getMessage().contains("replicas: " + bad), e.getMessage());
    }
    KvClient kv = new KvClient(cluster.adminClient());
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> kv.createTable("three", options(TableOptions.Layout.HOPSCOTCH, 4, 3)));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertTrue(e.getMessage().contains("replicas: 3 (expected: <= 2"), e.getMessage());
    assertTrue(kv.tables().isEmpty(), "nothing was created");
    // Two copies on two servers are fine, and survive a round trip through the directory.
    KvTable t = kv.createTable("two", options(TableOptions.Layout.HOPSCOTCH, 4, 2));
    assertEquals(2, kv.table("two").info().options().replicas());
    for (int i = 0; i < 4; i++) {
      assertEquals(1, t.info().backupsOf(i).length);
      assertNotEquals(t.info().servers()[i], t.info().backupsOf(i)[0]);
    }
    // Replicated shards are not moved by a rebalance (their copies follow failovers).
    assertTrue(kv.tables().stream().allMatch(x -> x.options().replicas() == 2));
  }

  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void everyAcknowledgedWriteIsAtEveryCopy(TableOptions.Layout layout, TestSeed seed)
      throws Exception {
    start(3);
    FerriteClient c = cluster.client();
    KvTable t = new KvClient(c).createTable("everywhere", options(layout, 4, 3));
    for (int i = 0; i < 4; i++) {
      int[] all = copies(t.info(), i);
      assertEquals(3, java.util.Arrays.stream(all).distinct().count(), "3 servers: " + i);
    }
    Random r = new Random(seed.value());
    Map<String, byte[]> want = new java.util.TreeMap<>();
    List<java.util.concurrent.CompletableFuture<Boolean>> pending = new ArrayList<>();
    for (int i = 0; i < 400; i++) {
      String k = "k" + r.nextInt(60);
      byte[] v = new byte[r.nextInt(200)];
      r.nextBytes(v);
      switch (r.nextInt(6)) {
        case 0 -> {
          t.delete(bytes(k));
          want.remove(k);
        }
        case 1 -> {
          if (t.putIfAbsent(bytes(k), v)) {
            want.put(k, v);
          }
        }
        case 2 -> {
          byte[] old = want.get(k);
          if (old != null) {
            assertTrue(t.compareAndSet(bytes(k), old, v));
            want.put(k, v);
          }
        }
        case 3 -> {
          pending.add(t.putAsync(bytes(k), v));
          want.put(k, v);
        }
        case 4 -> {
          String k2 = "m" + r.nextInt(20);
          t.multiPut(List.of(bytes(k), bytes(k2)), List.of(v, v));
          want.put(k, v);
          want.put(k2, v);
        }
        default -> {
          t.put(bytes(k), v);
          want.put(k, v);
        }
      }
    }
    for (var f : pending) {
      f.join();
    }
    java.util.Set<String> all = new java.util.TreeSet<>(want.keySet());
    for (int i = 0; i < 60; i++) {
      all.add("k" + i);
    }
    for (String k : all) {
      byte[] key = bytes(k);
      for (int server : copies(t.info(), t.shardOf(key))) {
        assertArrayEquals(want.get(k), readCopy(c, t, server, key), k + " at server " + server);
      }
      assertArrayEquals(want.get(k), t.get(key), k);
    }
  }

  /**
   * Writers put their own keys (blocking and pipelined) on a table with 2 copies on 3 servers; the
   * server holding the most primaries is stopped cleanly (it tells the master it leaves: DEAD at
   * once, not after the 2 s dead timeout). Every shard it was the primary of is taken over by its
   * backup, writers carry on, and every key ends with its last acknowledged value, through the
   * writers' handles and a fresh one.
   */
  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void aDeadPrimarysBackupIsPromotedAndHasEveryAcknowledgedPut(
      TableOptions.Layout layout, TestSeed seed) throws Exception {
    start(3);
    KvClient kv = new KvClient(cluster.adminClient());
    KvTable table = kv.createTable("failover", options(layout, 8, 2));
    TableInfo before = table.info();
    int victim = mostPrimaries(before);
    Map<String, byte[]> acked = new ConcurrentHashMap<>();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicInteger afterKill = new AtomicInteger();
    AtomicBoolean killed = new AtomicBoolean();
    List<Thread> writers = new ArrayList<>();
    List<KvTable> handles = new ArrayList<>();
    for (int w = 0; w < 3; w++) {
      KvTable h = new KvClient(cluster.client()).table("failover");
      handles.add(h);
      Random r = new Random(seed.value() * 31 + w);
      int writer = w;
      writers.add(
          new Thread(
              () -> {
                try {
                  for (long n = 0; !stop.get(); n++) {
                    String k = "w" + writer + "-" + r.nextInt(40);
                    byte[] v = bytes(k + "=" + n + "/" + "x".repeat(r.nextInt(100)));
                    if (writer == 2) {
                      h.putAsync(bytes(k), v).join();
                    } else {
                      h.put(bytes(k), v);
                    }
                    acked.put(k, v); // one writer per key: the last acknowledged value
                    if (killed.get()) {
                      afterKill.incrementAndGet();
                    }
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "kv-replica-writer-" + w));
    }
    for (Thread t : writers) {
      t.start();
    }
    while (acked.size() < 60 && failure.get() == null) {
      Thread.sleep(5);
    }
    MemoryServer dead = server(victim);
    cluster.servers.remove(dead);
    dead.close();
    killed.set(true);
    // The clean stop said goodbye: the master declared it DEAD before close() returned, so the
    // failover below starts now, not after the dead timeout (that would say "heartbeat timeout").
    assertEquals(
        io.ferrite.kernel.master.MasterState.REASON_LEFT,
        cluster.master.state().deadReason(victim));
    // Writers carry on across the failover: wait until each key space moved on after it.
    long until = System.nanoTime() + 20_000_000_000L;
    while (afterKill.get() < 300 && failure.get() == null && System.nanoTime() < until) {
      Thread.sleep(10);
    }
    // Then the master's repair gives the shards their second copy again, on the third server,
    // by itself, while writers go on.
    awaitCopies(kv, "failover", 2);
    int writtenAtRepair = afterKill.get();
    while (afterKill.get() < writtenAtRepair + 200 && failure.get() == null) {
      Thread.sleep(5);
    }
    stop.set(true);
    for (Thread t : writers) {
      t.join();
    }
    if (failure.get() != null) {
      throw new AssertionError("a writer failed", failure.get());
    }
    assertTrue(afterKill.get() >= 300, "writes went on after the kill: " + afterKill.get());
    TableInfo after = kv.table("failover").info();
    int hadVictim = 0;
    for (int i = 0; i < 8; i++) {
      for (int s : copies(after, i)) {
        assertNotEquals(victim, s, "shard " + i + " left the dead server");
      }
      if (before.servers()[i] == victim) {
        assertEquals(before.backupsOf(i)[0], after.servers()[i], "shard " + i + " promoted");
      }
      hadVictim += copies(before, i)[0] == victim || copies(before, i)[1] == victim ? 1 : 0;
      assertEquals(2, after.copies(i), "shard " + i + " has 2 copies again");
      assertEquals(2, java.util.Arrays.stream(copies(after, i)).distinct().count());
    }
    assertEquals(
        (long) hadVictim,
        cluster.master.faces().get("kv").get("copies repaired"),
        "one new copy per shard that had one on the dead server");
    FerriteClient reader = cluster.adminClient();
    for (Map.Entry<String, byte[]> e : acked.entrySet()) {
      byte[] key = bytes(e.getKey());
      for (int s : copies(after, table.shardOf(key))) {
        assertArrayEquals(e.getValue(), readCopy(reader, fresh(kv), s, key), e.getKey() + "@" + s);
      }
    }
    KvTable fresh = new KvClient(cluster.client()).table("failover");
    for (Map.Entry<String, byte[]> e : acked.entrySet()) {
      assertArrayEquals(e.getValue(), fresh.get(bytes(e.getKey())), e.getKey());
      assertArrayEquals(e.getValue(), handles.get(0).get(bytes(e.getKey())), e.getKey());
    }
    // The writers met the dead server, either as a primary (a failover wait) or as a backup it
    // shipped to (a replica retry, which also refetches the placement and so may see the promotion
    // before ever writing to the dead primary): which one comes first depends on the keys drawn.
    long met = 0;
    for (KvTable h : handles) {
      met += h.lookupStats().failoverWaits() + h.lookupStats().replicaRetries();
    }
    assertTrue(met > 0, "writers met the dead server and waited for the failover");
    Object promotions = cluster.master.faces().get("kv").get("promotions");
    assertTrue(((Number) promotions).longValue() > 0, "promotions: " + promotions);
  }

  /**
   * Waits (up to 30 s) until every shard of {@code table} has {@code copies} complete copies and
   * none being filled: the master's automatic repair, nobody else's.
   */
  static void awaitCopies(KvClient kv, String table, int copies) throws InterruptedException {
    awaitCopies(kv, table, copies, 30);
  }

  static void awaitCopies(KvClient kv, String table, int copies, int seconds)
      throws InterruptedException {
    long until = System.nanoTime() + seconds * 1_000_000_000L;
    TableInfo t = kv.table(table).info();
    while (!complete(t, copies) && System.nanoTime() < until) {
      Thread.sleep(20);
      t = kv.table(table).info();
    }
    assertTrue(complete(t, copies), "every shard of " + table + " has " + copies + " copies: " + t);
  }

  private static boolean complete(TableInfo t, int copies) {
    for (int i = 0; i < t.options().shards(); i++) {
      if (t.copies(i) != copies
          || java.util.Arrays.stream(t.backupsOf(i)).anyMatch(TableInfo::isSyncing)) {
        return false;
      }
    }
    return true;
  }

  private static boolean holds(TableInfo t, int server) {
    for (int i = 0; i < t.options().shards(); i++) {
      for (int c : copies(t, i)) {
        if (TableInfo.copyServer(c) == server) {
          return true;
        }
      }
    }
    return false;
  }

  private static KvTable fresh(KvClient kv) {
    return kv.table("failover");
  }

  private static int mostPrimaries(TableInfo t) {
    Map<Integer, Integer> n = new java.util.HashMap<>();
    for (int s : t.servers()) {
      n.merge(s, 1, Integer::sum);
    }
    return Collections.max(n.entrySet(), Map.Entry.comparingByValue()).getKey();
  }

  private MemoryServer server(int id) {
    for (MemoryServer s : cluster.servers) {
      if (s.serverId() == id) {
        return s;
      }
    }
    throw new AssertionError("no server " + id);
  }

  /**
   * Registers on one replicated shard: 4 clients get (one-sided), multiGet, put and delete 3 keys
   * while the shard's primary server is closed; each key's history is linearizable (WGL checker),
   * across the failover.
   */
  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void registersStayLinearizableAcrossAFailover(TableOptions.Layout layout, TestSeed seed)
      throws Exception {
    start(3);
    KvClient kv = new KvClient(cluster.adminClient());
    KvTable table = kv.createTable("linear", options(layout, 1, 2));
    int primary = table.serverOf(0);
    int keys = 3;
    List<List<Op>> perKey = new ArrayList<>();
    AtomicInteger[] keyIds = new AtomicInteger[keys];
    for (int k = 0; k < keys; k++) {
      perKey.add(Collections.synchronizedList(new ArrayList<>()));
      keyIds[k] = new AtomicInteger();
    }
    AtomicInteger ids = new AtomicInteger();
    AtomicInteger done = new AtomicInteger();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    int opsPerThread = 400;
    for (int t = 0; t < 4; t++) {
      KvTable h = new KvClient(cluster.client()).table("linear");
      Random r = new Random(seed.value() * 17 + t);
      int thread = t;
      threads.add(
          new Thread(
              () -> {
                try {
                  for (int i = 0; i < opsPerThread || !stop.get() && i < 4000; i++) {
                    int k = r.nextInt(keys);
                    byte[] key = LinearizabilityTest.key(k);
                    int p = r.nextInt(100);
                    long call;
                    long ret;
                    boolean write;
                    long v;
                    if (p < 50) {
                      call = System.nanoTime();
                      byte[] got = p < 30 ? h.get(key) : h.multiGet(List.of(key)).get(0);
                      ret = System.nanoTime();
                      write = false;
                      v = got == null ? RegisterChecker.ABSENT : ByteBuffer.wrap(got).getLong();
                    } else if (p < 88) {
                      v = (long) thread << 32 | ids.incrementAndGet();
                      call = System.nanoTime();
                      h.put(key, LinearizabilityTest.value(v));
                      ret = System.nanoTime();
                      write = true;
                    } else {
                      v = RegisterChecker.ABSENT;
                      call = System.nanoTime();
                      h.delete(key);
                      ret = System.nanoTime();
                      write = true;
                    }
                    perKey.get(k).add(new Op(keyIds[k].getAndIncrement(), call, ret, write, v));
                    done.incrementAndGet();
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "kv-replica-linear-" + t));
    }
    for (Thread t : threads) {
      t.start();
    }
    while (done.get() < 4 * opsPerThread / 4 && failure.get() == null) {
      Thread.sleep(2);
    }
    MemoryServer dead = server(primary);
    cluster.servers.remove(dead);
    dead.close();
    // Once the backup took over, the shard gets a new copy while the clients run.
    long until = System.nanoTime() + 20_000_000_000L;
    while (kv.table("linear").serverOf(0) == primary && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    int atRepair = done.get();
    awaitCopies(kv, "linear", 2); // the master's repair, while the clients run
    // 200 more operations, or until every client ran out of its 4,000 (a slow machine: they may
    // have done most of them while the failover and the repair took their time).
    while (done.get() < atRepair + 200
        && failure.get() == null
        && threads.stream().anyMatch(Thread::isAlive)) {
      Thread.sleep(2);
    }
    stop.set(true);
    for (Thread t : threads) {
      t.join();
    }
    if (failure.get() != null) {
      throw new AssertionError("a client failed", failure.get());
    }
    TableInfo after = kv.table("linear").info();
    assertNotEquals(primary, after.servers()[0], "the backup took over");
    assertEquals(2, after.copies(0), "and the shard has 2 copies again");
    for (int k = 0; k < keys; k++) {
      List<Op> h = new ArrayList<>(perKey.get(k));
      h.sort(java.util.Comparator.comparingInt(Op::id));
      if (!RegisterChecker.check(h, RegisterChecker.ABSENT)) {
        fail("key " + k + " is not linearizable:" + RegisterChecker.describe(h));
      }
    }
  }

  @Test
  void aReplicatedTableIsDroppedFromEveryCopy() throws Exception {
    start(2);
    FerriteClient admin = cluster.adminClient();
    KvClient kv = new KvClient(admin);
    KvTable t = kv.createTable("gone", options(TableOptions.Layout.HOPSCOTCH, 2, 2));
    t.put(bytes("a"), bytes("1"));
    int backup = t.info().backupsOf(t.shardOf(bytes("a")))[0];
    assertArrayEquals(bytes("1"), readCopy(admin, t, backup, bytes("a")));
    kv.dropTable("gone");
    FerriteException e =
        assertThrows(FerriteException.class, () -> readCopy(admin, t, backup, bytes("a")));
    assertEquals(ErrorCode.NOT_FOUND, e.code(), e.getMessage());
    assertFalse(kv.tables().stream().anyMatch(x -> x.name().equals("gone")));
  }

  /**
   * A server restarts (a clean stop deletes its DRAM regions): the shards of a {@code none} table
   * whose only copy was there are lost — gets and puts answer DATA_LOST naming the table and the
   * shard, the face's lost() counts them, the other shards serve on, and dropping the table works;
   * a replicated table's shards there lose that copy only (every key still reads), and a durable
   * table's come back from the log.
   */
  @Test
  void aShardLostWithItsServersMemoryAnswersDataLostUnlessAnotherCopyHasIt() throws Exception {
    start(2);
    KvClient kv = new KvClient(cluster.adminClient());
    KvTable lonely = kv.createTable("lonely", options(TableOptions.Layout.HOPSCOTCH, 8, 1));
    KvTable twice = kv.createTable("twice", options(TableOptions.Layout.PILAF, 8, 2));
    KvTable logged =
        kv.createTable(
            "logged",
            options(TableOptions.Layout.HOPSCOTCH, 8, 1)
                .withDurability(TableOptions.Durability.INTERVAL));
    for (int i = 0; i < 64; i++) {
      for (KvTable t : List.of(lonely, twice, logged)) {
        t.put(bytes("k" + i), bytes(t.name() + i));
      }
    }
    MemoryServer old = cluster.servers.get(0);
    int victim = old.serverId();
    TableInfo placed = lonely.info();
    cluster.servers.remove(old);
    old.close();
    cluster.startServer(old.name());
    cluster.awaitServers(2);
    assertEquals(victim, cluster.servers.get(1).serverId(), "the same server came back");
    int lostShards = 0;
    for (int s = 0; s < 8; s++) {
      lostShards += placed.servers()[s] == victim ? 1 : 0;
    }
    assertTrue(lostShards > 0 && lostShards < 8, "shards on both servers: " + lostShards);
    int dataLost = 0;
    for (int i = 0; i < 64; i++) {
      byte[] k = bytes("k" + i);
      int shard = lonely.shardOf(k);
      if (placed.servers()[shard] == victim) {
        FerriteException e = assertThrows(FerriteException.class, () -> lonely.get(k));
        assertEquals(ErrorCode.DATA_LOST, e.code(), e.getMessage());
        assertTrue(
            e.getMessage().contains("shard " + shard + " of kv table lonely"), e.getMessage());
        e = assertThrows(FerriteException.class, () -> lonely.put(k, bytes("again")));
        assertEquals(ErrorCode.DATA_LOST, e.code(), e.getMessage());
        dataLost++;
      } else {
        assertArrayEquals(bytes("lonely" + i), lonely.get(k), "a shard on the other server");
      }
      assertArrayEquals(bytes("twice" + i), twice.get(k), "replicated: another copy has it");
      assertArrayEquals(bytes("logged" + i), logged.get(k), "durable: replayed from the log");
    }
    assertTrue(dataLost > 0);
    io.ferrite.kernel.master.MasterExtension dir =
        cluster.master.state().extension(KvProtocol.MASTER_SERVICE);
    assertEquals(Map.of("shards", (long) lostShards, "tables", 1L), lost(dir));
    // The restarted server's copies of "twice" were gone; it is the only server without one, so
    // the master's repair makes them there again, by itself, each with every pair.
    awaitCopies(kv, "twice", 2);
    TableInfo t2 = kv.table("twice").info();
    for (int i = 0; i < 64; i++) {
      byte[] k = bytes("k" + i);
      int shard = twice.shardOf(k);
      assertNotEquals(victim, t2.servers()[shard], "the primary is the copy that survived");
      for (int s : copies(t2, shard)) {
        assertArrayEquals(
            bytes("twice" + i), readCopy(kv.ferrite(), twice, s, k), "k" + i + "@" + s);
      }
    }
    kv.dropTable("lonely");
    assertEquals(Map.of(), lost(dir));
    assertTrue(twice.put(bytes("new"), bytes("v")), "the replicated table takes writes");
  }

  private Map<String, Long> lost(io.ferrite.kernel.master.MasterExtension dir) {
    synchronized (cluster.master.state()) {
      return dir.lost();
    }
  }

  private static int replicate(
      FerriteClient c, KvTable t, int server, long seq, boolean delete, String key, String value) {
    return leased(() -> replicateOnce(c, t, server, seq, delete, key, value));
  }

  /**
   * {@code call}, made again (bounded, 30 s) while the server refuses it because its kv lease
   * lapsed and is being granted again: a loaded machine delays a renewal, and the refusal applies
   * nothing (ServerLease); not what these tests are about.
   */
  private static <T> T leased(java.util.function.Supplier<T> call) {
    long until = System.nanoTime() + 30_000_000_000L;
    while (true) {
      try {
        return call.get();
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.UNAVAILABLE
            || !e.getMessage().contains("kv lease lapsed")
            || System.nanoTime() > until) {
          throw e;
        }
        java.util.concurrent.locks.LockSupport.parkNanos(20_000_000L);
      }
    }
  }

  private static int replicateOnce(
      FerriteClient c, KvTable t, int server, long seq, boolean delete, String key, String value) {
    ByteBuffer b =
        c.callSync(
            server,
            KvProtocol.SERVER_SERVICE,
            KvProtocol.REPLICATE,
            new Wire.Writer()
                .i64(t.info().tableId())
                .i32(0)
                .i64(seq)
                .u8(delete ? 1 : 0)
                .bytes(bytes(key))
                .bytes(bytes(value))
                .toBuffer());
    return new Wire.Reader(b, "replicate").u8("status");
  }

  /**
   * Shipped writes reach a copy in any order (concurrent writers ship after the primary answered
   * them): a copy applies one only if its sequence is newer than the key's, deletes included.
   */
  /**
   * A handle whose placement predates a primary's death still names that server as the shard's
   * primary. Once the server is back and the repair made it a backup again, the handle must not
   * read that copy as the primary (a half-filled copy misses keys; a complete backup can be behind
   * the primary's in-flight writes): the copy's fence is the repair's placement version, so the
   * handle's LAYOUT answers MOVED and it fetches the table. (Seen in .ci/run as a get answering
   * null for a key every copy had: the stale handle read the copy being filled.)
   */
  @Test
  void aHandleThatMissedAFailoverNeverReadsTheRepairedCopyAsItsPrimary() throws Exception {
    start(2);
    KvClient kv = new KvClient(cluster.adminClient());
    KvTable table = kv.createTable("stale", options(TableOptions.Layout.HOPSCOTCH, 4, 2));
    for (int i = 0; i < 64; i++) {
      table.put(bytes("k" + i), bytes("v" + i));
    }
    KvTable stale = new KvClient(cluster.client()).table("stale"); // no layout fetched yet
    TableInfo before = stale.info();
    MemoryServer old = server(mostPrimaries(before));
    int victim = old.serverId();
    cluster.servers.remove(old);
    old.close(); // the goodbye: DEAD at once, its shards' backups promoted
    cluster.startServer(old.name());
    cluster.awaitServers(2);
    awaitCopies(kv, "stale", 2); // the repair made the victim a backup of every shard again
    TableInfo after = kv.table("stale").info();
    int staleShard = -1;
    for (int s = 0; s < 4; s++) {
      if (before.servers()[s] == victim) {
        staleShard = s;
        assertNotEquals(victim, after.servers()[s], "shard " + s + " promoted away");
      }
    }
    assertTrue(staleShard >= 0, "the victim was a primary: " + before);
    // The fence itself: the victim's new copy refuses a LAYOUT with the old placement version, and
    // answers one with the current version (it is a backup; only a stale client would ask).
    FerriteClient admin = cluster.adminClient();
    int shard = staleShard;
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () ->
                admin.callSync(
                    victim,
                    KvProtocol.SERVER_SERVICE,
                    KvProtocol.LAYOUT,
                    new Wire.Writer()
                        .i64(before.tableId())
                        .i32(shard)
                        .i64(stale.placementVersion())
                        .toBuffer()));
    assertEquals(ErrorCode.MOVED, e.code(), e.getMessage());
    // And the handle: every key reads right, through the promoted primaries (it fetched the table).
    for (int i = 0; i < 64; i++) {
      assertArrayEquals(bytes("v" + i), stale.get(bytes("k" + i)), "k" + i);
    }
    assertNotEquals(
        victim, stale.info().servers()[staleShard], "the stale handle learned the promotion");
  }

  @Test
  void anOlderShippedWriteNeverReplacesANewerOne() throws Exception {
    start(2);
    FerriteClient c = cluster.adminClient();
    KvClient kv = new KvClient(c);
    KvTable t = kv.createTable("order", options(TableOptions.Layout.HOPSCOTCH, 1, 2));
    int backup = t.info().backupsOf(0)[0];
    assertEquals(KvProtocol.CREATED, replicate(c, t, backup, 20, false, "k", "v20"));
    assertEquals(KvProtocol.NOT_APPLIED, replicate(c, t, backup, 10, false, "k", "v10"));
    assertArrayEquals(bytes("v20"), readCopy(c, t, backup, bytes("k")));
    assertEquals(KvProtocol.NOT_APPLIED, replicate(c, t, backup, 15, true, "k", ""));
    assertArrayEquals(bytes("v20"), readCopy(c, t, backup, bytes("k")));
    assertEquals(KvProtocol.DELETED, replicate(c, t, backup, 30, true, "k", ""));
    assertEquals(KvProtocol.NOT_APPLIED, replicate(c, t, backup, 25, false, "k", "v25"));
    assertEquals(null, readCopy(c, t, backup, bytes("k")), "a delete's sequence is kept");
    assertEquals(KvProtocol.CREATED, replicate(c, t, backup, 31, false, "k", "v31"));
    assertArrayEquals(bytes("v31"), readCopy(c, t, backup, bytes("k")));
    FerriteException e =
        assertThrows(FerriteException.class, () -> replicate(c, t, backup, 0, false, "k", "x"));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    KvTable single = kv.createTable("single", options(TableOptions.Layout.HOPSCOTCH, 1, 1));
    e =
        assertThrows(
            FerriteException.class,
            () -> replicate(c, single, single.serverOf(0), 5, false, "k", "x"));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertTrue(e.getMessage().contains("one copy"), e.getMessage());
  }

  /**
   * A repair's target may hold an old copy of the shard (a server declared DEAD that came back as
   * the same process keeps it, with keys deleted since): the new copy starts empty, so it holds
   * exactly the primary's pairs.
   */
  @Test
  void aRepairStartsFromAnEmptyCopy() throws Exception {
    // The operator's repair (KvReplicator as a client): the master's own is off.
    cluster = new KvCluster(dir, 3, false, Map.of(KvConfig.REPAIR_PERIOD, "0"));
    cluster.awaitServers(3);
    FerriteClient admin = cluster.adminClient();
    KvClient kv = new KvClient(admin);
    KvTable t = kv.createTable("stale", options(TableOptions.Layout.HOPSCOTCH, 1, 2));
    for (int i = 0; i < 10; i++) {
      t.put(bytes("k" + i), bytes("v" + i));
    }
    int primary = t.info().servers()[0];
    int backup = t.info().backupsOf(0)[0];
    int third =
        cluster.servers.stream()
            .mapToInt(MemoryServer::serverId)
            .filter(id -> id != primary && id != backup)
            .findFirst()
            .orElseThrow();
    // An old copy on the third server, with a key the table does not have (any more).
    Wire.Writer open = new Wire.Writer();
    t.info().write(open);
    admin.callSync(third, KvProtocol.SERVER_SERVICE, KvProtocol.OPEN_SHARD, open.i32(0).toBuffer());
    assertEquals(
        KvProtocol.CREATED, replicate(admin, t, third, Long.MAX_VALUE / 2, false, "ghost", "boo"));
    MemoryServer dead = server(primary);
    cluster.servers.remove(dead);
    dead.close();
    long until = System.nanoTime() + 20_000_000_000L;
    while (kv.table("stale").info().servers()[0] == primary && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    assertEquals(1, new KvReplicator(kv, line -> {}).repair(List.of()));
    TableInfo after = kv.table("stale").info();
    assertEquals(third, after.backupsOf(0)[0], "the only server left");
    assertEquals(null, readCopy(admin, t, third, bytes("ghost")), "the old copy was dropped");
    for (int i = 0; i < 10; i++) {
      assertArrayEquals(bytes("v" + i), readCopy(admin, t, third, bytes("k" + i)));
    }
  }

  /**
   * The master restarts while a shard is short of a copy (journaled by the failover, no server to
   * copy to yet): the restarted master finds it in its directory and, once a server joins, makes
   * the copy by itself; every key reads back from both copies.
   */
  @Test
  void aShardShortOfACopyIsRepairedAfterAMasterRestart() throws Exception {
    start(2);
    FerriteClient admin = cluster.adminClient();
    KvClient kv = new KvClient(admin);
    KvTable t = kv.createTable("restart", options(TableOptions.Layout.HOPSCOTCH, 2, 2));
    for (int i = 0; i < 50; i++) {
      t.put(bytes("k" + i), bytes("v" + i));
    }
    int victim = t.info().servers()[0];
    MemoryServer dead = server(victim);
    cluster.servers.remove(dead);
    dead.close();
    long until = System.nanoTime() + 20_000_000_000L;
    while (kv.table("restart").info().servers()[0] == victim && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    TableInfo failed = kv.table("restart").info();
    assertNotEquals(victim, failed.servers()[0], "the backup took over");
    assertEquals(1, failed.copies(0), "one copy left, and no server to copy it to");
    cluster.startMaster(); // a restart: the directory comes back from the journal
    cluster.awaitServers(1);
    cluster.startServer("kv-new");
    KvClient again = new KvClient(cluster.adminClient());
    awaitCopies(again, "restart", 2);
    TableInfo after = again.table("restart").info();
    for (int i = 0; i < 50; i++) {
      byte[] key = bytes("k" + i);
      for (int s : copies(after, t.shardOf(key))) {
        assertArrayEquals(bytes("v" + i), readCopy(again.ferrite(), t, s, key), "k" + i + "@" + s);
      }
    }
  }

  /**
   * A repair's target that cannot be reached (its endpoint killed: it still heartbeats, so the
   * master keeps it ALIVE and would pick it again and again) is avoided: the shards that lost a
   * copy get it on another server, and every copy holds every pair.
   */
  @Test
  void aRepairWhoseTargetCannotBeReachedPicksAnother() throws Exception {
    start(4);
    KvClient kv = new KvClient(cluster.adminClient());
    KvTable t = kv.createTable("detour", options(TableOptions.Layout.HOPSCOTCH, 8, 2));
    for (int i = 0; i < 64; i++) {
      t.put(bytes("k" + i), bytes("v" + i));
    }
    TableInfo before = t.info();
    int victim = mostPrimaries(before);
    // The dark server shares no shard with the victim (a shard left only on it could not be read).
    int dark = -1;
    for (MemoryServer m : cluster.servers) {
      int id = m.serverId();
      boolean shares = false;
      for (int i = 0; i < 8; i++) {
        int[] c = copies(before, i);
        shares |= (c[0] == victim || c[1] == victim) && (c[0] == id || c[1] == id);
      }
      if (id != victim && !shares) {
        dark = id;
      }
    }
    assertNotEquals(-1, dark, "a server sharing no shard with the victim: " + before);
    for (String address : server(dark).addresses().values()) {
      cluster.network.kill(address);
    }
    MemoryServer dead = server(victim);
    cluster.servers.remove(dead);
    dead.close();
    long until = System.nanoTime() + 20_000_000_000L;
    while (holds(kv.table("detour").info(), victim) && System.nanoTime() < until) {
      Thread.sleep(20); // until the master declared it DEAD
    }
    awaitCopies(kv, "detour", 2);
    TableInfo after = kv.table("detour").info();
    Map<String, Object> face = cluster.master.faces().get("kv");
    assertTrue(
        ((Number) face.get("repairs failed")).longValue() > 0,
        "the dark server was tried first for some shard: " + face);
    FerriteClient admin = kv.ferrite();
    for (int i = 0; i < 8; i++) {
      int[] was = copies(before, i);
      if (was[0] == victim || was[1] == victim) {
        for (int s : copies(after, i)) {
          assertNotEquals(dark, s, "shard " + i + ": not on the server that cannot be reached");
          assertNotEquals(victim, s);
        }
      }
    }
    for (int i = 0; i < 64; i++) {
      byte[] k = bytes("k" + i);
      int shard = t.shardOf(k);
      int[] was = copies(before, shard);
      if (was[0] == victim || was[1] == victim) {
        for (int s : copies(after, shard)) {
          assertArrayEquals(bytes("v" + i), readCopy(admin, t, s, k), "k" + i + "@" + s);
        }
      }
    }
  }

  /**
   * A repair dies with the master right after ADD_COPY (the copy being filled is in the journal,
   * half empty): the restarted master drops it at once and copies the shard again, so it ends with
   * 2 complete copies holding every pair, also those written while the copy was half filled.
   */
  @Test
  void aCopyLeftHalfFilledByAMasterThatDiedIsMadeAgain() throws Exception {
    // The first master repairs nothing (as if its repair died at once); the restarted one does.
    cluster = new KvCluster(dir, 3, false, Map.of(KvConfig.REPAIR_PERIOD, "0"));
    cluster.awaitServers(3);
    KvClient kv = new KvClient(cluster.adminClient());
    KvTable t = kv.createTable("half", options(TableOptions.Layout.PILAF, 1, 2));
    for (int i = 0; i < 50; i++) {
      t.put(bytes("k" + i), bytes("v" + i));
    }
    int victim = t.info().servers()[0];
    MemoryServer dead = server(victim);
    cluster.servers.remove(dead);
    dead.close();
    long until = System.nanoTime() + 20_000_000_000L;
    while (kv.table("half").info().servers()[0] == victim && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    // ADD_COPY, then nothing: a copy being filled that nobody fills.
    Futures.join(
        kv.ferrite()
            .callMaster(
                KvProtocol.MASTER_SERVICE,
                KvProtocol.ADD_COPY,
                new Wire.Writer().str("half").i32(0).toBuffer()));
    assertTrue(TableInfo.isSyncing(kv.table("half").info().backupsOf(0)[0]), "being filled");
    for (int i = 50; i < 60; i++) {
      t.put(bytes("k" + i), bytes("v" + i)); // shipped to the half-filled copy too
    }
    cluster.masterSettings = Map.of(KvConfig.REPAIR_PERIOD, "1s");
    cluster.startMaster();
    cluster.awaitServers(2);
    KvClient again = new KvClient(cluster.adminClient());
    // Well before the 30 s after which a copy being filled by someone else is dropped.
    awaitCopies(again, "half", 2, 15);
    TableInfo after = again.table("half").info();
    for (int i = 0; i < 60; i++) {
      byte[] key = bytes("k" + i);
      for (int s : copies(after, 0)) {
        assertArrayEquals(bytes("v" + i), readCopy(again.ferrite(), t, s, key), "k" + i + "@" + s);
      }
    }
  }
}
