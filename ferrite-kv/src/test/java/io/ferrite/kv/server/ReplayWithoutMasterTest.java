package io.ferrite.kv.server;

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
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kernel.testing.MasterBackOnRetireRefusal;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvCluster;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kv log's replay at boot never skips a record (Jepsen, int34: a lost acknowledged write). At
 * boot the server's capacity is all block pool again ({@code RegionStore.fill}), so a replayed
 * OPEN_SHARD (or a PUT needing an extent) gets its region only once the master retired an empty
 * pool region. With the master away (killed, or its group electing a leader), that was NO_SPACE,
 * the record was logged as "could not be replayed" and skipped, the server served without the
 * shard, and the first client to get NOT_FOUND opened it again, empty: every pair gone. Now the
 * replay waits for the master; a record that fails for any other reason fails the start.
 */
@ExtendWith(SeedExtension.class)
class ReplayWithoutMasterTest {
  static final TableOptions SMALL =
      KvCluster.smallTable(2).withDurability(TableOptions.Durability.ALWAYS);

  @TempDir Path dir;
  KvCluster cluster;
  MasterBackOnRetireRefusal back;

  @AfterEach
  void stop() throws Exception {
    KvService.testStarted = null;
    if (back != null) {
      back.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  static byte[] b(String s) {
    return s.getBytes(UTF_8);
  }

  private Map<String, byte[]> fill(KvTable t, Random random) {
    Map<String, byte[]> model = new HashMap<>();
    for (int i = 0; i < 60; i++) {
      byte[] v = new byte[1 + random.nextInt(200)];
      random.nextBytes(v);
      t.put(b("k" + i), v);
      model.put("k" + i, v);
    }
    return model;
  }

  static void assertHolds(KvTable t, Map<String, byte[]> model, String when) {
    for (Map.Entry<String, byte[]> e : model.entrySet()) {
      assertArrayEquals(e.getValue(), t.get(b(e.getKey())), e.getKey() + " " + when);
    }
  }

  @Test
  void aShardReplayedWhileTheMasterIsAwayComesBackWithEveryPair(TestSeed seed) throws Exception {
    cluster = new KvCluster(dir, 1);
    KvTable t = new KvClient(cluster.client()).createTable("t", SMALL);
    Map<String, byte[]> model = fill(t, new Random(seed.value()));

    MemoryServer old = cluster.servers.remove(0);
    old.close();
    // The master goes away once the restarted server's kv service starts (before its replay), and
    // comes back (a new master over the same journal) right when RegionStore says it could not ask
    // it to retire a pool region: on the server's boot thread, so the order is fixed.
    back = new MasterBackOnRetireRefusal(cluster::startMaster);
    KvService.testStarted =
        s -> {
          KvService.testStarted = null;
          cluster.master.close();
        };
    cluster.startServer(old.name());
    assertNull(back.failure(), () -> "restarting the master failed: " + back.failure());
    assertTrue(back.refusals() > 0, "the replay needed the master");

    // A new client: the old one knows only the old master's (local) address.
    KvTable again = new KvClient(cluster.client()).table("t");
    assertHolds(again, model, "after the replay");
    again.put(b("after"), b("restart"));
    assertArrayEquals(b("restart"), again.get(b("after")));
  }

  @Test
  void aRecordThatCannotBeReplayedFailsTheStartNamingIt(TestSeed seed) throws Exception {
    cluster = new KvCluster(dir, 1);
    KvTable t = new KvClient(cluster.client()).createTable("t", SMALL);
    Map<String, byte[]> model = fill(t, new Random(seed.value()));

    MemoryServer old = cluster.servers.remove(0);
    old.close();
    // A capacity lowered below what the log holds: NO_SPACE with the master there. Serving
    // without the shard would lose its pairs; the start fails instead, the log left as it was.
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> cluster.startServer(old.name(), Map.of(FerriteConfig.CAPACITY_DRAM, "0")));
    assertEquals(ErrorCode.NO_SPACE, e.code(), e.getMessage());
    assertTrue(e.getMessage().contains("cannot be replayed"), e.getMessage());

    cluster.startServer(old.name());
    assertHolds(t, model, "after a failed start");
  }
}
