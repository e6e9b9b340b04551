package io.ferrite.sparkbench;

import io.ferrite.spark.FerriteBroadcast;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.SplittableRandom;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.LongAdder;
import java.util.zip.CRC32;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import scala.Tuple2;

/**
 * The jobs {@code bench spark} times, the same on either shuffle, each verifying what it computed.
 * Records are TeraSort-like: a 10-byte key (ASCII, as a String: Spark orders it) and a 90-byte
 * value, generated inside the map tasks from a seed per partition (no input file, nothing cached:
 * both shuffles pay the same generation). Every job ends in a pass over its output that returns a
 * {@link Summary} per partition: records, an order-free checksum of (key, value) pairs, and for a
 * sort its first and last key after checking its order. The driver checks the summaries against the
 * input's (counted by an untimed job over the same generator).
 */
final class SparkJobs {
  static final int KEY = 10;
  static final int VALUE = 90;
  static final int RECORD = KEY + VALUE;

  /** groupByKey's keys: this many records per key on average. */
  static final int PER_GROUP = 100;

  private SparkJobs() {}

  /** What one timed job measured: its wall time and its tasks' shuffle metrics, summed. */
  record Timing(long jobNanos, long shuffleWriteNanos, long fetchWaitMillis) {}

  /** Sums the tasks' shuffle write time and fetch wait (Spark's task metrics) while registered. */
  static final class Metrics extends SparkListener {
    final LongAdder writeNanos = new LongAdder();
    final LongAdder fetchWaitMillis = new LongAdder();

    @Override
    public void onTaskEnd(SparkListenerTaskEnd end) {
      if (end.taskMetrics() != null) {
        writeNanos.add(end.taskMetrics().shuffleWriteMetrics().writeTime());
        fetchWaitMillis.add(end.taskMetrics().shuffleReadMetrics().fetchWaitTime());
      }
    }

    void reset() {
      writeNanos.reset();
      fetchWaitMillis.reset();
    }
  }

  /** Per partition of a job's output: what the driver checks. Kryo-friendly (no-arg, mutable). */
  static final class Summary implements Serializable {
    private static final long serialVersionUID = 1L;
    int partition;
    long records;
    long groups;
    long checksum;
    String first;
    String last;
    String error;
  }

  /** The input: {@code maps} partitions of {@code perMap} records; keys drawn from {@code keys}. */
  record Input(long seed, int maps, long perMap, long keys) implements Serializable {
    long records() {
      return maps * perMap;
    }
  }

  /** The records of map partition {@code m}: generated lazily, never held as a list. */
  static Iterator<Tuple2<String, byte[]>> generate(Input in, int m) {
    SplittableRandom r = new SplittableRandom(in.seed() * 0x9E3779B97F4A7C15L + m);
    return new Iterator<>() {
      long left = in.perMap();

      @Override
      public boolean hasNext() {
        return left > 0;
      }

      @Override
      public Tuple2<String, byte[]> next() {
        if (left == 0) {
          throw new NoSuchElementException();
        }
        left--;
        byte[] key = new byte[KEY];
        if (in.keys() <= 0) {
          for (int i = 0; i < KEY; i++) {
            key[i] = (byte) (' ' + 1 + r.nextInt(94));
          }
        } else {
          long k = r.nextLong(in.keys());
          for (int i = KEY - 1; i >= 0; i--, k /= 10) {
            key[i] = (byte) ('0' + k % 10);
          }
        }
        byte[] value = new byte[VALUE];
        for (int i = 0; i < VALUE; i += 8) {
          long v = r.nextLong();
          for (int j = i; j < Math.min(VALUE, i + 8); j++, v >>>= 8) {
            value[j] = (byte) v;
          }
        }
        return new Tuple2<>(new String(key, StandardCharsets.US_ASCII), value);
      }
    };
  }

  static long recordHash(String key, byte[] value) {
    return key.hashCode() * 0x9E3779B97F4A7C15L + Arrays.hashCode(value);
  }

  static JavaPairRDD<String, byte[]> input(JavaSparkContext sc, Input in) {
    List<Integer> maps = new ArrayList<>();
    for (int m = 0; m < in.maps(); m++) {
      maps.add(m);
    }
    return sc.parallelize(maps, in.maps()).flatMapToPair(m -> generate(in, m));
  }

