package io.ferrite.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.BiFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import scala.Tuple2;

/**
 * The shuffle jobs, run on one Spark master by a subclass ({@code local[2,4]} in the test
 * JVM, {@code local-cluster} with executor JVMs) with {@link FerriteShuffleManager} against an
 * in-test Ferrite cluster, each result compared with the same job on Spark's built-in sort shuffle.
 * The built-in side runs every job first, on the same seeded data (and the same master unless the
 * subclass says otherwise, see {@link #builtInConf}), in a SparkContext of its own that is stopped
 * before Ferrite's starts (only one may be active in a JVM); each side's context is started once
 * per class, not per job (in local-cluster an executor JVM's start is the cost). After each test
 * Spark's own cleanup path (ContextCleaner) unregisters the shuffles and none of their nodes may
 * remain; after the class, stopping Spark removes the application's Directory.
 *
 * <p>With {@code bypassMergeThreshold=6} all three of Spark's map writers run: bypass for at most 6
 * partitions without map-side combine (groupByKey, sortByKey, join), serialized for Spark SQL's
 * rows on 8 partitions (the DataFrame job), sort otherwise (wordCount, combineByKey, repartition to
 * 7).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class ShuffleJobs {
  /** The jobs, by name: each returns its result as strings, in a comparable order. */
  private static final Map<String, BiFunction<SparkSession, Long, List<String>>> JOBS =
      new LinkedHashMap<>();

  static {
    JOBS.put("wordCount", ShuffleJobs::wordCount);
    JOBS.put("groupByKey", ShuffleJobs::groupByKey);
    JOBS.put("sortByKey", ShuffleJobs::sortByKey);
    JOBS.put("join", ShuffleJobs::join);
    JOBS.put("repartition", ShuffleJobs::repartition);
    JOBS.put("combineByKey", ShuffleJobs::combineByKey);
    JOBS.put("dataFrameGroupByAgg", ShuffleJobs::dataFrameGroupByAgg);
  }

  private final Map<String, List<String>> expected = new LinkedHashMap<>();
  protected long seed;
  protected SparkTestCluster cluster;

  /** The Ferrite side's session (started after the built-in one stopped). */
  protected SparkSession spark;

  protected String appDir;

  /** The master and what else both sides share (the writer keys are added here). */
  protected abstract SparkConf conf() throws Exception;

  /**
   * The built-in side's configuration, from a copy of {@link #conf()}'s: by default the same
   * master. The jobs' results are functions of the seeded data alone, so a subclass whose master is
   * costly to start (executor JVMs) may compute them on a cheaper one.
   */
  protected SparkConf builtInConf(SparkConf conf) {
    return conf;
  }

  /** More work on the built-in side (its session still running), for the subclass's own tests. */
  protected void builtIn(SparkSession builtIn) {}

  /** Called once Ferrite's session runs (listeners, say). */
  protected void started() {}

  @BeforeAll
  final void runBuiltInThenStartFerrite() throws Exception {
    String property = System.getProperty("tests.seed");
    seed = property == null ? new Random().nextLong() : Long.decode(property);
    SparkConf conf = writers(conf());
    SparkSession builtIn = session(builtInConf(conf.clone()));
    try {
      for (Map.Entry<String, BiFunction<SparkSession, Long, List<String>>> job : JOBS.entrySet()) {
        expected.put(job.getKey(), job.getValue().apply(builtIn, seed));
      }
      builtIn(builtIn);
    } finally {
      builtIn.stop();
    }
    cluster = SparkTestCluster.start();
    spark = session(cluster.configure(conf));
    appDir = "/spark/" + spark.sparkContext().applicationId();
    started();
  }

  @AfterAll
  final void stopSparkThenCluster() throws Exception {
    try {
      if (spark != null) {
        spark.stop();
        assertEquals(
            List.of(), cluster.tree(appDir), "the application's nodes after Spark stopped");
        assertFalse(cluster.nodes.exists(appDir), appDir + " after Spark stopped");
      }
    } finally {
      if (cluster != null) {
        cluster.close();
      }
    }
  }

  /** Spark's cleanup path for every shuffle left: the shuffles' nodes must all be gone. */
  @AfterEach
  final void shufflesAreDeletedWhenUnregistered() {
    SparkContext sc = spark.sparkContext();
    Pattern shuffle = Pattern.compile(Pattern.quote(appDir) + "/shuffle-(\\d+)");
    for (String path : cluster.tree(appDir)) {
      Matcher m = shuffle.matcher(path);
      if (m.matches()) {
        sc.cleaner().get().doCleanupShuffle(Integer.parseInt(m.group(1)), true);
      }
    }
    assertEquals(List.of(), cluster.tree(appDir), "nodes left after the shuffles' cleanup");
  }

  private static SparkConf writers(SparkConf conf) {
    return conf.set("spark.ui.enabled", "false")
        .set("spark.driver.host", "127.0.0.1")
        // bypass, serialized and sort writer: see the class comment.
        .set("spark.shuffle.sort.bypassMergeThreshold", "6")
        .set("spark.sql.shuffle.partitions", "8")
        // The test calls the cleanup itself, after each test; none in between by GC.
        .set("spark.cleaner.referenceTracking", "true")
        .set("spark.cleaner.periodicGC.interval", "1h");
  }

  private static SparkSession session(SparkConf conf) {
    return SparkSession.builder().config(conf).getOrCreate();
  }

  protected final JavaSparkContext jsc() {
    return jsc(spark);
  }

  private void check(String job) {
    List<String> actual = JOBS.get(job).apply(spark, seed);
    assertFalse(actual.isEmpty(), job + " gave no records");
    assertEquals(expected.get(job), actual, job + " with -Dtests.seed=" + seed);
    assertTrue(
        cluster.tree(appDir).stream().anyMatch(p -> p.contains("/map-")),
        job + " wrote no map output to Ferrite");
  }

  @Test
  void wordCount() {
    check("wordCount");
  }

  @Test
  void groupByKey() {
    check("groupByKey");
  }

  @Test
  void sortByKey() {
    check("sortByKey");
  }

  @Test
  void join() {
    check("join");
  }

  @Test
  void repartition() {
    check("repartition");
  }

  @Test
  void combineByKey() {
    check("combineByKey");
  }

  @Test
  void dataFrameGroupByAgg() {
    check("dataFrameGroupByAgg");
  }

  // ---- the jobs: the same on either shuffle; data drawn from the seed ----

  static JavaSparkContext jsc(SparkSession s) {
    return JavaSparkContext.fromSparkContext(s.sparkContext());
  }

  static List<Integer> ints(long seed, int n, int bound, long salt) {
    Random r = new Random(seed ^ salt);
    List<Integer> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(r.nextInt(bound));
    }
    return out;
  }

  private static List<String> wordCount(SparkSession s, long seed) {
    String[] words = {"ferrite", "spark", "shuffle", "node", "file", "bag", "map", "reduce"};
    Random r = new Random(seed);
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < 2000; i++) {
      StringBuilder b = new StringBuilder();
      for (int w = r.nextInt(12); w >= 0; w--) {
        b.append(words[r.nextInt(words.length)]).append(r.nextInt(50)).append(' ');
      }
      lines.add(b.toString());
    }
    return jsc(s)
        .parallelize(lines, 4)
        .flatMap(l -> java.util.Arrays.asList(l.trim().split(" ")).iterator())
        .mapToPair(w -> new Tuple2<>(w, 1))
        .reduceByKey(Integer::sum, 3)
        .map(t -> t._1() + "=" + t._2())
        .collect()
        .stream()
        .sorted()
        .toList();
  }

  private static List<String> groupByKey(SparkSession s, long seed) {
    return jsc(s)
        .parallelize(ints(seed, 20_000, 1_000_000, 1), 5)
        .mapToPair(i -> new Tuple2<>(i % 101, i))
        .groupByKey(4)
        .map(
            t -> {
              List<Integer> vs = new ArrayList<>();
              t._2().forEach(vs::add);
              vs.sort(null);
              return t._1() + "=" + vs;
            })
        .collect()
        .stream()
        .sorted()
        .toList();
  }

  /** Order matters here: the collected list itself is compared. 200k records span many blocks. */
  private static List<String> sortByKey(SparkSession s, long seed) {
    JavaPairRDD<Integer, String> pairs =
        jsc(s)
            .parallelize(ints(seed, 200_000, Integer.MAX_VALUE, 2), 4)
            .mapToPair(i -> new Tuple2<>(i, "v" + (i % 1000)));
    return pairs.sortByKey(true, 5).map(t -> t._1() + ":" + t._2()).collect();
  }

  private static List<String> join(SparkSession s, long seed) {
    JavaPairRDD<Integer, Integer> left =
        jsc(s).parallelize(ints(seed, 5_000, 2_000, 3), 3).mapToPair(i -> new Tuple2<>(i, i * 7));
    JavaPairRDD<Integer, String> right =
        jsc(s).parallelize(ints(seed, 3_000, 2_000, 4), 2).mapToPair(i -> new Tuple2<>(i, "r" + i));
    return left
        .join(right, 4)
        .map(t -> t._1() + "=" + t._2()._1() + "," + t._2()._2())
        .collect()
        .stream()
        .sorted()
        .toList();
  }

  /** Each output partition's content, in order: repartition's placement is deterministic. */
  private static List<String> repartition(SparkSession s, long seed) {
    JavaRDD<Integer> r = jsc(s).parallelize(ints(seed, 10_000, 1000, 5), 3).repartition(7);
    List<String> out = new ArrayList<>();
    out.add("partitions=" + r.getNumPartitions());
    for (List<Integer> p : r.glom().collect()) {
      List<Integer> sorted = new ArrayList<>(p);
      sorted.sort(null);
      out.add(sorted.toString());
    }
    return out;
  }

  /** Map-side combine: an average per key through combineByKey (mapSideCombine defaults on). */
  private static List<String> combineByKey(SparkSession s, long seed) {
    return jsc(s)
        .parallelize(ints(seed, 50_000, 100_000, 6), 4)
        .mapToPair(i -> new Tuple2<>(i % 97, (long) i))
        .combineByKey(
            v -> new long[] {v, 1},
            (a, v) -> new long[] {a[0] + v, a[1] + 1},
            (a, b) -> new long[] {a[0] + b[0], a[1] + b[1]},
            3)
        .map(t -> t._1() + "=" + t._2()[0] + "/" + t._2()[1])
        .collect()
        .stream()
        .sorted()
        .toList();
  }

  private static List<String> dataFrameGroupByAgg(SparkSession s, long seed) {
    List<Integer> values = ints(seed, 30_000, 1_000_000, 7);
    return s
        .createDataset(values, org.apache.spark.sql.Encoders.INT())
        .toDF("v")
        .withColumn("k", functions.col("v").mod(37))
        .groupBy("k")
        .agg(functions.sum("v"), functions.count("v"), functions.max("v"))
        .collectAsList()
        .stream()
        .map(Row::toString)
        .sorted()
        .toList();
  }
}
