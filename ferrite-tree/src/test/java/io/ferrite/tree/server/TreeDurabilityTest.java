package io.ferrite.tree.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.tree.Tree;
import io.ferrite.tree.TreeClient;
import io.ferrite.tree.TreeModel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The tree log (docs/TREE.md, Durability), in process over the local fabric: a memory server is
 * closed (its regions gone) and started again on the same directory, and its meganodes come back
 * from the log (seeded random writes against {@link TreeMap} while meganodes split, a compaction
 * between two restarts, a handle opened before the restart still served: pointers name meganode
 * ids); a split "crashes" between its logged steps ({@link TreeService#testSplitStep}), and the
 * replay undoes it (before its end record: the orphan deleted, the source whole) or completes it
 * (after), with the in-flight writes failed with a clear error and no pair lost or repeated.
 */
@ExtendWith(SeedExtension.class)
class TreeDurabilityTest extends DurableTreeFixture {
  static byte[] key(int k) {
    // Bytes above 0x7F so unsigned order matters; 4 to 10 bytes.
    byte[] b = new byte[4 + k % 7];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) (k * 31 + i * 0x53);
    }
    b[0] = (byte) (k >>> 8);
    b[1] = (byte) k;
    return b;
  }

  private static void randomWrites(Tree tree, TreeMap<byte[], byte[]> model, Random random, int n) {
    for (int op = 0; op < n; op++) {
      byte[] k = key(random.nextInt(2500));
      if (random.nextInt(5) == 0) {
        assertEquals(model.remove(k) != null, tree.delete(k), "delete " + op);
      } else {
        byte[] v = new byte[random.nextInt(40)];
        random.nextBytes(v);
        assertEquals(model.put(k, v) == null, tree.put(k, v), "put " + op);
      }
    }
  }

  /** Every pair of the model by get and by full scan, both paths; some absent keys absent. */
  private static void assertHolds(Tree tree, TreeMap<byte[], byte[]> model, String what) {
    TreeModel.assertHolds(tree, model, what);
    for (int k = 6000; k < 6100; k++) {
      assertNull(tree.get(key(k)), what + " absent");
    }
  }

  @Test
  void intervalWritesComeBackAfterRestartsAndACompaction(Random random) throws Exception {
    writesComeBack("interval", random);
  }

  @Test
  void alwaysWritesComeBackAfterRestartsAndACompaction(Random random) throws Exception {
    writesComeBack("always", random);
  }

  private void writesComeBack(String sync, Random random) throws Exception {
    start(sync);
    Tree tree = new TreeClient(cluster.client()).create("t");
    Tree other = new TreeClient(cluster.client()).create("dropped");
    other.put(key(1), key(2));
    TreeMap<byte[], byte[]> model = TreeModel.model();
    randomWrites(tree, model, random, 4000);
    long[] before = tree.stats();
    assertTrue(
        before[0] >= 4 && before[1] >= 2, "meganodes, levels: " + before[0] + ", " + before[1]);
    new TreeClient(cluster.client()).drop("dropped");

    TreeService s = restart();
    assertTrue(s.lastReplay().records > 0);
    assertEquals(0, s.lastReplay().unfinished.size());
    assertEquals(1, new TreeClient(cluster.client()).list().size(), "the dropped tree stays gone");
    Tree again = new TreeClient(cluster.client()).open("t");
    assertHolds(again, model, "after a restart");
    long[] after = again.stats();
    assertEquals(before[0], after[0], "meganodes");
    assertEquals(before[1], after[1], "levels");
    // A handle from before the restart: its pointers name meganode ids, which the server maps to
    // their new regions (server-side path; a client-side read needs the new layout).
    byte[] k = model.firstKey();
    assertArrayEquals(model.get(k), tree.get(k, Tree.Path.SERVER), "old handle");

    randomWrites(again, model, random, 2000);
    long full = s.log().bytes();
    long compacted = s.compactLog();
    assertTrue(compacted < full, "compacted " + full + " B to " + compacted + " B");
    randomWrites(again, model, random, 500); // appends after the rewrite
    s = restart();
    Tree third = new TreeClient(cluster.client()).open("t");
    assertHolds(third, model, "after a compaction and a second restart");
    randomWrites(third, model, random, 500);
    assertHolds(third, model, "writes after the replay");
  }

  /**
   * Four writers (a connection each) overwrite and delete the same 300 keys; every other write
   * pauses between applying and logging (a hook), so without the key's stripe another writer's
   * later write of the key would reach the log first. Once they stop, the replay must give what the
   * tree held: the log has each key's writes in the order they applied.
   */
  @Test
  void concurrentWritesOfOneKeyReplayInTheOrderTheyApplied(Random random) throws Exception {
    start("interval");
    AtomicInteger writes = new AtomicInteger();
    TreeService.testBeforeAppend =
        () -> {
          if (writes.incrementAndGet() % 2 == 0) {
            LockSupport.parkNanos(100_000);
          }
        };
    Tree tree = new TreeClient(cluster.client()).create("t");
    List<Thread> writers = new ArrayList<>();
    AtomicReference<Throwable> failed = new AtomicReference<>();
    for (int w = 0; w < 4; w++) {
      long seed = random.nextLong();
      int id = w;
      Tree mine = new TreeClient(cluster.client()).open("t"); // a connection each: RPCs in parallel
      Thread t =
          new Thread(
              () -> {
                Random r = new Random(seed);
                // All writers walk the same keys in the same order, so each key's last writes
                // come from several writers at once: the race the log's order must settle.
                for (int round = 0; round < 5; round++) {
                  for (int k = 0; k < 300; k++) {
                    if (r.nextInt(8) == 0) {
                      mine.delete(key(k));
                    } else {
                      mine.put(key(k), ("w" + id + "-" + round).getBytes(StandardCharsets.UTF_8));
                    }
                  }
                }
              },
              "tree-dur-writer-" + w);
      t.setUncaughtExceptionHandler((th, e) -> failed.compareAndSet(null, e));
      writers.add(t);
    }
    writers.forEach(Thread::start);
    for (Thread t : writers) {
      t.join();
    }
    if (failed.get() != null) {
      throw new AssertionError("a writer failed", failed.get());
    }
    TreeMap<byte[], byte[]> now = TreeModel.model();
    for (Map.Entry<byte[], byte[]> e : tree.scan(null, null, 1000)) {
      now.put(e.getKey(), e.getValue());
    }
    TreeService.testBeforeAppend = null;
    restart();
    assertHolds(new TreeClient(cluster.client()).open("t"), now, "after the restart");
  }

  @Test
  void aSplitCrashedBeforeItsEndIsUndone(Random random) throws Exception {
    crashedSplit("copied", random);
  }

  @Test
  void aSplitCrashedRightAfterItsStartIsUndone(Random random) throws Exception {
    crashedSplit("begun", random);
  }

  @Test
  void aSplitCrashedAfterItsEndIsCompleted(Random random) throws Exception {
    crashedSplit("ended", random);
  }

  /**
   * A writer puts keys (scattered order) until the first split of the root meganode crashes at
   * {@code step}; the writer's next put fails with a clear error. After the restart: the split is
   * undone (one meganode) or completed (two, the right one reached by the link alone: the parent
   * entry was never made), every acknowledged put is there, scans ordered without repeats, and
   * writes go on (splitting again).
   */
  private void crashedSplit(String step, Random random) throws Exception {
    start("always");
    AtomicBoolean crashed = new AtomicBoolean();
    TreeService.testSplitStep =
        s -> {
          if (s.equals(step) && crashed.compareAndSet(false, true)) {
            throw new TreeService.Crash(s);
          }
        };
    Tree tree = new TreeClient(cluster.client()).create("t");
    List<Integer> order = new ArrayList<>();
    for (int i = 0; i < 5000; i++) {
      order.add(i);
    }
    Collections.shuffle(order, random);
    TreeMap<byte[], byte[]> acked = TreeModel.model();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    byte[] inFlight = null;
    for (int i : order) {
      try {
        tree.put(key(i), key(i + 1));
        acked.put(key(i), key(i + 1));
      } catch (RuntimeException e) {
        failure.set(e);
        inFlight = key(i);
        break;
      }
    }
    assertTrue(crashed.get(), "no split reached step " + step);
    FerriteException e = assertInstanceOf(FerriteException.class, failure.get());
    assertTrue(
        e.code() == ErrorCode.UNAVAILABLE || e.code() == ErrorCode.BUSY,
        "a clear error for a write to the dead server: " + e);
    TreeService.testSplitStep = null;

    TreeService s = restart();
    int undone = step.equals("ended") ? 0 : 1;
    Tree again = new TreeClient(cluster.client()).open("t");
    long[] stats = again.stats();
    assertEquals(2 - undone, stats[0], "meganodes: the orphan deleted, or the split completed");
    assertEquals(undone, s.lastReplay().unfinished.size(), "unfinished splits");
    // The put that failed was not acknowledged: it may or may not be there; nothing else may.
    if (inFlight != null) {
      acked.remove(inFlight);
      again.delete(inFlight);
    }
    assertHolds(again, acked, "after the crashed split");
    TreeMap<byte[], byte[]> model = acked;
    randomWrites(again, model, random, 3000);
    assertTrue(again.stats()[0] >= 3, "splits go on after the recovery");
    assertHolds(again, model, "writes after the recovery");
    s = restart();
    assertHolds(new TreeClient(cluster.client()).open("t"), model, "a second restart");
  }
}
