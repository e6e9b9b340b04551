package io.ferrite.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskContext;
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
import scala.Tuple2;

/**
 * Spark jobs in {@code local[2]} (the test JVM) with {@link FerriteShuffleManager} against an
 * in-test Ferrite cluster, each result compared with the same job on Spark's built-in sort shuffle
 * (run first, in this JVM, on the same seeded data: only one SparkContext may be active at a time).
 * After each test Spark's own cleanup path (ContextCleaner) unregisters the shuffles and none of
 * their nodes may remain; after the class, stopping Spark removes the application's Directory.
 */
class FerriteShuffleLocalTest {
  /** The jobs, by name: each returns its result as strings, in a comparable order. */
  private static final Map<String, Function<SparkSession, List<String>>> JOBS =
      new LinkedHashMap<>();

  private static long seed;
  private static final Map<String, List<String>> EXPECTED = new LinkedHashMap<>();
  private static SparkTestCluster cluster;
  private static SparkSession spark;
  private static String appDir;

  static {
    JOBS.put("wordCount", FerriteShuffleLocalTest::wordCount);
    JOBS.put("groupByKey", FerriteShuffleLocalTest::groupByKey);
    JOBS.put("sortByKey", FerriteShuffleLocalTest::sortByKey);
    JOBS.put("join", FerriteShuffleLocalTest::join);
    JOBS.put("repartition", FerriteShuffleLocalTest::repartition);
    JOBS.put("combineByKey", FerriteShuffleLocalTest::combineByKey);
    JOBS.put("dataFrameGroupByAgg", FerriteShuffleLocalTest::dataFrameGroupByAgg);
  }

  @BeforeAll
  static void runBuiltInThenStartFerrite() throws Exception {
    String property = System.getProperty("tests.seed");
    seed = property == null ? new Random().nextLong() : Long.decode(property);
    SparkSession builtIn = session(base());
    try {
      for (Map.Entry<String, Function<SparkSession, List<String>>> job : JOBS.entrySet()) {
        EXPECTED.put(job.getKey(), job.getValue().apply(builtIn));
      }
    } finally {
      builtIn.stop();
    }
    cluster = SparkTestCluster.start();
    spark = session(cluster.configure(base()));
    spark
        .sparkContext()
        .addSparkListener(
            new org.apache.spark.scheduler.SparkListener() {
              @Override
              public void onTaskEnd(org.apache.spark.scheduler.SparkListenerTaskEnd end) {
                if (end.reason() instanceof org.apache.spark.FetchFailed) {
                  FETCH_FAILED.incrementAndGet();
                }
              }
            });
    appDir = "/spark/" + spark.sparkContext().applicationId();
  }

