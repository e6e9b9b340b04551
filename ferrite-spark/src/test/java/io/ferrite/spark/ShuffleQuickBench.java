package io.ferrite.spark;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.LongAdder;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import scala.Tuple2;

/**
 * A quick look, not the issue's {@code bench spark}: a TeraSort-like {@code sortByKey}
 * (10-character keys, 90-byte values) of {@code MiB} MiB in {@code local[2]}, Ferrite's shuffle
 * (over shm, in-process memory servers) against Spark's built-in sort shuffle, alternating, {@code
 * reps} times each; job time (median) and the tasks' shuffle write time and fetch wait, summed. Run
 * under {@code flock /tmp/ferrite-bench.lock}; arguments: MiB (default 64), reps (default 3).
 */
public final class ShuffleQuickBench {
  private ShuffleQuickBench() {}

  private static final LongAdder WRITE_NS = new LongAdder();
  private static final LongAdder FETCH_WAIT_MS = new LongAdder();

  public static void main(String[] args) throws Exception {
    int mib = args.length > 0 ? Integer.parseInt(args[0]) : 64;
    int reps = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    long records = (long) mib * 1024 * 1024 / 100;
    BenchReport report = new BenchReport("spark-quick");
    try (SparkTestCluster cluster = SparkTestCluster.start("1m", (2 * mib + 64) + "m")) {
      List<long[]> builtIn = new ArrayList<>();
      List<long[]> ferrite = new ArrayList<>();
      for (int r = 0; r < reps; r++) {
        builtIn.add(run(base(), records));
        ferrite.add(run(cluster.configure(base()), records));
      }
      String size = mib + "MiB";
      add(report, "sortByKey." + size + ".job", builtIn, ferrite, 0, "ms");
      add(report, "sortByKey." + size + ".shuffleWrite", builtIn, ferrite, 1, "ms");
      add(report, "sortByKey." + size + ".fetchWait", builtIn, ferrite, 2, "ms");
    }
    report.printTable(System.out);
  }

  private static void add(
      BenchReport report,
      String name,
      List<long[]> builtIn,
      List<long[]> ferrite,
      int i,
      String unit) {
    BenchResult peer =
        report.add(BenchResult.of("builtin." + name, median(builtIn, i), unit, Better.LOWER));
    report.add(
        BenchResult.against("ferrite." + name, median(ferrite, i), unit, Better.LOWER, peer));
  }

  private static double median(List<long[]> runs, int i) {
    long[] v = runs.stream().mapToLong(a -> a[i]).sorted().toArray();
    return v[v.length / 2];
  }

  private static SparkConf base() {
    return new SparkConf()
        .setMaster("local[2]")
        .setAppName("ferrite-shuffle-quick-bench")
        .set("spark.ui.enabled", "false")
        .set("spark.driver.host", "127.0.0.1");
  }

  /** One job: {job ms, shuffle write ms, fetch wait ms}. */
  private static long[] run(SparkConf conf, long records) {
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      sc.sc()
          .addSparkListener(
              new SparkListener() {
                @Override
                public void onTaskEnd(SparkListenerTaskEnd end) {
                  if (end.taskMetrics() != null) {
                    WRITE_NS.add(end.taskMetrics().shuffleWriteMetrics().writeTime());
                    FETCH_WAIT_MS.add(end.taskMetrics().shuffleReadMetrics().fetchWaitTime());
                  }
                }
              });
      int maps = 4;
      JavaPairRDD<String, byte[]> input =
          sc.parallelize(java.util.List.of(0, 1, 2, 3), maps)
              .flatMapToPair(
                  m -> {
                    Random rnd = new Random(m);
                    List<Tuple2<String, byte[]>> out = new ArrayList<>();
                    byte[] value = "v".repeat(90).getBytes(StandardCharsets.US_ASCII);
                    for (long i = 0; i < records / maps; i++) {
                      char[] key = new char[10];
                      for (int c = 0; c < key.length; c++) {
                        key[c] = (char) ('!' + rnd.nextInt(94));
                      }
                      out.add(new Tuple2<>(new String(key), value));
                    }
                    return out.iterator();
                  })
              .cache();
      input.count(); // generate outside the timed job
      WRITE_NS.reset();
      FETCH_WAIT_MS.reset();
      long t0 = System.nanoTime();
      long n = input.sortByKey(true, 4).count();
      long jobMs = (System.nanoTime() - t0) / 1_000_000;
      sc.sc().listenerBus().waitUntilEmpty();
      if (n != records / maps * maps) {
        throw new IllegalStateException("sorted " + n + " records of " + records);
      }
      return new long[] {jobMs, WRITE_NS.sum() / 1_000_000, FETCH_WAIT_MS.sum()};
    } catch (java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException(e);
    }
  }
}
