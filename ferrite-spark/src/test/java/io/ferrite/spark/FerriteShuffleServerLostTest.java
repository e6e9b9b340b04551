package io.ferrite.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.FetchFailed;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
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
        assertEquals(want, collect(rdd), "before the loss, with -Dtests.seed=" + seed);
        cluster.harness.servers.get(0).close();
        assertEquals(want, collect(rdd), "after the loss, with -Dtests.seed=" + seed);
        sc.sc().listenerBus().waitUntilEmpty();
        assertTrue(FETCH_FAILED.get() > 0, "the lost outputs were FetchFailed and recomputed");
      }
    }
  }

  private static List<String> collect(JavaPairRDD<Integer, Long> rdd) {
    return rdd.map(t -> t._1() + "=" + t._2()).collect().stream().sorted().toList();
  }
}
