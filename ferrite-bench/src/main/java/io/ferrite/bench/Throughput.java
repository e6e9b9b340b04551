package io.ferrite.bench;

import io.ferrite.fabric.NamedThreadFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Operations per second of {@code threads} threads, each repeating its own step for the plan's
 * warm-up and then for its duration. A step may complete several operations (a batch), and says how
 * many. A fabric's throughput and the raw-socket ceiling it is compared with are driven by this
 * same loop, with the same threads.
 */
public final class Throughput {
  private Throughput() {}

  /** One step of one thread: does some operations and returns how many it completed. */
  @FunctionalInterface
  public interface Step {
    int run(long i) throws Exception;
  }

  /** Makes thread {@code t}'s step (its own buffers, connection, ...) on that thread. */
  @FunctionalInterface
  public interface Steps {
    Step forThread(int t) throws Exception;
  }

  /**
   * Runs {@code threads} threads of {@code steps} together: each makes its step and runs it once,
   * waits for the others, warms up for {@code plan.warmup()}, then runs for {@code plan.duration()}
   * and to the end of the step under way. Returns the operations of the steps that ended after the
   * warm-up, per second from the end of the warm-up to the last thread's last step (so a step
   * longer than the whole window still counts, over the time it really took).
   */
  public static double opsPerSecond(Measure.Plan plan, int threads, Steps steps, String name)
      throws Exception {
    NamedThreadFactory tf = new NamedThreadFactory("bench-" + name, true);
    long[] counts = new long[threads];
    long[] stops = new long[threads];
    long[] windows = new long[2];
    AtomicReference<Throwable> failure = new AtomicReference<>();
    // The last thread to arrive fixes the common timeline, so setup never eats measured time.
    CyclicBarrier start =
        new CyclicBarrier(
            threads,
            () -> {
              long now = System.nanoTime();
              windows[0] = now + plan.warmup().toNanos();
              windows[1] = windows[0] + plan.duration().toNanos();
            });
    List<Thread> ts = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int w = t;
      ts.add(
          tf.newThread(
              () -> {
                boolean started = false;
                try {
                  Step step = steps.forThread(w);
                  // One step before the common start: connections and threads at the far end are
                  // up, and a first-time cost is paid outside the warm-up.
                  step.run(0);
                  started = true;
                  start.await();
                  long measureFrom = windows[0];
                  long end = windows[1];
                  long i = 1;
                  long n = 0;
                  long now = System.nanoTime();
                  while (now < end) {
                    int done = step.run(i++);
                    now = System.nanoTime();
                    if (now >= measureFrom) {
                      n += done;
                    }
                  }
                  counts[w] = n;
                  stops[w] = now;
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                  if (!started) {
                    // Let the others start and end; the failure is reported after they did.
                    awaitQuietly(start);
                  }
                }
              }));
    }
    for (Thread t : ts) {
      t.start();
    }
    for (Thread t : ts) {
      t.join();
    }
    if (failure.get() != null) {
      throw new IllegalStateException("a " + name + " thread failed", failure.get());
    }
    long total = 0;
    long stop = windows[1];
    for (int t = 0; t < threads; t++) {
      total += counts[t];
      stop = Math.max(stop, stops[t]);
    }
    return total / ((stop - windows[0]) / 1e9);
  }

  private static void awaitQuietly(CyclicBarrier barrier) {
    try {
      barrier.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (BrokenBarrierException e) {
      // Another thread broke it: nobody waits for this one.
    }
  }
}
