package io.ferrite.tree.server;

import io.ferrite.tree.MeganodeReader;
import io.ferrite.tree.Node;

/** The shape check of a meganode's local tree, for tests. */
final class MeganodeShape {
  private MeganodeShape() {}

  /**
   * For tests, at rest: the local tree's shape, or a description of what is wrong. Every level,
   * from its leftmost node along the right links, is live, contiguous (each low key the previous
   * high key), its keys ordered and in range, and ends at +∞ or the meganode's high key; every node
   * in use is on exactly one level.
   */
  static String check(Meganode m) {
    MeganodeReader reader = new MeganodeReader(m.source());
    Node h = reader.header();
    int seen = 0;
    int first = h.right;
    for (int level = h.level; level >= 0; level--) {
      Node n = reader.read(first);
      if (n.level != level || !n.live() || n.low.length != 0) {
        return "level " + level + ": leftmost node " + first + " is " + n.level + "/" + n.live();
      }
      int next = n.leaf() ? 0 : (int) n.values.get(0)[0];
      byte[] low = n.low;
      int index = first;
      while (true) {
        seen++;
        if (!n.live() || n.level != level || !java.util.Arrays.equals(n.low, low)) {
          return "level " + level + ": node " + index + " breaks the chain";
        }
        byte[] prev = null;
        for (byte[] k : n.keys) {
          if (prev != null && java.util.Arrays.compareUnsigned(prev, k) >= 0
              || n.below(k)
              || n.beyond(k)) {
            return "level " + level + ": node " + index + " keys out of order or range";
          }
          prev = k;
        }
        if (n.right == 0) {
          boolean end =
              n.highInfinite() || (!h.highInfinite() && java.util.Arrays.equals(n.high, h.high));
          if (!end) {
            return "level " + level + ": ends at node " + index + " before the meganode's end";
          }
          break;
        }
        low = n.high;
        index = n.right;
        n = reader.read(index);
      }
      first = next;
    }
    int used = m.nodeUsage()[0] - 1;
    return seen == used ? null : seen + " nodes on the levels, " + used + " in use";
  }
}
