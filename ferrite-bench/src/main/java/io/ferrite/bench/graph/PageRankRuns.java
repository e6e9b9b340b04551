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
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The PageRank part of {@link GraphBench}: the single-threaded reference (the ceiling), the Pregel
 * engine with each worker count, GraphX with {@code --vs graphx}; every answer checked.
 */
final class PageRankRuns {
  private static final String MS = "ms";
  private static final String TIMES = "x";
  private static final Better LOW = Better.LOWER;

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
    int rounds = o.rounds();
    List<Integer> counts = o.workers();
    // [count index][round]: every worker count runs once a round, in ABBA order (see Options).
    Job[][] jobs = new Job[counts.size()][rounds];
    double[] referenceMs = new double[rounds];
    double[] want = null;
    for (int round = 0; round < rounds; round++) {
      String of = rounds > 1 ? " (round " + (round + 1) + " of " + rounds + ")" : "";
      p.step(
          "PageRank "
              + it
              + " iterations: Reference.pageRank, one thread in this JVM (ceiling"
              + (rounds > 1 ? "; the machine's speed in this round" : "")
              + ")"
              + of);
      long t0 = System.nanoTime();
      double[] ranks = Reference.pageRank(csr, it);
      long t1 = System.nanoTime();
      want = want == null ? ranks : want;
      referenceMs[round] = (t1 - t0) / 1e6;
      for (int k : order(counts.size(), round)) {
        int w = counts.get(k);
        p.step(
            "PageRank "
                + it
                + " iterations with "
                + w
                + (o.launcher() == null ? " worker thread(s)" : " worker process(es)")
                + of);
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
        Job j = new Job(r);
        jobs[k][round] = j;
        p.step(
            String.format(
                Locale.ROOT,
                "%d workers: %d supersteps in %.3f s (%.1f ms each, median %.1f), load %.3f s,"
                    + " %d messages; ranks equal the reference",
                w,
                r.supersteps(),
                r.computeNanos() / 1e9,
                j.perStepMs,
                j.medianMs,
                r.loadNanos() / 1e9,
                r.messages()));
        // Each worker's own time (inbox to outbox, no barrier) beside its share of the graph:
        // the figures a partitioner's vertex weight is fitted to (docs/GRAPH.md, "Partition
        // weights").
        for (int x = 0; x < w; x++) {
          p.step(
              String.format(
                  Locale.ROOT,
                  "  worker %d: %d vertices, %d edges, %.2f ms a superstep of its own",
                  x,
                  r.bounds()[x + 1] - r.bounds()[x],
                  r.edges()[x],
                  r.workerNanos()[x] / 1e6 / r.supersteps()));
        }
      }
      if (rounds > 1) {
        roundResults(report, p, counts, jobs, round, referenceMs[round] / it);
      }
    }

