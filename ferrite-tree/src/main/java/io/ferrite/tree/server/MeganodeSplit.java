package io.ferrite.tree.server;

import io.ferrite.kernel.extent.Extents;
import io.ferrite.tree.MeganodeReader;
import io.ferrite.tree.Node;
import java.util.ArrayList;
import java.util.List;

/**
 * A meganode split's two steps on the meganode being split (Cell §2.2): {@link #begin} picks the
 * split key and closes the right half (writes of keys from it wait), {@link #finish} relinks the
 * header, trims the boundary path and invalidates the nodes right of it, then reopens. The service
 * copies the right half into the new meganode in between, while writes to the left half go on. See
 * {@link Meganode#finishSplit} for why one-sided readers stay correct throughout.
 *
 * <h2>Why the copy needs no lock</h2>
 *
 * Once the right half is closed no write changes a pair from the split key up: writes hold the
 * structure lock shared from their range check to their last store, and {@link #begin} closes the
 * half under it held exclusively, so a right-half write either finished before or sees the half
 * closed. Left-half writes still split nodes, and a node split of the leaf holding the boundary
 * moves right-half entries into a new right sibling: the pairs are the same, only where they sit
 * changes, and a left-to-right walk along the right links (Lehman and Yao) still meets each once.
 * Their extents are freed only by a write of their key or by {@link #finish}, so they stay
 * readable.
 */
final class MeganodeSplit {
  private MeganodeSplit() {}

  static Meganode.SplitHalf begin(Meganode m) {
    MeganodeReader reader = new MeganodeReader(m.source);
    // The median by a lock-free walk of the leaf level (no write waits for it): with writes going
    // on it is a median of some moment of the walk, which is all a split key needs to be. It is a
    // key of this meganode past its first, so it is above the low key and below the high key.
    List<byte[]> keys = new ArrayList<>();
    Node n = reader.read(reader.header().right);
    while (!n.leaf()) {
      n = reader.read((int) n.values.get(0)[0]);
    }
    while (true) {
      keys.addAll(n.keys);
      if (n.right == 0) {
        break;
      }
      n = reader.read(n.right);
    }
    if (keys.size() < 2) {
      return null;
    }
    byte[] key = keys.get(keys.size() / 2);
    keys = null;
    // Close the right half: the exclusive lock waits out the writes in flight (a few
    // microseconds each) and is released at once.
    m.structure.writeLock().lock();
    try {
      m.startSplitting(key);
    } finally {
      m.structure.writeLock().unlock();
    }
    try {
      Node h = reader.header(); // its level, high key and link change only by this thread's splits
      List<byte[]> rightKeys = new ArrayList<>();
      List<byte[]> values = new ArrayList<>();
      List<Long> children = new ArrayList<>();
      n = reader.read(h.right);
      while (true) {
        if (n.beyond(key) && n.right != 0) {
          n = reader.read(n.right);
        } else if (n.leaf()) {
          break;
        } else {
          n = reader.read((int) n.values.get(Math.max(0, n.floor(key)))[0]);
        }
      }
      while (true) {
        for (int i = Math.max(0, n.ceiling(key)); i < n.keys.size(); i++) {
          long[] p = n.values.get(i);
          rightKeys.add(n.keys.get(i));
          if (m.leafMeganode) {
            values.add(Extents.value(m.source.readExtent(p[0], (int) p[1])));
          } else {
            children.add(p[0]);
          }
        }
        if (n.right == 0) {
          break;
        }
        n = reader.read(n.right);
      }
      return new Meganode.SplitHalf(
          key,
          h.incarnation,
          h.highInfinite() ? null : h.high,
          h.link,
          rightKeys,
          values,
          children);
    } catch (RuntimeException | Error e) {
      m.endSplitting();
      throw e;
    }
  }

