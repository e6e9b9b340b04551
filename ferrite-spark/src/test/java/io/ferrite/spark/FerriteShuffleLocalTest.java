package io.ferrite.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaPairRDD;
import org.junit.jupiter.api.Test;
import scala.Tuple2;

/**
 * {@link ShuffleJobs} in {@code local[2,4]} (the test JVM: tasks retried up to 4 times, as on a
 * cluster, where plain {@code local[2]} never retries a task), and the fault tests: a map output
 * lost after its stage, a map task that fails once.
 */
class FerriteShuffleLocalTest extends ShuffleJobs {
  @Override
  protected SparkConf conf() {
    return new SparkConf().setMaster("local[2,4]").setAppName("ferrite-shuffle-test");
  }

  @Override
  protected void started() {
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
        jsc()
            .parallelize(ints(seed, 20_000, 1_000_000, 8), 4)
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
    List<Integer> data = ints(seed, 10_000, 1_000, 9);
    JavaPairRDD<Integer, Long> rdd =
        jsc()
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