    // Over the rounds, each figure is the median of its rounds' (with one round: that round's).
    BenchResult ceilingStep =
        report.add(
            BenchResult.of(
                "ceiling.reference.pagerank.ms-per-iteration",
                median(referenceMs) / it,
                MS,
                Better.LOWER));
    report.add(
        BenchResult.of("ceiling.reference.pagerank.time", median(referenceMs), MS, Better.LOWER));
    BenchResult oneWorker = null;
    BenchResult oneWorkerMedian = null;
    double compareNanos = 0;
    int compareWorkers = counts.contains(2) ? 2 : counts.get(0);
    for (int k = 0; k < counts.size(); k++) {
      int w = counts.get(k);
      Job[] js = jobs[k];
      double perStep = median(js, j -> j.perStepMs);
      double median = median(js, j -> j.medianMs);
      String name = "carafe.pagerank.w" + w;
      BenchResult step =
          report.add(
              BenchResult.against(
                  name + ".ms-per-superstep", perStep, MS, Better.LOWER, ceilingStep));
      // The median superstep: the steady state, without the first supersteps' JIT compilation
      // (which W worker JVMs do at once, on cores they also compute on).
      BenchResult medianStep =
          report.add(
              BenchResult.against(
                  name + ".ms-per-superstep.median", median, MS, Better.LOWER, ceilingStep));
      double time = median(js, j -> j.computeMs);
      report.add(BenchResult.of(name + ".time", time, MS, Better.LOWER));
      report.add(BenchResult.of(name + ".load", median(js, j -> j.loadMs), MS, Better.LOWER));
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
        compareNanos = time * 1e6;
      }
    }
    if (rounds > 1) {
      roundsSummary(report, p, counts, jobs);
    }
    if (o.graphxJar() != null && compareNanos > 0) {
      graphx(o, p, report, csr, want, file, cores, compareWorkers, compareNanos);
    }
  }

  /**
   * The order of the worker counts in round {@code round}: ascending in even rounds, descending in
   * odd ones (1, 2, 2, 1, 1, 2, ...), so a drift of the machine's speed across a pair of rounds
   * falls on both counts alike.
   */
  static int[] order(int counts, int round) {
    int[] o = new int[counts];
    for (int i = 0; i < counts; i++) {
      o[i] = round % 2 == 0 ? i : counts - 1 - i;
    }
    return o;
  }

  /** One PageRank job's figures. */
  private static final class Job {
    final double perStepMs;
    final double medianMs;
    final double computeMs;
    final double loadMs;

    Job(PregelResult r) {
      perStepMs = r.computeNanos() / 1e6 / r.supersteps();
      medianMs = median(r.superstepNanos()) / 1e6;
      computeMs = r.computeNanos() / 1e6;
      loadMs = r.loadNanos() / 1e6;
    }
  }

  /**
   * Round {@code round}'s rows: the reference's time an iteration (the machine's speed in this
   * round, its witness), each count's per-superstep mean and median, and each W-worker mean beside
   * the 1-worker one of the same round, as a ratio ({@code .x-w1}: W-worker time / 1-worker time,
   * the target for W = 2 is at most 0.6).
   */
  private static void roundResults(
      BenchReport report,
      Progress p,
      List<Integer> counts,
      Job[][] jobs,
      int round,
      double referenceMsPerIteration) {
    String prefix = "carafe.pagerank.round" + (round + 1) + ".";
    report.add(
        BenchResult.of(
            "ceiling.reference.pagerank.round" + (round + 1) + ".ms-per-iteration",
            referenceMsPerIteration,
            MS,
            Better.LOWER));
    int one = counts.indexOf(1);
    StringBuilder line =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "round %d: reference %.1f ms an iteration",
                round + 1,
                referenceMsPerIteration));
    for (int k = 0; k < counts.size(); k++) {
      int w = counts.get(k);
      Job j = jobs[k][round];
      report.add(BenchResult.of(prefix + "w" + w + ".ms-per-superstep", j.perStepMs, MS, LOW));
      report.add(
          BenchResult.of(prefix + "w" + w + ".ms-per-superstep.median", j.medianMs, MS, LOW));
      line.append(
          String.format(
              Locale.ROOT, "; %d workers %.1f ms (median %.1f)", w, j.perStepMs, j.medianMs));
      if (one >= 0 && w != 1) {
        Job base = jobs[one][round];
        double x = j.perStepMs / base.perStepMs;
        double xm = j.medianMs / base.medianMs;
        report.add(BenchResult.of(prefix + "w" + w + ".x-w1", x, TIMES, LOW));
        report.add(BenchResult.of(prefix + "w" + w + ".x-w1.by-medians", xm, TIMES, LOW));
        line.append(String.format(Locale.ROOT, " = %.3f x 1 worker (medians %.3f)", x, xm));
      }
    }
    p.step(line.toString());
  }

  /**
   * Over the rounds: each W-worker count's ratio to 1 worker (the W-worker time / the 1-worker time
   * of the same round, by the supersteps' means and by their medians), its median and mean over the
   * rounds, and the spread of the machine's speed they were measured across.
   */
  private static void roundsSummary(
      BenchReport report, Progress p, List<Integer> counts, Job[][] jobs) {
    int one = counts.indexOf(1);
    int rounds = jobs[0].length;
    report.add(BenchResult.of("carafe.pagerank.rounds", rounds, "rounds", Better.HIGHER));
    if (one < 0) {
      return;
    }
    for (int k = 0; k < counts.size(); k++) {
      int w = counts.get(k);
      if (w == 1) {
        continue;
      }
      double[] x = new double[rounds];
      double[] xm = new double[rounds];
      for (int r = 0; r < rounds; r++) {
        x[r] = jobs[k][r].perStepMs / jobs[one][r].perStepMs;
        xm[r] = jobs[k][r].medianMs / jobs[one][r].medianMs;
      }
      String name = "carafe.pagerank.w" + w + ".x-w1.rounds";
      report.add(BenchResult.of(name + ".median", median(x), TIMES, LOW));
      report.add(BenchResult.of(name + ".mean", mean(x), TIMES, LOW));
      report.add(BenchResult.of(name + ".by-medians.median", median(xm), TIMES, LOW));
      report.add(BenchResult.of(name + ".by-medians.mean", mean(xm), TIMES, LOW));
      double[] sorted = x.clone();
      Arrays.sort(sorted);
      p.step(
          String.format(
              Locale.ROOT,
              "%d workers / 1 worker over %d rounds, each within its round: median %.3f x, mean"
                  + " %.3f (%.3f to %.3f); by the supersteps' medians: median %.3f, mean %.3f",
              w,
              rounds,
              median(x),
              mean(x),
              sorted[0],
              sorted[rounds - 1],
              median(xm),
              mean(xm)));
    }
  }

  private static double median(Job[] jobs, java.util.function.ToDoubleFunction<Job> f) {
    double[] v = new double[jobs.length];
    for (int i = 0; i < v.length; i++) {
      v[i] = f.applyAsDouble(jobs[i]);
    }
    return median(v);
  }

  /** The median of {@code v} (the mean of the middle two for an even count). */
  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    int n = s.length;
    return n == 0 ? 0 : n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
  }

  static double mean(double[] v) {
    double sum = 0;
    for (double x : v) {
      sum += x;
    }
    return v.length == 0 ? 0 : sum / v.length;
  }

  /** The median of {@code nanos} (the mean of the middle two for an even count). */
  static double median(long[] nanos) {
    long[] s = nanos.clone();
    Arrays.sort(s);
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
