package io.ferrite.apps.carafe.pregel;

import io.ferrite.apps.carafe.Csr;
import java.util.Arrays;
import java.util.Random;

/**
 * Seeded graphs with every awkward shape: vertices with no out-edges (sinks), self-loops, duplicate
 * edges, and a tail of isolated vertices (no edge in or out) that the default partitioner makes a
 * partition of its own when there are 3.
 */
final class TestGraphs {
  private TestGraphs() {}

  /** A directed graph: {@code n} vertices, the last {@code isolated} without any edge. */
  static Csr directed(Random r, int n, int isolated, int perVertex) {
    int live = n - isolated;
    int[][] adj = new int[n][];
    for (int v = 0; v < n; v++) {
      if (v >= live || r.nextInt(5) == 0) {
        adj[v] = new int[0]; // a sink (or isolated)
        continue;
      }
      int d = 1 + r.nextInt(2 * perVertex);
      adj[v] = new int[d];
      for (int k = 0; k < d; k++) {
        adj[v][k] = r.nextInt(live);
      }
      if (r.nextInt(4) == 0) {
        adj[v][0] = v; // a self-loop
      }
      if (d > 1 && r.nextInt(4) == 0) {
        adj[v][1] = adj[v][d - 1]; // a duplicate edge
      }
    }
    return csr(adj, false);
  }

  /** An undirected graph (every edge stored both ways), several components, isolated tail. */
  static Csr undirected(Random r, int n, int isolated, int edges) {
    int live = n - isolated;
    int[] a = new int[edges];
    int[] b = new int[edges];
    for (int e = 0; e < edges; e++) {
      // Mostly inside blocks of 16 ids, so there are many components.
      a[e] = r.nextInt(live);
      int block = a[e] / 16 * 16;
      b[e] = r.nextInt(10) == 0 ? r.nextInt(live) : Math.min(live - 1, block + r.nextInt(16));
      if (r.nextInt(10) == 0) {
        b[e] = a[e]; // a self-loop
      }
      if (e > 0 && r.nextInt(10) == 0) {
        a[e] = a[e - 1];
        b[e] = b[e - 1]; // a duplicate edge
      }
    }
    int[] degree = new int[n];
    for (int e = 0; e < edges; e++) {
      degree[a[e]]++;
      degree[b[e]]++;
    }
    int[][] adj = new int[n][];
    for (int v = 0; v < n; v++) {
      adj[v] = new int[degree[v]];
    }
    int[] fill = new int[n];
    for (int e = 0; e < edges; e++) {
      adj[a[e]][fill[a[e]]++] = b[e];
      adj[b[e]][fill[b[e]]++] = a[e];
    }
    return csr(adj, true);
  }

  static Csr csr(int[][] adj, boolean undirected) {
    int n = adj.length;
    long[] first = new long[n + 1];
    for (int v = 0; v < n; v++) {
      first[v + 1] = first[v] + adj[v].length;
    }
    int[] targets = new int[(int) first[n]];
    for (int v = 0; v < n; v++) {
      System.arraycopy(adj[v], 0, targets, (int) first[v], adj[v].length);
    }
    long[] ext = new long[n];
    Arrays.setAll(ext, v -> 100L + 3 * v);
    return new Csr(ext, first, targets, null, undirected).check();
  }
}
