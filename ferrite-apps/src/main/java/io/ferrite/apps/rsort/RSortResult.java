package io.ferrite.apps.rsort;

import io.ferrite.kernel.proto.Sizes;
import java.util.List;
import java.util.Locale;

/**
 * What a sort measured and found.
 *
 * @param job the sort
 * @param input count and checksum of the input, as the workers loaded it
 * @param output the valsort summary of {@code final_0 .. final_(W-1)} read back in key order
 * @param problems what is wrong with the output (empty: sorted, nothing lost or changed)
 * @param phaseNanos wall time of each phase at the coordinator, indexed by phase number
 * @param sortNanos the sort time: start of classification to the end of the last worker's sort
 * @param workerTimings per worker, its own timings ({@link RSortLayout#T_LOAD} and on)
 */
public record RSortResult(
    RSortJob job,
    RecordValidator.Summary input,
    RecordValidator.Summary output,
    List<String> problems,
    long[] phaseNanos,
    long sortNanos,
    long[][] workerTimings) {

  public boolean valid() {
    return problems.isEmpty();
  }

  /** MiB of input sorted per second of sort time. */
  public double mibPerSecond() {
    return job.bytes() / (double) (1 << 20) / (sortNanos / 1e9);
  }

  /** The largest value of timing {@code slot} over the workers, in ns. */
  public long slowest(int slot) {
    long max = 0;
    for (long[] t : workerTimings) {
      max = Math.max(max, t[slot]);
    }
    return max;
  }

  /** A human-readable summary: sizes, phase times, throughput, per-worker steps, validation. */
  public String describe() {
    StringBuilder sb = new StringBuilder();
    String nl = System.lineSeparator();
    sb.append(
            String.format(
                Locale.ROOT,
                "rsort: %d records (%s) on %d workers%s",
                job.records(),
                Sizes.format(job.bytes()),
                job.workers(),
                job.input() == null
                    ? ", generated with seed " + job.seed()
                    : ", from " + job.input()))
        .append(nl);
    line(sb, "start workers", phaseNanos[RSortWorker.READY]);
    line(
        sb,
        job.input() == null ? "generate (load)" : "read input (load)",
        phaseNanos[RSortWorker.LOAD]);
    line(sb, "prepare (map buckets)", phaseNanos[RSortWorker.PREPARE]);
    line(sb, "classify (phase one)", phaseNanos[RSortWorker.CLASSIFY]);
    line(sb, "sort (phase two)", phaseNanos[RSortWorker.SORT]);
    sb.append(
            String.format(
                Locale.ROOT,
                "  %-24s %9.3f s   %.0f MiB/s, %.0f records/s",
                "sort time",
                sortNanos / 1e9,
                mibPerSecond(),
                job.records() / (sortNanos / 1e9)))
        .append(nl);
    line(sb, "validate", phaseNanos[RSortWorker.VALIDATE]);
    line(sb, "cleanup", phaseNanos[RSortWorker.CLEANUP]);
    sb.append("  slowest worker, per step (s):").append(nl);
    sb.append(
            String.format(
                Locale.ROOT,
                "    phase one: read input + count %.3f, scatter + write buckets %.3f",
                slowest(RSortLayout.T_READ_INPUT) / 1e9,
                slowest(RSortLayout.T_SCATTER) / 1e9))
        .append(nl);
    sb.append(
            String.format(
                Locale.ROOT,
                "    phase two: read buckets + keys %.3f, parallelSort %.3f, permute + write final"
                    + " %.3f",
                slowest(RSortLayout.T_READ_BUCKETS) / 1e9,
                slowest(RSortLayout.T_SORT) / 1e9,
                slowest(RSortLayout.T_PERMUTE) / 1e9))
        .append(nl);
    sb.append("  input:  ").append(input.records()).append(" records, checksum ");
    sb.append(String.format(Locale.ROOT, "%016x", input.checksum())).append(nl);
    sb.append("  output: ").append(output.describe()).append(nl);
    if (valid()) {
      sb.append("validated: SUCCESS - all records in order, count and checksum equal to the input");
    } else {
      sb.append("validation FAILED: ").append(String.join("; ", problems));
    }
    return sb.append(nl).toString();
  }

  private static void line(StringBuilder sb, String what, long nanos) {
    sb.append(String.format(Locale.ROOT, "  %-24s %9.3f s", what, nanos / 1e9))
        .append(System.lineSeparator());
  }
}
