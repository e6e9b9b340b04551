package io.ferrite.apps.carafe;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * R-MAT graphs (Chakrabarti, Zhan, Faloutsos, "R-MAT: A Recursive Model for Graph Mining", SDM
 * 2004): each edge picks one quadrant of the adjacency matrix per level, top-left with probability
 * a, top-right b, bottom-left c, bottom-right d = 1 - a - b - c, down to one cell. Each level's
 * probabilities carry a little noise (each multiplied by 1 &plusmn; {@link #NOISE}, drawn once per
 * level from the seed, then normalized), which smooths the staircase degree distribution of plain
 * R-MAT. An edge whose cell falls outside {@code [0, vertices)} (the matrix is a power of two) is
 * drawn again.
 *
 * <p>Like a graph imported from a file, the generated graph's vertices are the ids that some edge
 * touches (an id no edge touches does not exist), internal ids in ascending id order, duplicates
 * and self-loops kept: {@link #generate} gives exactly what importing {@link EdgeListWriter}'s file
 * of it gives, so Carafe and a peer that loads the file (GraphX) work on the same graph. External
 * ids are the R-MAT cell indices. An undirected graph stores each of its {@code edges} both ways (2
 * * edges entries), ordered by the smaller end so that its file re-imports to the same {@link Csr}.
 *
 * <p>Deterministic for a seed whatever the thread count: edges are generated in blocks of {@link
 * #BLOCK}, each from its own random stream seeded by (seed, block index), into its own slice of the
 * arrays; the threads only decide which block runs where. Unweighted.
 *
 * @param vertices the id range, {@code [0, vertices)}
 * @param edges edges to generate
 */
public record RmatGenerator(
    long vertices, long edges, double a, double b, double c, long seed, boolean undirected) {

  /** Relative noise on each level's probabilities. */
  public static final double NOISE = 0.1;

  /** Edges per random stream (and per unit of work for a thread). */
  static final int BLOCK = 1 << 20;

  public RmatGenerator {
    if (vertices < 1 || vertices > GraphLayout.MAX_VERTICES) {
      throw bad("vertices: " + vertices + " (expected: 1 to " + GraphLayout.MAX_VERTICES + ")");
    }
    long maxEdges = undirected ? CsrBuilder.MAX_ENTRIES / 2 : CsrBuilder.MAX_ENTRIES;
    if (edges < 1 || edges > maxEdges) {
      throw bad("edges: " + edges + " (expected: 1 to " + maxEdges + ")");
    }
    if (!(a > 0 && b >= 0 && c >= 0 && a + b + c <= 1)) {
      throw bad(
          "probabilities a, b, c: "
              + a
              + ", "
              + b
              + ", "
              + c
              + " (expected: a > 0, b, c >= 0, a + b + c <= 1)");
    }
  }

  /**
   * A named shape with {@code seed}: {@code livejournal} (SNAP's soc-LiveJournal1 size, 4,847,571
   * ids and 68,993,773 directed edges, the paper's graph; a, b, c = 0.5, 0.17, 0.17, less skewed
   * than the others so that about 90% of the ids have edges, as all of LiveJournal's vertices do,
   * with a largest out-degree near 9 k against LiveJournal's 20 k), {@code bench} (2^21 ids, 2^24
   * edges: about 1.1 M vertices with edges, the "1 M vertices and 16 M edges"), {@code
   * small} (16,384 ids, 100,000 edges: about 10 k vertices) and {@code tiny} (64 ids, 300 edges).
   * All directed, a, b, c = 0.57, 0.19, 0.19 unless said; {@link #asUndirected} for the undirected
   * twin.
   */
  public static RmatGenerator preset(String name, long seed) {
    return switch (name) {
      case "livejournal" -> new RmatGenerator(4_847_571, 68_993_773, 0.5, 0.17, 0.17, seed, false);
      case "bench" -> new RmatGenerator(1 << 21, 1 << 24, 0.57, 0.19, 0.19, seed, false);
      case "small" -> new RmatGenerator(16_384, 100_000, 0.57, 0.19, 0.19, seed, false);
      case "tiny" -> new RmatGenerator(64, 300, 0.57, 0.19, 0.19, seed, false);
      default ->
          throw bad("graph preset: '" + name + "' (expected: " + String.join(", ", PRESETS) + ")");
    };
  }

  /** The names {@link #preset} knows. */
  public static final String[] PRESETS = {"livejournal", "bench", "small", "tiny"};

  /** The same graph, stored undirected. */
  public RmatGenerator asUndirected() {
    return new RmatGenerator(vertices, edges, a, b, c, seed, true);
  }

  /**
   * Generates the graph, on every core. Progress phases {@code generate} (edges), then {@code ids}
   * and {@code sort} of the build.
   */
  public Csr generate(CarafeGraph.Progress progress) {
    return generate(progress, Runtime.getRuntime().availableProcessors(), BLOCK);
  }

  /**
   * {@link #generate} on {@code threads} threads (the caller among them) with random streams of
   * {@code block} edges: the graph depends on the block size, not on the threads.
   */
  Csr generate(CarafeGraph.Progress progress, int threadCount, int block) {
    int m = (int) edges;
    int[] src = new int[m];
    int[] dst = new int[m];
    double[][] levels = levels();
    int blocks = (int) ((m + (long) block - 1) / block);
    int threads = Math.max(1, Math.min(blocks, threadCount));
    AtomicInteger nextBlock = new AtomicInteger();
    AtomicLong done = new AtomicLong();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Runnable work =
        () -> {
          try {
            for (int k; (k = nextBlock.getAndIncrement()) < blocks && failure.get() == null; ) {
              int from = k * block;
              int to = (int) Math.min(m, (long) from + block);
              fill(k, from, to, src, dst, levels);
              done.addAndGet(to - from);
            }
          } catch (Throwable t) {
            failure.compareAndSet(null, t);
          }
        };
    Thread[] helpers = new Thread[threads - 1];
    for (int i = 0; i < helpers.length; i++) {
      helpers[i] = new Thread(work, "carafe-rmat-" + (i + 1));
      helpers[i].setDaemon(true);
      helpers[i].start();
    }
    // The caller is worker 0, and the only thread that reports progress.
    try {
      for (int k; (k = nextBlock.getAndIncrement()) < blocks && failure.get() == null; ) {
        int from = k * block;
        int to = (int) Math.min(m, (long) from + block);
        fill(k, from, to, src, dst, levels);
        progress.report("generate", done.addAndGet(to - from), m);
      }
    } catch (RuntimeException | Error e) {
      failure.compareAndSet(null, e);
    }
    Helpers.joinAll(helpers);
    Throwable t = failure.get();
    if (t != null) {
      throw new FerriteException(ErrorCode.INTERNAL, "generating " + this + ": " + t, t);
    }
    progress.report("generate", m, m);
    if (undirected) {
      orderBySmallerEnd(src, dst);
    }
    return CsrBuilder.fromIntIds(src, dst, null, m, (int) vertices, undirected, progress);
  }

  /**
   * Per level, the cumulative thresholds {a, a + b, a + b + c} after the level's noise. Drawn from
   * the seed alone, so every block sees the same levels.
   */
  double[][] levels() {
    int scale = scale();
    SplittableRandom r = new SplittableRandom(seed);
    double d = Math.max(0, 1 - a - b - c);
    double[][] levels = new double[scale][];
    for (int l = 0; l < scale; l++) {
      double la = a * (1 + NOISE * (2 * r.nextDouble() - 1));
      double lb = b * (1 + NOISE * (2 * r.nextDouble() - 1));
      double lc = c * (1 + NOISE * (2 * r.nextDouble() - 1));
      double ld = d * (1 + NOISE * (2 * r.nextDouble() - 1));
      double sum = la + lb + lc + ld;
      levels[l] = new double[] {la / sum, (la + lb) / sum, (la + lb + lc) / sum};
    }
    return levels;
  }

  /** Levels of the matrix: ceil(log2(vertices)). */
  int scale() {
    return vertices == 1 ? 0 : 64 - Long.numberOfLeadingZeros(vertices - 1);
  }

  private void fill(int k, int from, int to, int[] src, int[] dst, double[][] levels) {
    // A stream per block: mix the block index into the seed (SplittableRandom mixes its seed).
    SplittableRandom r = new SplittableRandom(seed ^ (0x9E3779B97F4A7C15L * (k + 1)));
    int scale = levels.length;
    long n = vertices;
    for (int i = from; i < to; i++) {
      long s;
      long d;
      do {
        s = 0;
        d = 0;
        for (int l = 0; l < scale; l++) {
          double[] q = levels[l];
          double x = r.nextDouble();
          int row = x < q[1] ? 0 : 1;
          int col = (x < q[0] || (x >= q[1] && x < q[2])) ? 0 : 1;
          s = (s << 1) | row;
          d = (d << 1) | col;
        }
      } while (s >= n || d >= n);
      src[i] = (int) s;
      dst[i] = (int) d;
    }
  }

  /**
   * Orients every edge from its smaller end and stably sorts by it (a counting sort), the order
   * {@link EdgeListWriter} writes an undirected graph in.
   */
  private void orderBySmallerEnd(int[] src, int[] dst) {
    int m = src.length;
    int n = (int) vertices;
    int[] start = new int[n + 1];
    for (int i = 0; i < m; i++) {
      if (src[i] > dst[i]) {
        int t = src[i];
        src[i] = dst[i];
        dst[i] = t;
      }
      start[src[i] + 1]++;
    }
    for (int v = 0; v < n; v++) {
      start[v + 1] += start[v];
    }
    int[] s2 = new int[m];
    int[] d2 = new int[m];
    for (int i = 0; i < m; i++) {
      int at = start[src[i]]++;
      s2[at] = src[i];
      d2[at] = dst[i];
    }
    System.arraycopy(s2, 0, src, 0, m);
    System.arraycopy(d2, 0, dst, 0, m);
  }

  private static FerriteException bad(String what) {
    return new FerriteException(ErrorCode.INVALID_ARGUMENT, "rmat: " + what);
  }
}