  @AfterAll
  static void stopSparkThenCluster() throws Exception {
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
  void shufflesAreDeletedWhenUnregistered() {
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

  private static SparkConf base() {
    return new SparkConf()
        // Up to 4 attempts per task, as on a cluster (plain local[2] never retries a task).
        .setMaster("local[2,4]")
        .setAppName("ferrite-shuffle-test")
        .set("spark.ui.enabled", "false")
        .set("spark.driver.host", "127.0.0.1")
        // All three of Spark's map writers run: bypass for at most 6 partitions without map-side
        // combine (groupByKey, sortByKey, join), serialized for Spark SQL's rows on 8 partitions
        // (the DataFrame job), sort otherwise (wordCount, combineByKey, repartition to 7).
        .set("spark.shuffle.sort.bypassMergeThreshold", "6")
        .set("spark.sql.shuffle.partitions", "8")
        // The test calls the cleanup itself, after each test; none in between by GC.
        .set("spark.cleaner.referenceTracking", "true")
        .set("spark.cleaner.periodicGC.interval", "1h");
  }

  private static SparkSession session(SparkConf conf) {
    return SparkSession.builder().config(conf).getOrCreate();
  }

  private void check(String job) {
    List<String> actual = JOBS.get(job).apply(spark);
    assertFalse(actual.isEmpty(), job + " gave no records");
    assertEquals(EXPECTED.get(job), actual, job + " with -Dtests.seed=" + seed);
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

  private static JavaSparkContext jsc(SparkSession s) {
    return JavaSparkContext.fromSparkContext(s.sparkContext());
  }

  private static List<Integer> ints(int n, int bound, long salt) {
    Random r = new Random(seed ^ salt);
    List<Integer> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(r.nextInt(bound));
    }
    return out;
  }

  private static List<String> wordCount(SparkSession s) {
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

  private static List<String> groupByKey(SparkSession s) {
    return jsc(s)
        .parallelize(ints(20_000, 1_000_000, 1), 5)
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
  private static List<String> sortByKey(SparkSession s) {
    JavaPairRDD<Integer, String> pairs =
        jsc(s)
            .parallelize(ints(200_000, Integer.MAX_VALUE, 2), 4)
            .mapToPair(i -> new Tuple2<>(i, "v" + (i % 1000)));
    return pairs.sortByKey(true, 5).map(t -> t._1() + ":" + t._2()).collect();
  }

  private static List<String> join(SparkSession s) {
    JavaPairRDD<Integer, Integer> left =
        jsc(s).parallelize(ints(5_000, 2_000, 3), 3).mapToPair(i -> new Tuple2<>(i, i * 7));
    JavaPairRDD<Integer, String> right =
        jsc(s).parallelize(ints(3_000, 2_000, 4), 2).mapToPair(i -> new Tuple2<>(i, "r" + i));
    return left
        .join(right, 4)
        .map(t -> t._1() + "=" + t._2()._1() + "," + t._2()._2())
        .collect()
        .stream()
        .sorted()
        .toList();
  }

  /** Each output partition's content, in order: repartition's placement is deterministic. */
  private static List<String> repartition(SparkSession s) {
    JavaRDD<Integer> r = jsc(s).parallelize(ints(10_000, 1000, 5), 3).repartition(7);
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
  private static List<String> combineByKey(SparkSession s) {
    return jsc(s)
        .parallelize(ints(50_000, 100_000, 6), 4)
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

  private static List<String> dataFrameGroupByAgg(SparkSession s) {
    List<Integer> values = ints(30_000, 1_000_000, 7);
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

  // ---- faults ----

  /** Task ends whose reason was a FetchFailed, counted by a listener on the Ferrite session. */
  private static final java.util.concurrent.atomic.AtomicInteger FETCH_FAILED =
      new java.util.concurrent.atomic.AtomicInteger();

  private static List<String> sums(JavaPairRDD<Integer, Long> rdd) {
    return rdd.map(t -> t._1() + "=" + t._2()).collect().stream().sorted().toList();
  }

  /**
   * A map output lost after its stage finished (here: removed) is a FetchFailed for the reducer, so
   * Spark re-runs that map task and the result is still right; and a File that no winning attempt
   * wrote (a loser's, here a forged one full of garbage) is never read.
   */
  @Test
  void aLostMapOutputIsRecomputedAndALosersFileIsNeverRead() throws Exception {
    JavaPairRDD<Integer, Long> rdd =
        jsc(spark)
            .parallelize(ints(20_000, 1_000_000, 8), 4)
            .mapToPair(i -> new Tuple2<>(i % 53, (long) i))
            .reduceByKey(Long::sum, 3);
    List<String> first = sums(rdd);
    List<String> outputs =
        cluster.tree(appDir).stream().filter(p -> p.contains("/map-")).sorted().toList();
    assertEquals(4, outputs.size(), "one File per map task: " + outputs);
    String victim = outputs.get(1);
    String dir = victim.substring(0, victim.lastIndexOf('/'));
    try (io.ferrite.nodes.NodeWriter w = cluster.nodes.create(dir + "/map-0-999999")) {
      w.writeSync(java.nio.ByteBuffer.wrap(new byte[4096]));
    }
    cluster.nodes.remove(victim, false);

    int before = FETCH_FAILED.get();
    List<String> second = sums(rdd); // the map stage is skipped: its outputs are registered
    spark.sparkContext().listenerBus().waitUntilEmpty();
    assertEquals(first, second, "the result after the map output was recomputed");
    assertTrue(FETCH_FAILED.get() > before, "a FetchFailed made Spark recompute the lost output");
    String lostIndex = victim.substring(0, victim.lastIndexOf('-') + 1);
    assertTrue(
        cluster.tree(dir).stream().anyMatch(p -> p.startsWith(lostIndex)),
        "the lost map index was written again by a new attempt");
  }

  /** A map task that fails on its first attempt is retried; the job's result is still right. */
  @Test
  void aMapTaskThatFailsOnceSucceedsOnRetry() {
    List<Integer> data = ints(10_000, 1_000, 9);
    JavaPairRDD<Integer, Long> rdd =
        jsc(spark)
            .parallelize(data, 4)
            .mapPartitionsToPair(
                it -> {
                  TaskContext t = TaskContext.get();
                  if (t.partitionId() == 2 && t.attemptNumber() == 0) {
                    throw new IllegalStateException("first attempt of map 2 fails (on purpose)");
                  }
                  List<Tuple2<Integer, Long>> out = new ArrayList<>();
                  it.forEachRemaining(i -> out.add(new Tuple2<>(i % 31, (long) i)));
                  return out.iterator();
                })
            .reduceByKey(Long::sum, 3);
    Map<Integer, Long> expected = new java.util.TreeMap<>();
    for (int i : data) {
      expected.merge(i % 31, (long) i, Long::sum);
    }
    List<String> want =
        expected.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).sorted().toList();
    assertEquals(want, sums(rdd));
  }
}
