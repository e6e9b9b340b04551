package io.ferrite.apps.carafe;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;

/**
 * Single-JVM reference implementations on a {@link Csr}: what the distributed engine's results are
 * checked against (tests, {@code bench graph}). Plain loops, no cleverness: they define the answer.
 */
public final class Reference {
  private Reference() {}

  /** GraphX's reset probability (1 - damping). */
  public static final double RESET = 0.15;

  /**
   * Static PageRank as Spark GraphX 3.5 computes it ({@code PageRank.run(graph, iterations,
   * 0.15)}), so the two systems do the same work and give the same answer: every rank starts at
   * 1.0; in each iteration every vertex with out-edges sends {@code rank / outDegree} along each
   * out-edge (a duplicate edge sends twice, a self-loop to itself) and every vertex's new rank is
   * {@code 0.15 + 0.85 * (sum received)}; mass at vertices with no out-edges is dropped. After the
   * last iteration the ranks are scaled so that they sum to the vertex count (GraphX's
   * normalization for graphs with sinks, SPARK-18847).
   */
  public static double[] pageRank(Csr g, int iterations) {
    int n = g.vertices();
    double[] rank = new double[n];
    double[] sum = new double[n];
    java.util.Arrays.fill(rank, 1.0);
    for (int it = 0; it < iterations; it++) {
      java.util.Arrays.fill(sum, 0.0);
      for (int v = 0; v < n; v++) {
        int deg = g.degree(v);
        if (deg == 0) {
          continue;
        }
        double share = rank[v] / deg;
        for (long e = g.firstEdge()[v]; e < g.firstEdge()[v + 1]; e++) {
          sum[g.targets()[(int) e]] += share;
        }
      }
      for (int v = 0; v < n; v++) {
        rank[v] = RESET + (1 - RESET) * sum[v];
      }
    }
    double total = 0;
    for (double r : rank) {
      total += r;
    }
    if (total > 0) {
      double factor = n / total;
      for (int v = 0; v < n; v++) {
        rank[v] *= factor;
      }
    }
    return rank;
  }

  /**
   * Connected components of an undirected graph (every edge stored both ways): each vertex's
   * component is the smallest internal id in it, the fixpoint of label propagation by minimum.
   *
   * @throws FerriteException INVALID_ARGUMENT for a directed graph
   */
  public static long[] components(Csr g) {
    if (!g.undirected()) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "connected components need an undirected graph (every edge stored both ways)");
    }
    int n = g.vertices();
    int[] parent = new int[n];
    for (int v = 0; v < n; v++) {
      parent[v] = v;
    }
    for (int v = 0; v < n; v++) {
      for (long e = g.firstEdge()[v]; e < g.firstEdge()[v + 1]; e++) {
        int a = find(parent, v);
        int b = find(parent, g.targets()[(int) e]);
        if (a != b) {
          // The smaller root wins, so every root is its component's smallest id.
          parent[Math.max(a, b)] = Math.min(a, b);
        }
      }
    }
    long[] label = new long[n];
    for (int v = 0; v < n; v++) {
      label[v] = find(parent, v);
    }
    return label;
  }

  /**
   * The length of the shortest path from {@code src} to {@code dst} (internal ids), {@code
   * +Infinity} when there is none: textbook Dijkstra with a priority queue of (distance, vertex)
   * entries and lazy deletion, distances summed in double along the path, weights from the csr (1
   * when unweighted), over the whole reachable graph (no early exit, so it shares nothing with
   * {@link Dijkstra}'s search but the definition).
   */
  public static double dijkstra(Csr g, long src, long dst) {
    int n = g.vertices();
    double[] dist = new double[n];
    java.util.Arrays.fill(dist, Double.POSITIVE_INFINITY);
    boolean[] done = new boolean[n];
    java.util.PriorityQueue<double[]> queue =
        new java.util.PriorityQueue<>((x, y) -> Double.compare(x[0], y[0]));
    dist[(int) src] = 0;
    queue.add(new double[] {0, src});
    while (!queue.isEmpty()) {
      double[] top = queue.poll();
      int u = (int) top[1];
      if (done[u]) {
        continue;
      }
      done[u] = true;
      for (long e = g.firstEdge()[u]; e < g.firstEdge()[u + 1]; e++) {
        int v = g.targets()[(int) e];
        double d = dist[u] + g.weight(e);
        if (d < dist[v]) {
          dist[v] = d;
          queue.add(new double[] {d, v});
        }
      }
    }
    return dist[(int) dst];
  }

  private static int find(int[] parent, int v) {
    while (parent[v] != v) {
      parent[v] = parent[parent[v]];
      v = parent[v];
    }
    return v;
  }
}
