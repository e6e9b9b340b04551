package io.ferrite.bench.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.apps.carafe.CarafeGraph;
import io.ferrite.apps.carafe.Csr;
import io.ferrite.apps.carafe.Reference;
import io.ferrite.apps.carafe.RmatGenerator;
import io.ferrite.apps.carafe.pregel.Partitioner;
import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.PeerJars;
import io.ferrite.fabric.FerriteException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bench graph} on the tiny preset with the workers as threads: every row is there beside its
 * ceiling, and the answer checks that make a wrong run fail do catch a wrong answer.
 */
class GraphBenchTest {
  @TempDir Path dir;

  /**
   * The options of a run of the tiny preset: 1 and 2 workers, one server over shm, no GraphX, the
   * default vertex weight; progress into {@code lines} (none if null).
   */
  static GraphBench.Options tiny(
      long seed, int pairs, int iterations, java.io.ByteArrayOutputStream lines, int rounds) {
    return new GraphBench.Options(
        "tiny",
        seed,
        pairs,
        iterations,
        List.of(1, 2),
        1,
        "shm",
        null,
        1L << 30,
        0,
        null,
        lines == null
            ? null
            : new java.io.PrintStream(lines, true, java.nio.charset.StandardCharsets.UTF_8),
        Partitioner.DEFAULT_VERTEX_WEIGHT,
        rounds);
  }

  @Test
  void aQuickRunReportsEveryRowBesideItsReference() throws Exception {
    java.io.ByteArrayOutputStream lines = new java.io.ByteArrayOutputStream();
    GraphBench.Options o = tiny(3, 12, 5, lines, 1);
    BenchReport r = GraphBench.run(o);
    // Each worker's share and own time, the partitioner's weights are fitted to; the shares add up.
    String progress = lines.toString(java.nio.charset.StandardCharsets.UTF_8);
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile(
                "worker (\\d): (\\d+) vertices, (\\d+) edges, [0-9.]+ ms a superstep of its own")
            .matcher(progress);
    long[] vertices = new long[3];
    long[] edges = new long[3];
    int workerLines = 0;
    while (m.find()) {
      int w = workerLines == 0 ? 1 : 2; // the 1-worker run's line, then the 2-worker run's two
      vertices[w] += Long.parseLong(m.group(2));
      edges[w] += Long.parseLong(m.group(3));
      workerLines++;
    }
    assertEquals(3, workerLines, progress);
    Csr g = RmatGenerator.preset("tiny", 3).generate(CarafeGraph.Progress.NONE);
    for (int w = 1; w <= 2; w++) {
      assertEquals(g.vertices(), vertices[w], progress);
      assertEquals(g.edges(), edges[w], progress);
    }
    Csr csr = RmatGenerator.preset("tiny", 3).generate(CarafeGraph.Progress.NONE);
    assertEquals(csr.edges(), r.require("graph.edges").value());
    assertEquals(csr.vertices(), r.require("graph.vertices").value());
    against(r, "carafe.import.edges-per-s", "ceiling.parse.edges-per-s");
    against(r, "carafe.dijkstra.explored-per-s", "ceiling.dijkstra.csr.explored-per-s");
    against(
        r, "carafe.pagerank.w1.ms-per-superstep", "ceiling.reference.pagerank.ms-per-iteration");
    against(
        r, "carafe.pagerank.w2.ms-per-superstep", "ceiling.reference.pagerank.ms-per-iteration");
    against(r, "carafe.pagerank.w2.ms-per-superstep.vs-w1", "carafe.pagerank.w1.ms-per-superstep");
    against(
        r,
        "carafe.pagerank.w2.ms-per-superstep.median.vs-w1",
        "carafe.pagerank.w1.ms-per-superstep.median");
    assertEquals(2.5, PageRankRuns.median(new long[] {4, 1, 2, 3}));
    assertEquals(3.0, PageRankRuns.median(new long[] {9, 1, 3}));
    assertNull(r.get("graphx.pagerank.time"), "no GraphX without its jar");
    assertTrue(r.table().contains("carafe.pagerank.w2.time"), r.table());
    assertNull(r.get("carafe.pagerank.rounds"), "one round: no round rows");
    assertNull(r.get("carafe.pagerank.round1.w2.x-w1"), "one round: no round rows");
  }

