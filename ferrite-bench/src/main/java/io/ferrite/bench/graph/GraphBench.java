package io.ferrite.bench.graph;

import io.ferrite.apps.carafe.CarafeGraph;
import io.ferrite.apps.carafe.Csr;
import io.ferrite.apps.carafe.Dijkstra;
import io.ferrite.apps.carafe.EdgeListImporter;
import io.ferrite.apps.carafe.EdgeListWriter;
import io.ferrite.apps.carafe.GraphLayout;
import io.ferrite.apps.carafe.Reference;
import io.ferrite.apps.carafe.RmatGenerator;
import io.ferrite.apps.carafe.pregel.Partitioner;
import io.ferrite.apps.carafe.pregel.PregelJob;
import io.ferrite.apps.worker.LocalCluster;
import io.ferrite.apps.worker.WorkerLauncher;
import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.Progress;
import io.ferrite.bench.Sizes;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.memory.RStore;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * {@code ferrite bench graph}: Carafe (RStore §V-B) on an R-MAT graph, each result beside a ceiling
 * or a peer measured in the same run on the same file.
 *
 * <ol>
 *   <li>The graph: {@link RmatGenerator#preset} ({@code bench}: 2^21 ids, 2^24 edges; {@code small}
 *       with {@code --quick}) written to a temporary SNAP edge-list file that every side reads.
 *   <li>Import: {@link EdgeListImporter#read} plus {@link CarafeGraph#create} (parse, build, store
 *       into a local cluster), in edges/s, beside the parse-and-build alone (the ceiling: the same
 *       file into the same {@link Csr}, without the store).
 *   <li>Dijkstra on random pairs of internal ids (seeded; unreachable pairs included) on the stored
 *       graph (every vertex record and adjacency list read through the fabric), in vertices
 *       explored per second, beside the same search on the in-memory {@link Csr}. Every stored
 *       answer equals the in-memory one; the first few also equal {@link Reference#dijkstra}.
 *   <li>PageRank (20 supersteps) with 1, 2 and 4 worker processes: per-superstep time beside the
 *       single-threaded {@link Reference#pageRank} in this JVM (ceiling), the 2-worker
 *       per-superstep time beside the 1-worker one (the target: at most 0.6 x, ratio at
 *       least 1.67), and with {@code --vs graphx} the 2-worker PageRank time beside Spark GraphX's
 *       {@code PageRank.run} on the same file with {@code local[cores]} (target: GraphX at least 2
 *       x slower, ratio at least 2). Every run's ranks are checked against the reference (1e-9
 *       relative per vertex), GraphX's too; a wrong answer fails the suite.
 * </ol>
 *
 * <p>Nothing is pinned to cores: the worker processes, the cluster's servers (in this JVM) and
 * GraphX share the machine's cores as the OS schedules them; the report says how many there were.
 */
public final class GraphBench {
  public static final String SUITE = "graph";
  private static final String MS = "ms";

  /** Relative tolerance per vertex for PageRank (the issue's). */
  static final double RANK_TOLERANCE = 1e-9;

  /** Dijkstra pairs also checked against the plain reference (it searches the whole graph). */
  static final int REFERENCE_PAIRS = 5;

  /**
   * What to run.
   *
   * @param preset the R-MAT preset ({@link RmatGenerator#PRESETS})
   * @param seed the graph and the Dijkstra pairs
   * @param pairs Dijkstra pairs
   * @param iterations PageRank supersteps
   * @param workers worker counts to run PageRank with, e.g. 1, 2, 4
   * @param servers memory servers of the local cluster
   * @param fabric the workers' fabric (shm: same host)
   * @param graphxJar the GraphX peer's jar, or null for no GraphX
   * @param graphxHeapBytes the peer's -Xmx
   * @param graphxPartitions GraphX's edge partitions, 0 for one per core
   * @param launcher starts the worker processes; null runs the workers as threads of this JVM
   * @param progress progress lines, or null
   * @param vertexWeight the partitioner's vertex weight (an edge weighs 1; {@link
   *     Partitioner#DEFAULT_VERTEX_WEIGHT} by default)
   * @param rounds how many times each worker count runs PageRank, interleaved: every round runs the
   *     reference (the machine's speed in that round) and then each count once, in ascending order
   *     in odd rounds (the first, third, ...) and descending in even ones (1, 2, 2, 1, 1, 2, ...:
   *     ABBA), so that each W-worker job has a 1-worker job seconds away with the machine at about
   *     the same speed; the W-worker / 1-worker ratio is taken within each round and reported per
   *     round and as the median and mean over the rounds. The per-count rows without a round in
   *     their name are then medians over the rounds.
   */
  public record Options(
      String preset,
      long seed,
      int pairs,
      int iterations,
      List<Integer> workers,
      int servers,
      String fabric,
      Path graphxJar,
      long graphxHeapBytes,
      int graphxPartitions,
      WorkerLauncher launcher,
      PrintStream progress,
      long vertexWeight,
      int rounds) {
    /**
     * The most rounds: enough to see a machine's swings, bounded so a typo does not run all day.
     */
    public static final int MAX_ROUNDS = 100;

    /** The full run's rounds: two ABBA blocks (1, 2, 2, 1, 1, 2, 2, 1 with 1 and 2 workers). */
    public static final int DEFAULT_ROUNDS = 4;

    public Options {
      if (rounds < 1 || rounds > MAX_ROUNDS) {
        throw new IllegalArgumentException(
            "rounds: " + rounds + " (expected: 1 to " + MAX_ROUNDS + ")");
      }
      if (vertexWeight < 0) {
        throw new IllegalArgumentException("vertex weight: " + vertexWeight + " (expected: >= 0)");
      }
      RmatGenerator.preset(preset, seed); // refuses an unknown name
      if (pairs < 1 || iterations < 1 || workers.isEmpty() || servers < 1 || servers > 16) {
        throw new IllegalArgumentException(
            "pairs: "
                + pairs
                + ", iterations: "
                + iterations
                + ", workers: "
                + workers
                + ", servers: "
                + servers
                + " (expected: >= 1, >= 1, at least one count, 1 to 16)");
      }
      for (int w : workers) {
        if (w < 1 || w > PregelJob.MAX_WORKERS) {
          throw new IllegalArgumentException(
              "workers: " + w + " (expected: 1 to " + PregelJob.MAX_WORKERS + ")");
        }
      }
      workers = List.copyOf(workers);
    }

    /**
     * The graph: the {@code bench} preset, 100 pairs, 20 supersteps, 1/2/4 workers, {@link
     * #DEFAULT_ROUNDS} rounds.
     */
    public static Options defaults(Path graphxJar, WorkerLauncher launcher) {
      return new Options(
          "bench",
          1,
          100,
          20,
          List.of(1, 2, 4),
          2,
          "shm",
          graphxJar,
          6L << 30,
          0,
          launcher,
          System.err,
          Partitioner.DEFAULT_VERTEX_WEIGHT,
          DEFAULT_ROUNDS);
    }

    /** A smoke test: the {@code small} preset, one round. */
    public static Options quick(Path graphxJar, WorkerLauncher launcher) {
      return new Options(
          "small",
          1,
          100,
          20,
          List.of(1, 2, 4),
          2,
          "shm",
          graphxJar,
          1L << 30,
          0,
          launcher,
          System.err,
          Partitioner.DEFAULT_VERTEX_WEIGHT,
          1);
    }
  }

  private GraphBench() {}

  public static BenchReport run(Options o) throws Exception {
    BenchReport report = new BenchReport(SUITE);
    Progress p = new Progress("bench " + SUITE, o.progress());
    int cores = Runtime.getRuntime().availableProcessors();
    p.step(
        "measuring on "
            + cores
            + " cores, nothing pinned (workers, servers and GraphX share them as the OS"
            + " schedules)");
    report.add(BenchResult.of("machine.cores", cores, "cores", Better.HIGHER));
    report.add(BenchResult.of("machine.load1.start", loadAverage(), "load", Better.LOWER));

    Path dir = Files.createTempDirectory("ferrite-bench-graph");
    Path file = dir.resolve(o.preset() + ".txt");
    LocalCluster cluster = null;
    try {
      // --- the graph, as a file every side reads ---
      RmatGenerator gen = RmatGenerator.preset(o.preset(), o.seed());
      p.step("generating R-MAT '" + o.preset() + "': " + gen.vertices() + " ids, " + gen.edges());
      long t0 = System.nanoTime();
      Csr generated = gen.generate(CarafeGraph.Progress.NONE);
      long t1 = System.nanoTime();
      EdgeListWriter.write(generated, file, CarafeGraph.Progress.NONE);
      long t2 = System.nanoTime();
      long fileBytes = Files.size(file);
      p.step(
          String.format(
              Locale.ROOT,
              "graph: %d vertices, %d edges; generated in %.2f s, written (%s) in %.2f s",
              generated.vertices(),
              generated.edges(),
              (t1 - t0) / 1e9,
              Sizes.label(fileBytes),
              (t2 - t1) / 1e9));
      report.add(BenchResult.of("graph.vertices", generated.vertices(), "vertices", Better.HIGHER));
      report.add(BenchResult.of("graph.edges", generated.edges(), "edges", Better.HIGHER));
      generated = null; // the parse below rebuilds it from the file: keep one copy in the heap

      // --- import: parse + build (ceiling), then parse + build + store ---
      p.step("parse and build in memory (the import's ceiling)");
      long t3 = System.nanoTime();
      Csr csr =
          EdgeListImporter.read(file, EdgeListImporter.Options.DIRECTED, CarafeGraph.Progress.NONE);
      long t4 = System.nanoTime();
      long m = csr.edges();
      BenchResult parseRate =
          report.add(
              BenchResult.of(
                  "ceiling.parse.edges-per-s", m / ((t4 - t3) / 1e9), "edges/s", Better.HIGHER));

      long graphBytes = GraphLayout.vertexAt(csr.vertices()) + GraphLayout.edgeAt(m);
      // The graph, the mailbox (12-byte messages, two containers per segment: see the Pregel
      // engine), the job's control region and slack for 4 MiB blocks.
      long perServer = (graphBytes + 24 * m + (256L << 20)) / o.servers() + (128L << 20);
      p.step(
          "local cluster: master + "
              + o.servers()
              + " memory servers (tcp, shm), "
              + Sizes.label(perServer / (1 << 20) * (1 << 20))
              + " dram each");
      cluster = LocalCluster.start(o.servers(), perServer, o.fabric());
      try (FerriteClient client = cluster.access().connect("bench-graph")) {
        RStore store = new RStore(client);
        String name = "bench-" + o.preset();
        p.step("import: parse, build and store as graph '" + name + "'");
        long t5 = System.nanoTime();
        Csr again =
            EdgeListImporter.read(
                file, EdgeListImporter.Options.DIRECTED, CarafeGraph.Progress.NONE);
        CarafeGraph graph = CarafeGraph.create(store, name, again, CarafeGraph.Progress.NONE);
        long t6 = System.nanoTime();
        again = null;
        report.add(
            BenchResult.against(
                "carafe.import.edges-per-s",
                m / ((t6 - t5) / 1e9),
                "edges/s",
                Better.HIGHER,
                parseRate));
        report.add(
            BenchResult.of(
                "carafe.import.mib-per-s",
                Sizes.mibPerSecond(fileBytes, t6 - t5),
                Sizes.BANDWIDTH_UNIT,
                Better.HIGHER));
        try {
          dijkstra(o, p, report, csr, graph);
          PageRankRuns.run(o, p, report, csr, graph, cluster, file, cores);
        } finally {
          graph.close();
          CarafeGraph.delete(store, name);
        }
      }
    } finally {
      if (cluster != null) {
        cluster.close();
      }
      Files.deleteIfExists(file);
      Files.deleteIfExists(dir);
    }
    report.add(BenchResult.of("machine.load1.end", loadAverage(), "load", Better.LOWER));
    p.step("done");
    return report;
  }

  /** Dijkstra on random pairs, stored graph beside in-memory {@link Csr}; answers checked. */
  private static void dijkstra(
      Options o, Progress p, BenchReport report, Csr csr, CarafeGraph graph) {
    int n = csr.vertices();
    SplittableRandom r = new SplittableRandom(o.seed() ^ 0x5EEDL);
    long[] src = new long[o.pairs()];
    long[] dst = new long[o.pairs()];
    for (int i = 0; i < o.pairs(); i++) {
      src[i] = r.nextInt(n);
      dst[i] = r.nextInt(n);
    }
    p.step("Dijkstra on " + o.pairs() + " random pairs: in-memory csr (ceiling)");
    Dijkstra.Path[] local = new Dijkstra.Path[o.pairs()];
    Dijkstra.Searcher onCsr = Dijkstra.on(csr);
    long exploredLocal = 0;
    long t0 = System.nanoTime();
    for (int i = 0; i < o.pairs(); i++) {
      local[i] = onCsr.shortest(src[i], dst[i]);
      exploredLocal += local[i].explored();
    }
    long t1 = System.nanoTime();
    p.step("Dijkstra on the same pairs: stored graph (one-sided reads through the fabric)");
    long exploredStored = 0;
    int reachable = 0;
    long t2;
    long t3;
    try (Dijkstra.Searcher onStore = Dijkstra.on(graph)) {
      t2 = System.nanoTime();
      for (int i = 0; i < o.pairs(); i++) {
        Dijkstra.Path got = onStore.shortest(src[i], dst[i]);
        exploredStored += got.explored();
        if (got.reachable()) {
          reachable++;
        }
        if (!sameDistance(got.distance(), local[i].distance())
            || got.explored() != local[i].explored()) {
          throw new IllegalStateException(
              "Dijkstra " + src[i] + " -> " + dst[i] + ": stored " + got + ", csr " + local[i]);
        }
      }
      t3 = System.nanoTime();
    }
    for (int i = 0; i < Math.min(REFERENCE_PAIRS, o.pairs()); i++) {
      double want = Reference.dijkstra(csr, src[i], dst[i]);
      if (!sameDistance(want, local[i].distance())) {
        throw new IllegalStateException(
            "Dijkstra " + src[i] + " -> " + dst[i] + ": " + local[i] + ", reference " + want);
      }
    }
    BenchResult ceiling =
        report.add(
            BenchResult.of(
                "ceiling.dijkstra.csr.explored-per-s",
                exploredLocal / ((t1 - t0) / 1e9),
                "vertices/s",
                Better.HIGHER));
    report.add(
        BenchResult.against(
            "carafe.dijkstra.explored-per-s",
            exploredStored / ((t3 - t2) / 1e9),
            "vertices/s",
            Better.HIGHER,
            ceiling));
    report.add(
        BenchResult.of(
            "carafe.dijkstra.ms-per-pair", (t3 - t2) / 1e6 / o.pairs(), MS, Better.LOWER));
    p.step(
        String.format(
            Locale.ROOT,
            "Dijkstra: %d of %d pairs reachable, %d vertices explored, %.1f ms per pair stored",
            reachable,
            o.pairs(),
            exploredStored,
            (t3 - t2) / 1e6 / o.pairs()));
  }

  static boolean sameDistance(double a, double b) {
    if (Double.isInfinite(a) || Double.isInfinite(b)) {
      return a == b;
    }
    return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));
  }

  /**
   * The first vertex whose rank is off by more than {@link #RANK_TOLERANCE} (relative), as a
   * message, or null when all agree.
   */
  static String rankMismatch(double[] got, double[] want) {
    if (got.length != want.length) {
      return got.length + " ranks for " + want.length + " vertices";
    }
    for (int v = 0; v < want.length; v++) {
      if (!(Math.abs(got[v] - want[v]) <= RANK_TOLERANCE * Math.abs(want[v]))) {
        return "vertex " + v + ": " + got[v] + ", reference " + want[v];
      }
    }
    return null;
  }

  /** The 1-minute load average from /proc/loadavg; NaN where there is none. */
  static double loadAverage() {
    try {
      String s = Files.readString(Path.of("/proc/loadavg"), StandardCharsets.US_ASCII);
      return Double.parseDouble(s.substring(0, s.indexOf(' ')));
    } catch (IOException | RuntimeException e) {
      return Double.NaN;
    }
  }
}
