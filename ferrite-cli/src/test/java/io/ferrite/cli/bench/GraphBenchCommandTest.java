package io.ferrite.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.cli.CliCapture;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ferrite bench graph}: help, bad input, and a tiny run with the workers as threads whose
 * JSON has the rows and their references.
 */
class GraphBenchCommandTest extends CliCapture {
  @TempDir Path dir;

  @Test
  void helpNamesTheFiguresTheirReferencesAndTargets() {
    assertEquals(0, run("bench", "graph", "--help"));
    String help = out.toString();
    assertTrue(help.contains("carafe.import.edges-per-s"), help);
    assertTrue(help.contains("carafe.pagerank.w2.time.vs-graphx"), help);
    assertTrue(help.contains("ferrite bench graph --vs graphx --json graph.json"), help);
    assertTrue(help.contains("--rounds"), help);
    assertTrue(help.contains("carafe.pagerank.w<W>.x-w1.rounds.{median,mean}"), help);
    out.getBuffer().setLength(0);
    assertEquals(0, run("bench", "--help"));
    assertTrue(out.toString().contains("graph"), out.toString());
  }

  @Test
  void badInputIsAUsageErrorThatSaysWhatWasExpected() {
    assertEquals(2, run("bench", "graph", "--vs", "giraph"));
    assertTrue(
        err.toString().contains("--vs: unknown peer giraph (expected: graphx)"), err.toString());
    err.getBuffer().setLength(0);
    assertEquals(2, run("bench", "graph", "--workers", "1,0"));
    assertTrue(err.toString().contains("workers: 0 (expected: 1 to 64)"), err.toString());
    err.getBuffer().setLength(0);
    assertEquals(2, run("bench", "graph", "--pairs", "0"));
    assertTrue(err.toString().contains("pairs: 0"), err.toString());
    err.getBuffer().setLength(0);
    assertEquals(2, run("bench", "graph", "--vertex-weight", "-1"));
    assertTrue(err.toString().contains("vertex weight: -1 (expected: >= 0)"), err.toString());
    err.getBuffer().setLength(0);
    assertEquals(2, run("bench", "graph", "--rounds", "0"));
    assertTrue(err.toString().contains("rounds: 0 (expected: 1 to 100)"), err.toString());
  }

  @Test
  void aTinyRunWritesEveryRowToJson() throws Exception {
    Path json = dir.resolve("graph.json");
    assertEquals(
        0,
        run(
            "bench",
            "graph",
            "--quick",
            "--quiet",
            "--preset",
            "tiny",
            "--in-process",
            "--workers",
            "1,2",
            "--pairs",
            "5",
            "--servers",
            "1",
            "--rounds",
            "2",
            "--json",
            json.toString()),
        err.toString());
    String j = Files.readString(json, StandardCharsets.UTF_8);
    assertTrue(j.contains("\"suite\": \"graph\""), j);
    assertTrue(j.contains("\"carafe.dijkstra.explored-per-s\""), j);
    assertTrue(j.contains("\"reference\": \"carafe.pagerank.w1.ms-per-superstep\""), j);
    assertTrue(j.contains("\"carafe.pagerank.round2.w2.x-w1\""), j);
    assertTrue(j.contains("\"carafe.pagerank.w2.x-w1.rounds.median\""), j);
    assertTrue(out.toString().contains("carafe.import.edges-per-s"), out.toString());
  }
}
