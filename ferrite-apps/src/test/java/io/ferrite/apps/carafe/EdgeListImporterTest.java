package io.ferrite.apps.carafe;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** SNAP edge lists in, Csrs out; every malformed line refused with its file, number and text. */
@ExtendWith(SeedExtension.class)
class EdgeListImporterTest {
  @TempDir Path dir;

  Path file(String text) throws IOException {
    Path f = Files.createTempFile(dir, "g", ".txt");
    Files.write(f, text.getBytes(StandardCharsets.ISO_8859_1));
    return f;
  }

  static Csr read(Path f, EdgeListImporter.Options o) {
    return EdgeListImporter.read(f, o, CarafeGraph.Progress.NONE);
  }

  @Test
  void commentsBlankLinesTabsCrLfAndNoFinalNewline() throws IOException {
    Path f =
        file(
            "# Directed graph\n# Nodes: 4 Edges: 5\n\n  \t\n30 10\r\n"
                + "10\t\t20\n 30  30 \n20 10\n\n# late comment\n10 20");
    Csr g = read(f, EdgeListImporter.Options.DIRECTED).check();
    // Ids 10, 20, 30 become 0, 1, 2 (ascending); out-edges keep file order.
    assertArrayEquals(new long[] {10, 20, 30}, g.externalIds());
    assertArrayEquals(new long[] {0, 2, 3, 5}, g.firstEdge());
    assertArrayEquals(new int[] {1, 1, 0, 0, 2}, g.targets());
    assertNull(g.weights());
    assertEquals(0, g.internalId(10));
    assertEquals(2, g.internalId(30));
    assertEquals(-1, g.internalId(25));
    assertEquals(-1, g.internalId(5));
    assertEquals(-1, g.internalId(31));
  }

  @Test
  void undirectedStoresBothWaysAndASelfLoopTwiceDuplicatesKept() throws IOException {
    Path f = file("1 2 0.5\n2 2 3\n1 2 0.25\n");
    Csr g = read(f, EdgeListImporter.Options.UNDIRECTED).check();
    assertTrue(g.undirected());
    assertArrayEquals(new long[] {1, 2}, g.externalIds());
    assertEquals(6, g.edges(), "3 edges, each stored twice");
    // Vertex 1: 1->2 (0.5), 1->2 (0.25). Vertex 2: 2->1 (0.5), 2->2, 2->2 (3), 2->1 (0.25).
    assertArrayEquals(new long[] {0, 2, 6}, g.firstEdge());
    assertArrayEquals(new int[] {1, 1, 0, 1, 1, 0}, g.targets());
    assertArrayEquals(new float[] {0.5f, 0.25f, 0.5f, 3f, 3f, 0.25f}, g.weights());
    assertEquals(1, Reference.components(g)[1] + 1);
  }

  @Test
  void weightsParseLikeFloatParseFloat(Random random) throws IOException {
    StringBuilder text = new StringBuilder();
    List<Float> expected = new ArrayList<>();
    String[] fixed = {
      "0", "1", "0.1", "2.5", "1e3", "3.4028235E38", "1.4E-45", "16777217", "0.000001"
    };
    for (String w : fixed) {
      text.append("0 1 ").append(w).append('\n');
      expected.add(Float.parseFloat(w));
    }
    for (int i = 0; i < 2000; i++) {
      float w = Math.abs(random.nextFloat() * (float) Math.pow(10, random.nextInt(12) - 4));
      String s =
          random.nextBoolean()
              ? Float.toString(w)
              : String.format(java.util.Locale.ROOT, "%." + random.nextInt(9) + "f", w);
      text.append("0 1 ").append(s).append('\n');
      expected.add(Float.parseFloat(s));
    }
    Path f = file(text.toString());
    for (int threads : new int[] {1, 4}) {
      Csr g =
          EdgeListImporter.read(
              f,
              EdgeListImporter.Options.DIRECTED,
              CarafeGraph.Progress.NONE,
              EdgeListImporter.BLOCK,
              threads);
      for (int i = 0; i < expected.size(); i++) {
        assertEquals(expected.get(i), g.weights()[i], threads + " threads, weight " + i);
      }
    }
  }

