package io.ferrite.tree.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.tree.TreeProtocol;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link TreeLog.Replay} on hand-made record sequences: a finished split moves the right half, an
 * unfinished one (at the log's end, or followed by another split of the same source) is undone, a
 * new root whose ROOT record never came is dropped with whatever only it reached, a dropped tree
 * leaves nothing, a record naming a meganode never made is refused as corruption.
 */
class TreeLogTest {
  static final int SERVER = 7;

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static long p(int id) {
    return TreeProtocol.pointer(SERVER, id);
  }

  static TreeLog.Replay replay(List<byte[]> records) {
    TreeLog.Replay r = new TreeLog.Replay(SERVER);
    for (byte[] rec : records) {
      r.accept(ByteBuffer.wrap(rec).order(ByteOrder.LITTLE_ENDIAN));
    }
    r.finish();
    return r;
  }

  /** Tree 1 with root meganode 1 holding a..e. */
  static List<byte[]> base() {
    return new java.util.ArrayList<>(
        List.of(
            TreeLog.tree(1),
            TreeLog.meganode(1, 1, 0, new byte[0], null, 0),
            TreeLog.root(1, p(1)),
            TreeLog.put(1, b("a"), b("1")),
            TreeLog.put(1, b("b"), b("2")),
            TreeLog.put(1, b("c"), b("3")),
            TreeLog.put(1, b("d"), b("4")),
            TreeLog.put(1, b("e"), b("5")),
            TreeLog.delete(1, b("e"))));
  }

  @Test
  void aFinishedSplitMovesTheRightHalfAndLinksIt() {
    List<byte[]> log = base();
    log.add(TreeLog.split(TreeLog.SPLIT_BEGIN, 1, b("c"), 2));
    log.add(TreeLog.meganode(2, 1, 0, b("c"), null, 0));
    log.add(TreeLog.split(TreeLog.SPLIT_END, 1, b("c"), 2));
    log.add(TreeLog.put(2, b("f"), b("6")));
    TreeLog.Replay r = replay(log);
    assertEquals(0, r.unfinished.size());
    TreeLog.Image x = r.meganodes.get(1);
    TreeLog.Image y = r.meganodes.get(2);
    assertEquals(2, x.entries.size());
    assertArrayEquals(b("c"), x.high);
    assertEquals(p(2), x.link);
    assertEquals(List.of("c", "d", "f"), keys(y));
    assertEquals(3, r.nextId);
  }

  @Test
  void anUnfinishedSplitIsUndoneAtTheEndOrAtTheNextSplitOfItsSource() {
    List<byte[]> log = base();
    log.add(TreeLog.split(TreeLog.SPLIT_BEGIN, 1, b("c"), 2));
    log.add(TreeLog.meganode(2, 1, 0, b("c"), null, 0));
    TreeLog.Replay r = replay(log);
    assertEquals(1, r.unfinished.size(), r.unfinished.toString());
    assertEquals(List.of(1), List.copyOf(r.meganodes.keySet()));
    assertEquals(List.of("a", "b", "c", "d"), keys(r.meganodes.get(1)));
    assertNull(r.meganodes.get(1).high);
    assertEquals(3, r.nextId, "the orphan's id is not handed out again");

    log.add(TreeLog.put(1, b("e"), b("5"))); // written after the crash's restart, in the source
    log.add(TreeLog.split(TreeLog.SPLIT_BEGIN, 1, b("d"), 3));
    log.add(TreeLog.meganode(3, 1, 0, b("d"), null, 0));
    log.add(TreeLog.split(TreeLog.SPLIT_END, 1, b("d"), 3));
    r = replay(log);
    assertEquals(1, r.unfinished.size());
    assertEquals(List.of(1, 3), List.copyOf(r.meganodes.keySet()));
    assertEquals(List.of("d", "e"), keys(r.meganodes.get(3)));
  }

  @Test
  void aNewRootWithoutItsRootRecordIsDropped() {
    List<byte[]> log = base();
    log.add(TreeLog.split(TreeLog.SPLIT_BEGIN, 1, b("c"), 2));
    log.add(TreeLog.meganode(2, 1, 0, b("c"), null, 0));
    log.add(TreeLog.split(TreeLog.SPLIT_END, 1, b("c"), 2));
    log.add(TreeLog.meganode(3, 1, 1, new byte[0], null, 0));
    log.add(TreeLog.child(3, new byte[0], p(1)));
    log.add(TreeLog.child(3, b("c"), p(2)));
    TreeLog.Replay r = replay(log);
    assertEquals(1, r.unreachable);
    assertEquals(List.of(1, 2), List.copyOf(r.meganodes.keySet()), "2 reached by the link");
    assertEquals(p(1), r.roots.get(1L));

    log.add(TreeLog.root(1, p(3)));
    r = replay(log);
    assertEquals(0, r.unreachable);
    assertEquals(p(3), r.roots.get(1L));
  }

  @Test
  void aDroppedTreeLeavesNothingAndACorruptLogIsRefused() {
    List<byte[]> log = base();
    log.add(TreeLog.drop(1));
    TreeLog.Replay r = replay(log);
    assertTrue(r.roots.isEmpty() && r.meganodes.isEmpty());

    log.add(TreeLog.put(1, b("x"), b("y")));
    FerriteException e = assertThrows(FerriteException.class, () -> replay(log));
    assertEquals(ErrorCode.INTERNAL, e.code());
    assertTrue(e.getMessage().contains("meganode 1 was never made"), e.getMessage());
  }

  /** The other server of the remote records below. */
  static final int PEER = 9;

  @Test
  void aRemoteSplitIsUndoneOwingADropOrCompletedOwingAConfirm() {
    long y = TreeProtocol.pointer(PEER, 5);
    // Begun, never ended: the source whole, a DROP owed to the target, the token never reused.
    List<byte[]> log = base();
    log.add(TreeLog.remoteSplit(TreeLog.R_BEGIN, 1, b("c"), 2, PEER));
    TreeLog.Replay r = replay(log);
    assertEquals(1, r.unfinished.size());
    assertEquals(List.of("a", "b", "c", "d"), keys(r.meganodes.get(1)));
    assertNull(r.meganodes.get(1).high);
    assertEquals(java.util.Map.of(2, PEER), r.owedDrops);
    assertTrue(r.owedConfirms.isEmpty());
    assertEquals(3, r.nextId);
    // Ended: the pairs from c up are the target's, the source ends at c and links to it.
    log = base();
    log.add(TreeLog.remoteSplit(TreeLog.R_BEGIN, 1, b("c"), 2, PEER));
    log.add(TreeLog.remoteSplit(TreeLog.R_END, 1, b("c"), 2, y));
    r = replay(log);
    assertEquals(0, r.unfinished.size());
    assertEquals(List.of("a", "b"), keys(r.meganodes.get(1)));
    assertArrayEquals(b("c"), r.meganodes.get(1).high);
    assertEquals(y, r.meganodes.get(1).link);
    assertEquals(java.util.Map.of(2, y), r.owedConfirms);
    // ... and confirmed: nothing owed.
    log.add(TreeLog.remoteDone(2));
    r = replay(log);
    assertTrue(r.owedConfirms.isEmpty() && r.owedDrops.isEmpty());
    // Aborted: the source whole, a DROP owed, not an unfinished split.
    log = base();
    log.add(TreeLog.remoteSplit(TreeLog.R_BEGIN, 1, b("c"), 2, PEER));
    log.add(TreeLog.remoteSplit(TreeLog.R_ABORT, 1, b("c"), 2, PEER));
    r = replay(log);
    assertEquals(0, r.unfinished.size());
    assertEquals(4, r.meganodes.get(1).entries.size());
    assertEquals(java.util.Map.of(2, PEER), r.owedDrops);
    // A compaction's OWE records say the same.
    r = replay(List.of(TreeLog.owe(2, true, y), TreeLog.owe(3, false, PEER)));
    assertEquals(java.util.Map.of(2, y), r.owedConfirms);
    assertEquals(java.util.Map.of(3, PEER), r.owedDrops);
  }

  @Test
  void anAdoptedMeganodeIsKeptPendingThoughNoLocalRootReachesIt() {
    List<byte[]> log =
        new java.util.ArrayList<>(
            List.of(
                TreeLog.guest(5, PEER),
                TreeLog.meganode(3, 5, 0, b("m"), null, 0),
                TreeLog.adopted(3, PEER, 77),
                TreeLog.put(3, b("m"), b("1")),
                TreeLog.put(3, b("o"), b("2")),
                // a local split of the adopted meganode: reached by its link
                TreeLog.split(TreeLog.SPLIT_BEGIN, 3, b("o"), 4),
                TreeLog.meganode(4, 5, 0, b("o"), null, 0),
                TreeLog.split(TreeLog.SPLIT_END, 3, b("o"), 4),
                // made, neither adopted nor linked: unreachable
                TreeLog.meganode(6, 5, 0, b("x"), null, 0)));
    TreeLog.Replay r = replay(log);
    assertEquals(java.util.Set.of(3, 4), r.meganodes.keySet());
    assertEquals(1, r.unreachable);
    assertEquals(java.util.Map.of(5L, PEER), r.guests);
    assertTrue(r.roots.isEmpty(), "a guest tree has no root here");
    assertTrue(r.meganodes.get(3).pending);
    assertEquals(PEER, r.meganodes.get(3).source);
    assertEquals(77, r.meganodes.get(3).token);
    assertEquals(-1, r.meganodes.get(4).source);
    log.add(TreeLog.confirmed(3));
    assertTrue(!replay(log).meganodes.get(3).pending, "confirmed");
    log.add(TreeLog.forget(3));
    r = replay(log);
    assertTrue(r.meganodes.isEmpty(), "forgotten, and what only it reached");
    // A confirm of a meganode freed since (its tree dropped) is no corruption.
    log.add(TreeLog.drop(5));
    log.add(TreeLog.confirmed(3));
    assertTrue(replay(log).meganodes.isEmpty());
  }

  /**
   * An adopted meganode (3) splits here (into 4), then into a meganode on the other server, which
   * takes 3's link to 4: from then on 4 is reached through the other server only. The replay keeps
   * it (it holds acknowledged pairs), from R_END's old link or, after a compaction, from LINKED.
   */
  @Test
  void aMeganodeOnlyAnotherServerLinksToIsKept() {
    List<byte[]> log =
        new java.util.ArrayList<>(
            List.of(
                TreeLog.guest(5, PEER),
                TreeLog.meganode(3, 5, 0, b("m"), null, 0),
                TreeLog.adopted(3, PEER, 77),
                TreeLog.confirmed(3),
                TreeLog.put(3, b("m"), b("1")),
                TreeLog.put(3, b("o"), b("2")),
                TreeLog.put(3, b("q"), b("3")),
                TreeLog.split(TreeLog.SPLIT_BEGIN, 3, b("q"), 4),
                TreeLog.meganode(4, 5, 0, b("q"), null, 0),
                TreeLog.split(TreeLog.SPLIT_END, 3, b("q"), 4),
                TreeLog.remoteSplit(TreeLog.R_BEGIN, 3, b("o"), 6, PEER),
                TreeLog.remoteSplit(TreeLog.R_END, 3, b("o"), 6, TreeProtocol.pointer(PEER, 8))));
    TreeLog.Replay r = replay(log);
    assertEquals(java.util.Set.of(3, 4), r.meganodes.keySet());
    assertEquals(0, r.unreachable);
    assertEquals(List.of("q"), keys(r.meganodes.get(4)));
    assertEquals(java.util.Set.of(4), r.linkedFromAfar);
    assertEquals(TreeProtocol.pointer(PEER, 8), r.meganodes.get(3).link);

    // A compaction's form: the meganodes as they are, 4 marked LINKED.
    List<byte[]> compacted =
        new java.util.ArrayList<>(
            List.of(
                TreeLog.nextId(9),
                TreeLog.guest(5, PEER),
                TreeLog.meganode(3, 5, 0, b("m"), b("o"), TreeProtocol.pointer(PEER, 8)),
                TreeLog.adopted(3, PEER, 77),
                TreeLog.confirmed(3),
                TreeLog.put(3, b("m"), b("1")),
                TreeLog.meganode(4, 5, 0, b("q"), null, 0),
                TreeLog.linked(4),
                TreeLog.put(4, b("q"), b("3"))));
    r = replay(compacted);
    assertEquals(java.util.Set.of(3, 4), r.meganodes.keySet());
    assertEquals(0, r.unreachable);
    compacted.remove(7); // without the mark, nothing here reaches 4: what the mark is for
    assertEquals(java.util.Set.of(3), replay(compacted).meganodes.keySet());
  }

  @Test
  void pointersToAnotherServerAreNeitherFollowedNorDropped() {
    List<byte[]> log = base();
    // A new root over meganode 1 and a leaf on the other server whose id is free here.
    log.add(TreeLog.meganode(2, 1, 1, new byte[0], null, 0));
    log.add(TreeLog.child(2, new byte[0], p(1)));
    log.add(TreeLog.child(2, b("c"), TreeProtocol.pointer(PEER, 3)));
    log.add(TreeLog.root(1, p(2)));
    TreeLog.Replay r = replay(log);
    assertEquals(2, r.meganodes.get(2).entries.size(), "the remote child stays");
    assertEquals(0, r.unreachable);
  }

  private static List<String> keys(TreeLog.Image m) {
    return m.entries.keySet().stream().map(k -> new String(k, StandardCharsets.UTF_8)).toList();
  }
}
