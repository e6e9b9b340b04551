package io.ferrite.bench.graph;

import io.ferrite.apps.carafe.CarafeGraph;
import io.ferrite.apps.carafe.Csr;
import io.ferrite.apps.carafe.Reference;
import io.ferrite.apps.carafe.pregel.Partitioner;
import io.ferrite.apps.carafe.pregel.PregelCoordinator;
import io.ferrite.apps.carafe.pregel.PregelJob;
import io.ferrite.apps.carafe.pregel.PregelResult;
import io.ferrite.apps.worker.LocalCluster;
import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.Progress;
import io.ferrite.memory.RStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * The PageRank part of {@link GraphBench}: the single-threaded reference (the ceiling), the Pregel
 * engine with each worker count, GraphX with {@code --vs graphx}; every answer checked.
 */
final class PageRankRuns {
  private static final String MS = "ms";

  /** The longest wait for this JVM's JIT compiler to go idle before a PageRank run. */
  static final Duration JIT_WAIT = Duration.ofSeconds(5);

  private PageRankRuns() {}

  static void run(
      GraphBench.Options o,
      Progress p,
      BenchReport report,
      Csr csr,
      CarafeGraph graph,
      LocalCluster cluster,
      Path file,
      int cores)
      throws Exception {
    int it = o.iterations();
    p.step("PageRank " + it + " iterations: Reference.pageRank, one thread in this JVM (ceiling)");
    long t0 = System.nanoTime();
    double[] want = Reference.pageRank(csr, it);
    long t1 = System.nanoTime();
    BenchResult ceilingStep =
        report.add(
            BenchResult.of(
                "ceiling.reference.pagerank.ms-per-iteration",
                (t1 - t0) / 1e6 / it,
                MS,
                Better.LOWER));
    report.add(
        BenchResult.of("ceiling.reference.pagerank.time", (t1 - t0) / 1e6, MS, Better.LOWER));

    BenchResult oneWorker = null;
    BenchResult oneWorkerMedian = null;
    BenchResult compare = null;
    double compareNanos = 0;
    int compareWorkers = o.workers().contains(2) ? 2 : o.workers().get(0);
    for (int w : o.workers()) {
      p.step(
          "PageRank "
              + it
              + " iterations with "
              + w
              + (o.launcher() == null ? " worker thread(s)" : " worker process(es)"));
      // This JVM's compiles left from the earlier phases would otherwise run during the
      // supersteps, on a core a worker computes on once there are as many workers as cores.
      long quiet = JitQuiet.await(JIT_WAIT);
      if (quiet > JitQuiet.PERIOD_MS * 1_500_000L) {
        p.step(
            String.format(Locale.ROOT, "waited %.1f s for this JVM's JIT compiler", quiet / 1e9));
      }
      PregelResult r = pregel(o, graph, cluster, w);
      String bad = GraphBench.rankMismatch(r.doubleValues(graph), want);
      if (bad != null) {
        throw new IllegalStateException("PageRank with " + w + " workers is wrong: " + bad);
      }
      double perStep = r.computeNanos() / 1e6 / r.supersteps();
      String name = "carafe.pagerank.w" + w;
      BenchResult step =
          report.add(
              BenchResult.against(
                  name + ".ms-per-superstep", perStep, MS, Better.LOWER, ceilingStep));
      // The median superstep: the steady state, without the first supersteps' JIT compilation
      // (which W worker JVMs do at once, on cores they also compute on).
      double median = median(r.superstepNanos()) / 1e6;
      BenchResult medianStep =
          report.add(
              BenchResult.against(
                  name + ".ms-per-superstep.median", median, MS, Better.LOWER, ceilingStep));
      report.add(BenchResult.of(name + ".time", r.computeNanos() / 1e6, MS, Better.LOWER));
      report.add(BenchResult.of(name + ".load", r.loadNanos() / 1e6, MS, Better.LOWER));
      p.step(
          String.format(
              Locale.ROOT,
              "%d workers: %d supersteps in %.3f s (%.1f ms each), load %.3f s, %d messages;"
                  + " ranks equal the reference",
              w,
              r.supersteps(),
              r.computeNanos() / 1e9,
              perStep,
              r.loadNanos() / 1e9,
              r.messages()));
      // Each worker's own time (inbox to write-back, no barrier) beside its share of the graph: the
      // figures a partitioner's vertex weight is fitted to (docs/GRAPH.md, "Partition weights").
      for (int j = 0; j < w; j++) {
        p.step(
            String.format(
                Locale.ROOT,
                "  worker %d: %d vertices, %d edges, %.2f ms a superstep of its own",
                j,
                r.bounds()[j + 1] - r.bounds()[j],
                r.edges()[j],
                r.workerNanos()[j] / 1e6 / r.supersteps()));
      }
      if (w == 1) {
        oneWorker = step;
        oneWorkerMedian = medianStep;
      } else if (oneWorker != null) {
        // The scaling target: per-superstep time with W workers <= 0.6 x with 1 (for W = 2
        // on this 2-core machine), i.e. this ratio (1-worker / W-worker time) >= 1.67.
        report.add(
            BenchResult.against(
                name + ".ms-per-superstep.vs-w1", perStep, MS, Better.LOWER, oneWorker));
        report.add(
            BenchResult.against(
                name + ".ms-per-superstep.median.vs-w1",
                median,
                MS,
                Better.LOWER,
                oneWorkerMedian));
      }
      if (w == compareWorkers) {
        compare = step;
        compareNanos = r.computeNanos();
      }
    }
    if (o.graphxJar() != null && compare != null) {
      graphx(o, p, report, csr, want, file, cores, compareWorkers, compareNanos);
    }
  }

