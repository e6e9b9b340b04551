package io.ferrite.tree.server;

import io.ferrite.kv.Extents;
import io.ferrite.tree.MeganodeReader;
import io.ferrite.tree.Node;
import java.util.ArrayList;
import java.util.List;

/**
 * A meganode split's two steps on the meganode being split (Cell §2.2): {@link #begin} takes the
 * meganode's structure lock exclusively and picks the right half; {@link #finish} relinks the
 * header, trims the boundary path and invalidates the nodes right of it, then releases the lock.
 * The service copies the right half into the new meganode in between. See {@link
 * Meganode#finishSplit} for why one-sided readers stay correct throughout.
 */
final class MeganodeSplit {
  private MeganodeSplit() {}

  static Meganode.SplitHalf begin(Meganode m) {
    m.structure.writeLock().lock();
    try {
      MeganodeReader reader = new MeganodeReader(m.source);
      Node h = reader.header();
      List<byte[]> keys = new ArrayList<>();
      List<long[]> pointers = new ArrayList<>();
      int index = h.right;
      Node n = reader.read(index);
      while (!n.leaf()) {
        n = reader.read((int) n.values.get(0)[0]);
      }
      while (true) {
        keys.addAll(n.keys);
        pointers.addAll(n.values);
        if (n.right == 0) {
          break;
        }
        n = reader.read(n.right);
      }
      if (keys.size() < 2) {
        m.structure.writeLock().unlock();
        return null;
      }
      int mid = keys.size() / 2;
      List<byte[]> values = new ArrayList<>();
      List<Long> children = new ArrayList<>();
      for (int i = mid; i < keys.size(); i++) {
        long[] p = pointers.get(i);
        if (m.leafMeganode) {
          values.add(Extents.value(m.source.readExtent(p[0], (int) p[1])));
        } else {
          children.add(p[0]);
        }
      }
      return new Meganode.SplitHalf(
          keys.get(mid),
          h.incarnation,
          h.highInfinite() ? null : h.high,
          h.link,
          new ArrayList<>(keys.subList(mid, keys.size())),
          values,
          children);
    } catch (RuntimeException | Error e) {
      m.structure.writeLock().unlock();
      throw e;
    }
  }

  static void finish(Meganode m, byte[] key, long right) {
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
          removed.forEach(m::freeExtent);
        }
        while (next != 0) {
          long w = m.nodes.lock(next);
          Node dead = Node.decodeBody(m.nodes.copy(next));
          int after = dead.right;
          dead.flags &= ~Node.LIVE;
          dead.incarnation++;
          if (level == 0) {
            dead.values.forEach(m::freeExtent);
          }
          m.nodes.write(next, dead, w);
          freed.add(next);
          next = after;
        }
      }
      m.nodes.free(freed);
    } finally {
      m.structure.writeLock().unlock();
    }
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
