package io.ferrite.apps.carafe;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.util.Arrays;

/**
 * Shortest paths between vertex pairs by Dijkstra's algorithm on the online-exploration API (paper
 * §V-B, evaluation: "the shortest path between 100 randomly chosen vertex pairs using the Dijkstra
 * shortest path algorithm"): each settled vertex is one {@link VertexHandle} read of its record and
 * its adjacency list through the fabric. Weights are the edge entries' (1 in an unweighted graph),
 * distances are sums in double along the path; the search stops when the destination is settled.
 *
 * <p>The frontier is a binary heap of vertex ids (primitive ints, no boxing) keyed by their
 * tentative distance, with decrease-key. Per-vertex state (distance, predecessor, heap position) is
 * in arrays of n entries that a {@link Searcher} allocates once and resets only where a search
 * wrote, so a search costs what it explores, not O(n). The same search runs on an in-memory {@link
 * Csr} ({@link #shortest(Csr, long, long)}): the ceiling a stored graph's exploration is measured
 * against.
 */
public final class Dijkstra {
  private Dijkstra() {}

  /**
   * A search's answer.
   *
   * @param distance the path's length, {@code +Infinity} when dst is unreachable from src
   * @param hops edges on the path (0 when src == dst), -1 when unreachable
   * @param vertices the path's internal ids from src to dst, empty when unreachable
   * @param explored vertices settled (their edges read) before the search stopped
   */
  public record Path(double distance, int hops, long[] vertices, long explored) {
    public boolean reachable() {
      return hops >= 0;
    }

    @Override
    public String toString() {
      return reachable()
          ? "distance " + distance + ", " + hops + " hops, " + explored + " explored"
          : "unreachable, " + explored + " explored";
    }
  }

  /** One search on a stored graph (allocates per-vertex arrays: use {@link #on} for many). */
  public static Path shortest(CarafeGraph g, long srcInternal, long dstInternal) {
    try (Searcher s = on(g)) {
      return s.shortest(srcInternal, dstInternal);
    }
  }

  /** One search on an in-memory graph: the same algorithm, no fabric. */
  public static Path shortest(Csr g, long srcInternal, long dstInternal) {
    return on(g).shortest(srcInternal, dstInternal);
  }

  /** A reusable searcher on a stored graph, with one {@link VertexHandle}. Not thread safe. */
  public static Searcher on(CarafeGraph g) {
    if (g.vertexCount() > GraphLayout.MAX_VERTICES) {
      throw new FerriteException(ErrorCode.INVALID_ARGUMENT, g + ": too many vertices");
    }
    return new Searcher((int) g.vertexCount(), g, null);
  }

  /** A reusable searcher on an in-memory graph. Not thread safe. */
  public static Searcher on(Csr g) {
    return new Searcher(g.vertices(), null, g);
  }

  /** Searches one graph again and again, reusing its per-vertex arrays. */
  public static final class Searcher implements AutoCloseable {
    private final int n;
    private final CarafeGraph stored;
    private final Csr csr;
    private VertexHandle handle;
    private final double[] dist;
    private final int[] pred;

    /** 0: not reached; k > 0: in the heap at index k - 1; -1: settled. */
    private final int[] pos;

    private int[] heap = new int[64];
    private int size;
    private int[] touched = new int[64];
    private int touchedCount;

    Searcher(int n, CarafeGraph stored, Csr csr) {
      this.n = n;
      this.stored = stored;
      this.csr = csr;
      this.dist = new double[n];
      this.pred = new int[n];
      this.pos = new int[n];
    }

    /**
     * The shortest path from {@code src} to {@code dst} (internal ids).
     *
     * @throws FerriteException OUT_OF_BOUNDS for an id outside {@code [0, n)}
     */
    public Path shortest(long src, long dst) {
      check(src, "src");
      check(dst, "dst");
      try {
        return search((int) src, (int) dst);
      } finally {
        reset();
      }
    }

