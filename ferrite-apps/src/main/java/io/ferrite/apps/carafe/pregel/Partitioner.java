package io.ferrite.apps.carafe.pregel;

import io.ferrite.apps.carafe.CarafeGraph;
import io.ferrite.apps.carafe.GraphLayout;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.memory.Mapping;
import io.ferrite.memory.MemoryFlags;
import java.nio.ByteBuffer;

/**
 * Weighted vertex partitioning (RStore §V-B: "a vertex weight for access, an edge weight for access
 * and messaging"): splits the internal ids into contiguous ranges of about equal weight, where
 * {@code weight(v) = vertexWeight + edgeWeight * degree(v)}. Contiguous ranges keep a partition's
 * vertex records one range of the vertex array and its adjacency lists one range of the edges
 * allocation, so a worker loads each with large sequential reads. A vertex is never split: a
 * partition may be empty when one vertex outweighs a share.
 */
public final class Partitioner {
  /**
   * Default weights, measured with PageRank on the {@code bench} R-MAT graph (1.04 M vertices, 16.8
   * M edges) with 2 worker processes and the blocked fold ({@code bench graph --pairs 1 --workers
   * 1,2 --vertex-weight W} for W = 8, 12, 16, 24, 48, nine runs, 2026-11-27): each worker's own
   * time a superstep is {@code c + a * vertices + b * edges}; the two workers' differences fitted
   * by least squares give a = 28.7 ns a vertex (compute, the share, the inbox fold, the emit of its
   * targets, its record's write-back) and b = 2.07 ns an edge (the blocked fold's 6 bytes and the
   * source's share), a / b = 13.9, so 14. The old fold (an edge a random accumulator write)
   * measured 24; with 24 the blocked fold leaves the hubs' worker the slower by 2-7 ms, with 8 the
   * other. Noisy (the machine's speed moves by 2 x between runs): see docs/GRAPH.md, "Partition
   * weights".
   */
  public static final long DEFAULT_VERTEX_WEIGHT = 14;

  public static final long DEFAULT_EDGE_WEIGHT = 1;

  /** Vertex records per read when degrees are read from RStore: 4 MiB pieces. */
  static final int PIECE_VERTICES = (4 << 20) / GraphLayout.VERTEX;

  private final long vertexWeight;
  private final long edgeWeight;

  public Partitioner(long vertexWeight, long edgeWeight) {
    if (vertexWeight < 0 || edgeWeight < 0 || vertexWeight + edgeWeight == 0) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "partition weights: vertex "
              + vertexWeight
              + ", edge "
              + edgeWeight
              + " (expected: >= 0, not both 0)");
    }
    this.vertexWeight = vertexWeight;
    this.edgeWeight = edgeWeight;
  }

  public static Partitioner defaults() {
    return new Partitioner(DEFAULT_VERTEX_WEIGHT, DEFAULT_EDGE_WEIGHT);
  }

  /**
   * The partition bounds of a stored graph: {@code parts + 1} ids, partition p being {@code
   * [bounds[p], bounds[p + 1])}. Reads the vertex array in 4 MiB pieces for the degrees.
   */
  public long[] bounds(CarafeGraph graph, int parts) {
    int n = (int) graph.vertexCount();
    int[] degree = new int[n];
    if (n > 0) {
      ByteBuffer b = GraphLayout.le(PIECE_VERTICES * GraphLayout.VERTEX);
      try (Mapping m = graph.vertices(0, n).map(MemoryFlags.MAP_NO_BUFFER)) {
        for (int v0 = 0; v0 < n; v0 += PIECE_VERTICES) {
          int count = Math.min(PIECE_VERTICES, n - v0);
          m.readSync((long) v0 * GraphLayout.VERTEX, b.clear().limit(count * GraphLayout.VERTEX));
          for (int v = 0; v < count; v++) {
            degree[v0 + v] = b.getInt(v * GraphLayout.VERTEX + GraphLayout.V_DEGREE);
          }
        }
      }
    }
    return bounds(degree, parts);
  }

  /**
   * The bounds for vertices of the given out-degrees: boundary p is the id whose prefix weight is
   * closest to {@code p / parts} of the total.
   */
  public long[] bounds(int[] degree, int parts) {
    if (parts < 1) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "partitions: " + parts + " (expected: >= 1)");
    }
    int n = degree.length;
    long total = 0;
    for (int d : degree) {
      total += weight(d);
    }
    long[] bounds = new long[parts + 1];
    bounds[parts] = n;
    int v = 0;
    long prefix = 0; // weight of [0, v)
    for (int p = 1; p < parts; p++) {
      // total * p / parts without overflow for any realistic total (< 2^57 with p <= 64)
      long target = Math.multiplyHigh(total, p) == 0 ? total * p / parts : total / parts * p;
      while (v < n && prefix + weight(degree[v]) <= target) {
        prefix += weight(degree[v++]);
      }
      // prefix <= target < prefix + weight(v): take v into this partition if that is closer.
      if (v < n && prefix + weight(degree[v]) - target < target - prefix) {
        prefix += weight(degree[v++]);
      }
      bounds[p] = v;
    }
    return bounds;
  }

  long weight(int degree) {
    return vertexWeight + edgeWeight * degree;
  }
}
