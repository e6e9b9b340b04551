package io.ferrite.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.cli.CliCapture;
import org.junit.jupiter.api.Test;

/**
 * {@code ferrite bench spark}: its help and its usage errors (the run itself is the child's, tested
 * in ferrite-spark-bench by SparkBenchTest).
 */
class SparkBenchCommandTest extends CliCapture {
  @Test
  void helpNamesTheFiguresTheTargetsAndTheMemory() {
    assertEquals(0, run("bench", "spark", "--help"));
    String help = out.toString();
    assertTrue(help.contains("sortByKey.<size>.*"), help);
    assertTrue(help.contains("broadcast.<size>.x<tasks>"), help);
    assertTrue(help.contains("Memory (defaults, --size 2g)"), help);
    assertTrue(help.contains("ferrite bench spark --json spark.json"), help);
    out.getBuffer().setLength(0);
    assertEquals(0, run("bench", "--help"));
    assertTrue(out.toString().contains("spark"), out.toString());
  }

  @Test
  void badInputIsAUsageErrorThatSaysWhatWasExpected() {
    assertEquals(2, run("bench", "spark", "--reps", "0"));
    assertTrue(err.toString().contains("--reps: 0 (expected: 1 to 20)"), err.toString());
    err.getBuffer().setLength(0);
    assertEquals(2, run("bench", "spark", "--size", "1k"));
    assertTrue(err.toString().contains("--size: 1024 (expected: >= 1 MiB)"), err.toString());
    err.getBuffer().setLength(0);
    assertEquals(2, run("bench", "spark", "--executors", "17"));
    assertTrue(err.toString().contains("--executors: 17 (expected: 1 to 16)"), err.toString());
  }
}
