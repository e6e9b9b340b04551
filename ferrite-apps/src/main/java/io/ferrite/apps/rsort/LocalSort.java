package io.ferrite.apps.rsort;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import org.agrona.BufferUtil;

/**
 * The single-JVM reference of {@code bench rsort}: the same records sorted in one JVM's memory with
 * the same kernel ({@link RecordSorter}: packed keys, {@link java.util.Arrays#parallelSort}, one
 * copy in key order), no store, no network, no second process. It runs in a JVM of its own started
 * like the workers (same limits, a fork-join pool as wide as the machine), generates or reads the
 * records (not timed), warms the code up, sorts once (timed), and checks the result like valsort.
 */
public final class LocalSort {
  private LocalSort() {}

  /**
   * What a local sort measured.
   *
   * @param records how many records
   * @param loadNanos generating or reading them
   * @param keysNanos extracting the packed keys
   * @param sortNanos {@code parallelSort} and tie resolution
   * @param permuteNanos copying the records in key order
   * @param totalNanos the sort: keys, sort and copy
   */
  public record Result(
      long records,
      long loadNanos,
      long keysNanos,
      long sortNanos,
      long permuteNanos,
      long totalNanos) {

    /** Writes this result as a properties file. */
    public void write(Path file) throws IOException {
      Properties p = new Properties();
      p.setProperty("records", Long.toString(records));
      p.setProperty("loadNanos", Long.toString(loadNanos));
      p.setProperty("keysNanos", Long.toString(keysNanos));
      p.setProperty("sortNanos", Long.toString(sortNanos));
      p.setProperty("permuteNanos", Long.toString(permuteNanos));
      p.setProperty("totalNanos", Long.toString(totalNanos));
      try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
        p.store(w, "ferrite rsort-local");
      }
    }

    public static Result read(Path file) throws IOException {
      Properties p = new Properties();
      try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
        p.load(r);
      }
      return new Result(
          Long.parseLong(p.getProperty("records")),
          Long.parseLong(p.getProperty("loadNanos")),
          Long.parseLong(p.getProperty("keysNanos")),
          Long.parseLong(p.getProperty("sortNanos")),
          Long.parseLong(p.getProperty("permuteNanos")),
          Long.parseLong(p.getProperty("totalNanos")));
    }
  }

  /** Generates ({@code input} null) or reads {@code records} records and sorts them. */
  public static Result run(long records, long seed, Path input) throws IOException {
    if (records < 1 || records > Records.MAX_BUFFER_RECORDS) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "records: "
              + records
              + " (expected: 1 to "
              + Records.MAX_BUFFER_RECORDS
              + ", one 2 GiB buffer)");
    }
    int n = (int) records;
    ByteBuffer a = ByteBuffer.allocateDirect(n * Records.RECORD);
    ByteBuffer b = ByteBuffer.allocateDirect(n * Records.RECORD);
    try {
      long t0 = System.nanoTime();
      if (input == null) {
        RecordGenerator.generate(seed, 0, n, a, 0);
      } else {
        List<RecordFiles.InputFile> files = RecordFiles.list(input);
        RecordFiles.read(files, 0, n, a, 0);
      }
      long loadNanos = System.nanoTime() - t0;
      RecordValidator.Summary in = RecordValidator.summarize(a, 0, n);
      int warm = Math.min(n, WorkerPhases.WARM_UP);
      for (int round = 0; round < 3; round++) {
        RecordSorter.sort(a, warm, b);
      }
      long t1 = System.nanoTime();
      RecordSorter.Timings t = RecordSorter.sort(a, n, b);
      long totalNanos = System.nanoTime() - t1;
      List<String> problems = RecordValidator.problems(in, RecordValidator.summarize(b, 0, n));
      if (!problems.isEmpty()) {
        throw new FerriteException(
            ErrorCode.INTERNAL, "the local sort is wrong: " + String.join("; ", problems));
      }
      return new Result(n, loadNanos, t.keysNanos(), t.sortNanos(), t.permuteNanos(), totalNanos);
    } finally {
      BufferUtil.free(a);
      BufferUtil.free(b);
    }
  }
}
