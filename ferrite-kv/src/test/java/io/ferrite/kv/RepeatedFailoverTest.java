package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.MemoryServer;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Two server deaths in a row under one running writer (issue #20, the resilience bench that stopped
 * at its second kill): the first death promotes the shard's backup and a repair gives it a new
 * copy; the writer's handle last fetched the table while that copy was being filled, so it still
 * sees one complete copy when the second death takes the promoted primary. The writer must ask the
 * master again, wait for the failover, and go on; every acknowledged put is then read back. Seeded.
 */
@ExtendWith(SeedExtension.class)
class RepeatedFailoverTest {
  @TempDir Path dir;
  @AutoClose KvCluster cluster;

  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void aWriterGoesOnAcrossTwoServerDeathsAndTheRepairBetween(
      TableOptions.Layout layout, TestSeed seed) throws Exception {
    // The repair between the deaths is run by the test (below), so that the writer's handle is
    // known to have fetched the table while the new copy was being filled: the master's is off.
    cluster = new KvCluster(dir, 3, false, Map.of(KvConfig.REPAIR_PERIOD, "0"));
    cluster.awaitServers(3);
    FerriteClient admin = cluster.adminClient();
    KvClient kv = new KvClient(admin);
    kv.createTable(
        "twice",
        TableOptions.DEFAULTS
            .withLayout(layout)
            .withShards(1)
            .withSlotsPerShard(1024)
            .withExtents(1 << 20, 4)
            .withLimits(64, 4096)
            .withReplicas(2));
    KvTable w = new KvClient(cluster.client()).table("twice");
    Map<String, byte[]> acked = new ConcurrentHashMap<>();
    AtomicInteger puts = new AtomicInteger();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Random r = new Random(seed.value());
    Thread writer =
        new Thread(
            () -> {
              try {
                for (long n = 0; !stop.get(); n++) {
                  String k = "k" + r.nextInt(30);
                  byte[] v = ReplicationTest.bytes(k + "=" + n + "/" + "x".repeat(r.nextInt(50)));
                  w.put(ReplicationTest.bytes(k), v);
                  acked.put(k, v); // one writer: the last acknowledged value
                  puts.incrementAndGet();
                }
              } catch (Throwable e) {
                failure.compareAndSet(null, e);
              }
            },
            "kv-twice-writer");
    writer.start();
    try {
      awaitPuts(puts, failure, 100);
      int first = w.info().servers()[0];
      int promoted = w.info().backupsOf(0)[0];
      kill(first);
      // Until the writer went on at the promoted backup.
      awaitPuts(puts, failure, puts.get() + 100);
      assertEquals(promoted, w.info().servers()[0], "the writer writes to the promoted backup");
      // The repair, paused before END_COPY until the writer fetched the table with the copy being
      // filled (COPY_PAGE's fence answered its next put MOVED).
      int third = new KvReplicator(new Paused(kv, w, failure), line -> {}).copy("twice", 0);
      awaitPuts(puts, failure, puts.get() + 100);
      assertEquals(
          1, w.info().copies(0), "the writer's handle still sees the new copy being filled");
      assertEquals(2, kv.table("twice").info().copies(0), "the master made it a full backup");
      // The second death: the promoted primary. The writer asks the master and goes on at the
      // repaired copy once it is promoted in turn.
      kill(promoted);
      awaitPuts(puts, failure, puts.get() + 100);
      assertEquals(third, w.info().servers()[0], "the repaired copy took over");
    } finally {
      stop.set(true);
      writer.join();
    }
    if (failure.get() != null) {
      throw new AssertionError("the writer failed", failure.get());
    }
    TableInfo after = kv.table("twice").info();
    assertNotEquals(0, acked.size());
    KvTable fresh = new KvClient(cluster.client()).table("twice");
    for (Map.Entry<String, byte[]> e : acked.entrySet()) {
      byte[] key = ReplicationTest.bytes(e.getKey());
      assertArrayEquals(e.getValue(), fresh.get(key), e.getKey());
      assertArrayEquals(e.getValue(), w.get(key), e.getKey());
      assertArrayEquals(e.getValue(), readCopy(admin, after, after.servers()[0], key), e.getKey());
    }
  }

  /**
   * Waits until {@code puts} reached {@code n} (a writer that failed ends the wait, and the test).
   */
  private static void awaitPuts(AtomicInteger puts, AtomicReference<Throwable> failure, int n)
      throws InterruptedException {
    long until = System.nanoTime() + 30_000_000_000L;
    while (puts.get() < n && failure.get() == null && System.nanoTime() < until) {
      Thread.sleep(5);
    }
    if (failure.get() != null) {
      throw new AssertionError("the writer failed at put " + puts.get(), failure.get());
    }
    assertTrue(puts.get() >= n, "the writer made " + puts.get() + " puts of " + n);
  }

  /** Closes server {@code id}: its heartbeats stop, the master declares it DEAD after 2 s. */
  private void kill(int id) throws Exception {
    MemoryServer dead =
        cluster.servers.stream().filter(s -> s.serverId() == id).findFirst().orElseThrow();
    cluster.servers.remove(dead);
    dead.close();
  }

  private static byte[] readCopy(FerriteClient c, TableInfo t, int server, byte[] key) {
    ByteBuffer b =
        c.callSync(
            server,
            KvProtocol.SERVER_SERVICE,
            KvProtocol.GET,
            // The newest placement version there is: the test reads each copy as what it is.
            new Wire.Writer().i64(t.tableId()).i32(0).bytes(key).i64(Long.MAX_VALUE).toBuffer());
    Wire.Reader r = new Wire.Reader(b, "get");
    int status = r.u8("status");
    byte[] v = r.bytes("value");
    return status == KvProtocol.FOUND ? v : null;
  }

  /**
   * The operator's repair (the directory's ADD_COPY and END_COPY, the servers' kv service, with the
   * admin's credentials), whose END_COPY waits until the writer's handle has fetched the table
   * naming the copy being filled.
   */
  private record Paused(KvClient kv, KvTable writer, AtomicReference<Throwable> failure)
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
      long until = System.nanoTime() + 30_000_000_000L;
      while (commit
          && Arrays.stream(writer.info().backupsOf(shard)).noneMatch(TableInfo::isSyncing)
          && failure.get() == null
          && System.nanoTime() < until) {
        java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
      }
      assertTrue(
          Arrays.stream(writer.info().backupsOf(shard)).anyMatch(TableInfo::isSyncing) || !commit,
          "the writer fetched the table with the copy being filled: " + writer.info());
      return KvClient.readTable(
              kv.callMaster(
                  KvProtocol.END_COPY,
                  new Wire.Writer().str(name).i32(shard).i32(server).u8(commit ? 1 : 0).toBuffer()))
          .table();
    }

    @Override
    public CompletableFuture<ByteBuffer> call(int server, int opcode, ByteBuffer body) {
      return kv.ferrite().call(server, KvProtocol.SERVER_SERVICE, opcode, body);
    }
  }
}
