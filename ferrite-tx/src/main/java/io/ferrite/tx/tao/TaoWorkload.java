package io.ferrite.tx.tao;

import io.ferrite.fabric.FerriteException;
import io.ferrite.tx.FatPointer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.HdrHistogram.Histogram;

/**
 * Tao's read-heavy workload over a {@link Tao}: load a graph, then run the operation mix TAO
 * reports for Facebook's production traffic, as FaRM's Tao evaluation does (FaRM §4.4).
 *
 * <pre>{@code
 * Tao tao = new Tao(new TxClient(ferriteClient));
 * TaoWorkload w = TaoWorkload.load(tao, 10_000, 10, 42, (done, total) -> {});
 * TaoWorkload.Result r = w.run(4, Duration.ofSeconds(10), 43);
 * System.out.println(r);   // ops, ops/s, reads, writes, aborts, p50/p99
 * // another process: TaoWorkload.attach(tao, ids) with ids saved from w.ids() (Tao.idString)
 * }</pre>
 *
 * <p><b>Mix.</b> TAO (Bronson et al., "TAO: Facebook's Distributed Data Store for the Social
 * Graph", USENIX ATC 2013, its production workload: relative frequencies of client requests): 99.8
 * % reads, 0.2 % writes. Of reads: assoc_get 15.7 %, assoc_range 40.9 %, assoc_time_range 2.8 %,
 * assoc_count 11.7 %, obj_get 28.9 %; of writes: assoc_add 52.5 %, assoc_del 8.3 %,
 * assoc_change_type 0.9 %, obj_add 16.5 %, obj_update 20.7 %, obj_delete 2.0 %. The operations this
 * Tao has are run in those proportions, renormalized among themselves: reads {@link #OBJ_GET} 35.5
 * %, {@link #ASSOC_RANGE} 50.2 %, {@link #ASSOC_COUNT} 14.3 % (FaRM §4.4: these three are 85 % of
 * the workload; assoc_get FaRM runs by function shipping, which the tx face does not have yet);
 * writes {@link #ASSOC_ADD} 58.5 %, {@link #OBJ_UPDATE} 23.1 %, {@link #OBJ_ADD} 18.4 %.
 *
 * <p><b>Graph.</b> {@code objects} objects with 16 to 128 bytes of data; {@code objects ×
 * assocsPerObject} associations whose source is drawn from a Zipf distribution (θ 0.99) over the
 * objects, so degrees are skewed as in social graphs (a few objects hold long lists, most short
 * ones), of type 0 (80 %), 1 (15 %) or 2 (5 %), with 8 bytes of data. The run draws the objects it
 * reads and writes from the same Zipf distribution; assoc_range reads the newest 10 (pos 0, limit
 * 10).
 */
public final class TaoWorkload {
  /** Fraction of operations that are writes (TAO: 0.2 %). */
  public static final double WRITE_FRACTION = 0.002;

  /** Reads, cumulative: obj_get up to 0.355, then assoc_range up to 0.857, then assoc_count. */
  static final double OBJ_GET = 0.355;

  static final double ASSOC_RANGE = OBJ_GET + 0.502;
  static final double ASSOC_COUNT = 1.0;

  /** Writes, cumulative: assoc_add up to 0.585, then obj_update up to 0.816, then obj_add. */
  static final double ASSOC_ADD = 0.585;

  static final double OBJ_UPDATE = ASSOC_ADD + 0.231;
  static final double OBJ_ADD = 1.0;

  /** The page assoc_range reads. */
  public static final int RANGE_LIMIT = 10;

  static final double ZIPF_THETA = 0.99;

  /** Load progress: {@code done} of {@code total} adds (objects, then associations). */
  @FunctionalInterface
  public interface Progress {
    void loaded(long done, long total);
  }

