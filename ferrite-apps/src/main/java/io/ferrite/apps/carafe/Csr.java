package io.ferrite.apps.carafe;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;

/**
 * A graph in memory in compressed sparse row form, as an importer or generator builds it before it
 * goes to RStore ({@link CarafeGraph#create}) and as the reference implementations read it: vertex
 * {@code v}'s out-edges are entries {@code [firstEdge[v], firstEdge[v + 1])} of {@code targets}
 * (and {@code weights}), in the order they were stored.
 *
 * @param externalIds vertex v's id in the source (the file's id; the generator's is v itself)
 * @param firstEdge n + 1 edge offsets, non-decreasing, from 0 to {@code targets.length}
 * @param targets internal ids, each in {@code [0, n)}
 * @param weights one per target, or null for an unweighted graph (every weight 1)
 * @param undirected whether every edge was stored in both directions (the paper's "bidirectional
 *     edges are split and stored twice")
 */
public record Csr(
    long[] externalIds, long[] firstEdge, int[] targets, float[] weights, boolean undirected) {

  public int vertices() {
    return externalIds.length;
  }

  public long edges() {
    return targets.length;
  }

  public int degree(int v) {
    return (int) (firstEdge[v + 1] - firstEdge[v]);
  }

  public float weight(long e) {
    return weights == null ? 1f : weights[(int) e];
  }

  /**
   * The internal id of external id {@code externalId}, or -1 if no vertex has it: a binary search,
   * so the external ids must be ascending (they are in graphs that {@link EdgeListImporter} and
   * {@link RmatGenerator} build; otherwise the answer is undefined).
   */
  public int internalId(long externalId) {
    int i = java.util.Arrays.binarySearch(externalIds, externalId);
    return i >= 0 ? i : -1;
  }

  /**
   * Checks the shape (lengths, offsets, target range): what {@link CarafeGraph#create} relies on.
   *
   * @throws FerriteException INVALID_ARGUMENT naming the first problem
   */
  public Csr check() {
    int n = externalIds.length;
    if (n > GraphLayout.MAX_VERTICES) {
      throw bad("vertices: " + n + " (expected: at most " + GraphLayout.MAX_VERTICES + ")");
    }
    if (firstEdge.length != n + 1) {
      throw bad(
          "firstEdge has "
              + firstEdge.length
              + " entries (expected: vertices + 1 = "
              + (n + 1)
              + ")");
    }
    if (firstEdge[0] != 0 || firstEdge[n] != targets.length) {
      throw bad(
          "firstEdge runs from "
              + firstEdge[0]
              + " to "
              + firstEdge[n]
              + " (expected: 0 to "
              + targets.length
              + ")");
    }
    if (weights != null && weights.length != targets.length) {
      throw bad("weights: " + weights.length + " (expected: one per edge, " + targets.length + ")");
    }
    for (int v = 0; v < n; v++) {
      if (firstEdge[v + 1] < firstEdge[v]) {
        throw bad("firstEdge decreases at vertex " + v);
      }
    }
    for (int e = 0; e < targets.length; e++) {
      if (targets[e] < 0 || targets[e] >= n) {
        throw bad("edge " + e + " targets " + targets[e] + " (expected: 0 to " + (n - 1) + ")");
      }
    }
    return this;
  }

  private static FerriteException bad(String what) {
    return new FerriteException(ErrorCode.INVALID_ARGUMENT, "graph: " + what);
  }
}
