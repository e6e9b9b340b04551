package io.ferrite.kv;

import static io.ferrite.kv.ReplicationTest.bytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.local.LocalFaults;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.MemoryServer;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A write the dying primary applied but whose shipment arrives late (docs/KV.md "Repairs", the
 * REPLICATE fence; the loss KvReplicaMultiProcessTest saw once in CI). Shard 0 on A (primary) and B
 * (backup), a third server C. A writer's put is applied by A; its REPLICATE to B is held in the
 * network (the local fabric's {@link LocalFaults#holdNextRpc}). A dies, B is promoted, the master's
 * repair pages B into a new copy on C, and only then does the shipment reach B. The writer's table
 * still names [A, B]: unfenced, B applied it and the writer acknowledged a put that C never got,
 * lost when B died in turn. Fenced, B refuses it (MOVED), the writer refetches and ships to B and
 * C.
 */
class LateShipmentTest {
  @TempDir Path dir;
  KvCluster cluster;

  @AfterEach
  void stop() throws Exception {
    if (cluster != null) {
      cluster.network.faults().heal();
      cluster.close();
    }
  }

  private static TableOptions options() {
    return TableOptions.DEFAULTS
        .withLayout(TableOptions.Layout.HOPSCOTCH)
        .withShards(1)
        .withSlotsPerShard(1024)
        .withExtents(1 << 20, 4)
        .withLimits(64, 4096)
        .withReplicas(2);
  }

  @Test
  void aShipmentHeldPastTheRepairReachesTheNewCopyOrIsNotAcknowledged() throws Exception {
    cluster = new KvCluster(dir, 3);
    cluster.awaitServers(3);
    KvClient kv = new KvClient(cluster.adminClient());
    KvTable created = kv.createTable("late", options());
    TableInfo before = created.info();
    int a = before.servers()[0];
    int b = before.backupsOf(0)[0];
    int c = other(a, b);
    for (int i = 0; i < 32; i++) {
      created.put(bytes("k" + i), bytes("v" + i));
    }
    // The writer's handle, fetched now ([A, B]) and never refreshed until its shipment fails. Its
    // RPC deadline outlasts the hold: a timed-out shipment would be retried with a fresh table and
    // the late delivery would not matter.
    FerriteClient writerClient =
        cluster.client(
            ClientOptions.builder(KvCluster.CREDENTIALS.as(Role.CLIENT))
                .rpcTimeout(Duration.ofSeconds(120)));
    KvTable w = new KvClient(writerClient).table("late");
    assertEquals(before.servers()[0], w.info().servers()[0]);
    LocalFaults.Hold hold =
        cluster.network.faults().holdNextRpc(b, KvProtocol.SERVER_SERVICE, KvProtocol.REPLICATE);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicBoolean acknowledged = new AtomicBoolean();
    Thread writer =
        new Thread(
            () -> {
              try {
                w.put(bytes("late"), bytes("applied by A, shipped late"));
                acknowledged.set(true);
              } catch (Throwable e) {
                failure.set(e);
              }
            },
            "kv-late-writer");
    writer.start();
    try {
      assertTrue(
          hold.awaitCaught(Duration.ofSeconds(30)),
          "the put's shipment to B is held in the network");
      // A applied the put (its shipment is on its way); now A dies (the goodbye: DEAD at once).
      kill(a);
      ReplicationTest.awaitCopies(kv, "late", 2);
      TableInfo repaired = kv.table("late").info();
      assertEquals(b, repaired.servers()[0], "B promoted");
      assertEquals(c, repaired.backupsOf(0)[0], "the repair's new copy is on C");
      assertFalse(acknowledged.get(), "the put waits for its shipment");
    } finally {
      hold.release(); // the shipment reaches B after the repair paged B into C
      writer.join(60_000);
    }
    assertFalse(writer.isAlive(), "the writer finished once its shipment was delivered");
    if (failure.get() != null) {
      throw new AssertionError("the writer failed", failure.get());
    }
    assertTrue(acknowledged.get());
    // B dies too: C, the repaired copy, is all that is left, and must hold the acknowledged put.
    kill(b);
    TableInfo last = awaitPrimary(kv, c);
    assertEquals(1, last.copies(0));
    KvTable fresh = new KvClient(cluster.client()).table("late");
    assertArrayEquals(
        bytes("applied by A, shipped late"),
        fresh.get(bytes("late")),
        "the acknowledged put is at C, the copy the repair made while its shipment was held");
    for (int i = 0; i < 32; i++) {
      assertArrayEquals(bytes("v" + i), fresh.get(bytes("k" + i)), "k" + i);
    }
    assertTrue(w.lookupStats().replicaRetries() > 0, "the late shipment was refused and retried");
  }

  /**
   * A late shipment whose writer already knows the repair's copy being filled: it must reach the
   * promoted primary before that copy. The repair (the test's, paused before its DROP_SHARD on C)
   * has added C; the writer's shipment of A's put to B is lost twice in the network, so its second
   * round sees [B, C being filled]. Shipped to C first, the put would land in the copy the repair
   * is about to drop, and reach B only after B's pages (held until the repair is over): C never
   * gets it. The writer ships to C only once B has it.
   */
  @Test
  void aShipmentReachesACopyBeingFilledOnlyAfterThePromotedPrimary() throws Exception {
    cluster = new KvCluster(dir, 3, false, Map.of(KvConfig.REPAIR_PERIOD, "0"));
    cluster.awaitServers(3);
    FerriteClient admin = cluster.adminClient();
    KvClient kv = new KvClient(admin);
    KvTable created = kv.createTable("late", options());
    TableInfo before = created.info();
    int a = before.servers()[0];
    int b = before.backupsOf(0)[0];
    int c = other(a, b);
    for (int i = 0; i < 32; i++) {
      created.put(bytes("k" + i), bytes("v" + i));
    }
    FerriteClient writerClient =
        cluster.client(
            ClientOptions.builder(KvCluster.CREDENTIALS.as(Role.CLIENT))
                .rpcTimeout(Duration.ofSeconds(120)));
    KvTable w = new KvClient(writerClient).table("late");
    LocalFaults faults = cluster.network.faults();
    LocalFaults.Hold first = faults.holdNextRpc(b, KvProtocol.SERVER_SERVICE, KvProtocol.REPLICATE);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicBoolean acknowledged = new AtomicBoolean();
    Thread writer =
        new Thread(
            () -> {
              try {
                w.put(bytes("late"), bytes("applied by A"));
                acknowledged.set(true);
              } catch (Throwable e) {
                failure.set(e);
              }
            },
            "kv-late-writer");
    CountDownLatch atDrop = new CountDownLatch(1);
    CountDownLatch dropMayGo = new CountDownLatch(1);
    AtomicInteger repairedOn = new AtomicInteger(-1);
    Thread repair =
        new Thread(
            () -> {
              try {
                repairedOn.set(
                    new KvReplicator(new PausedAtDrop(kv, atDrop, dropMayGo), line -> {})
                        .copy("late", 0));
              } catch (Throwable e) {
                failure.compareAndSet(null, e);
              }
            },
            "kv-late-repair");
    writer.start();
    LocalFaults.Hold third = null;
    try {
      assertTrue(first.awaitCaught(Duration.ofSeconds(30)), "the shipment to B is held");
      kill(a);
      awaitPrimary(kv, b);
      repair.start();
      assertTrue(atDrop.await(30, TimeUnit.SECONDS), "the repair added C and waits to drop it");
      // Lost twice: the writer refetches after the first loss and sees [B, C being filled].
      LocalFaults.Hold second =
          faults.holdNextRpc(b, KvProtocol.SERVER_SERVICE, KvProtocol.REPLICATE);
      first.drop();
      assertTrue(second.awaitCaught(Duration.ofSeconds(30)), "the second round ships to B first");
      assertTrue(
          Arrays.stream(w.info().backupsOf(0)).anyMatch(TableInfo::isSyncing),
          "the writer knows the copy being filled: " + w.info());
      third = faults.holdNextRpc(b, KvProtocol.SERVER_SERVICE, KvProtocol.REPLICATE);
      second.drop();
      assertTrue(third.awaitCaught(Duration.ofSeconds(30)), "the third round ships to B");
      // The repair now drops C's shard, opens the copy and pages B: without the put.
      dropMayGo.countDown();
      repair.join(60_000);
      assertFalse(repair.isAlive(), "the repair finished");
      assertEquals(c, repairedOn.get());
      assertFalse(acknowledged.get(), "the put waits for its shipment to B");
    } finally {
      dropMayGo.countDown();
      if (third != null) {
        third.release(); // reaches B after its pages
      }
      faults.heal();
      writer.join(60_000);
    }
    assertFalse(writer.isAlive(), "the writer finished");
    if (failure.get() != null) {
      throw new AssertionError("the writer or the repair failed", failure.get());
    }
    assertTrue(acknowledged.get());
    kill(b);
    awaitPrimary(kv, c);
    assertArrayEquals(
        bytes("applied by A"),
        new KvClient(cluster.client()).table("late").get(bytes("late")),
        "the acknowledged put is at C");
  }

  /** The operator's repair, whose DROP_SHARD on the target waits for the test. */
  private record PausedAtDrop(KvClient kv, CountDownLatch atDrop, CountDownLatch mayGo)
      implements KvReplicator.Cluster {
    @Override
    public KvReplicator.AddedCopy addCopy(String name, int shard) {
      Wire.Reader r =
          new Wire.Reader(
              kv.callMaster(KvProtocol.ADD_COPY, new Wire.Writer().str(name).i32(shard).toBuffer()),
              "add-copy");
      TableInfo t = TableInfo.read(r);
      long version = r.i64("version");
      int target = r.i32("server");
      r.end();
      return new KvReplicator.AddedCopy(t, version, target);
    }

    @Override
    public TableInfo endCopy(String name, int shard, int server, boolean commit) {
      return KvClient.readTable(
              kv.callMaster(
                  KvProtocol.END_COPY,
                  new Wire.Writer().str(name).i32(shard).i32(server).u8(commit ? 1 : 0).toBuffer()))
          .table();
    }

    @Override
    public CompletableFuture<ByteBuffer> call(int server, int opcode, ByteBuffer body) {
      if (opcode == KvProtocol.DROP_SHARD) {
        atDrop.countDown();
        try {
          if (!mayGo.await(60, TimeUnit.SECONDS)) {
            throw new AssertionError("the test never let the repair go on");
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new AssertionError(e);
        }
      }
      return kv.ferrite().call(server, KvProtocol.SERVER_SERVICE, opcode, body);
    }
  }

  /**
   * A REPLICATE (or PUT) without the trailing placement version comes from a client older than the
   * REPLICATE fence: a shard no repair fenced still takes it (read as version 0), a fenced one
   * refuses it with UNSUPPORTED saying why, not with a MOVED no refetch would cure; a versioned
   * shipment older than the fence is MOVED, a current one applied.
   */
  @Test
  void aShipmentWithoutAPlacementVersionIsRefusedByAFencedCopyAsFromAnOlderClient()
      throws Exception {
    cluster = new KvCluster(dir, 3);
    cluster.awaitServers(3);
    FerriteClient admin = cluster.adminClient();
    KvClient kv = new KvClient(admin);
    KvTable t = kv.createTable("old", options());
    int a = t.info().servers()[0];
    int b = t.info().backupsOf(0)[0];
    long tableId = t.info().tableId();
    assertEquals(KvProtocol.CREATED, replicateOnceLeased(admin, b, tableId, 10, "k0"));
    kill(a);
    ReplicationTest.awaitCopies(kv, "old", 2);
    long now = kv.table("old").placementVersion();
    FerriteException e =
        assertThrows(FerriteException.class, () -> replicate(admin, b, tableId, 11, "k1", null));
    assertEquals(ErrorCode.UNSUPPORTED, e.code(), e.getMessage());
    assertTrue(e.getMessage().contains("older than the server"), e.getMessage());
    e = assertThrows(FerriteException.class, () -> replicate(admin, b, tableId, 12, "k2", 0L));
    assertEquals(ErrorCode.MOVED, e.code(), e.getMessage());
    e =
        assertThrows(
            FerriteException.class,
            () ->
                admin.callSync(
                    b,
                    KvProtocol.SERVER_SERVICE,
                    KvProtocol.PUT,
                    new Wire.Writer()
                        .i64(tableId)
                        .i32(0)
                        .u8(KvProtocol.MODE_PUT)
                        .bytes(bytes("k3"))
                        .bytes(bytes("v"))
                        .bytes(new byte[0])
                        .toBuffer()));
    assertEquals(ErrorCode.UNSUPPORTED, e.code(), e.getMessage());
    assertEquals(KvProtocol.CREATED, replicate(admin, b, tableId, 13, "k4", now));
  }

  private static int replicate(
      FerriteClient client, int server, long tableId, long seq, String key, Long version) {
    Wire.Writer w =
        new Wire.Writer().i64(tableId).i32(0).i64(seq).u8(0).bytes(bytes(key)).bytes(bytes("v"));
    if (version != null) {
      w.i64(version);
    }
    ByteBuffer answer =
        client.callSync(server, KvProtocol.SERVER_SERVICE, KvProtocol.REPLICATE, w.toBuffer());
    return new Wire.Reader(answer, "replicate").u8("status");
  }

  /**
   * {@link #replicate} without a version, sent again while {@code server}'s kv lease is not granted
   * yet (a server just started verifies its copies with the master first: CI saw the first call
   * refused a few milliseconds after the table was made). Any other refusal is thrown.
   */
  private static int replicateOnceLeased(
      FerriteClient client, int server, long tableId, long seq, String key)
      throws InterruptedException {
    for (int attempt = 0; ; attempt++) {
      try {
        return replicate(client, server, tableId, seq, key, null);
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.UNAVAILABLE
            || !e.getMessage().contains(MappedRegion.LEASE_LAPSED)
            || attempt >= 3000) {
          throw e;
        }
        Thread.sleep(10);
      }
    }
  }

  private int other(int a, int b) {
    for (MemoryServer s : cluster.servers) {
      if (s.serverId() != a && s.serverId() != b) {
        return s.serverId();
      }
    }
    throw new AssertionError("no third server");
  }

  /** Closes server {@code id}: its goodbye makes the master declare it DEAD at once. */
  private void kill(int id) throws Exception {
    MemoryServer dead =
        cluster.servers.stream().filter(s -> s.serverId() == id).findFirst().orElseThrow();
    cluster.servers.remove(dead);
    dead.close();
  }

  /** Waits (up to 30 s) until the master names {@code server} shard 0's primary. */
  private static TableInfo awaitPrimary(KvClient kv, int server) throws InterruptedException {
    long until = System.nanoTime() + 30_000_000_000L;
    TableInfo t = kv.table("late").info();
    while (t.servers()[0] != server && System.nanoTime() < until) {
      Thread.sleep(20);
      t = kv.table("late").info();
    }
    assertEquals(server, t.servers()[0], "shard 0 promoted to server " + server + ": " + t);
    assertNotEquals(TableInfo.LOST, t.servers()[0]);
    return t;
  }
}
