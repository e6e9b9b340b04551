package io.ferrite.bench;

import org.HdrHistogram.Histogram;

/**
 * Records latencies in nanoseconds into an HdrHistogram (3 significant digits, auto-resizing) and
 * reports the percentiles every suite prints: p50, p99 and p99.9. Every latency in Ferrite's
 * benchmarks is in {@value #UNIT}.
 *
 * <p>Confined to one thread.
 */
public final class LatencyRecorder {
  /** The one latency unit of every report. */
  public static final String UNIT = "ns";

  /** The statistics every latency measurement reports, in order, with their percentiles. */
  public enum Statistic {
    P50("p50", 50.0),
    P99("p99", 99.0),
    P999("p99.9", 99.9);

    private final String label;
    private final double percentile;

    Statistic(String label, double percentile) {
      this.label = label;
      this.percentile = percentile;
    }

    /** As used in result names: {@code p50}, {@code p99}, {@code p99.9}. */
    public String label() {
      return label;
    }

    public double percentile() {
      return percentile;
    }
  }

  private final Histogram histogram = new Histogram(3);

  /** Records one latency; a negative value (a clock going backwards) is recorded as 0. */
  public void record(long nanos) {
    histogram.recordValue(Math.max(0, nanos));
  }

  public long count() {
    return histogram.getTotalCount();
  }

  /** The value at {@code statistic}'s percentile, in ns. */
  public double value(Statistic statistic) {
    return histogram.getValueAtPercentile(statistic.percentile());
  }

  public double mean() {
    return histogram.getMean();
  }

  public void reset() {
    histogram.reset();
  }
}
