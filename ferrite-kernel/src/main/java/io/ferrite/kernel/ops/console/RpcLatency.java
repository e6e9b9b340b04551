package io.ferrite.kernel.ops.console;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.ValueAtPercentile;
import java.util.concurrent.TimeUnit;

/**
 * A process's RPC latency as its {@code ferrite.rpc.latency} timers (one per service and opcode)
 * tell it, merged into one: the count and total time summed (exact: two readings a second apart
 * give the interval's mean), the p50 weighted by each timer's count and the largest p99 (published
 * percentiles do not merge exactly; the largest p99 is an upper bound of the merged one). Each is
 * -1 when the process has no such timer, or no timer publishes that percentile.
 *
 * @param count RPCs timed since the process started
 * @param totalNanos their total time
 * @param p50Nanos median over the timers' recent window, -1 if unknown
 * @param p99Nanos 99th percentile over the timers' recent window, -1 if unknown
 */
public record RpcLatency(long count, long totalNanos, long p50Nanos, long p99Nanos) {
  /** The meter name the metrics of #17 time RPCs with. */
  public static final String TIMER = "ferrite.rpc.latency";

  /** No timer. */
  public static final RpcLatency NONE = new RpcLatency(0, 0, -1, -1);

  /**
   * Reads {@code registry}'s {@link #TIMER} timers, by name (they may not exist: a process built
   * without them, or none timed yet). Costs a histogram snapshot per timer: for a reading a second.
   */
  public static RpcLatency of(MeterRegistry registry) {
    long count = 0;
    long total = 0;
    double p50Weighted = 0;
    long p50Count = 0;
    long p99 = -1;
    for (Timer t : registry.find(TIMER).timers()) {
      long c = t.count();
      count += c;
      total += (long) t.totalTime(TimeUnit.NANOSECONDS);
      if (c == 0) {
        continue;
      }
      for (ValueAtPercentile v : t.takeSnapshot().percentileValues()) {
        long nanos = (long) v.value(TimeUnit.NANOSECONDS);
        if (v.percentile() == 0.5) {
          p50Weighted += (double) nanos * c;
          p50Count += c;
        } else if (v.percentile() == 0.99) {
          p99 = Math.max(p99, nanos);
        }
      }
    }
    long p50 = p50Count == 0 ? -1 : Math.round(p50Weighted / p50Count);
    return count == 0 && p99 < 0 ? NONE : new RpcLatency(count, total, p50, p99);
  }
}
