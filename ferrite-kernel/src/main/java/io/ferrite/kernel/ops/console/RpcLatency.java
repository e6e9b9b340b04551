package io.ferrite.kernel.ops.console;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.ValueAtPercentile;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A process's RPC latency as its {@code ferrite.rpc.latency} timers (one per service and opcode)
 * tell it, merged into one: the count and total time summed (exact: two readings a second apart
 * give the interval's mean); as p50 and p99, the percentile of the timer the merged one falls in by
 * count (timers ranked by their own percentile, the first whose count brings the running sum to 50%
 * or 99% of the calls). Published percentiles do not merge exactly; this keeps a rare slow opcode
 * (a shard opened 4 times in 70,000 calls) from standing for the whole server, as the largest p99
 * or a count-weighted mean of the medians would. Each is -1 when the process has no such timer, or
 * no timer publishes that percentile.
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
    List<long[]> p50s = new ArrayList<>(); // {percentile nanos, the timer's count}
    List<long[]> p99s = new ArrayList<>();
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
          p50s.add(new long[] {nanos, c});
        } else if (v.percentile() == 0.99) {
          p99s.add(new long[] {nanos, c});
        }
      }
    }
    long p50 = byCount(p50s, 0.5);
    long p99 = byCount(p99s, 0.99);
    return count == 0 && p99 < 0 ? NONE : new RpcLatency(count, total, p50, p99);
  }

  /**
   * The {@code q} quantile of the merged timers, read as the value of the timer in which it falls:
   * timers ranked by their own {@code q} value, the first whose count brings the running sum to
   * {@code q} of all calls. -1 if there are none.
   */
  private static long byCount(List<long[]> values, double q) {
    long all = 0;
    for (long[] v : values) {
      all += v[1];
    }
    values.sort((x, y) -> Long.compare(x[0], y[0]));
    long seen = 0;
    for (long[] v : values) {
      seen += v[1];
      if (seen >= q * all) {
        return v[0];
      }
    }
    return -1;
  }
}