  @Test
  void linesAcrossReadBlocksAndLongerThanABlock(Random random) throws IOException {
    StringBuilder text = new StringBuilder("# Nodes: 1 Edges: 1\n");
    int m = 3000;
    long[] s = new long[m];
    long[] d = new long[m];
    for (int i = 0; i < m; i++) {
      s[i] = random.nextInt(500);
      d[i] = random.nextInt(500);
      text.append(s[i]).append(i % 7 == 0 ? " \t " : "\t").append(d[i]).append('\n');
    }
    Path f = file(text.toString());
    Csr whole = read(f, EdgeListImporter.Options.DIRECTED);
    // A 5-byte block: most lines span two reads, some are longer than a block (the buffer grows).
    Csr small =
        EdgeListImporter.read(f, EdgeListImporter.Options.DIRECTED, CarafeGraph.Progress.NONE, 5);
    assertArrayEquals(whole.targets(), small.targets());
    assertArrayEquals(whole.firstEdge(), small.firstEdge());
    // The same in ranges on 3 threads, with 5-byte blocks.
    Csr parts =
        EdgeListImporter.read(
            f, EdgeListImporter.Options.DIRECTED, CarafeGraph.Progress.NONE, 5, 3);
    assertArrayEquals(whole.externalIds(), parts.externalIds());
    assertArrayEquals(whole.targets(), parts.targets());
    assertArrayEquals(whole.firstEdge(), parts.firstEdge());
    assertEquals(m, whole.edges(), "the header's 1 edge is a hint, not a limit");
    for (int i = 0; i < m; i++) {
      int u = whole.internalId(s[i]);
      assertTrue(u >= 0);
      boolean found = false;
      for (long e = whole.firstEdge()[u]; e < whole.firstEdge()[u + 1]; e++) {
        found |= whole.externalIds()[whole.targets()[(int) e]] == d[i];
      }
      assertTrue(found, "edge " + s[i] + " -> " + d[i]);
    }
  }

  @Test
  void aRangeOfCommentsOnlyInAWeightedFile() throws IOException {
    StringBuilder text = new StringBuilder("1 2 0.5\n");
    for (int i = 0; i < 200; i++) {
      text.append("# a long comment that fills a whole range of lines on its own\n");
    }
    text.append("2 3 1.5\n");
    Csr g =
        EdgeListImporter.read(
            file(text.toString()),
            EdgeListImporter.Options.DIRECTED,
            CarafeGraph.Progress.NONE,
            EdgeListImporter.BLOCK,
            4);
    assertArrayEquals(new float[] {0.5f, 1.5f}, g.weights());
  }

  @Test
  void largeSparseIdsGoThroughTheSortAndGiveTheSameGraph() throws IOException {
    long big = 1L << 40;
    // Small ids first (kept as ints), then one above 2^31 (the part switches to longs), in one
    // part or in parts of which some keep ints and some longs.
    Path f = file("1 5\n5 7\n7 5\n5 " + big + "\n" + big + " 7\n7 5\n" + big + " 1\n");
    Csr dense =
        read(file("1 5\n5 7\n7 5\n5 9\n9 7\n7 5\n9 1\n"), EdgeListImporter.Options.DIRECTED);
    for (int threads : new int[] {1, 2, 3}) {
      Csr sparse =
          EdgeListImporter.read(
              f,
              EdgeListImporter.Options.DIRECTED,
              CarafeGraph.Progress.NONE,
              EdgeListImporter.BLOCK,
              threads);
      assertArrayEquals(new long[] {1, 5, 7, big}, sparse.externalIds());
      assertArrayEquals(dense.targets(), sparse.targets());
      assertArrayEquals(dense.firstEdge(), sparse.firstEdge());
    }
  }

  static FerriteException refused(Path f, EdgeListImporter.Options o) {
    return assertThrows(FerriteException.class, () -> read(f, o));
  }