  static void finish(Meganode m, byte[] key, long right) {
    // The one moment every write to m waits (Cell §2.2: "locks X_left long enough to update the
    // right-link pointers"): the relink, the trim of the boundary path and the invalidation of the
    // old right half, node by node. The removed pairs' extents are freed after: no live node
    // points to them then, and a reader holding an old copy checks the extent's checksum.
    List<long[]> extents = new ArrayList<>();
    m.structure.writeLock().lock();
    long locked = System.nanoTime();
    try {
      long hv = m.nodes.lock(0);
      Node h = Node.decodeBody(m.nodes.copy(0));
      h.high = key;
      h.flags &= ~Node.HIGH_INF;
      h.link = right;
      m.nodes.write(0, h, hv);
      List<Integer> freed = new ArrayList<>();
      MeganodeReader reader = new MeganodeReader(m.source);
      for (int level = h.level; level >= 0; level--) {
        int index = boundary(reader, h.right, key, level);
        long v = m.nodes.lock(index);
        Node n = Node.decodeBody(m.nodes.copy(index));
        int from = n.ceiling(key);
        List<long[]> removed = new ArrayList<>(n.values.subList(from, n.values.size()));
        n.keys.subList(from, n.keys.size()).clear();
        n.values.subList(from, n.values.size()).clear();
        n.high = key;
        n.flags &= ~Node.HIGH_INF;
        int next = n.right;
        n.right = 0;
        m.nodes.write(index, n, v);
        if (level == 0) {
          extents.addAll(removed);
        }
        while (next != 0) {
          long w = m.nodes.lock(next);
          Node dead = Node.decodeBody(m.nodes.copy(next));
          int after = dead.right;
          dead.flags &= ~Node.LIVE;
          dead.incarnation++;
          if (level == 0) {
            extents.addAll(dead.values);
          }
          m.nodes.write(next, dead, w);
          freed.add(next);
          next = after;
        }
      }
      m.nodes.free(freed);
    } finally {
      // Reopened under the lock, so a right-half write that runs after sees the new high key and
      // is answered RIGHT; the waiting writes are told after the lock is released (they may run
      // on this thread: TreeService answers them there).
      java.util.concurrent.CompletableFuture<Void> done = m.reopen();
      m.relinkNanos = Math.max(m.relinkNanos, System.nanoTime() - locked);
      m.structure.writeLock().unlock();
      if (done != null) {
        done.complete(null);
      }
    }
    extents.forEach(m::freeExtent);
  }

  /** {@link Meganode#fill}. */
  static void fill(Meganode m, List<byte[]> keys, List<byte[]> values, List<Long> children) {
    if (keys.isEmpty()) {
      return;
    }
    // Nodes packed to about 70 % (as random inserts leave them, so the next inserts do not split
    // every node); fuller when that would not fit the nodes free: a meganode rebuilt from its log
    // may have held its entries more tightly than 70 % (left-half writes during a split go on
    // into a meganode past half full, and random inserts fill unevenly), and whole nodes always
    // fit what one meganode held. Node 1, the empty root leaf of a fresh meganode, is reused.
    int[] usage = m.nodes.usage();
    int free = usage[1] - usage[0] + 1;
    List<List<Node>> levels = null;
    for (int percent : new int[] {70, 85, 100}) {
      levels = plan(keys, m.nodeSize * percent / 100);
      if (levels.stream().mapToInt(List::size).sum() <= free) {
        break;
      }
    }
    // The leaves' values: an extent per pair (a leaf meganode) or the child pointer.
    List<Node> leaves = levels.get(0);
    int i = 0;
    for (Node n : leaves) {
      for (int j = 0; j < n.keys.size(); j++, i++) {
        n.values.set(
            j,
            m.leafMeganode
                ? m.newExtent(keys.get(i), values.get(i))
                : new long[] {children.get(i), 0, 0});
      }
    }
    int[] indices = writeLevel(m, leaves, true);
    for (int level = 1; level < levels.size(); level++) {
      for (Node p : levels.get(level)) {
        for (long[] v : p.values) {
          v[0] = indices[(int) v[0]]; // the planned position in the level below, now its node
        }
      }
      indices = writeLevel(m, levels.get(level), false);
    }
    long hv = m.nodes.lock(0);
    Node header = Node.decodeBody(m.nodes.copy(0));
    header.right = indices[0];
    header.level = levels.size() - 1;
    m.nodes.write(0, header, hv);
  }