  /** The input's own summary (untimed): records and checksum, to check the jobs against. */
  static Summary inputSummary(JavaSparkContext sc, Input in) {
    List<Summary> parts =
        input(sc, in)
            .mapPartitions(
                it -> {
                  Summary s = new Summary();
                  while (it.hasNext()) {
                    Tuple2<String, byte[]> t = it.next();
                    s.records++;
                    s.checksum += recordHash(t._1(), t._2());
                  }
                  return List.of(s).iterator();
                })
            .collect();
    Summary all = new Summary();
    for (Summary s : parts) {
      all.records += s.records;
      all.checksum += s.checksum;
    }
    return all;
  }

  /**
   * {@code sortByKey} into {@code reduces} partitions; each checks its order. Returns the timing,
   * after checking every record came out once (count, checksum) and in global order.
   */
  static Timing sort(
      JavaSparkContext sc, Metrics metrics, Input in, int reduces, Summary expected) {
    metrics.reset();
    long t0 = System.nanoTime();
    JavaPairRDD<String, byte[]> sorted = input(sc, in).sortByKey(true, reduces);
    List<Summary> parts =
        sorted
            .mapPartitionsWithIndex(
                (p, it) -> {
                  Summary s = new Summary();
                  s.partition = p;
                  String prev = null;
                  while (it.hasNext()) {
                    Tuple2<String, byte[]> t = it.next();
                    if (prev != null && prev.compareTo(t._1()) > 0 && s.error == null) {
                      s.error = "partition " + p + ": " + prev + " before " + t._1();
                    }
                    if (prev == null) {
                      s.first = t._1();
                    }
                    prev = t._1();
                    s.records++;
                    s.checksum += recordHash(t._1(), t._2());
                  }
                  s.last = prev;
                  return List.of(s).iterator();
                },
                true)
            .collect();
    long jobNanos = System.nanoTime() - t0;
    Timing timing = timing(sc, metrics, jobNanos);
    cleanShuffle(sc, sorted);
    String previousLast = null;
    long records = 0;
    long checksum = 0;
    for (Summary s : parts) {
      if (s.error != null) {
        throw new IllegalStateException("sortByKey out of order: " + s.error);
      }
      if (s.first != null) {
        if (previousLast != null && previousLast.compareTo(s.first) > 0) {
          throw new IllegalStateException(
              "sortByKey out of order across partitions: "
                  + previousLast
                  + " before partition "
                  + s.partition
                  + "'s "
                  + s.first);
        }
        previousLast = s.last;
      }
      records += s.records;
      checksum += s.checksum;
    }
    check("sortByKey", records, checksum, expected);
    return timing;
  }

  /**
   * {@code groupByKey} into {@code reduces} partitions; returns the timing after checking that the
   * groups hold every record once (count, checksum). {@code groups} receives the group count.
   */
  static Timing group(
      JavaSparkContext sc,
      Metrics metrics,
      Input in,
      int reduces,
      Summary expected,
      long[] groups) {
    metrics.reset();
    long t0 = System.nanoTime();
    JavaPairRDD<String, Iterable<byte[]>> grouped = input(sc, in).groupByKey(reduces);
    List<Summary> parts =
        grouped
            .mapPartitions(
                it -> {
                  Summary s = new Summary();
                  while (it.hasNext()) {
                    Tuple2<String, Iterable<byte[]>> g = it.next();
                    s.groups++;
                    for (byte[] v : g._2()) {
                      s.records++;
                      s.checksum += recordHash(g._1(), v);
                    }
                  }
                  return List.of(s).iterator();
                })
            .collect();
    long jobNanos = System.nanoTime() - t0;
    Timing timing = timing(sc, metrics, jobNanos);
    cleanShuffle(sc, grouped);
    long records = 0;
    long checksum = 0;
    long n = 0;
    for (Summary s : parts) {
      records += s.records;
      checksum += s.checksum;
      n += s.groups;
    }
    check("groupByKey", records, checksum, expected);
    groups[0] = n;
    return timing;
  }

  /** A {@code bytes}-byte value of seeded random bytes, and its CRC-32. */
  static byte[] broadcastValue(long seed, int bytes) {
    byte[] v = new byte[bytes];
    new SplittableRandom(seed).nextBytes(v);
    return v;
  }

