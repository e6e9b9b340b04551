package io.ferrite.kv;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kv.TableOptions.Durability;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The operation log: tables with {@code interval} and {@code always} durability get their writes
 * back when their server restarts (the log is replayed before it serves), {@code none} tables come
 * back empty; stale client handles follow the new regions. Both layouts; resizes are logged and
 * replayed in order.
 */
@ExtendWith(SeedExtension.class)
class KvDurabilityTest {
  static final TableOptions SMALL = KvCluster.smallTable(2);

  @TempDir Path dir;
  KvCluster cluster;

  @BeforeEach
  void start() throws Exception {
    cluster = new KvCluster(dir, 1);
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  static byte[] b(String s) {
    return s.getBytes(UTF_8);
  }

  private void restartServer() {
    MemoryServer old = cluster.servers.remove(0);
    String name = old.name();
    old.close();
    cluster.startServer(name);
  }

  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void loggedTablesSurviveARestartAndUnloggedOnesAreDeclaredLost(TableOptions.Layout layout) {
    FerriteClient c = cluster.client();
    KvClient kv = new KvClient(c);
    TableOptions o = SMALL.withLayout(layout);
    KvTable always = kv.createTable("always", o.withDurability(Durability.ALWAYS));
    KvTable interval = kv.createTable("interval", o.withDurability(Durability.INTERVAL));
    KvTable none = kv.createTable("none", o);
    for (KvTable t : new KvTable[] {always, interval, none}) {
      for (int i = 0; i < 100; i++) {
        t.put(b("k" + i), i % 5 == 0 ? new byte[100 + i] : b("v" + i));
        if (i == 50) {
          t.resize(1024); // logged too: the replay resizes at the same point
        }
      }
      for (int i = 0; i < 100; i += 3) {
        t.put(b("k" + i), b("again" + i));
      }
      for (int i = 0; i < 100; i += 10) {
        t.delete(b("k" + i));
      }
    }
    restartServer();
    for (KvTable t : new KvTable[] {always, interval}) {
      for (int i = 0; i < 100; i++) {
        byte[] want =
            i % 10 == 0
                ? null
                : i % 3 == 0 ? b("again" + i) : i % 5 == 0 ? new byte[100 + i] : b("v" + i);
        assertArrayEquals(want, t.get(b("k" + i)), t.name() + " k" + i);
      }
      assertEquals(90, t.stats().stream().mapToInt(ShardStats::count).sum());
      for (ShardStats s : t.stats()) {
        assertTrue(s.slots() >= 1024, "the resize was replayed: " + s);
      }
      t.put(b("after"), b("restart"));
    }
    // A none table keeps nothing across a restart, and says so (issue #20): its shards on the
    // restarted server are declared lost.
    FerriteException lost = assertThrows(FerriteException.class, () -> none.get(b("k1")));
    assertEquals(ErrorCode.DATA_LOST, lost.code(), lost.getMessage());
    restartServer();
    assertArrayEquals(b("restart"), always.get(b("after")), "appends continue after a replay");
    assertArrayEquals(b("again3"), kv.table("interval").get(b("k3")));
  }

  /**
   * A MULTI_PUT's pairs of one shard are logged with one append (KvWrites): the replay still
   * applies them in list order, a key given twice in one batch ends with its last value, and
   * batches that create extent regions midway (applied partly inline, the rest by a writer) lose
   * nothing.
   */
  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void multiPutBatchesReplayInListOrder(TableOptions.Layout layout, TestSeed seed) {
    KvClient kv = new KvClient(cluster.client());
    TableOptions o = SMALL.withLayout(layout).withExtents(16 << 10, 8);
    KvTable always = kv.createTable("always", o.withDurability(Durability.ALWAYS));
    KvTable interval = kv.createTable("interval", o.withDurability(Durability.INTERVAL));
    Random r = new Random(seed.value());
    Map<String, Map<String, byte[]>> models = new HashMap<>();
    for (KvTable t : new KvTable[] {always, interval}) {
      Map<String, byte[]> model = models.computeIfAbsent(t.name(), n -> new HashMap<>());
      for (int batch = 0; batch < 20; batch++) {
        java.util.List<byte[]> ks = new java.util.ArrayList<>();
        java.util.List<byte[]> vs = new java.util.ArrayList<>();
        for (int i = 0; i < 16; i++) {
          String k = "k" + r.nextInt(40); // repeats within a batch and across batches
          byte[] v = new byte[1 + r.nextInt(600)];
          r.nextBytes(v);
          ks.add(b(k));
          vs.add(v);
          model.put(k, v);
        }
        t.multiPut(ks, vs);
      }
    }
    restartServer();
    for (KvTable t : new KvTable[] {always, interval}) {
      Map<String, byte[]> model = models.get(t.name());
      for (Map.Entry<String, byte[]> e : model.entrySet()) {
        assertArrayEquals(e.getValue(), t.get(b(e.getKey())), t.name() + " " + e.getKey());
      }
      assertEquals(model.size(), t.stats().stream().mapToInt(ShardStats::count).sum(), t.name());
    }
  }

  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void aDroppedTableIsNotReplayed(TableOptions.Layout layout) {
    KvClient kv = new KvClient(cluster.client());
    KvTable t = kv.createTable("gone", SMALL.withLayout(layout).withDurability(Durability.ALWAYS));
    t.put(b("k"), b("v"));
    new KvClient(cluster.adminClient()).dropTable("gone");
    restartServer();
    KvTable again =
        kv.createTable("gone", SMALL.withLayout(layout).withDurability(Durability.ALWAYS));
    assertNull(again.get(b("k")));
  }

  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void aCompactedLogRebuildsExactlyWhatTheServerHeld(TableOptions.Layout layout) throws Exception {
    // A 16 KiB threshold: the server rewrites its log as a snapshot many times while one client
    // keeps overwriting and deleting 60 keys; every restart must give back exactly the model.
    cluster.close();
    cluster =
        new KvCluster(
            dir.resolve("compacting"), 1, false, Map.of(io.ferrite.kv.KvConfig.LOG_COMPACT, "16k"));
    KvClient kv = new KvClient(cluster.client());
    TableOptions o = SMALL.withLayout(layout).withDurability(Durability.ALWAYS);
    KvTable t = kv.createTable("hot", o);
    KvTable gone = kv.createTable("gone", o);
    gone.put(b("g"), b("dropped before a compaction"));
    KvTable none = kv.createTable("none", SMALL.withLayout(layout));
    none.put(b("n"), b("never logged"));
    Path logFile;
    try (Stream<Path> files = Files.walk(dir.resolve("compacting"))) {
      logFile = files.filter(p -> p.endsWith("kv.log")).findFirst().orElseThrow();
    }
    Map<String, byte[]> model = new HashMap<>();
    Random r = new Random(layout.ordinal() * 31L + 7);
    int shrinks = 0;
    long last = Files.size(logFile);
    long deadline = System.nanoTime() + 60_000_000_000L;
    for (int round = 0; round < 40 || shrinks < 3; round++) {
      assertTrue(System.nanoTime() < deadline, "the log shrank " + shrinks + " times in 60 s");
      for (int i = 0; i < 50; i++) {
        String k = "k" + r.nextInt(60);
        if (r.nextInt(8) == 0) {
          t.delete(b(k));
          model.remove(k);
        } else {
          byte[] v = new byte[r.nextInt(300)];
          r.nextBytes(v);
          t.put(b(k), v);
          model.put(k, v);
        }
      }
      if (round == 5) {
        new KvClient(cluster.adminClient()).dropTable("gone");
      }
      if (round == 10) {
        t.resize(1024);
      }
      long size = Files.size(logFile);
      if (size < last) {
        shrinks++;
      }
      last = size;
    }
    for (int restart = 0; restart < 2; restart++) {
      restartServer();
      for (int i = 0; i < 60; i++) {
        assertArrayEquals(model.get("k" + i), t.get(b("k" + i)), "k" + i + ", restart " + restart);
      }
      assertEquals(model.size(), t.stats().stream().mapToInt(ShardStats::count).sum());
      for (ShardStats s : t.stats()) {
        assertTrue(s.slots() >= 1024, "the resize survived the snapshot: " + s);
      }
      FerriteException lost = assertThrows(FerriteException.class, () -> none.get(b("n")));
      assertEquals(ErrorCode.DATA_LOST, lost.code(), "a none table is not in the snapshot");
      t.put(b("after" + restart), b("appended to a compacted log"));
      model.put("after" + restart, b("appended to a compacted log"));
    }
    assertArrayEquals(b("appended to a compacted log"), t.get(b("after0")));
    KvTable again = kv.createTable("gone", o);
    assertNull(again.get(b("g")), "a table dropped before the snapshot stays dropped");
  }
}
