package io.ferrite.tx.master;

import static io.ferrite.tx.master.TxDirectoryTest.journal;
import static io.ferrite.tx.master.TxDirectoryTest.map;
import static io.ferrite.tx.master.TxDirectoryTest.placed;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.master.MasterContext;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Re-replication at the master ({@link TxRepairs}), on the directory's records alone: a region that
 * lost a copy gets a live server holding none as a FILLING copy (epoch + 1), END_FILL makes it a
 * backup only for its primary and its fill (epoch + 1), a FILLING target that dies is replaced, a
 * primary that dies mid-fill drops the fill, and a FILLING record replays from the snapshot.
 */
class TxRepairsTest {
  @Test
  void aRegionThatLostACopyFillsOneAndOnlyItsPrimarysEndFillForThatFillMakesItABackup() {
    TxDirectory d = new TxDirectory();
    Set<Integer> alive = new TreeSet<>(Set.of(1, 2, 3));
    MasterContext.Mutation m = journal(d, alive);
    m.commit(placed(1, 1, 1, 2));
    alive.remove(1);
    d.serverDead(1, m);
    assertEquals(Map.of(1, "2 [] 3"), map(d), "promoted (epoch 2), then a copy added (epoch 3)");
    assertEquals(Map.of(3, 3L), d.filling.get(1));
    TxRepairs repairs = new TxRepairs(d);
    assertFalse(repairs.endFill(1, 2, 3, 2, m), "another fill (since 2)");
    assertFalse(repairs.endFill(1, 1, 3, 3, m), "not the primary");
    assertEquals(Map.of(1, "2 [] 3"), map(d));
    // The master restarts mid-fill: the snapshot's records rebuild the FILLING copy.
    TxDirectory replayed = new TxDirectory();
    d.snapshot().forEach(r -> replayed.apply(ByteBuffer.wrap(r)));
    assertEquals(Map.of(3, 3L), replayed.filling.get(1));
    assertTrue(repairs.endFill(1, 2, 3, 3, m));
    assertEquals(Map.of(1, "2 [3] 4"), map(d));
    assertFalse(d.filling.containsKey(1));
    assertFalse(repairs.endFill(1, 2, 3, 3, m), "once");
  }

  @Test
  void aFillingTargetThatDiesIsReplacedOrTheRegionWaitsForAServer() {
    TxDirectory d = new TxDirectory();
    Set<Integer> alive = new TreeSet<>(Set.of(2, 3, 4));
    MasterContext.Mutation m = journal(d, alive);
    m.commit(placed(1, 1, 2));
    new TxRepairs(d).repairAll(m, -1);
    assertEquals(Map.of(3, 2L), d.filling.get(1), "the lowest id of those holding no copy");
    alive.remove(3);
    d.serverDead(3, m);
    assertEquals(Map.of(4, 4L), d.filling.get(1), "dropped (epoch 3), another added (epoch 4)");
    assertEquals(Map.of(1, "2 [] 4"), map(d));
    alive.remove(4);
    d.serverDead(4, m);
    assertFalse(d.filling.containsKey(1), "no server left to take a copy");
    assertEquals(Map.of(1, "2 [] 5"), map(d));
    alive.add(5);
    d.serverRegistered(5, 55, m);
    assertEquals(Map.of(5, 6L), d.filling.get(1), "a server that registers takes it");
  }

  @Test
  void aPrimaryThatDiesMidFillDropsTheFillAndItsPromotedBackupFillsAnother() {
    TxDirectory d = new TxDirectory();
    Set<Integer> alive = new TreeSet<>(Set.of(1, 2, 3, 4));
    MasterContext.Mutation m = journal(d, alive);
    m.commit(placed(1, 1, 1, 2));
    m.commit(
        TxRepairs.fillingRecord(1, Map.of(3, 1L))); // as if replicas were 3: a copy being filled
    alive.remove(1);
    d.serverDead(1, m);
    assertEquals("2 [] 3", map(d).get(1), "promoted (epoch 2), a new copy (epoch 3)");
    assertEquals(
        Map.of(3, 3L), d.filling.get(1), "the old fill is dropped; server 3 is picked afresh");
  }
}
