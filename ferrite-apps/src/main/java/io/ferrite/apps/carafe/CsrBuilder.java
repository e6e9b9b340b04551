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
   * A part of an edge list (an importer's thread parses one range of the file): {@code count}
   * edges, their ids in {@code srcInt}/{@code dstInt} when all fit an int, else in {@code
   * srcLong}/{@code dstLong}.
   */
  record Part(int[] srcInt, int[] dstInt, long[] srcLong, long[] dstLong, int count) {
    long src(int i) {
      return srcLong != null ? srcLong[i] : srcInt[i];
    }

    long dst(int i) {
      return dstLong != null ? dstLong[i] : dstInt[i];
    }
  }

  /**
   * Builds from edges whose external ids are non-negative longs at most {@code maxSeen}, in parts:
   * the edges are the parts in order, {@code weights} (or null) one per edge over all parts. A
   * single part's int arrays are relabelled in place.
   */
  static Csr fromParts(
      Part[] parts,
      float[] weights,
      long maxSeen,
      boolean undirected,
      CarafeGraph.Progress progress) {
    long total = 0;
    for (Part p : parts) {
      total += p.count();
    }
    checkEntries(total, undirected);
    int m = (int) total;
    if (maxSeen < Math.max(DENSE_MIN, 4L * m) && maxSeen < Integer.MAX_VALUE - 8) {
      // Every id fits an int, so every part kept ints.
      if (parts.length == 1) {
        return fromIntIds(
            parts[0].srcInt(),
            parts[0].dstInt(),
            weights,
            m,
            (int) maxSeen + 1,
            undirected,
            progress);
      }
      int[] s = new int[m];
      int[] d = new int[m];
      int at = 0;
      for (Part p : parts) {
        System.arraycopy(p.srcInt(), 0, s, at, p.count());
        System.arraycopy(p.dstInt(), 0, d, at, p.count());
        at += p.count();
      }
      return fromIntIds(s, d, weights, m, (int) maxSeen + 1, undirected, progress);
    }
    // Sparse ids: sort all of them once, then each id's internal id is its rank.
    long[] all = new long[2 * m];
    int at = 0;
    for (Part p : parts) {
      for (int j = 0; j < p.count(); j++, at++) {
        all[at] = p.src(j);
        all[at + m] = p.dst(j);
      }
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
    int[] s = new int[m];
    int[] d = new int[m];
    int i = 0;
    for (Part p : parts) {
      for (int j = 0; j < p.count(); j++, i++) {
        s[i] = Arrays.binarySearch(ext, p.src(j));
        d[i] = Arrays.binarySearch(ext, p.dst(j));
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
