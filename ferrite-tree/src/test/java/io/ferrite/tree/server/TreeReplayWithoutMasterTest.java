package io.ferrite.tree.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kernel.testing.MasterBackOnRetireRefusal;
import io.ferrite.tree.Tree;
import io.ferrite.tree.TreeClient;
import io.ferrite.tree.TreeModel;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A tree server restarted while the master is away (killed, or its group electing a leader) waits
 * for it during its log replay and comes back with every pair, as the kv replay does ({@code
 * MasterWait}). At boot the server's capacity is all block pool, so each replayed meganode's
 * regions exist only once the master retired an empty pool region: with the master away that was
 * NO_SPACE, and the server's start failed.
 */
@ExtendWith(SeedExtension.class)
class TreeReplayWithoutMasterTest extends DurableTreeFixture {
  MasterBackOnRetireRefusal back;

  @AfterEach
  void removeHandler() {
    if (back != null) {
      back.close();
    }
  }

  @Test
  void meganodesReplayedWhileTheMasterIsAwayComeBackWithEveryPair(Random random) throws Exception {
    start("always");
    Tree tree = new TreeClient(cluster.client()).create("t");
    TreeMap<byte[], byte[]> model = TreeModel.model();
    for (int i = 0; i < 1500; i++) {
      byte[] k = TreeDurabilityTest.key(random.nextInt(2500));
      byte[] v = new byte[random.nextInt(40)];
      random.nextBytes(v);
      tree.put(k, v);
      model.put(k, v);
    }
    assertTrue(tree.stats()[0] >= 2, "meganodes: " + tree.stats()[0]);

    MemoryServer old = cluster.servers.remove(0);
    old.close();
    // The master goes away right before the restarted server's tree replay, and comes back (a
    // new master over the same journal) when RegionStore says it could not ask it to retire a
    // pool region: on the server's boot thread, so the order is fixed.
    back = new MasterBackOnRetireRefusal(cluster::startMaster);
    TreeService.testBeforeReplay =
        () -> {
          TreeService.testBeforeReplay = null;
          cluster.master.close();
        };
    cluster.startServer(old.name());
    assertNull(back.failure(), () -> "restarting the master failed: " + back.failure());
    assertTrue(back.refusals() > 0, "the replay needed the master");

    // A new client: the old one knows only the old master's (local) address.
    Tree again = new TreeClient(cluster.client()).open("t");
    TreeModel.assertHolds(again, model, "after the replay");
    byte[] k = TreeDurabilityTest.key(9999);
    again.put(k, k);
    assertArrayEquals(k, again.get(k));
  }
}
