package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.apps.rsort.RecordFiles;
import io.ferrite.apps.rsort.RecordGenerator;
import io.ferrite.apps.rsort.RecordValidator;
import io.ferrite.apps.rsort.Records;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ferrite rsort --local} in this JVM (the coordinator and its cluster) with worker processes
 * of their own: a generated data set and a skewed one (the timed phases outgrow the prepared
 * buckets) sort and validate, and their output files are checked here independently; a worker that
 * fails is reported and no worker process outlives the command.
 */
@Tag("multiprocess")
class RSortMultiProcessTest extends CliCapture {
  @TempDir Path dir;

  @AfterEach
  void noWorkerOutlivesTheCommand() {
    List<ProcessHandle> alive =
        ProcessHandle.current().children().filter(ProcessHandle::isAlive).toList();
    alive.forEach(ProcessHandle::destroyForcibly);
    assertEquals(List.of(), alive, "worker processes still running after the command");
  }

  @Test
  void generatedRecordsAreSortedByTwoWorkerProcesses() throws Exception {
    Path output = dir.resolve("sorted");
    int code =
        run(
            "rsort",
            "--local",
            "--gen",
            "20MB",
            "--workers",
            "2",
            "--seed",
            "11",
            "--output",
            output.toString());
    assertEquals(0, code, out + "\n" + err);
    assertTrue(out.toString().contains("validated: SUCCESS"), out.toString());
    int n = (20 << 20) / Records.RECORD;
    ByteBuffer expected = ByteBuffer.allocateDirect(n * Records.RECORD);
    RecordGenerator.generate(11, 0, n, expected, 0);
    check(RecordValidator.summarize(expected, 0, n), output, 2);
  }

  @Test
  void aSkewedInputOutgrowsThePreparedBucketsAndStillSorts() throws Exception {
    // 30,000 records, 90% of them with keys in the first key range, many keys equal.
    Random random = new Random(3);
    int n = 30_000;
    ByteBuffer in = ByteBuffer.allocateDirect(n * Records.RECORD);
    for (int i = 0; i < n; i++) {
      int at = i * Records.RECORD;
      long hi = random.nextInt(10) < 9 ? random.nextInt(500) : random.nextLong();
      in.putLong(at, hi).putShort(at + 8, (short) random.nextInt(3)).putInt(at + 10, i);
    }
    Path input = Files.createDirectory(dir.resolve("in"));
    RecordFiles.write(input.resolve("p1"), in, 0, 12_345 * Records.RECORD);
    RecordFiles.write(
        input.resolve("p2"), in, 12_345 * Records.RECORD, (n - 12_345) * Records.RECORD);
    Path output = dir.resolve("sorted");
    int code =
        run(
            "rsort",
            "--local",
            "--input",
            input.toString(),
            "--workers",
            "2",
            "--output",
            output.toString(),
            "--quiet");
    assertEquals(0, code, out + "\n" + err);
    check(RecordValidator.summarize(in, 0, n), output, 2);
  }

  @Test
  void aFailingWorkerFailsTheSortAndEveryWorkerStops() throws Exception {
    Path notADirectory = Files.writeString(dir.resolve("file"), "x");
    int code =
        run(
            "rsort",
            "--local",
            "--gen",
            "1MB",
            "--workers",
            "2",
            "--output",
            notADirectory.resolve("sorted").toString(),
            "--quiet");
    assertEquals(1, code, out + "\n" + err);
    String e = err.toString();
    assertTrue(e.contains("phase 'validate' failed"), e);
    assertTrue(e.contains("failed in phase validate"), e);
  }

  /** The part files hold the input's records, in order (valsort's checks, made here). */
  private static void check(RecordValidator.Summary input, Path output, int parts)
      throws Exception {
    RecordValidator.Summary all = RecordValidator.Summary.EMPTY;
    for (int j = 0; j < parts; j++) {
      Path part = RecordFiles.part(output, j);
      byte[] bytes = Files.readAllBytes(part);
      ByteBuffer b = ByteBuffer.allocateDirect(Math.max(1, bytes.length)).put(bytes).flip();
      all = all.then(RecordValidator.summarize(b, 0, bytes.length / Records.RECORD));
    }
    assertEquals(List.of(), RecordValidator.problems(input, all));
  }
}
