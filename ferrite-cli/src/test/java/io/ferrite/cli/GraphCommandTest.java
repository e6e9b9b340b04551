package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.apps.carafe.CarafeGraph;
import io.ferrite.apps.carafe.Csr;
import io.ferrite.apps.carafe.Reference;
import io.ferrite.apps.carafe.RmatGenerator;
import io.ferrite.apps.worker.LocalCluster;
import io.ferrite.kernel.config.ClusterFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ferrite graph} against a cluster in this JVM (workers as threads: {@code --in-process}):
 * what each subcommand prints is checked against {@link Reference} on the same generated graph, and
 * bad input is an {@code error: CODE: message} line.
 */
class GraphCommandTest extends CliCapture {
  @TempDir Path dir;
  LocalCluster cluster;
  String clusterFile;

  @BeforeEach
  void start() throws Exception {
    cluster = LocalCluster.start(1, 64L << 20, "auto");
    Path file = dir.resolve("cluster");
    new ClusterFile(
            cluster.access().uri(), cluster.access().clusterId(), cluster.access().secretFile())
        .write(file);
    clusterFile = file.toString();
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  private int graph(String... args) {
    String[] all = Arrays.copyOf(args, args.length + 2);
    all[args.length] = "--cluster-file";
    all[args.length + 1] = clusterFile;
    String[] cmd = new String[all.length + 1];
    cmd[0] = "graph";
    System.arraycopy(all, 0, cmd, 1, all.length);
    return run(cmd);
  }

  @Test
  void generateWritesAFileThatImportsToTheSameGraph() {
    Path edges = dir.resolve("tiny.txt");
    assertEquals(0, graph("generate", "t", "--preset", "tiny", "--out", edges.toString()), err());
    assertEquals(0, graph("import", "t2", edges.toString()), err());
    Csr csr = RmatGenerator.preset("tiny", 1).generate(CarafeGraph.Progress.NONE);
    assertTrue(
        out.toString().contains("graph t: " + csr.vertices() + " vertices, " + csr.edges()),
        out.toString());
    assertTrue(
        out.toString().contains("graph t2: " + csr.vertices() + " vertices, " + csr.edges()),
        out.toString());
    // Progress per import phase on stderr.
    assertTrue(err().contains("] read 100% "), err());
    assertTrue(err().contains("] sort 100% "), err());
    assertTrue(err().contains("] edges 100% "), err());
    out.getBuffer().setLength(0);
    assertEquals(0, graph("stat", "t2"), err());
    assertTrue(out.toString().contains("vertices: " + csr.vertices() + "\n"), out.toString());
    assertTrue(out.toString().contains("directed: true"), out.toString());
    assertEquals(0, graph("delete", "t2"), err());
    assertEquals(1, graph("delete", "t2"));
    assertTrue(err().contains("error: NOT_FOUND: no graph t2"), err());
  }

  @Test
  void pagerankPrintsTheReferencesHighestRanks() {
    assertEquals(0, graph("generate", "pr", "--preset", "tiny", "-q"), err());
    out.getBuffer().setLength(0);
    assertEquals(
        0,
        graph(
            "pagerank", "pr", "--iterations", "7", "--workers", "2", "--in-process", "--top", "3"),
        err());
    Csr csr = RmatGenerator.preset("tiny", 1).generate(CarafeGraph.Progress.NONE);
    double[] ranks = Reference.pageRank(csr, 7);
    Integer[] order = new Integer[ranks.length];
    for (int v = 0; v < order.length; v++) {
      order[v] = v;
    }
    Arrays.sort(order, (a, b) -> Double.compare(ranks[b], ranks[a]));
    String o = out.toString();
    assertTrue(o.contains("9 supersteps with 2 worker threads"), o);
    for (int i = 0; i < 3; i++) {
      String row =
          String.format(
              Locale.ROOT, "%4d  %d  %.6f%n", i + 1, csr.externalIds()[order[i]], ranks[order[i]]);
      assertTrue(o.contains(row), "expected row '" + row + "' in:\n" + o);
    }
  }

  @Test
  void componentsCountsTheReferencesComponents() {
    assertEquals(0, graph("generate", "cc", "--preset", "tiny", "--undirected", "-q"), err());
    out.getBuffer().setLength(0);
    assertEquals(0, graph("components", "cc", "--workers", "3", "--in-process"), err());
    Csr csr = RmatGenerator.preset("tiny", 1).asUndirected().generate(CarafeGraph.Progress.NONE);
    Set<Long> labels = new HashSet<>();
    for (long l : Reference.components(csr)) {
      labels.add(l);
    }
    assertTrue(out.toString().contains("components: " + labels.size() + "\n"), out.toString());
    // A directed graph is refused with the engine's reason.
    assertEquals(0, graph("generate", "d", "--preset", "tiny", "-q"), err());
    assertEquals(1, graph("components", "d", "--in-process"));
    assertTrue(err().contains("error: INVALID_ARGUMENT: "), err());
  }

  @Test
  void ssspPrintsTheReferencesDistanceAndAPathInFileIds() {
    assertEquals(0, graph("generate", "sp", "--preset", "small", "-q"), err());
    Csr csr = RmatGenerator.preset("small", 1).generate(CarafeGraph.Progress.NONE);
    int checked = 0;
    boolean unreachableSeen = false;
    for (int i = 0; i < 40 && (checked < 3 || !unreachableSeen); i++) {
      int s = (i * 7919) % csr.vertices();
      int d = (i * 104729 + 13) % csr.vertices();
      double want = Reference.dijkstra(csr, s, d);
      if (Double.isInfinite(want) ? unreachableSeen : checked >= 3) {
        continue;
      }
      out.getBuffer().setLength(0);
      long from = csr.externalIds()[s];
      long to = csr.externalIds()[d];
      assertEquals(
          0, graph("sssp", "sp", "--from", Long.toString(from), "--to", Long.toString(to)), err());
      String o = out.toString();
      if (Double.isInfinite(want)) {
        unreachableSeen = true;
        assertTrue(o.contains("distance: unreachable"), o);
        continue;
      }
      checked++;
      assertTrue(o.contains("distance: " + (long) want + "\n"), from + "->" + to + ": " + o);
      Matcher m = Pattern.compile("path: (.*)\n").matcher(o);
      assertTrue(m.find(), o);
      List<String> path = List.of(m.group(1).split(" -> "));
      assertEquals(Long.toString(from), path.get(0), o);
      assertEquals(Long.toString(to), path.get(path.size() - 1), o);
      assertEquals((long) want, path.size() - 1, "hops of an unweighted path: " + o);
    }
    assertEquals(3, checked, "reachable pairs checked");
    assertTrue(unreachableSeen, "an unreachable pair was among those tried");
    assertEquals(1, graph("sssp", "sp", "--from", "99999999", "--to", "0"));
    assertTrue(err().contains("error: NOT_FOUND: vertex 99999999 is not in graph sp"), err());
  }

  @Test
  void badInputIsAnErrorThatSaysWhere() throws Exception {
    Path bad = dir.resolve("bad.txt");
    Files.writeString(bad, "# a graph\n0 1\n1 x\n");
    assertEquals(1, graph("import", "b", bad.toString(), "-q"));
    assertTrue(err().contains("error: INVALID_ARGUMENT: "), err());
    assertTrue(err().contains("line 3"), err());
    assertEquals(1, graph("stat", "b"));
    assertTrue(err().contains("error: NOT_FOUND"), err());
    assertEquals(2, graph("pagerank", "b", "--workers", "0"));
    assertTrue(err().contains("--workers: 0 (expected: 1 to 64)"), err());
    assertEquals(1, graph("generate", "x", "--preset", "huge"));
    assertTrue(err().contains("graph preset: 'huge'"), err());
  }

  private String err() {
    return err.toString();
  }
}
