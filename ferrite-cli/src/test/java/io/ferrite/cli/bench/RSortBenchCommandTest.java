package io.ferrite.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.cli.CliCapture;
import org.junit.jupiter.api.Test;

/** {@code ferrite bench rsort}: help and bad input (the run itself is measured, not tested). */
class RSortBenchCommandTest extends CliCapture {
  @Test
  void helpNamesTheFiguresTheirCeilingAndAnExample() {
    assertEquals(0, run("bench", "rsort", "--help"));
    String help = out.toString();
    assertTrue(help.contains("ceiling.local-sort.<size>.time"), help);
    assertTrue(help.contains("rsort.<size>.w<W>.time"), help);
    assertTrue(
        help.contains("ferrite bench rsort --size 1GiB --workers 2 --json rsort.json"), help);
    out.getBuffer().setLength(0);
    assertEquals(0, run("bench", "--help"));
    assertTrue(out.toString().contains("rsort"), out.toString());
  }

  @Test
  void badInputIsAUsageErrorThatSaysWhatWasExpected() {
    assertEquals(2, run("bench", "rsort", "--size", "10"));
    assertTrue(err.toString().contains("at least one 100-byte record"), err.toString());
    err.getBuffer().setLength(0);
    assertEquals(2, run("bench", "rsort", "--size", "huge"));
    assertTrue(err.toString().contains("size: 'huge'"), err.toString());
    err.getBuffer().setLength(0);
    assertEquals(2, run("bench", "rsort", "--workers", "0"));
    assertTrue(err.toString().contains("workers: 0 (expected: 1 to 64)"), err.toString());
  }
}