  /** The median of {@code nanos} (the mean of the middle two for an even count). */
  static double median(long[] nanos) {
    long[] s = nanos.clone();
    java.util.Arrays.sort(s);
    int n = s.length;
    return n == 0 ? 0 : n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
  }

  private static PregelResult pregel(
      GraphBench.Options o, CarafeGraph graph, LocalCluster cluster, int workers)
      throws IOException, InterruptedException {
    PregelJob job =
        new PregelJob(
            graph.name(),
            "pagerank:" + o.iterations(),
            workers,
            o.iterations() + 2,
            "pr-w" + workers + "/",
            Duration.ofMinutes(30));
    RStore store = graph.store();
    try (PregelCoordinator c =
        new PregelCoordinator(store, job, o.progress())
            .partitioner(new Partitioner(o.vertexWeight(), Partitioner.DEFAULT_EDGE_WEIGHT))) {
      return o.launcher() == null
          ? c.runInThreads()
          : c.runInProcesses(cluster.access(), o.launcher());
    }
  }

  private static void graphx(
      GraphBench.Options o,
      Progress p,
      BenchReport report,
      Csr csr,
      double[] want,
      Path file,
      int cores,
      int carafeWorkers,
      double carafeNanos)
      throws IOException, InterruptedException {
    int partitions = o.graphxPartitions() > 0 ? o.graphxPartitions() : cores;
    p.step(
        "GraphX: PageRank.run on the same file, local["
            + cores
            + "], "
            + partitions
            + " edge partitions ("
            + o.graphxJar()
            + ")");
    Path ranks = Files.createTempFile("ferrite-graphx-ranks", ".txt");
    try {
      GraphXPeer.Result r =
          GraphXPeer.run(
              o.graphxJar(),
              file,
              o.iterations(),
              cores,
              partitions,
              o.graphxHeapBytes(),
              ranks,
              o.progress());
      String bad = graphxMismatch(csr, want, Files.readAllLines(ranks, StandardCharsets.UTF_8));
      if (bad != null) {
        throw new IllegalStateException("GraphX's PageRank differs from the reference: " + bad);
      }
      BenchResult gx =
          report.add(
              BenchResult.of("graphx.pagerank.time", r.pageRankNanos() / 1e6, MS, Better.LOWER));
      report.add(BenchResult.of("graphx.load.time", r.loadNanos() / 1e6, MS, Better.LOWER));
      report.add(
          BenchResult.of(
              "graphx.pagerank.ms-per-iteration",
              r.pageRankNanos() / 1e6 / o.iterations(),
              MS,
              Better.LOWER));
      // The target: Carafe's PageRank at least 2 x GraphX's speed, i.e. ratio >= 2.
      report.add(
          BenchResult.against(
              "carafe.pagerank.w" + carafeWorkers + ".time.vs-graphx",
              carafeNanos / 1e6,
              MS,
              Better.LOWER,
              gx));
      p.step(
          String.format(
              Locale.ROOT,
              "GraphX: load %.2f s, PageRank %.2f s; Carafe (%d workers) %.2f s: %.2f x faster;"
                  + " ranks equal the reference",
              r.loadNanos() / 1e9,
              r.pageRankNanos() / 1e9,
              carafeWorkers,
              carafeNanos / 1e9,
              r.pageRankNanos() / carafeNanos));
    } finally {
      Files.deleteIfExists(ranks);
    }
  }

  /** GraphX's "id rank" lines (ascending ids) against the reference's ranks in internal order. */
  static String graphxMismatch(Csr csr, double[] want, List<String> lines) {
    if (lines.size() != csr.vertices()) {
      return lines.size() + " ranks for " + csr.vertices() + " vertices";
    }
    double[] got = new double[lines.size()];
    for (int v = 0; v < got.length; v++) {
      String line = lines.get(v);
      int sp = line.indexOf(' ');
      long id = Long.parseLong(line.substring(0, sp));
      if (id != csr.externalIds()[v]) {
        return "line " + (v + 1) + " is vertex " + id + " (expected " + csr.externalIds()[v] + ")";
      }
      got[v] = Double.parseDouble(line.substring(sp + 1));
    }
    return GraphBench.rankMismatch(got, want);
  }
}
