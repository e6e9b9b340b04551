package io.ferrite.apps.carafe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** write, then import: the same Csr. */
@ExtendWith(SeedExtension.class)
class EdgeListWriterTest {
  @TempDir Path dir;

  /** Directed {@code c} with a random weight per entry. */
  static Csr weighted(Csr c, Random random) {
    float[] w = new float[(int) c.edges()];
    for (int e = 0; e < w.length; e++) {
      w[e] =
          random.nextBoolean()
              ? 1 + random.nextInt(20)
              : random.nextFloat() * (float) Math.pow(10, random.nextInt(8) - 3);
    }
    return new Csr(c.externalIds(), c.firstEdge(), c.targets(), w, c.undirected());
  }

  Csr roundTrip(Csr c, boolean undirected) {
    Path f = dir.resolve("g.txt");
    EdgeListWriter.write(c, f, CarafeGraph.Progress.NONE);
    return EdgeListImporter.read(
        f, new EdgeListImporter.Options(undirected, -1), CarafeGraph.Progress.NONE);
  }

  @Test
  void directedUnweightedAndWeightedComeBackTheSame(Random random) throws IOException {
    Csr c = RmatGenerator.preset("small", random.nextLong()).generate(CarafeGraph.Progress.NONE);
    RmatGeneratorTest.assertSameCsr(c, roundTrip(c, false));
    Csr w = weighted(c, random);
    RmatGeneratorTest.assertSameCsr(w, roundTrip(w, false));
    List<String> head = Files.readAllLines(dir.resolve("g.txt"), StandardCharsets.US_ASCII);
    assertTrue(head.contains("# Nodes: " + c.vertices() + " Edges: " + c.edges()), head.get(2));
    assertEquals(c.edges() + 3, head.size(), "three header lines, then one line per edge");
    assertEquals(3, head.get(3).split("\t").length, "a weight column");
  }

  @Test
  void undirectedComesBackTheSame(Random random) throws IOException {
    Csr c =
        new RmatGenerator(2000, 20_000, 0.57, 0.19, 0.19, random.nextLong(), true)
            .generate(CarafeGraph.Progress.NONE);
    assertEquals(20_000, EdgeListWriter.lines(c));
    RmatGeneratorTest.assertSameCsr(c, roundTrip(c, true));
    // Weighted: give each written line a weight, import that as the original.
    StringBuilder text = new StringBuilder();
    for (String line : Files.readAllLines(dir.resolve("g.txt"), StandardCharsets.US_ASCII)) {
      text.append(line);
      if (!line.startsWith("#")) {
        text.append(' ').append(random.nextInt(4) == 0 ? 7 : random.nextFloat() * 100);
      }
      text.append('\n');
    }
    Path f = dir.resolve("w.txt");
    Files.writeString(f, text, StandardCharsets.US_ASCII);
    Csr w =
        EdgeListImporter.read(f, EdgeListImporter.Options.UNDIRECTED, CarafeGraph.Progress.NONE);
    assertEquals(c.edges(), w.edges());
    RmatGeneratorTest.assertSameCsr(w, roundTrip(w, true));
  }

  @Test
  void aHandMadeUndirectedGraphWithSelfLoops() throws IOException {
    Path f = dir.resolve("h.txt");
    Files.writeString(f, "1 1\n3 1\n1 1\n2 3\n1 3\n", StandardCharsets.US_ASCII);
    Csr c =
        EdgeListImporter.read(f, EdgeListImporter.Options.UNDIRECTED, CarafeGraph.Progress.NONE);
    assertEquals(10, c.edges());
    assertEquals(5, EdgeListWriter.lines(c), "each self-loop once, each edge once");
    Csr back = roundTrip(c, true);
    // Not the file's order (3 1 is written as 1 3), but the same entries per vertex.
    for (int v = 0; v < c.vertices(); v++) {
      int[] a =
          java.util.Arrays.copyOfRange(
              c.targets(), (int) c.firstEdge()[v], (int) c.firstEdge()[v + 1]);
      int[] b =
          java.util.Arrays.copyOfRange(
              back.targets(), (int) back.firstEdge()[v], (int) back.firstEdge()[v + 1]);
      java.util.Arrays.sort(a);
      java.util.Arrays.sort(b);
      org.junit.jupiter.api.Assertions.assertArrayEquals(a, b, "vertex " + v);
    }
  }
}
