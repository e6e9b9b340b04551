package io.ferrite.apps.carafe;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.util.Arrays;

/**
 * Turns an edge list (external ids, in input order) into a {@link Csr}: what the importer and the
 * generator share, so that a generated graph and the same graph written out and imported again are
 * the same {@link Csr}.
 *
 * <ul>
 *   <li>Vertices are the ids that appear in some edge; internal ids are given in ascending external
 *       id order (so external to internal is a binary search over the vertex records).
 *   <li>Each vertex's out-edges keep input order (a stable counting sort by source).
 *   <li>Undirected: edge i = (s, d) stores s &rarr; d and d &rarr; s, in that order, at input
 *       position i; a self-loop (s, s) is stored twice (once per direction), so an undirected graph
 *       of m input edges holds exactly 2m entries, as GraphX holds {@code edges union reverse}.
 * </ul>
 *
 * Cost: two passes over the edges for the counting sort, plus the id mapping: a dense table of
 * {@code maxId + 1} ints when the ids are small enough (SNAP's are), a sort of all ids otherwise.
 */
final class CsrBuilder {
  private CsrBuilder() {}

  /** Largest entry count: targets are one int[]. */
  static final long MAX_ENTRIES = Integer.MAX_VALUE - 8;

  /** Ids below this bound are mapped through a dense table (4 bytes per possible id). */
  private static final long DENSE_MIN = 1L << 26;

  /**
   * Builds from edges whose external ids are non-negative longs at most {@code maxSeen}, given in
   * parts (an importer's threads each parse a part of the file): part k holds {@code counts[k]}
   * edges in {@code src[k]} and {@code dst[k]}; the edges are the parts in order, {@code weights}
   * (or null) one per edge over all parts.
   */
  static Csr fromLongIds(
      long[][] src,
      long[][] dst,
      int[] counts,
      float[] weights,
      long maxSeen,
      boolean undirected,
      CarafeGraph.Progress progress) {
    long total = 0;
    for (int c : counts) {
      total += c;
    }
    checkEntries(total, undirected);
    int m = (int) total;
    int[] s = new int[m];
    int[] d = new int[m];
    if (maxSeen < Math.max(DENSE_MIN, 4L * m) && maxSeen < Integer.MAX_VALUE - 8) {
      int i = 0;
      for (int k = 0; k < counts.length; k++) {
        for (int j = 0; j < counts[k]; j++, i++) {
          s[i] = (int) src[k][j];
          d[i] = (int) dst[k][j];
        }
      }
      return fromIntIds(s, d, weights, m, (int) maxSeen + 1, undirected, progress);
    }
    // Sparse ids: sort all of them once, then each id's internal id is its rank.
    long[] all = new long[2 * m];
    int at = 0;
    for (int k = 0; k < counts.length; k++) {
      System.arraycopy(src[k], 0, all, at, counts[k]);
      System.arraycopy(dst[k], 0, all, at + m, counts[k]);
      at += counts[k];
    }
    Arrays.parallelSort(all);
    int n = 0;
    for (int i = 0; i < all.length; i++) {
      if (i == 0 || all[i] != all[n - 1]) {
        all[n++] = all[i];
      }
    }
    long[] ext = Arrays.copyOf(all, n);
    checkVertices(n);
    progress.report("ids", n, n);
    int i = 0;
    for (int k = 0; k < counts.length; k++) {
      for (int j = 0; j < counts[k]; j++, i++) {
        s[i] = Arrays.binarySearch(ext, src[k][j]);
        d[i] = Arrays.binarySearch(ext, dst[k][j]);
      }
    }
    return sort(s, d, weights, m, ext, undirected, progress);
  }

  /**
   * Builds from {@code m} edges whose external ids are ints in {@code [0, idBound)}; {@code src}
   * and {@code dst} are relabelled in place to internal ids.
   */
  static Csr fromIntIds(
      int[] src,
      int[] dst,
      float[] weights,
      int m,
      int idBound,
      boolean undirected,
      CarafeGraph.Progress progress) {
    checkEntries(m, undirected);
    int[] table = new int[idBound];
    for (int i = 0; i < m; i++) {
      table[src[i]] = 1;
      table[dst[i]] = 1;
    }
    int n = 0;
    for (int id = 0; id < idBound; id++) {
      table[id] = table[id] == 0 ? -1 : n++;
    }
    long[] ext = new long[n];
    for (int id = 0; id < idBound; id++) {
      if (table[id] >= 0) {
        ext[table[id]] = id;
      }
    }
    progress.report("ids", n, n);
    for (int i = 0; i < m; i++) {
      src[i] = table[src[i]];
      dst[i] = table[dst[i]];
    }
    return sort(src, dst, weights, m, ext, undirected, progress);
  }

  /** The stable counting sort by source of edges already in internal ids. */
  private static Csr sort(
      int[] s,
      int[] d,
      float[] w,
      int m,
      long[] ext,
      boolean undirected,
      CarafeGraph.Progress progress) {
    int n = ext.length;
    long entries = undirected ? 2L * m : m;
    long[] first = new long[n + 1];
    for (int i = 0; i < m; i++) {
      first[s[i] + 1]++;
      if (undirected) {
        first[d[i] + 1]++;
      }
    }
    for (int v = 0; v < n; v++) {
      first[v + 1] += first[v];
    }
    progress.report("sort", 0, entries);
    int[] cursor = new int[n];
    for (int v = 0; v < n; v++) {
      cursor[v] = (int) first[v];
    }
    int[] targets = new int[(int) entries];
    float[] weights = w == null ? null : new float[(int) entries];
    int step = 1 << 22;
    for (int i = 0; i < m; i++) {
      int at = cursor[s[i]]++;
      targets[at] = d[i];
      if (weights != null) {
        weights[at] = w[i];
      }
      if (undirected) {
        at = cursor[d[i]]++;
        targets[at] = s[i];
        if (weights != null) {
          weights[at] = w[i];
        }
      }
      if ((i & (step - 1)) == step - 1) {
        progress.report("sort", undirected ? 2L * (i + 1) : i + 1, entries);
      }
    }
    progress.report("sort", entries, entries);
    return new Csr(ext, first, targets, weights, undirected);
  }

  private static void checkEntries(long m, boolean undirected) {
    long entries = undirected ? 2L * m : m;
    if (entries > MAX_ENTRIES) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "graph: "
              + entries
              + " adjacency entries (expected: at most "
              + MAX_ENTRIES
              + (undirected ? "; an undirected edge is stored twice)" : ")"));
    }
  }

  private static void checkVertices(long n) {
    if (n > GraphLayout.MAX_VERTICES) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "graph: " + n + " vertices (expected: at most " + GraphLayout.MAX_VERTICES + ")");
    }
  }
}