  /**
   * The local levels {@link #fill} builds for ascending {@code keys}, leaves first, each node
   * closed when its encoding would pass {@code budget} bytes: leaf values left empty (filled in
   * once the plan is chosen: an extent is allocated only then), an inner entry's value the position
   * of its child in the level below.
   */
  private static List<List<Node>> plan(List<byte[]> keys, int budget) {
    List<Node> level = new ArrayList<>();
    Node n = null;
    for (byte[] key : keys) {
      // Close the node when the entry and the high key it would then get pass the budget.
      if (n != null && n.encodedSize() + Node.LEAF_ENTRY + 2 * key.length > budget) {
        n.high = key;
        level.add(n);
        n = null;
      }
      if (n == null) {
        n = new Node();
        n.flags = Node.LEAF | Node.LIVE;
        n.low = level.isEmpty() ? new byte[0] : key; // the first node's range starts at -inf
      }
      n.keys.add(key);
      n.values.add(new long[3]);
    }
    n.flags |= Node.HIGH_INF;
    level.add(n);
    List<List<Node>> levels = new ArrayList<>();
    levels.add(level);
    while (level.size() > 1) {
      List<Node> up = new ArrayList<>();
      Node p = null;
      for (int i = 0; i < level.size(); i++) {
        byte[] key = level.get(i).low;
        if (p != null && p.encodedSize() + Node.INNER_ENTRY + 2 * key.length > budget) {
          p.high = key;
          up.add(p);
          p = null;
        }
        if (p == null) {
          p = new Node();
          p.flags = Node.LIVE;
          p.level = levels.size();
          p.low = up.isEmpty() ? new byte[0] : key;
        }
        p.keys.add(key);
        p.values.add(new long[] {i});
      }
      p.flags |= Node.HIGH_INF;
      up.add(p);
      levels.add(up);
      level = up;
    }
    return levels;
  }

  /**
   * Writes one level built by {@link #fill}, left to right linked; the leaf level's first node
   * takes node 1 (the empty root leaf the meganode was formatted with). Returns their indices.
   */
  private static int[] writeLevel(Meganode m, List<Node> level, boolean leaves) {
    int[] indices = new int[level.size()];
    for (int i = 0; i < indices.length; i++) {
      indices[i] = leaves && i == 0 ? 1 : m.nodes.allocate();
    }
    for (int i = 0; i < indices.length; i++) {
      Node n = level.get(i);
      n.right = i + 1 < indices.length ? indices[i + 1] : 0;
      n.incarnation = Math.max(1, m.nodes.incarnationOf(indices[i]) + 1);
      m.nodes.writeFresh(indices[i], n);
    }
    return indices;
  }

  /**
   * The node at {@code level} whose range holds the keys just below {@code key}: its low key below
   * {@code key}, its high key at or above it. Under the structure lock: nothing moves.
   */
  private static int boundary(MeganodeReader reader, int root, byte[] key, int level) {
    int index = root;
    while (true) {
      Node n = reader.read(index);
      if (!n.highInfinite() && java.util.Arrays.compareUnsigned(n.high, key) < 0 && n.right != 0) {
        index = n.right;
        continue;
      }
      if (n.level == level) {
        return index;
      }
      // The last child whose first key is below key (strictly): the one ending the keys below it.
      int i = n.ceiling(key) - 1;
      index = (int) n.values.get(Math.max(0, i))[0];
    }
  }
}
