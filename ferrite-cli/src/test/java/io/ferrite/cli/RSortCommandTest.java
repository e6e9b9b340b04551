package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ferrite rsort}: help, and bad input refused up front (nothing is started) with a reason.
 */
class RSortCommandTest extends CliCapture {
  @TempDir Path dir;

  @Test
  void helpExplainsThePhasesAndGivesExamples() {
    assertEquals(0, run("rsort", "--help"));
    String help = out.toString();
    assertTrue(help.contains("worker_i_bucket_j"), help);
    assertTrue(help.contains("Examples:"), help);
    assertTrue(help.contains("ferrite rsort --local --gen 1GiB --workers 2"), help);
  }

  @Test
  void aBadSizeStringIsAUsageError() {
    assertEquals(2, run("rsort", "--local", "--gen", "lots"));
    assertTrue(err.toString().contains("size: 'lots'"), err.toString());
    err.getBuffer().setLength(0);
    assertEquals(2, run("rsort", "--local", "--gen", "50"));
    assertTrue(err.toString().contains("less than one 100-byte record"), err.toString());
  }

  @Test
  void fewerThanOneWorkerIsAUsageError() {
    assertEquals(2, run("rsort", "--local", "--gen", "1MB", "--workers", "0"));
    assertTrue(err.toString().contains("--workers: 0 (expected: 1 to 64)"), err.toString());
    err.getBuffer().setLength(0);
    assertEquals(2, run("rsort", "--local", "--gen", "1MB", "--workers", "-3"));
    assertTrue(err.toString().contains("--workers: -3"), err.toString());
  }

  @Test
  void aMissingInputIsAnError() {
    assertEquals(1, run("rsort", "--local", "--input", dir.resolve("nope").toString()));
    assertTrue(err.toString().contains("no such file or directory"), err.toString());
    err.getBuffer().setLength(0);
    assertEquals(2, run("rsort", "--local"));
    assertTrue(err.toString().contains("--gen"), err.toString());
  }

  @Test
  void aTruncatedRecordFileIsAnError() throws Exception {
    Files.write(dir.resolve("a"), new byte[10 * 100]);
    Files.write(dir.resolve("b"), new byte[7 * 100 + 99]);
    assertEquals(1, run("rsort", "--local", "--input", dir.toString()));
    String e = err.toString();
    assertTrue(e.contains("b: 799 B is not a multiple of the 100-byte record"), e);
    assertTrue(e.contains("99 B of a truncated one"), e);
  }
}