  void assertBadLine(String text, int line, String problem) throws IOException {
    Path f = file(text);
    // One thread, or the file cut into ranges of lines parsed apart: the same first failure.
    for (int threads : new int[] {1, 2, 3, 5}) {
      FerriteException e =
          assertThrows(
              FerriteException.class,
              () ->
                  EdgeListImporter.read(
                      f,
                      new EdgeListImporter.Options(false, 1000),
                      CarafeGraph.Progress.NONE,
                      EdgeListImporter.BLOCK,
                      threads));
      assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), e.getMessage());
      String msg = e.detail();
      assertTrue(msg.startsWith(f + ": line " + line + ": "), threads + " threads: " + msg);
      assertTrue(msg.contains(problem), msg);
      String bad = text.split("\n", -1)[line - 1];
      assertTrue(
          msg.endsWith("'" + bad.stripTrailing() + "'") || msg.endsWith("'" + bad + "'"), msg);
    }
  }

  @Test
  void malformedLinesNameFileLineAndText() throws IOException {
    String ok = "# c\n1 2\n";
    assertBadLine(ok + "7\n", 3, "one token");
    assertBadLine(ok + "7 x\n", 3, "not a non-negative integer");
    assertBadLine(ok + "7a 8\n", 3, "not a non-negative integer");
    assertBadLine(ok + "-7 8\n", 3, "negative id");
    assertBadLine(ok + "7 8 9 10\n", 3, "extra tokens");
    assertBadLine(ok + "3 4\n99999999999999999999 1\n", 4, "id above");
    assertBadLine(ok + "7 1001\n", 3, "above the declared range (maxId 1000)");
    assertBadLine("1 2 0.5\n\n3 4 NaN\n", 3, "NaN");
    assertBadLine("1 2 0.5\n3 4 -1.5\n", 2, "expected: finite and >= 0");
    assertBadLine("1 2 0.5\n3 4 abc\n", 2, "weight is not a number");
    assertBadLine("1 2 0.5\n3 4\n", 2, "no weight, but line 1 has one");
    assertBadLine("1 2\n3 4 1\n", 2, "a weight, but line 1 has none");
    // The mix in a later range than the first edge, and a bad line after a mix: the mix first.
    assertBadLine("# c\n1 2\n3 4\n5 6\n7 8\n9 10\n11 12 1.5\n13 14\n", 7, "line 2 has none");
    assertBadLine("1 2 1\n3 4 1\n5 6 1\n7 8 1\n9 10 1\n11 12\n13\n", 6, "line 1 has one");
    assertBadLine("1 2\n3 4\n5 6\n7 8\n9 10\n11 12\n13 14\n15\n", 8, "one token");
  }

  @Test
  void theDeclaredRangeIsInclusive() throws IOException {
    Csr g = read(file("0 1000\n"), new EdgeListImporter.Options(false, 1000));
    assertEquals(2, g.vertices());
  }

  @Test
  void anEmptyGraphAndAMissingFile() throws IOException {
    for (String text : new String[] {"", "# only\n# comments\n\n", "\n"}) {
      Path f = file(text);
      FerriteException e = refused(f, EdgeListImporter.Options.DIRECTED);
      assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
      assertEquals("empty graph: " + f + " has no edges", e.detail());
    }
    FerriteException e = refused(dir.resolve("absent.txt"), EdgeListImporter.Options.DIRECTED);
    assertEquals(ErrorCode.NOT_FOUND, e.code());
    assertTrue(e.getMessage().contains("absent.txt"), e.getMessage());
  }

  @Test
  void progressCoversEveryPhase() throws IOException {
    List<String> phases = new ArrayList<>();
    long[] lastRead = {0};
    Path f = file("1 2\n2 3\n");
    EdgeListImporter.read(
        f,
        EdgeListImporter.Options.DIRECTED,
        (phase, done, total) -> {
          if (!phases.contains(phase)) {
            phases.add(phase);
          }
          if (phase.equals("read")) {
            lastRead[0] = done;
            assertEquals(8, total);
          }
        });
    assertEquals(List.of("read", "ids", "sort"), phases);
    assertEquals(8, lastRead[0]);
  }
}
