package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Counters;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.OpKind;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The table contract for FaRM's chained associative hopscotch layout, and what is its own: one read
 * per get of an inline pair (and per miss), one more for an out-of-line pair, overflow chains that
 * take what neighbourhoods cannot and shrink again as keys are deleted.
 */
class HopscotchTableTest extends KvTableContractTest {
  @Override
  TableOptions.Layout layout() {
    return TableOptions.Layout.HOPSCOTCH;
  }

  @Override
  TableOptions tiny() {
    // 4 buckets, and one 4 KiB extent region for overflow blocks: full after a few dozen keys.
    return small().withShards(1).withSlotsPerShard(16).withExtents(4096, 1).withLimits(64, 1000);
  }

  private long reads(KvTable t, Runnable r) {
    FabricConnection c = ferrite.connection(t.serverOf(0));
    Counters.Snapshot before = c.counters().snapshot();
    r.run();
    Counters.Snapshot d = c.counters().snapshot().minus(before);
    assertEquals(0, d.ops(OpKind.RPC), t.lookupStats().toString());
    return d.ops(OpKind.READ);
  }

  @Test
  void aGetOfAnInlinePairOrOfAnAbsentKeyIsOneReadAndOutOfLineIsTwo(Random random) {
    KvTable w = kv.createTable("one-read", small().withShards(1).withSlotsPerShard(4096));
    for (int i = 0; i < 2000; i++) {
      w.put(b("k" + i), i < 1000 ? b("v" + i) : new byte[100 + i % 50]);
    }
    KvTable t = kv.table("one-read");
    t.get(b("k0")); // the layout (with every extent region) is cached
    assertEquals(0, t.stats().get(0).overflowKeys(), "at 49% no key needs a chain");
    assertEquals(
        1000,
        reads(
            t,
            () -> {
              for (int i = 0; i < 1000; i++) {
                assertArrayEquals(b("v" + i), t.get(b("k" + i)));
              }
            }),
        "one read per inline get");
    assertEquals(
        500,
        reads(
            t,
            () -> {
              for (int i = 0; i < 500; i++) {
                assertNull(t.get(b("absent-" + random.nextInt())));
              }
            }),
        "one read per miss");
    assertEquals(
        2000,
        reads(
            t,
            () -> {
              for (int i = 1000; i < 2000; i++) {
                assertEquals(100 + i % 50, t.get(b("k" + i)).length);
              }
            }),
        "two reads per out-of-line get: the neighbourhood, then the extent");
    List<byte[]> keys = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      keys.add(b("k" + i));
    }
    assertEquals(64, reads(t, () -> t.multiGet(keys)), "multiGet: one read per inline key");
  }

  @Test
  void overflowChainsHoldWhatNeighbourhoodsCannotAndDeletesCollapseThem(Random random) {
    // 2 home buckets and the tail bucket hold 12 pairs; the rest go to the two chains.
    KvTable t = kv.createTable("chains", small().withShards(1).withSlotsPerShard(8));
    int n = 60;
    List<Integer> live = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      t.put(b("k" + i), i % 3 == 0 ? new byte[100 + i] : b("v" + i));
      live.add(i);
    }
    ShardStats s = t.stats().get(0);
    assertEquals(n, s.count());
    assertTrue(s.overflowKeys() >= n - 12, "chains hold the rest: " + s);
    assertTrue(s.overflowBlocks() >= (n - 12) / 2, s.toString());
    t.lookupStats().reset();
    checkAll(t, live);
    assertTrue(t.lookupStats().maxProbes() > 2, "lookups followed chains");
    Collections.shuffle(live, random);
    while (!live.isEmpty()) {
      int k = live.remove(live.size() - 1);
      assertTrue(t.delete(b("k" + k)));
      assertNull(t.get(b("k" + k)));
      if (live.size() % 7 == 0) {
        checkAll(t, live);
      }
    }
    s = t.stats().get(0);
    assertEquals(0, s.count());
    assertEquals(0, s.overflowKeys(), s.toString());
    assertEquals(0, s.overflowBlocks(), "empty blocks are unlinked and freed: " + s);
    assertTrue(s.moves() > 0, "deletes pulled chained pairs into bucket slots: " + s);
    for (int i = 0; i < n; i++) {
      assertTrue(t.put(b("again" + i), b("v")), "freed blocks are reused");
    }
  }

  private static void checkAll(KvTable t, List<Integer> live) {
    List<byte[]> keys = new ArrayList<>();
    for (int k : live) {
      byte[] want = k % 3 == 0 ? new byte[100 + k] : b("v" + k);
      assertArrayEquals(want, t.get(b("k" + k)), "k" + k);
      keys.add(b("k" + k));
    }
    List<byte[]> got = t.multiGet(keys);
    for (int i = 0; i < live.size(); i++) {
      int k = live.get(i);
      assertArrayEquals(k % 3 == 0 ? new byte[100 + k] : b("v" + k), got.get(i), "multiGet k" + k);
    }
  }

  @Test
  void aResizeEmptiesTheChainsIntoTheLargerArray() {
    KvTable t = kv.createTable("unchain", small().withShards(1).withSlotsPerShard(8));
    for (int i = 0; i < 40; i++) {
      t.put(b("k" + i), b("v" + i));
    }
    assertTrue(t.stats().get(0).overflowKeys() > 0);
    t.resize(256);
    ShardStats s = t.stats().get(0);
    assertEquals(40, s.count());
    assertEquals(0, s.overflowKeys(), "40 keys fit 256 slots without chains: " + s);
    assertEquals(0, s.overflowBlocks(), s.toString());
    for (int i = 0; i < 40; i++) {
      assertArrayEquals(b("v" + i), t.get(b("k" + i)));
    }
  }
}
