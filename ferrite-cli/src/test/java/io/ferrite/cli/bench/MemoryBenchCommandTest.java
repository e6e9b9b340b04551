package io.ferrite.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.cli.CliCapture;
import org.junit.jupiter.api.Test;

/** {@code ferrite bench memory}: help and bad input (the run itself is measured, not tested). */
class MemoryBenchCommandTest extends CliCapture {
  @Test
  void helpNamesTheFiguresTheirCeilingsAndAnExample() {
    assertEquals(0, run("bench", "memory", "--help"));
    String help = out.toString();
    assertTrue(help.contains("memory.{reserve,alloc,map}.<size>.cold"), help);
    assertTrue(help.contains("ceiling.allocate.<size>"), help);
    assertTrue(help.contains("ferrite bench memory --quick"), help);
    out.getBuffer().setLength(0);
    assertEquals(0, run("bench", "--help"));
    assertTrue(out.toString().contains("memory"), out.toString());
  }

  @Test
  void badInputIsAUsageErrorThatSaysWhatWasExpected() {
    assertEquals(2, run("bench", "memory", "--fabrics", "carrier-pigeon"));
    assertTrue(err.toString().contains("carrier-pigeon (expected: shm or tcp)"), err.toString());
    err.getBuffer().setLength(0);
    assertEquals(2, run("bench", "memory", "--max-size", "10"));
    assertTrue(err.toString().contains("(expected: >= 67108864)"), err.toString());
    err.getBuffer().setLength(0);
    assertEquals(2, run("bench", "memory", "--servers", "0"));
    assertTrue(err.toString().contains("servers: 0"), err.toString());
  }
}