  @Test
  void roundsInterleaveTheCountsAbbaAndTakeEachRatioWithinItsRound() throws Exception {
    java.io.ByteArrayOutputStream lines = new java.io.ByteArrayOutputStream();
    GraphBench.Options o = tiny(5, 2, 4, lines, 3);
    BenchReport r = GraphBench.run(o);
    String progress = lines.toString(java.nio.charset.StandardCharsets.UTF_8);
    // The jobs ran 1, 2 | 2, 1 | 1, 2: the order of the "iterations with W worker" lines.
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile(
                "iterations with (\\d) worker thread\\(s\\) \\(round (\\d) of 3\\)")
            .matcher(progress);
    StringBuilder order = new StringBuilder();
    while (m.find()) {
      order.append(m.group(2)).append(':').append(m.group(1)).append(' ');
    }
    assertEquals("1:1 1:2 2:2 2:1 3:1 3:2 ", order.toString(), progress);
    assertEquals(3, r.require("carafe.pagerank.rounds").value());
    double[] x = new double[3];
    double[] w1 = new double[3];
    for (int round = 1; round <= 3; round++) {
      String p = "carafe.pagerank.round" + round + ".";
      assertTrue(
          r.require("ceiling.reference.pagerank.round" + round + ".ms-per-iteration").value() > 0);
      w1[round - 1] = r.require(p + "w1.ms-per-superstep").value();
      double w2 = r.require(p + "w2.ms-per-superstep").value();
      x[round - 1] = r.require(p + "w2.x-w1").value();
      assertEquals(w2 / w1[round - 1], x[round - 1], 1e-12, p);
      assertEquals(
          r.require(p + "w2.ms-per-superstep.median").value()
              / r.require(p + "w1.ms-per-superstep.median").value(),
          r.require(p + "w2.x-w1.by-medians").value(),
          1e-12,
          p);
    }
    assertEquals(
        PageRankRuns.median(x), r.require("carafe.pagerank.w2.x-w1.rounds.median").value());
    assertEquals(
        PageRankRuns.mean(x), r.require("carafe.pagerank.w2.x-w1.rounds.mean").value(), 1e-12);
    assertTrue(r.require("carafe.pagerank.w2.x-w1.rounds.by-medians.median").value() > 0);
    // The rows every page and earlier report reads are there, now medians over the rounds.
    assertEquals(PageRankRuns.median(w1), r.require("carafe.pagerank.w1.ms-per-superstep").value());
    against(r, "carafe.pagerank.w2.ms-per-superstep.vs-w1", "carafe.pagerank.w1.ms-per-superstep");
    against(
        r, "carafe.pagerank.w1.ms-per-superstep", "ceiling.reference.pagerank.ms-per-iteration");
  }

  @Test
  void theOrderAlternatesAndTheMedianAndMeanAreThePlainOnes() {
    assertEquals("[0, 1, 2]", java.util.Arrays.toString(PageRankRuns.order(3, 0)));
    assertEquals("[2, 1, 0]", java.util.Arrays.toString(PageRankRuns.order(3, 1)));
    assertEquals("[0, 1, 2]", java.util.Arrays.toString(PageRankRuns.order(3, 2)));
    assertEquals(2.5, PageRankRuns.median(new double[] {4, 1, 2, 3}));
    assertEquals(3.0, PageRankRuns.median(new double[] {9, 1, 3}));
    assertEquals(13.0 / 3, PageRankRuns.mean(new double[] {9, 1, 3}), 1e-12);
  }

