package io.ferrite.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import scala.Tuple2;

/**
 * A Spark driver for {@link FerriteShuffleDriverKilledTest}, run in a JVM of its own: {@code
 * local[2]} with Ferrite's shuffle, one job whose map stage writes its outputs to Ferrite, then a
 * line {@code MAPPED <appId> <count>} on stdout, and it waits to be SIGKILLed with the shuffle
 * still registered (never stopping Spark, so nothing is removed by the manager's stop).
 *
 * <p>Arguments: the master URI, cluster id, secret file, a cluster file (absent), the seed.
 */
public final class DriverKillProbe {
  private DriverKillProbe() {}

  public static void main(String[] args) throws InterruptedException {
    SparkConf conf =
        new SparkConf()
            .setMaster("local[2]")
            .setAppName("ferrite-driver-killed")
            .set("spark.ui.enabled", "false")
            .set("spark.driver.host", "127.0.0.1")
            .set("spark.shuffle.manager", FerriteShuffleManager.class.getName())
            .set(FerriteSparkConf.CLUSTER, args[0])
            .set(FerriteSparkConf.CLUSTER_ID, args[1])
            .set(FerriteSparkConf.SECRET_FILE, args[2])
            .set(FerriteSparkConf.CLUSTER_FILE, args[3]);
    Random r = new Random(Long.parseLong(args[4]));
    List<Integer> data = new ArrayList<>();
    for (int i = 0; i < 20_000; i++) {
      data.add(r.nextInt(1_000_000));
    }
    JavaSparkContext sc = new JavaSparkContext(conf);
    long count =
        sc.parallelize(data, 4)
            .mapToPair(i -> new Tuple2<>(i % 101, (long) i))
            .reduceByKey(Long::sum, 3)
            .count();
    System.out.println("MAPPED " + sc.sc().applicationId() + " " + count);
    System.out.flush();
    new CountDownLatch(1).await(); // until the test kills this JVM
  }
}
