package io.ferrite.apps.rsort;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.nio.file.Path;
import java.time.Duration;

/**
 * One distributed sort (RSort, RStore §V-C): what to sort and how.
 *
 * @param records how many records (the generated count, or what the input files hold)
 * @param seed the data set to generate when {@code input} is null
 * @param input a record file or a directory of them (read as one sequence), or null to generate
 * @param workers worker processes, 1 to {@link #MAX_WORKERS}; also the number of key ranges
 * @param output where the workers write the sorted key ranges as {@code part-NNNNN} files, or null
 * @param prefix prepended to every namespace name of the sort
 * @param deleteOutput whether the {@code final_j} namespaces are deleted at the end
 * @param phaseTimeout the longest any phase may take before the sort fails
 */
public record RSortJob(
    long records,
    long seed,
    Path input,
    int workers,
    Path output,
    String prefix,
    boolean deleteOutput,
    Duration phaseTimeout) {

  /**
   * Most workers: each worker's area in the coordination region holds a row of the bucket table.
   */
  public static final int MAX_WORKERS = 64;

  public RSortJob {
    if (workers < 1 || workers > MAX_WORKERS) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "workers: " + workers + " (expected: 1 to " + MAX_WORKERS + ")");
    }
    if (records < 1) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "records: " + records + " (expected: at least 1)");
    }
    long share = (records + workers - 1) / workers;
    if (share > Records.MAX_BUFFER_RECORDS) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          records
              + " records on "
              + workers
              + " worker(s) is "
              + share
              + " records per worker (expected: at most "
              + Records.MAX_BUFFER_RECORDS
              + ", 2 GiB, one buffer; use more workers)");
    }
    prefix = prefix == null ? "" : prefix;
    if (phaseTimeout == null || phaseTimeout.isNegative() || phaseTimeout.isZero()) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "phase timeout: " + phaseTimeout + " (expected: > 0)");
    }
  }

  public long bytes() {
    return records * Records.RECORD;
  }

  /** The first record of worker {@code w}'s share of the input. */
  public long shareFirst(int w) {
    return records * w / workers;
  }

  /** How many records worker {@code w} loads and classifies. */
  public int shareCount(int w) {
    return (int) (records * (w + 1) / workers - shareFirst(w));
  }

  /** The coordinator's namespace: the barrier and every worker's area (see {@link RSortLayout}). */
  public String coordinatorNamespace() {
    return prefix + "coordinator";
  }

  /** Worker {@code i}'s input share. */
  public String inputNamespace(int i) {
    return prefix + "input_" + i;
  }

  /** Worker {@code i}'s records of key range {@code j} (§V-C: {@code worker_i_bucket_j}). */
  public String bucketNamespace(int i, int j) {
    return prefix + "worker_" + i + "_bucket_" + j;
  }

  /** The sorted records of key range {@code j} (§V-C: {@code final_j}). */
  public String finalNamespace(int j) {
    return prefix + "final_" + j;
  }
}
