package io.ferrite.graphx;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.graphx.Graph;
import org.apache.spark.graphx.GraphLoader;
import org.apache.spark.graphx.GraphXUtils;
import org.apache.spark.graphx.lib.PageRank;
import org.apache.spark.storage.StorageLevel;
import scala.Tuple2;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * Spark GraphX's static PageRank on an edge-list file, timed the way {@code bench graph --vs
 * graphx} compares it with Carafe: the graph is loaded ({@code GraphLoader.edgeListFile}, the same
 * SNAP file Carafe imports), cached and materialized first, then {@code PageRank.run(graph,
 * iterations, 0.15)} is timed to a materialized result. Load and PageRank are timed apart, and the
 * SparkContext's start apart from both.
 *
 * <pre>
 * java -jar ferrite-graphx-peer-*.jar --edges FILE --iterations N --cores N
 *      [--partitions N] [--json OUT] [--ranks OUT]
 * </pre>
 *
 * <p>{@code --ranks} writes {@code "<vertex id> <rank>"} per line in ascending id order with {@link
 * Double#toString} (exact round trip), after the timing. Runs {@code local[cores]} with Kryo and
 * GraphX's registered classes (what the GraphX guide recommends) and the web UI off.
 *
 * <p>Exit status: 0 on success, 2 on a usage error, 1 on a failure (message on stderr).
 */
public final class GraphXPageRank {
  /**
   * The {@code --add-opens} Spark's launcher passes on Java 17; the jar's manifest carries them.
   */
  public static final List<String> ADD_OPENS =
      List.of(
          "java.base/java.lang",
          "java.base/java.lang.invoke",
          "java.base/java.lang.reflect",
          "java.base/java.io",
          "java.base/java.net",
          "java.base/java.nio",
          "java.base/java.util",
          "java.base/java.util.concurrent",
          "java.base/java.util.concurrent.atomic",
          "java.base/jdk.internal.ref",
          "java.base/sun.nio.ch",
          "java.base/sun.nio.cs",
          "java.base/sun.security.action",
          "java.base/sun.util.calendar");

  /** GraphX's reset probability: {@code PageRank.run}'s default, and Carafe's. */
  static final double RESET = 0.15;

  private GraphXPageRank() {}

  /** The parsed command line. */
  record Options(Path edges, int iterations, int cores, int partitions, Path json, Path ranks) {

    static Options parse(String[] args) {
      Path edges = null;
      Path json = null;
      Path ranks = null;
      int iterations = 20;
      int cores = Runtime.getRuntime().availableProcessors();
      int partitions = -1;
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException(a + " needs a value");
        }
        String v = args[++i];
        switch (a) {
          case "--edges" -> edges = Path.of(v);
          case "--iterations" -> iterations = positive(a, v);
          case "--cores" -> cores = positive(a, v);
          case "--partitions" -> partitions = positive(a, v);
          case "--json" -> json = Path.of(v);
          case "--ranks" -> ranks = Path.of(v);
          default -> throw new IllegalArgumentException("unknown option " + a);
        }
      }
      if (edges == null) {
        throw new IllegalArgumentException("--edges FILE is required");
      }
      return new Options(
          edges, iterations, cores, partitions < 0 ? cores : partitions, json, ranks);
    }

    private static int positive(String option, String value) {
      int n;
      try {
        n = Integer.parseInt(value);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(option + ": " + value + " (expected: a number)", e);
      }
      if (n <= 0) {
        throw new IllegalArgumentException(option + ": " + n + " (expected: > 0)");
      }
      return n;
    }
  }

  /** What one run measured. */
  record Result(
      int cores,
      int partitions,
      int iterations,
      long vertices,
      long edges,
      long contextNanos,
      long loadNanos,
      long pageRankNanos) {

    String toJson() {
      return String.format(
          Locale.ROOT,
          "{\"system\":\"graphx\",\"spark\":\"%s\",\"cores\":%d,\"partitions\":%d,"
              + "\"iterations\":%d,\"vertices\":%d,\"edges\":%d,\"contextNanos\":%d,"
              + "\"loadNanos\":%d,\"pageRankNanos\":%d}",
          org.apache.spark.package$.MODULE$.SPARK_VERSION(),
          cores,
          partitions,
          iterations,
          vertices,
          edges,
          contextNanos,
          loadNanos,
          pageRankNanos);
    }
  }

  public static void main(String[] args) {
    Options options;
    try {
      options = Options.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("graphx-peer: " + e.getMessage());
      System.err.println(
          "usage: --edges FILE --iterations N --cores N [--partitions N] [--json OUT]"
              + " [--ranks OUT]");
      System.exit(2);
      return;
    }
    try {
      run(options, System.out);
    } catch (IOException | RuntimeException e) {
      System.err.println("graphx-peer: failed: " + e);
      System.exit(1);
    }
    // Spark leaves non-daemon threads behind after stop(); the result is written, so leave now.
    System.exit(0);
  }

  static Result run(Options o, PrintStream out) throws IOException {
    if (!Files.isRegularFile(o.edges())) {
      throw new IOException("no such edge-list file: " + o.edges());
    }
    SparkConf conf =
        new SparkConf()
            .setMaster("local[" + o.cores() + "]")
            .setAppName("ferrite-graphx-peer")
            .set("spark.ui.enabled", "false")
            .set("spark.driver.host", "127.0.0.1")
            .set("spark.driver.bindAddress", "127.0.0.1")
            .set("spark.default.parallelism", Integer.toString(o.partitions()))
            .set("spark.serializer", "org.apache.spark.serializer.KryoSerializer");
    GraphXUtils.registerKryoClasses(conf);
    long t0 = System.nanoTime();
    SparkContext sc = new SparkContext(conf);
    try {
      sc.setLogLevel("WARN");
      long t1 = System.nanoTime();
      ClassTag<Object> intTag = ClassTag$.MODULE$.Int();
      Graph<Object, Object> graph =
          GraphLoader.edgeListFile(
              sc,
              o.edges().toAbsolutePath().toString(),
              false,
              o.partitions(),
              StorageLevel.MEMORY_ONLY(),
              StorageLevel.MEMORY_ONLY());
      graph.cache();
      // Both counts run jobs: the edge partitions and the vertex RDD are built and cached here,
      // so the PageRank time below starts from a graph in memory, as Carafe's does.
      long edges = graph.edges().count();
      long vertices = graph.vertices().count();
      long t2 = System.nanoTime();
      out.printf(
          Locale.ROOT,
          "graphx: loaded %d vertices, %d edges in %d partitions in %.2f s%n",
          vertices,
          edges,
          graph.edges().getNumPartitions(),
          (t2 - t1) / 1e9);
      Graph<Object, Object> ranks = PageRank.run(graph, o.iterations(), RESET, intTag, intTag);
      // run() already ran the normalization's jobs; its final mapVertices is lazy: count it.
      long counted = ranks.vertices().count();
      long t3 = System.nanoTime();
      if (counted != vertices) {
        throw new IllegalStateException(
            "PageRank returned " + counted + " vertices for " + vertices);
      }
      Result r =
          new Result(
              o.cores(),
              o.partitions(),
              o.iterations(),
              vertices,
              edges,
              t1 - t0,
              t2 - t1,
              t3 - t2);
      out.printf(
          Locale.ROOT,
          "graphx: PageRank %d iterations on local[%d] in %.2f s (%.1f ms per iteration)%n",
          o.iterations(),
          o.cores(),
          (t3 - t2) / 1e9,
          (t3 - t2) / 1e6 / o.iterations());
      if (o.ranks() != null) {
        writeRanks(ranks, o.ranks());
      }
      if (o.json() != null) {
        Files.writeString(o.json(), r.toJson() + "\n", StandardCharsets.UTF_8);
      }
      return r;
    } finally {
      sc.stop();
    }
  }

  private static void writeRanks(Graph<Object, Object> ranks, Path file) throws IOException {
    @SuppressWarnings("unchecked")
    Tuple2<Object, Object>[] all = (Tuple2<Object, Object>[]) ranks.vertices().collect();
    long[] ids = new long[all.length];
    double[] values = new double[all.length];
    Integer[] order = new Integer[all.length];
    for (int i = 0; i < all.length; i++) {
      ids[i] = (Long) all[i]._1();
      values[i] = (Double) all[i]._2();
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> Long.compare(ids[a], ids[b]));
    try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      for (int i : order) {
        w.write(Long.toString(ids[i]));
        w.write(' ');
        w.write(Double.toString(values[i]));
        w.write('\n');
      }
    }
  }
}