  /**
   * What {@link #run} measured.
   *
   * @param ops operations completed (reads + writes; failed ones not counted)
   * @param reads obj_get, assoc_range and assoc_count completed
   * @param writes assoc_add, obj_update and obj_add completed
   * @param aborts transactions aborted and run again ({@link Tao#aborts})
   * @param refetches cached head pointers found stale and read again ({@link Tao#refetches})
   * @param fallbacks reads that fell back to a read-only transaction ({@link Tao#fallbacks})
   * @param errors operations that failed (a FerriteException, or any other exception); {@code
   *     firstError} says the first
   * @param seconds the run's wall time
   * @param p50Micros median latency of an operation, microseconds
   * @param p99Micros 99th percentile latency, microseconds
   */
  public record Result(
      long ops,
      long reads,
      long writes,
      long aborts,
      long refetches,
      long fallbacks,
      long errors,
      String firstError,
      double seconds,
      double p50Micros,
      double p99Micros) {
    /** Operations per second. */
    public double opsPerSecond() {
      return seconds > 0 ? ops / seconds : 0;
    }

    @Override
    public String toString() {
      return String.format(
          Locale.ROOT,
          "tao: %d ops in %.1f s (%.0f ops/s), %d reads, %d writes, %d aborts, %d head refetches,"
              + " %d read fallbacks, %d errors%s, p50 %.2f us, p99 %.2f us",
          ops,
          seconds,
          opsPerSecond(),
          reads,
          writes,
          aborts,
          refetches,
          fallbacks,
          errors,
          firstError == null ? "" : " (first: " + firstError + ")",
          p50Micros,
          p99Micros);
    }
  }

  private final Tao tao;
  private final List<FatPointer> ids;
  private final Zipf zipf;

  private TaoWorkload(Tao tao, List<FatPointer> ids) {
    this.tao = Objects.requireNonNull(tao, "tao");
    if (ids.isEmpty()) {
      throw new IllegalArgumentException("tao workload: no objects (expected: at least one id)");
    }
    this.ids = List.copyOf(ids);
    this.zipf = new Zipf(this.ids.size(), ZIPF_THETA);
  }

  /**
   * Loads a graph (see the class comment) on one thread and returns the workload over it.
   *
   * @param objects objects to add, >= 1
   * @param assocsPerObject mean associations per object (skewed), >= 0
   * @param seed seeds every random choice
   * @param progress told every 1024 adds and at the end
   */
  public static TaoWorkload load(
      Tao tao, int objects, int assocsPerObject, long seed, Progress progress) {
    if (objects < 1 || assocsPerObject < 0) {
      throw new IllegalArgumentException(
          "tao load: objects "
              + objects
              + ", assocsPerObject "
              + assocsPerObject
              + " (expected: objects >= 1, assocsPerObject >= 0)");
    }
    Random random = new Random(seed);
    long total = objects + (long) objects * assocsPerObject;
    long done = 0;
    List<FatPointer> ids = new ArrayList<>(objects);
    for (int i = 0; i < objects; i++) {
      ids.add(tao.objAdd(random.nextInt(4), objectData(random)));
      if (++done % 1024 == 0) {
        progress.loaded(done, total);
      }
    }
    Zipf zipf = new Zipf(objects, ZIPF_THETA);
    for (long i = 0; i < (long) objects * assocsPerObject; i++) {
      FatPointer id1 = ids.get(zipf.next(random));
      tao.assocAdd(id1, atype(random), ids.get(random.nextInt(objects)), i, assocData(random));
      if (++done % 1024 == 0) {
        progress.loaded(done, total);
      }
    }
    progress.loaded(done, total);
    return new TaoWorkload(tao, ids);
  }

  /** The workload over a graph loaded before (by another process: its {@link #ids}). */
  public static TaoWorkload attach(Tao tao, List<FatPointer> ids) {
    return new TaoWorkload(tao, ids);
  }

  /** The loaded objects' ids, in load order ({@link Tao#idString} prints one). */
  public List<FatPointer> ids() {
    return ids;
  }

