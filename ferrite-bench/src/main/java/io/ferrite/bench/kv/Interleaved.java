package io.ferrite.bench.kv;

import io.ferrite.fabric.NamedThreadFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;

/**
 * Two contenders (Ferrite and Redis) driven by the same threads in alternating slices, so that both
 * see the same machine: on a shared 2-core VM the load of other processes swings by a factor of two
 * or three within seconds, and two back-to-back one-second cells can land in different weather.
 *
 * <p>The same {@code threads} threads run contender A for one slice, pause, run B for one slice,
 * pause, and so on: a quarter of {@code d} each as warm-up (not recorded), then at least {@code d}
 * each, measured. A slice ends when every thread has finished its op in flight and paused, and its
 * length is taken up to that moment, so each contender's throughput counts only its own ops over
 * only its own time; the pauses count for neither. Each thread keeps its {@link Random} across
 * slices and contenders, as {@link KvBench#drive} does.
 */
final class Interleaved {
  private Interleaved() {}

  /** Slice length: long against an op (at most milliseconds), short against the load's swings. */
  static final Duration SLICE = Duration.ofMillis(50);

  private static final int PAUSE = -1;

  /**
   * What the coordinator tells the threads ({@link #phase}) and what they answer ({@link #running}:
   * threads inside an op). A thread enters by incrementing {@code running} and then reading the
   * phase again, backing off if it changed; the coordinator ends a slice by setting {@code PAUSE}
   * and then waiting for {@code running == 0}. All volatile (sequentially consistent), so either
   * the coordinator sees the entry and waits for the op, or the thread sees the pause: ops of the
   * two contenders never overlap.
   */
  private static final class State {
    volatile int phase = PAUSE;
    volatile boolean recording;
    volatile boolean done;
    final AtomicInteger running = new AtomicInteger();
    final AtomicReference<Throwable> failure = new AtomicReference<>();
  }

  /** Results of A and B, in that order. */
  static KvBench.Result[] drive(KvBench.Op a, KvBench.Op b, int threads, Duration d)
      throws Exception {
    KvBench.Op[] ops = {a, b};
    NamedThreadFactory tf = new NamedThreadFactory("bench-kv", true);
    Histogram[][] hs = new Histogram[2][threads];
    long[][] counts = new long[2][threads];
    State s = new State();
    List<Thread> ts = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      int w = i;
      hs[0][w] = new Histogram(3);
      hs[1][w] = new Histogram(3);
      ts.add(tf.newThread(() -> work(s, ops, w, hs, counts)));
    }
    for (Thread t : ts) {
      t.start();
    }
    long slice = SLICE.toNanos();
    long[] time = new long[2];
    try {
      long warm = Math.max(slice, d.toNanos() / 4);
      for (long spent = 0; spent < warm && s.failure.get() == null; spent += slice) {
        for (int p = 0; p < 2; p++) {
          runSlice(s, p, slice);
        }
      }
      s.recording = true;
      while ((time[0] < d.toNanos() || time[1] < d.toNanos()) && s.failure.get() == null) {
        for (int p = 0; p < 2; p++) {
          time[p] += runSlice(s, p, slice);
        }
      }
    } finally {
      s.done = true;
      for (Thread t : ts) {
        t.join();
      }
    }
    if (s.failure.get() != null) {
      throw new IllegalStateException("a benchmark thread failed", s.failure.get());
    }
    KvBench.Result[] out = new KvBench.Result[2];
    for (int p = 0; p < 2; p++) {
      Histogram all = new Histogram(3);
      long total = 0;
      for (int i = 0; i < threads; i++) {
        all.add(hs[p][i]);
        total += counts[p][i];
      }
      out[p] = new KvBench.Result(total / (time[p] / 1e9), all);
    }
    return out;
  }

  private static void work(State s, KvBench.Op[] ops, int w, Histogram[][] hs, long[][] counts) {
    Random r = new Random(1000 + w);
    try {
      while (!s.done) {
        int p = s.phase;
        if (p == PAUSE) {
          LockSupport.parkNanos(20_000);
          continue;
        }
        s.running.incrementAndGet();
        try {
          if (s.phase != p) {
            continue; // the slice ended meanwhile
          }
          long before = System.nanoTime();
          ops[p].run(r);
          long after = System.nanoTime();
          if (s.recording) {
            hs[p][w].recordValue(Math.max(0, after - before));
            counts[p][w]++;
          }
        } finally {
          s.running.decrementAndGet();
        }
      }
    } catch (Throwable e) {
      s.failure.compareAndSet(null, e);
    }
  }

  /** Runs contender {@code p} for one slice; returns its length up to the last op's end. */
  private static long runSlice(State s, int p, long slice) {
    long start = System.nanoTime();
    s.phase = p;
    LockSupport.parkNanos(slice);
    s.phase = PAUSE;
    while (s.running.get() > 0) {
      LockSupport.parkNanos(10_000);
    }
    return System.nanoTime() - start;
  }
}
