package io.ferrite.kernel.testing;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * A directed graph of transactions with typed edges (Adya's ww, wr, rw, plus real-time), its
 * strongly connected components (Tarjan, iterative: a 100 k node history would overflow the stack
 * recursing) and concrete cycles (breadth-first, so the shortest one through a given edge).
 * Everything is over a mask of edge types, so one graph answers "is there a cycle of ww edges
 * only", "of ww and wr", and so on.
 *
 * <p>Nodes are ints. Build with {@link #edge}, then {@link #freeze} (compressed rows: two int
 * arrays and the edge data, no object per edge), then query.
 */
final class DependencyGraph {
  static final int WW = 1;
  static final int WR = 2;
  static final int RW = 4;
  static final int RT = 8;
  static final int ALL = WW | WR | RW | RT;

  static String name(int type) {
    switch (type) {
      case WW:
        return "ww";
      case WR:
        return "wr";
      case RW:
        return "rw";
      default:
        return "rt";
    }
  }

  private final int nodes;
  private int edges;
  private int[] src = new int[64];
  private int[] dst = new int[64];
  private byte[] type = new byte[64];
  private long[] key = new long[64];
  // Compressed rows after freeze: the edges of node n are order[start[n] .. start[n + 1]).
  private int[] start;
  private int[] order;
  // Breadth-first search state, reused across searches (see path).
  private static final int UNSEEN = -2;
  private int[] via;

  DependencyGraph(int nodes) {
    this.nodes = nodes;
  }

  int nodes() {
    return nodes;
  }

  /** Adds {@code from -type-> to} about {@code key} (for the message); self-edges are dropped. */
  void edge(int from, int to, int edgeType, long edgeKey) {
    if (from == to) {
      return;
    }
    if (edges == src.length) {
      int n = edges * 2;
      src = Arrays.copyOf(src, n);
      dst = Arrays.copyOf(dst, n);
      type = Arrays.copyOf(type, n);
      key = Arrays.copyOf(key, n);
    }
    src[edges] = from;
    dst[edges] = to;
    type[edges] = (byte) edgeType;
    key[edges] = edgeKey;
    edges++;
  }

  void freeze() {
    start = new int[nodes + 1];
    for (int e = 0; e < edges; e++) {
      start[src[e] + 1]++;
    }
    for (int n = 0; n < nodes; n++) {
      start[n + 1] += start[n];
    }
    order = new int[edges];
    int[] fill = Arrays.copyOf(start, nodes);
    for (int e = 0; e < edges; e++) {
      order[fill[src[e]]++] = e;
    }
  }

  int edgeCount() {
    return edges;
  }

  int src(int e) {
    return src[e];
  }

  int dst(int e) {
    return dst[e];
  }

  int type(int e) {
    return type[e];
  }

  long key(int e) {
    return key[e];
  }

  /**
   * The strongly connected component of each node over edges of {@code mask}: {@code comp[n]} is a
   * component number, and {@code size[comp]} (returned as the second array) its node count.
   * Tarjan's algorithm with an explicit stack; O(nodes + edges).
   */
  int[][] components(int mask) {
    int[] index = new int[nodes];
    Arrays.fill(index, -1);
    int[] low = new int[nodes];
    int[] comp = new int[nodes];
    boolean[] onStack = new boolean[nodes];
    int[] stack = new int[nodes];
    int sp = 0;
    // The DFS: node and the position of its next edge to look at.
    int[] callNode = new int[nodes];
    int[] callEdge = new int[nodes];
    int depth;
    int counter = 0;
    int comps = 0;
    int[] sizes = new int[Math.max(1, nodes)];
    for (int root = 0; root < nodes; root++) {
      if (index[root] >= 0) {
        continue;
      }
      depth = 0;
      callNode[0] = root;
      callEdge[0] = start[root];
      index[root] = low[root] = counter++;
      stack[sp++] = root;
      onStack[root] = true;
      while (depth >= 0) {
        int v = callNode[depth];
        if (callEdge[depth] < start[v + 1]) {
          int e = order[callEdge[depth]++];
          if ((type[e] & mask) == 0) {
            continue;
          }
          int w = dst[e];
          if (index[w] < 0) {
            index[w] = low[w] = counter++;
            stack[sp++] = w;
            onStack[w] = true;
            depth++;
            callNode[depth] = w;
            callEdge[depth] = start[w];
          } else if (onStack[w]) {
            low[v] = Math.min(low[v], index[w]);
          }
          continue;
        }
        if (low[v] == index[v]) {
          int w;
          do {
            w = stack[--sp];
            onStack[w] = false;
            comp[w] = comps;
            sizes[comps]++;
          } while (w != v);
          comps++;
        }
        depth--;
        if (depth >= 0) {
          int parent = callNode[depth];
          low[parent] = Math.min(low[parent], low[v]);
        }
      }
    }
    return new int[][] {comp, Arrays.copyOf(sizes, comps)};
  }

  /**
   * The edges of a shortest path from {@code from} to {@code to} over edges of {@code mask} whose
   * both ends are in component {@code c} of {@code comp}, or null. O(edges of the component).
   */
  List<Integer> path(int from, int to, int mask, int[] comp, int c) {
    if (from == to) {
      return new ArrayList<>();
    }
    if (via == null) {
      via = new int[nodes];
      Arrays.fill(via, UNSEEN);
    }
    // via[] is kept all UNSEEN between calls; only the nodes this search touched are reset, so a
    // search costs what it visits, not the whole graph (many small components stay cheap).
    IntArrayQueue touched = new IntArrayQueue();
    via[from] = -1;
    touched.add(from);
    List<Integer> out = null;
    for (int head = 0; head < touched.size() && out == null; head++) {
      int v = touched.get(head);
      for (int i = start[v]; i < start[v + 1]; i++) {
        int e = order[i];
        int w = dst[e];
        if ((type[e] & mask) == 0 || comp[w] != c || via[w] != UNSEEN) {
          continue;
        }
        via[w] = e;
        touched.add(w);
        if (w == to) {
          out = new ArrayList<>();
          for (int n = to; n != from; n = src[via[n]]) {
            out.add(via[n]);
          }
          Collections.reverse(out);
          break;
        }
      }
    }
    for (int i = 0; i < touched.size(); i++) {
      via[touched.get(i)] = UNSEEN;
    }
    return out;
  }

  /** A growable int list used as the breadth-first queue (and the list of nodes to reset). */
  private static final class IntArrayQueue {
    private int[] items = new int[16];
    private int size;

    void add(int v) {
      if (size == items.length) {
        items = Arrays.copyOf(items, size * 2);
      }
      items[size++] = v;
    }

    int get(int i) {
      return items[i];
    }

    int size() {
      return size;
    }
  }
}
