package io.ferrite.bench;

import java.time.Duration;

/**
 * The measuring loops every suite shares: a warm-up phase whose samples are thrown away (JIT,
 * caches, connection buffers), then a measured phase.
 *
 * <p>Latency is timed per operation with {@link System#nanoTime()} around one call, so every
 * latency, a ceiling's as much as a fabric's, includes the same ~20-40 ns of timer overhead: the
 * ratios compare like with like.
 */
public final class Measure {
  private Measure() {}

  /** One operation; {@code i} counts from 0 and lets the op vary its offset or buffer. */
  @FunctionalInterface
  public interface Op {
    void run(long i) throws Exception;
  }

  /**
   * Moves bytes for a while and returns how many it moved; {@code deadlineNanos} is a {@link
   * System#nanoTime()} value after which it must stop issuing work (and wait for what is in
   * flight).
   */
  @FunctionalInterface
  public interface Transfer {
    long runUntil(long deadlineNanos) throws Exception;
  }

  /**
   * How long each measurement runs.
   *
   * @param warmupIterations ops run and discarded before a latency measurement (at least; see
   *     {@code warmup})
   * @param iterations ops timed in a latency measurement
   * @param warmup time spent warming up before a bandwidth measurement, and the least time before a
   *     latency measurement
   * @param duration time a bandwidth measurement runs
   */
  public record Plan(int warmupIterations, int iterations, Duration warmup, Duration duration) {
    public Plan {
      if (warmupIterations < 0 || iterations < 1) {
        throw new IllegalArgumentException(
            "iterations: "
                + iterations
                + ", warm-up: "
                + warmupIterations
                + " (expected: >= 1 and >= 0)");
      }
      if (duration.isNegative() || duration.isZero() || warmup.isNegative()) {
        throw new IllegalArgumentException(
            "duration: " + duration + ", warm-up: " + warmup + " (expected: > 0 and >= 0)");
      }
    }

    /** Warm-up of a quarter of the measured amount. */
    public static Plan of(int iterations, Duration duration) {
      return new Plan(Math.max(iterations / 4, 10), iterations, duration.dividedBy(4), duration);
    }
  }

  /**
   * Runs {@code op} for the plan's warm-up — at least its warm-up iterations and at least its
   * warm-up time, so that a fast op still runs long enough for the JIT to compile the whole path —
   * then times each of its measured iterations.
   */
  public static LatencyRecorder latency(Plan plan, Op op) throws Exception {
    long i = 0;
    long warmupEnd = System.nanoTime() + plan.warmup().toNanos();
    while (i < plan.warmupIterations() || System.nanoTime() < warmupEnd) {
      op.run(i++);
    }
    LatencyRecorder rec = new LatencyRecorder();
    for (int n = 0; n < plan.iterations(); n++) {
      long t0 = System.nanoTime();
      op.run(i++);
      rec.record(System.nanoTime() - t0);
    }
    return rec;
  }

  /** Runs {@code transfer} for the warm-up, then for the duration; returns MiB/s. */
  public static double bandwidth(Plan plan, Transfer transfer) throws Exception {
    if (!plan.warmup().isZero()) {
      transfer.runUntil(System.nanoTime() + plan.warmup().toNanos());
    }
    long t0 = System.nanoTime();
    long bytes = transfer.runUntil(t0 + plan.duration().toNanos());
    long elapsed = System.nanoTime() - t0;
    return Sizes.mibPerSecond(bytes, elapsed);
  }

  /**
   * Adds the {@link LatencyRecorder.Statistic}s of {@code rec} as {@code <prefix>.<statistic>},
   * each beside {@code <referencePrefix>.<statistic>} when that prefix is non-null.
   */
  public static void addLatency(
      BenchReport report, String prefix, LatencyRecorder rec, String referencePrefix) {
    for (LatencyRecorder.Statistic s : LatencyRecorder.Statistic.values()) {
      String name = prefix + "." + s.label();
      if (referencePrefix == null) {
        report.add(BenchResult.of(name, rec.value(s), LatencyRecorder.UNIT, Better.LOWER));
      } else {
        BenchResult ref = report.require(referencePrefix + "." + s.label());
        report.add(
            BenchResult.against(name, rec.value(s), LatencyRecorder.UNIT, Better.LOWER, ref));
      }
    }
  }
}