  @Test
  void roundsOutOfRangeAreRefusedNamingTheLimit() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> tiny(1, 1, 1, null, 0));
    assertEquals("rounds: 0 (expected: 1 to 100)", e.getMessage());
  }

  private static void against(BenchReport r, String name, String reference) {
    BenchResult b = r.require(name);
    assertEquals(reference, b.reference(), name);
    assertTrue(b.value() > 0 && b.ratio() > 0, name + ": " + b);
  }

  @Test
  void aWrongRankFailsTheCheck() {
    double[] want = {1.0, 0.5, 2.0};
    assertNull(GraphBench.rankMismatch(new double[] {1.0, 0.5 * (1 + 1e-12), 2.0}, want));
    assertEquals(
        "vertex 1: 0.50000001, reference 0.5",
        GraphBench.rankMismatch(new double[] {1.0, 0.50000001, 2.0}, want));
    assertNotNull(GraphBench.rankMismatch(new double[] {1.0, Double.NaN, 2.0}, want));
    assertNotNull(GraphBench.rankMismatch(new double[] {1.0, 0.5}, want));
  }

  @Test
  void graphxRanksAreMatchedByFileId() {
    Csr csr = RmatGenerator.preset("tiny", 1).generate(CarafeGraph.Progress.NONE);
    double[] want = Reference.pageRank(csr, 3);
    List<String> lines = new ArrayList<>();
    for (int v = 0; v < csr.vertices(); v++) {
      lines.add(csr.externalIds()[v] + " " + want[v]);
    }
    assertNull(PageRankRuns.graphxMismatch(csr, want, lines));
    List<String> swapped = new ArrayList<>(lines);
    swapped.set(0, lines.get(1));
    swapped.set(1, lines.get(0));
    assertTrue(PageRankRuns.graphxMismatch(csr, want, swapped).startsWith("line 1 is vertex"));
    assertNotNull(PageRankRuns.graphxMismatch(csr, want, lines.subList(1, lines.size())));
  }

  @Test
  void thePeerIsFoundInTheCheckoutOrRefusedWithHowToBuildIt() throws Exception {
    Path root = Files.createDirectories(dir.resolve("checkout"));
    Path cliLib = Files.createDirectories(root.resolve("ferrite-cli/target/lib"));
    assertNull(PeerJars.checkoutRoot(cliLib, GraphXPeer.MODULE));
    Path lib = Files.createDirectories(root.resolve("ferrite-graphx-peer/target/lib"));
    assertEquals(
        root, PeerJars.checkoutRoot(cliLib.resolve("ferrite-bench-1.jar"), GraphXPeer.MODULE));
    assertNull(PeerJars.jarIn(lib, GraphXPeer.MODULE));
    Path jar = Files.writeString(lib.resolve("ferrite-graphx-peer-0.1.0-SNAPSHOT.jar"), "");
    Files.writeString(lib.resolve("spark-core_2.12-3.5.9.jar"), "");
    assertEquals(jar, PeerJars.jarIn(lib, GraphXPeer.MODULE));
    // This checkout: built or not, the answer is the jar or a message that says how to build it.
    try {
      assertTrue(GraphXPeer.find().getFileName().toString().startsWith("ferrite-graphx-peer-"));
    } catch (FerriteException e) {
      assertTrue(e.getMessage().contains("the GraphX peer is not built"), e.getMessage());
      assertTrue(e.getMessage().contains("-pl ferrite-graphx-peer -am package"), e.getMessage());
    }
  }

  @Test
  void thePeersResultIsRead() {
    GraphXPeer.Result r =
        GraphXPeer.parse(
            "{\"system\":\"graphx\",\"spark\":\"3.5.9\",\"cores\":2,\"partitions\":4,"
                + "\"iterations\":20,\"vertices\":300,\"edges\":2002,\"contextNanos\":11,"
                + "\"loadNanos\":22,\"pageRankNanos\":33}");
    assertEquals(new GraphXPeer.Result(2, 4, 20, 300, 2002, 11, 22, 33), r);
    assertThrows(IllegalStateException.class, () -> GraphXPeer.parse("{\"cores\":2}"));
  }
}