  static long crc(byte[] v) {
    CRC32 c = new CRC32();
    c.update(v);
    return c.getValue();
  }

  /**
   * Spark's {@code sc.broadcast(value)} read by {@code tasks} tasks, each checking its CRC: {the
   * time from the broadcast's creation to the job's end, the creation's part}. Destroyed afterwards
   * (untimed).
   */
  static long[] sparkBroadcast(JavaSparkContext sc, byte[] value, long crc, int tasks) {
    long t0 = System.nanoTime();
    Broadcast<byte[]> b = sc.broadcast(value);
    long created = System.nanoTime() - t0;
    readEverywhere(sc, tasks, crc, () -> b.value());
    long nanos = System.nanoTime() - t0;
    b.destroy();
    return new long[] {nanos, created};
  }

  /** As {@link #sparkBroadcast} with {@link FerriteBroadcast}. */
  static long[] ferriteBroadcast(JavaSparkContext sc, byte[] value, long crc, int tasks) {
    long t0 = System.nanoTime();
    FerriteBroadcast<byte[]> b = FerriteBroadcast.create(sc, value);
    long created = System.nanoTime() - t0;
    readEverywhere(sc, tasks, crc, () -> b.value());
    long nanos = System.nanoTime() - t0;
    b.destroy();
    return new long[] {nanos, created};
  }

  /** The value as a task sees it; serializable, so the closure carries the handle. */
  interface ValueOf extends Serializable {
    byte[] get();
  }

  private static void readEverywhere(JavaSparkContext sc, int tasks, long crc, ValueOf v) {
    List<Integer> ids = new ArrayList<>();
    for (int i = 0; i < tasks; i++) {
      ids.add(i);
    }
    List<Long> seen = sc.parallelize(ids, tasks).map(i -> crc(v.get())).collect();
    for (long s : seen) {
      if (s != crc) {
        throw new IllegalStateException(
            "a task read a broadcast value with CRC " + s + " (expected: " + crc + ")");
      }
    }
  }

  private static void check(String job, long records, long checksum, Summary expected) {
    if (records != expected.records || checksum != expected.checksum) {
      throw new IllegalStateException(
          job
              + " gave "
              + records
              + " records, checksum "
              + checksum
              + " (expected: "
              + expected.records
              + " records, checksum "
              + expected.checksum
              + ")");
    }
  }

  private static Timing timing(JavaSparkContext sc, Metrics metrics, long jobNanos) {
    try {
      // Task-end events reach listeners asynchronously: wait for this job's.
      sc.sc().listenerBus().waitUntilEmpty();
    } catch (TimeoutException e) {
      throw new IllegalStateException("Spark's listener bus did not drain", e);
    }
    return new Timing(jobNanos, metrics.writeNanos.sum(), metrics.fetchWaitMillis.sum());
  }

  /**
   * After a shuffle's removal, how long the next job waits (untimed, on both sides): Ferrite's
   * master reuses a removed node's blocks only after a grace of 2 s (NodesMaster), and the cluster
   * has memory for one shuffle at a time, not two.
   */
  static final long RECLAIM_PAUSE_MILLIS = 2500;

  /**
   * Spark's own cleanup of the job's shuffle (what ContextCleaner does when the RDD is collected),
   * now and untimed: the built-in shuffle deletes its files, Ferrite's driver its Directory, so
   * each job starts with the memory of one shuffle free (after {@link #RECLAIM_PAUSE_MILLIS}).
   */
  private static void cleanShuffle(JavaSparkContext sc, JavaPairRDD<?, ?> shuffled) {
    // groupByKey's Java RDD is a mapValues over the ShuffledRDD: walk down to the shuffle.
    org.apache.spark.rdd.RDD<?> rdd = shuffled.rdd();
    while (!rdd.dependencies().isEmpty()) {
      org.apache.spark.Dependency<?> dep = rdd.dependencies().head();
      if (dep instanceof ShuffleDependency<?, ?, ?> shuffle) {
        sc.sc().cleaner().get().doCleanupShuffle(shuffle.shuffleId(), true);
        try {
          Thread.sleep(RECLAIM_PAUSE_MILLIS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted after cleaning a shuffle", e);
        }
        return;
      }
      rdd = dep.rdd();
    }
    throw new IllegalStateException("no shuffle under " + shuffled.rdd());
  }
}