  /**
   * Runs the mix on {@code threads} threads for {@code duration}, sharing this workload's {@link
   * Tao} (and its head pointer cache). A failed operation is counted, not thrown.
   */
  public Result run(int threads, Duration duration, long seed) throws InterruptedException {
    if (threads < 1 || duration.isNegative()) {
      throw new IllegalArgumentException(
          "tao run: threads " + threads + ", duration " + duration + " (expected: >= 1, >= 0)");
    }
    long aborts0 = tao.aborts();
    long refetches0 = tao.refetches();
    long fallbacks0 = tao.fallbacks();
    AtomicLong reads = new AtomicLong();
    AtomicLong writes = new AtomicLong();
    AtomicLong errors = new AtomicLong();
    AtomicReference<String> firstError = new AtomicReference<>();
    AtomicLong timeBase = new AtomicLong(Long.MAX_VALUE / 2);
    Histogram all = new Histogram(3);
    Thread[] workers = new Thread[threads];
    long start = System.nanoTime();
    long end = start + duration.toNanos();
    for (int w = 0; w < threads; w++) {
      Random random = new Random(seed * 31 + w);
      workers[w] =
          new Thread(
              () -> {
                Histogram h = new Histogram(3);
                long r = 0;
                long wr = 0;
                while (System.nanoTime() < end) {
                  long t0 = System.nanoTime();
                  try {
                    if (random.nextDouble() < WRITE_FRACTION) {
                      write(random, timeBase);
                      wr++;
                    } else {
                      read(random);
                      r++;
                    }
                    h.recordValue(Math.max(0, System.nanoTime() - t0));
                  } catch (FerriteException e) {
                    errors.incrementAndGet();
                    firstError.compareAndSet(null, e.code() + ": " + e.getMessage());
                  } catch (RuntimeException e) {
                    // Not a store failure (a bug): counted and named too, never a silent thread.
                    errors.incrementAndGet();
                    firstError.compareAndSet(null, e.toString());
                  }
                }
                reads.addAndGet(r);
                writes.addAndGet(wr);
                synchronized (all) {
                  all.add(h);
                }
              },
              "tao-workload-" + w);
      workers[w].start();
    }
    for (Thread t : workers) {
      t.join();
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    return new Result(
        reads.get() + writes.get(),
        reads.get(),
        writes.get(),
        tao.aborts() - aborts0,
        tao.refetches() - refetches0,
        tao.fallbacks() - fallbacks0,
        errors.get(),
        firstError.get(),
        seconds,
        all.getValueAtPercentile(50) / 1e3,
        all.getValueAtPercentile(99) / 1e3);
  }

  private void read(Random random) {
    FatPointer id = ids.get(zipf.next(random));
    double op = random.nextDouble();
    if (op < OBJ_GET) {
      tao.objGet(id);
    } else if (op < ASSOC_RANGE) {
      tao.assocRange(id, atype(random), 0, RANGE_LIMIT);
    } else {
      tao.assocCount(id, atype(random));
    }
  }

  private void write(Random random, AtomicLong time) {
    FatPointer id = ids.get(zipf.next(random));
    double op = random.nextDouble();
    if (op < ASSOC_ADD) {
      tao.assocAdd(
          id,
          atype(random),
          ids.get(random.nextInt(ids.size())),
          time.incrementAndGet(),
          assocData(random));
    } else if (op < OBJ_UPDATE) {
      byte[] data = objectData(random);
      tao.objUpdate(
          id, Arrays.copyOf(data, Math.min(data.length, id.size() - TaoLayout.NODE_HEADER)));
    } else {
      tao.objAdd(random.nextInt(4), objectData(random));
    }
  }

  private static int atype(Random random) {
    int p = random.nextInt(100);
    return p < 80 ? 0 : p < 95 ? 1 : 2;
  }

  private static byte[] objectData(Random random) {
    byte[] b = new byte[16 + random.nextInt(113)];
    random.nextBytes(b);
    return b;
  }

  private static byte[] assocData(Random random) {
    byte[] b = new byte[8];
    random.nextBytes(b);
    return b;
  }

  /** Zipf over [0, n) by inverting its cumulative distribution (binary search). */
  static final class Zipf {
    private final double[] cdf;

    Zipf(int n, double theta) {
      cdf = new double[n];
      double sum = 0;
      for (int i = 0; i < n; i++) {
        sum += 1 / Math.pow(i + 1, theta);
        cdf[i] = sum;
      }
      for (int i = 0; i < n; i++) {
        cdf[i] /= sum;
      }
    }

    int next(Random random) {
      int i = Arrays.binarySearch(cdf, random.nextDouble());
      return Math.min(cdf.length - 1, i >= 0 ? i : -i - 1);
    }
  }
}
