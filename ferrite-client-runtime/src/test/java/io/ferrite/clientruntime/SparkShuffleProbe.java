package io.ferrite.clientruntime;

import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import scala.Tuple2;

/**
 * The program a child JVM runs with Spark (its own jars and Netty) and then the shaded jar on its
 * class path: jobs whose shuffles go through {@code io.ferrite.spark.FerriteShuffleManager}, as a
 * {@code spark-submit --conf spark.shuffle.manager=...} user would run them. It names no Ferrite
 * class: the manager is loaded by Spark from its name.
 *
 * <p>Arguments: {@code master clusterUri secretFile clusterId seed n [executorClassPath]}. With a
 * {@code local-cluster} master the executors get {@code executorClassPath} (the shaded jar and this
 * probe's classes) as {@code spark.executor.extraClassPath}, and find Spark in {@code
 * $SPARK_HOME/jars}. Prints the shuffle manager's class, the {@code groupByKey}, {@code sortByKey}
 * and {@code reduceByKey} results as {@code groupByKey=...}, {@code sortByKey=...} and {@code
 * reduceByKey=...} (the test compares them with {@link #expectedGroups}, {@link #expectedSorted}
 * and {@link #expectedSums}), the number of map output Files found in Ferrite under the
 * application's directory while the shuffles are alive ({@code map outputs=N}, read through the
 * shaded jar's {@code ferrite://} FileSystem), then {@code shuffle ok}.
 */
public final class SparkShuffleProbe {
  private SparkShuffleProbe() {}

  public static void main(String[] args) throws Exception {
    String master = args[0];
    URI cluster = URI.create(args[1]);
    long seed = Long.parseLong(args[4]);
    int n = Integer.parseInt(args[5]);
    SparkConf conf =
        new SparkConf()
            .setMaster(master)
            .setAppName("ferrite-client-runtime-shuffle-probe")
            .set("spark.ui.enabled", "false")
            .set("spark.driver.host", "127.0.0.1")
            .set("spark.shuffle.manager", "io.ferrite.spark.FerriteShuffleManager")
            .set("spark.ferrite.cluster", args[1])
            .set("spark.ferrite.secret.file", args[2])
            .set("spark.ferrite.cluster.id", args[3])
            .set("spark.ferrite.cluster.file", args[2] + ".no-cluster-file")
            // Kryo relocates records and the bypass writer takes at most 3 reducers, so the three
            // jobs below run the manager's three map writers: bypass (groupByKey, 3 reducers),
            // serialized (sortByKey, 4) and sort (reduceByKey: map-side combine).
            .set("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
            .set("spark.shuffle.sort.bypassMergeThreshold", "3");
    if (args.length > 6) {
      conf.set("spark.executor.extraClassPath", args[6]);
    }
    List<Integer> data = data(seed, n);
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      System.out.println(
          "shuffle manager: " + SparkEnv.get().shuffleManager().getClass().getName());
      // groupByKey: no map-side combine, 3 reducers (the bypass writer); the values of a key
      // arrive in no particular order, so each group is reduced to its count and sum.
      JavaPairRDD<Integer, Iterable<Integer>> groups =
          sc.parallelize(data, 4).mapToPair(v -> new Tuple2<>(v % 97, v)).groupByKey(3);
      TreeMap<Integer, String> byKey = new TreeMap<>();
      for (Tuple2<Integer, Iterable<Integer>> g : groups.collect()) {
        long count = 0;
        long sum = 0;
        for (int v : g._2()) {
          count++;
          sum += v;
        }
        byKey.put(g._1(), count + "/" + sum);
      }
      System.out.println("groupByKey=" + byKey);
      // sortByKey: a range partitioner and the key ordering on the reduce side.
      JavaPairRDD<Integer, Integer> sorted =
          sc.parallelize(data, 4).mapToPair(v -> new Tuple2<>(v, v % 10)).sortByKey(true, 4);
      List<Integer> keys = sorted.keys().collect();
      System.out.println("sortByKey=" + Arrays.hashCode(keys.stream().mapToInt(i -> i).toArray()));
      // reduceByKey: map-side combine (Spark's ExternalSorter on the map side, the aggregator's
      // combiners on the reduce side).
      JavaPairRDD<Integer, Long> sums =
          sc.parallelize(data, 4)
              .mapToPair(v -> new Tuple2<>(v % 89, (long) v))
              .reduceByKey(Long::sum, 3);
      System.out.println("reduceByKey=" + new TreeMap<>(sums.collectAsMap()));
      System.out.println("map outputs=" + mapOutputs(cluster, args, sc.sc().applicationId()));
    }
    System.out.println("shuffle ok");
  }

  /** The map output Files under the application's directory, read through ferrite://. */
  private static int mapOutputs(URI cluster, String[] args, String appId) throws Exception {
    Configuration conf = new Configuration();
    conf.set("fs.ferrite.secret.file", args[2]);
    conf.set("fs.ferrite.cluster.id", args[3]);
    conf.set("fs.ferrite.cluster.file", args[2] + ".no-cluster-file");
    conf.set("fs.ferrite.fabric", "tcp");
    int count = 0;
    try (FileSystem fs = FileSystem.newInstance(cluster, conf)) {
      RemoteIterator<LocatedFileStatus> it = fs.listFiles(new Path("/spark/" + appId), true);
      while (it.hasNext()) {
        if (it.next().getPath().getName().startsWith("map-")) {
          count++;
        }
      }
    }
    return count;
  }

  static List<Integer> data(long seed, int n) {
    Random r = new Random(seed);
    List<Integer> data = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      data.add(r.nextInt(1_000_000));
    }
    return data;
  }

  /** What {@code groupByKey=} must print for this data, computed without Spark. */
  static String expectedGroups(long seed, int n) {
    TreeMap<Integer, long[]> acc = new TreeMap<>();
    for (int v : data(seed, n)) {
      long[] a = acc.computeIfAbsent(v % 97, k -> new long[2]);
      a[0]++;
      a[1] += v;
    }
    TreeMap<Integer, String> out = new TreeMap<>();
    for (Map.Entry<Integer, long[]> e : acc.entrySet()) {
      out.put(e.getKey(), e.getValue()[0] + "/" + e.getValue()[1]);
    }
    return out.toString();
  }

  /** What {@code reduceByKey=} must print for this data, computed without Spark. */
  static String expectedSums(long seed, int n) {
    TreeMap<Integer, Long> out = new TreeMap<>();
    for (int v : data(seed, n)) {
      out.merge(v % 89, (long) v, Long::sum);
    }
    return out.toString();
  }

  /** What {@code sortByKey=} must print for this data, computed without Spark. */
  static int expectedSorted(long seed, int n) {
    return Arrays.hashCode(data(seed, n).stream().mapToInt(i -> i).sorted().toArray());
  }
}
