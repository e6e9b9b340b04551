package io.ferrite.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.FetchFailed;
import org.apache.spark.HashPartitioner;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.junit.jupiter.api.Test;
import scala.Tuple2;

/**
 * A Ferrite memory server lost after the map stage (it leaves: the master declares it DEAD at once,
 * its blocks are lost): the reducers' reads of the map outputs with blocks there fail, each as a
 * FetchFailed naming the output, so Spark re-runs those map tasks (their new Files go to the server
 * left) and the job's result is right; no hang, no wrong result. A cluster of its own, as it loses
 * a server.
 */
class FerriteShuffleServerLostTest {
  private static final AtomicInteger FETCH_FAILED = new AtomicInteger();

  @Test
  void aMemoryServerLostBeforeTheReduceIsAFetchFailedAndRecomputed() throws Exception {
    String property = System.getProperty("tests.seed");
    long seed = property == null ? new Random().nextLong() : Long.decode(property);
    Random r = new Random(seed);
    List<Integer> data = new ArrayList<>();
    Map<Integer, Long> expected = new TreeMap<>();
    for (int i = 0; i < 40_000; i++) {
      int v = r.nextInt(1_000_000);
      data.add(v);
      expected.merge(v % 101, (long) v, Long::sum);
    }
    List<String> want =
        expected.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).sorted().toList();
    try (SparkTestCluster cluster = SparkTestCluster.start()) {
      SparkConf conf =
          cluster.configure(
              new SparkConf()
                  .setMaster("local[2,4]")
                  .setAppName("ferrite-shuffle-server-lost")
                  .set("spark.ui.enabled", "false")
                  .set("spark.driver.host", "127.0.0.1"));
      try (JavaSparkContext sc = new JavaSparkContext(conf)) {
        sc.sc()
            .addSparkListener(
                new SparkListener() {
                  @Override
                  public void onTaskEnd(SparkListenerTaskEnd end) {
                    if (end.reason() instanceof FetchFailed) {
                      FETCH_FAILED.incrementAndGet();
                    }
                  }
                });
        JavaPairRDD<Integer, Long> rdd =
            sc.parallelize(data, 4)
                .mapToPair(i -> new Tuple2<>(i % 101, (long) i))
                .reduceByKey(Long::sum, 3);
        FETCH_FAILED.set(0);
        assertEquals(want, collect(rdd), "before the loss, with -Dtests.seed=" + seed);
        cluster.harness.servers.get(0).close();
        assertEquals(want, collect(rdd), "after the loss, with -Dtests.seed=" + seed);
        sc.sc().listenerBus().waitUntilEmpty();
        assertTrue(FETCH_FAILED.get() > 0, "the lost outputs were FetchFailed and recomputed");
      }
    }
  }

  /** Records the reduce tasks of the during-the-reduce case have consumed (tasks run here). */
  private static final AtomicLong CONSUMED = new AtomicLong();

  /**
   * The server is lost while the reduce tasks read: a repartition (no aggregation, so a reducer
   * fetches one map output at a time as it consumes records, {@code prefetch=1}) whose consumer is
   * slowed, and the server closed once they have consumed some records. The fetches after the loss
   * of outputs with blocks there fail as FetchFailed, Spark re-runs those map tasks and the reduce,
   * and the records come out exactly once each. The job runs under a bounded wait that fails with a
   * thread dump rather than hang.
   */
  @Test
  void aMemoryServerLostDuringTheReduceIsAFetchFailedAndRecomputed() throws Exception {
    String property = System.getProperty("tests.seed");
    long seed = property == null ? new Random().nextLong() : Long.decode(property);
    Random r = new Random(seed);
    List<Integer> data = new ArrayList<>();
    for (int i = 0; i < 30_000; i++) {
      data.add(r.nextInt());
    }
    List<Integer> want = data.stream().sorted().toList();
    FETCH_FAILED.set(0);
    CONSUMED.set(0);
    try (SparkTestCluster cluster = SparkTestCluster.start()) {
      SparkConf conf =
          cluster
              .configure(
                  new SparkConf()
                      .setMaster("local[2,4]")
                      .setAppName("ferrite-shuffle-server-lost-in-reduce")
                      .set("spark.ui.enabled", "false")
                      .set("spark.driver.host", "127.0.0.1"))
              .set(FerriteSparkConf.PREFETCH, "1");
      String appDir;
      try (JavaSparkContext sc = new JavaSparkContext(conf)) {
        appDir = "/spark/" + sc.sc().applicationId();
        sc.sc()
            .addSparkListener(
                new SparkListener() {
                  @Override
                  public void onTaskEnd(SparkListenerTaskEnd end) {
                    if (end.reason() instanceof FetchFailed) {
                      FETCH_FAILED.incrementAndGet();
                    }
                  }
                });
        JavaRDD<Integer> rdd =
            sc.parallelize(data, 16)
                .mapToPair(i -> new Tuple2<>(i, i))
                .partitionBy(new HashPartitioner(2))
                .values()
                .mapPartitions(FerriteShuffleServerLostTest::slowly);
        ExecutorService jobs =
            Executors.newSingleThreadExecutor(
                new io.ferrite.fabric.NamedThreadFactory("test-spark-job", true));
        try {
          Future<List<Integer>> job = jobs.submit(() -> rdd.collect());
          // Lose the server once the reducers have consumed some of their records (bounded).
          for (int i = 0; i < 1200 && CONSUMED.get() < 500 && !job.isDone(); i++) {
            Thread.sleep(50);
          }
          assertTrue(CONSUMED.get() >= 500, "the reduce stage began consuming records");
          assertFalse(job.isDone(), "the server is lost while the reducers read");
          cluster.harness.servers.get(0).close();
          List<Integer> got = awaitOrDump(job, 300);
          assertEquals(want, got.stream().sorted().toList(), "with -Dtests.seed=" + seed);
        } finally {
          jobs.shutdownNow();
        }
        sc.sc().listenerBus().waitUntilEmpty();
        assertTrue(FETCH_FAILED.get() > 0, "outputs lost mid-reduce were FetchFailed, recomputed");
      }
      assertEquals(List.of(), cluster.tree(appDir), "the application's nodes after Spark stopped");
    }
  }

  /** The reducer's records, consumed slowly (a sleep every 100), counted for the test. */
  private static java.util.Iterator<Integer> slowly(java.util.Iterator<Integer> in)
      throws InterruptedException {
    List<Integer> out = new ArrayList<>();
    while (in.hasNext()) {
      out.add(in.next());
      if (CONSUMED.incrementAndGet() % 100 == 0) {
        Thread.sleep(20);
      }
    }
    return out.iterator();
  }

  /** The job's result within {@code seconds}, or a failure carrying every thread's stack. */
  private static <T> T awaitOrDump(Future<T> job, int seconds) throws Exception {
    try {
      return job.get(seconds, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      StringBuilder dump = new StringBuilder();
      for (java.lang.management.ThreadInfo t :
          java.lang.management.ManagementFactory.getThreadMXBean().dumpAllThreads(false, false)) {
        dump.append(t);
      }
      job.cancel(true);
      throw new AssertionError("the job did not end within " + seconds + " s:\n" + dump, e);
    }
  }

  private static List<String> collect(JavaPairRDD<Integer, Long> rdd) {
    return rdd.map(t -> t._1() + "=" + t._2()).collect().stream().sorted().toList();
  }
}
