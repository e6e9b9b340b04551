package io.ferrite.graphx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.apps.carafe.Csr;
import io.ferrite.apps.carafe.Reference;
import io.ferrite.fabric.testing.SeedExtension;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the peer as a child JVM (as {@code bench graph --vs graphx} does) on a small random graph
 * with sinks, self-loops and duplicate edges, and checks that GraphX's ranks are Carafe's
 * reference's ({@link Reference#pageRank}) within 1e-9 relative per vertex: the two systems the
 * bench compares compute the same thing.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class GraphXPageRankTest {
  @TempDir Path dir;

  @Test
  void ranksEqualCarafesReference(Random random) throws Exception {
    int n = 200;
    long[] src = new long[1500];
    long[] dst = new long[src.length];
    for (int i = 0; i < src.length; i++) {
      // Sparse, scattered external ids (GraphX keys vertices by them; Carafe by rank order);
      // ids 0..19 only ever receive, so they are sinks.
      src[i] = 1000L * (20 + random.nextInt(n - 20)) + 7;
      dst[i] = 1000L * random.nextInt(n) + 7;
    }
    src[0] = dst[0] = 1000L * 50 + 7; // a self-loop
    src[2] = src[1]; // a duplicate edge
    dst[2] = dst[1];
    Path edges = dir.resolve("edges.txt");
    StringBuilder text = new StringBuilder("# Nodes: ? Edges: " + src.length + "\n");
    for (int i = 0; i < src.length; i++) {
      text.append(src[i]).append('\t').append(dst[i]).append('\n');
    }
    Files.writeString(edges, text, StandardCharsets.UTF_8);

    Csr csr = csr(src, dst);
    double[] expected = Reference.pageRank(csr, 20);

    Path ranks = dir.resolve("ranks.txt");
    Path json = dir.resolve("result.json");
    runPeer(
        "--edges", edges.toString(),
        "--iterations", "20",
        "--cores", "2",
        "--ranks", ranks.toString(),
        "--json", json.toString());

    List<String> lines = Files.readAllLines(ranks, StandardCharsets.UTF_8);
    assertEquals(csr.vertices(), lines.size(), "vertices ranked");
    for (int v = 0; v < lines.size(); v++) {
      String[] parts = lines.get(v).split(" ");
      assertEquals(csr.externalIds()[v], Long.parseLong(parts[0]), "vertex " + v + "'s id");
      double got = Double.parseDouble(parts[1]);
      double want = expected[v];
      assertTrue(
          Math.abs(got - want) <= 1e-9 * Math.abs(want),
          "vertex " + parts[0] + ": GraphX " + got + ", reference " + want);
    }
    String result = Files.readString(json, StandardCharsets.UTF_8);
    assertTrue(result.contains("\"vertices\":" + csr.vertices() + ","), result);
    assertTrue(result.contains("\"edges\":" + src.length + ","), result);
  }

  /** Internal ids in ascending external-id order, edges in file order per source: as Carafe. */
  private static Csr csr(long[] src, long[] dst) {
    TreeMap<Long, Integer> ids = new TreeMap<>();
    for (int i = 0; i < src.length; i++) {
      ids.put(src[i], 0);
      ids.put(dst[i], 0);
    }
    long[] external = new long[ids.size()];
    int next = 0;
    for (var e : ids.entrySet()) {
      external[next] = e.getKey();
      e.setValue(next++);
    }
    long[] first = new long[external.length + 1];
    for (long s : src) {
      first[ids.get(s) + 1]++;
    }
    for (int v = 0; v < external.length; v++) {
      first[v + 1] += first[v];
    }
    long[] fill = Arrays.copyOf(first, external.length);
    int[] targets = new int[src.length];
    for (int i = 0; i < src.length; i++) {
      targets[(int) fill[ids.get(src[i])]++] = ids.get(dst[i]);
    }
    return new Csr(external, first, targets, null, false).check();
  }

  private void runPeer(String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx512m");
    for (String open : GraphXPageRank.ADD_OPENS) {
      cmd.add("--add-opens=" + open + "=ALL-UNNAMED");
    }
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(GraphXPageRank.class.getName());
    cmd.addAll(List.of(args));
    Path log = dir.resolve("peer.log");
    Process p =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    try {
      boolean done = p.waitFor(120, TimeUnit.SECONDS);
      assertTrue(done, "the peer did not finish in 120 s");
      assertEquals(
          0,
          p.exitValue(),
          "peer exit status; output:\n" + Files.readString(log, StandardCharsets.UTF_8));
    } finally {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
    }
  }
}