    private void check(long v, String what) {
      if (v < 0 || v >= n) {
        throw new FerriteException(
            ErrorCode.OUT_OF_BOUNDS, what + ": " + v + " (expected: 0 to " + (n - 1) + ")");
      }
    }

    private Path search(int src, int dst) {
      reach(src, -1, 0.0);
      long explored = 0;
      while (size > 0) {
        int u = pop();
        pos[u] = -1;
        explored++;
        if (u == dst) {
          return path(src, dst, explored);
        }
        double du = dist[u];
        if (csr != null) {
          int[] t = csr.targets();
          float[] w = csr.weights();
          long end = csr.firstEdge()[u + 1];
          for (int e = (int) csr.firstEdge()[u]; e < end; e++) {
            relax(u, t[e], du + (w == null ? 1f : w[e]));
          }
        } else {
          if (handle == null) {
            handle = stored.vertex(u);
          } else {
            handle.moveTo(u);
          }
          EdgeIterator it = handle.edges();
          while (it.next()) {
            relax(u, it.target(), du + it.weight());
          }
        }
      }
      return new Path(Double.POSITIVE_INFINITY, -1, new long[0], explored);
    }

    private void relax(int u, int v, double d) {
      int p = pos[v];
      if (p == 0) {
        reach(v, u, d);
      } else if (p > 0 && d < dist[v]) {
        dist[v] = d;
        pred[v] = u;
        up(p - 1);
      }
    }

    private void reach(int v, int from, double d) {
      if (touchedCount == touched.length) {
        touched = Arrays.copyOf(touched, 2 * touched.length);
      }
      touched[touchedCount++] = v;
      dist[v] = d;
      pred[v] = from;
      if (size == heap.length) {
        heap = Arrays.copyOf(heap, 2 * heap.length);
      }
      heap[size] = v;
      pos[v] = size + 1;
      up(size++);
    }

    private Path path(int src, int dst, long explored) {
      int hops = 0;
      for (int v = dst; v != src; v = pred[v]) {
        hops++;
      }
      long[] vs = new long[hops + 1];
      int i = hops;
      for (int v = dst; ; v = pred[v]) {
        vs[i--] = v;
        if (v == src) {
          break;
        }
      }
      return new Path(dist[dst], hops, vs, explored);
    }

    private int pop() {
      int top = heap[0];
      int last = heap[--size];
      if (size > 0) {
        heap[0] = last;
        pos[last] = 1;
        down(0);
      }
      return top;
    }

    private void up(int i) {
      int v = heap[i];
      double d = dist[v];
      while (i > 0) {
        int parent = (i - 1) >>> 1;
        int pv = heap[parent];
        if (dist[pv] <= d) {
          break;
        }
        heap[i] = pv;
        pos[pv] = i + 1;
        i = parent;
      }
      heap[i] = v;
      pos[v] = i + 1;
    }

    private void down(int i) {
      int v = heap[i];
      double d = dist[v];
      while (true) {
        int child = 2 * i + 1;
        if (child >= size) {
          break;
        }
        if (child + 1 < size && dist[heap[child + 1]] < dist[heap[child]]) {
          child++;
        }
        int cv = heap[child];
        if (dist[cv] >= d) {
          break;
        }
        heap[i] = cv;
        pos[cv] = i + 1;
        i = child;
      }
      heap[i] = v;
      pos[v] = i + 1;
    }

    /** Clears only what the search wrote: pos is the "reached" mark, dist and pred follow it. */
    private void reset() {
      for (int i = 0; i < touchedCount; i++) {
        pos[touched[i]] = 0;
      }
      touchedCount = 0;
      size = 0;
    }

    /** Releases the searcher's vertex handle (the graph's mappings stay with the graph). */
    @Override
    public void close() {
      if (handle != null) {
        handle.close();
        handle = null;
      }
    }
  }
}
