package io.ferrite.apps.carafe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.apps.AppsCluster;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.memory.RStore;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * VertexHandle, EdgeIterator and internalId read a stored graph back exactly as its Csr has it,
 * including adjacency lists longer than one read piece.
 */
@ExtendWith(SeedExtension.class)
class ExplorationTest {
  @TempDir Path dir;
  ClusterHarness cluster;
  RStore store;

  @BeforeEach
  void start() throws Exception {
    cluster = AppsCluster.start(dir, "16m", 2);
    store = new RStore(cluster.client());
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  @Test
  void everyVertexAndEdgeReadsBackAsTheCsrHasIt(Random random) {
    Csr csr =
        EdgeListWriterTest.weighted(
            RmatGenerator.preset("small", random.nextLong()).generate(CarafeGraph.Progress.NONE),
            random);
    int hub = 0;
    for (int v = 0; v < csr.vertices(); v++) {
      hub = csr.degree(v) > csr.degree(hub) ? v : hub;
    }
    assertTrue(csr.degree(hub) > 2 * EdgeIterator.PIECE, "a list of several pieces");
    try (CarafeGraph g = CarafeGraph.create(store, "g", csr, CarafeGraph.Progress.NONE)) {
      VertexHandle h = g.vertex(hub);
      for (int i = 0; i < 3000; i++) {
        int v = i == 0 ? hub : random.nextInt(csr.vertices());
        h.moveTo(v);
        assertEquals(v, h.internalId());
        assertEquals(csr.externalIds()[v], h.externalId());
        assertEquals(csr.firstEdge()[v], h.firstEdge());
        assertEquals(csr.degree(v), h.degree());
        EdgeIterator it = h.edges();
        assertEquals(csr.degree(v), it.remaining());
        for (long e = csr.firstEdge()[v]; e < csr.firstEdge()[v + 1]; e++) {
          assertTrue(it.next(), "edge " + e);
          assertEquals(csr.targets()[(int) e], it.target(), "edge " + e);
          assertEquals(csr.weights()[(int) e], it.weight(), "edge " + e);
        }
        assertTrue(!it.next(), "no edge past the degree");
        assertEquals(0, it.remaining());
      }
      h.close();
      FerriteException closed = assertThrows(FerriteException.class, () -> h.moveTo(0));
      assertTrue(closed.detail().contains("closed"), closed.detail());
      // Another graph object (another client's view) sees the same graph.
      try (CarafeGraph o = CarafeGraph.open(store, "g")) {
        try (VertexHandle x = o.vertex(hub)) {
          EdgeIterator it = x.edges();
          int count = 0;
          while (it.next()) {
            count++;
          }
          assertEquals(csr.degree(hub), count);
        }
      }
    }
    assertTrue(CarafeGraph.delete(store, "g"), "closing the graph released its mappings");
  }

  @Test
  void internalIdFindsEveryVertexAndNothingElse(Random random) {
    Csr csr = RmatGenerator.preset("small", random.nextLong()).generate(CarafeGraph.Progress.NONE);
    try (CarafeGraph g = CarafeGraph.create(store, "g", csr, CarafeGraph.Progress.NONE)) {
      long[] ext = csr.externalIds();
      for (int i = 0; i < 2000; i++) {
        int v = i < 2 ? i * (csr.vertices() - 1) : random.nextInt(csr.vertices());
        assertEquals(v, g.internalId(ext[v]), "external " + ext[v]);
        assertEquals(v, csr.internalId(ext[v]));
      }
      int absent = 0;
      for (long x = -1; x <= ext[ext.length - 1] + 1; x += 1 + random.nextInt(5)) {
        if (java.util.Arrays.binarySearch(ext, x) < 0) {
          absent++;
          assertEquals(-1, g.internalId(x), "external " + x);
          assertEquals(-1, csr.internalId(x), "external " + x);
        }
      }
      assertTrue(absent > 100, "the small preset leaves gaps: " + absent);
      assertEquals(-1, g.internalId(Long.MAX_VALUE));
    }
  }

  @Test
  void propertySlotsAndBounds() {
    Csr csr = new Csr(new long[] {4, 9}, new long[] {0, 1, 1}, new int[] {1}, null, false);
    try (CarafeGraph g = CarafeGraph.create(store, "p", csr, CarafeGraph.Progress.NONE)) {
      try (VertexHandle h = g.vertex(1)) {
        assertEquals(0, h.property(1));
        h.writeProperty(1, Double.doubleToRawLongBits(0.25));
        assertEquals(0.25, Double.longBitsToDouble(h.property(1)));
        h.moveTo(0);
        assertEquals(0, h.property(1), "another vertex's slot");
        h.moveTo(1);
        assertEquals(0.25, Double.longBitsToDouble(h.property(1)), "read back from RStore");
        assertEquals(0, h.property(0));
        EdgeIterator it = h.edges();
        assertTrue(!it.next(), "vertex 1 has no out-edges");
        assertEquals(
            ErrorCode.OUT_OF_BOUNDS,
            assertThrows(FerriteException.class, () -> h.property(2)).code());
      }
      assertEquals(
          ErrorCode.OUT_OF_BOUNDS, assertThrows(FerriteException.class, () -> g.vertex(2)).code());
      assertEquals(
          ErrorCode.OUT_OF_BOUNDS, assertThrows(FerriteException.class, () -> g.vertex(-1)).code());
      assertEquals(
          ErrorCode.CONFLICT,
          assertThrows(FerriteException.class, () -> CarafeGraph.delete(store, "p")).code(),
          "a graph being explored cannot be deleted");
    }
    assertTrue(CarafeGraph.delete(store, "p"));
  }

  @Test
  void importGraphChecksTheNameFirstAndABadFileLeavesNothing() throws java.io.IOException {
    Path ok = dir.resolve("ok.txt");
    java.nio.file.Files.writeString(ok, "# Nodes: 3 Edges: 2\n10 20\n20 30\n");
    Path bad = dir.resolve("bad.txt");
    java.nio.file.Files.writeString(bad, "10 20\n20 x\n");
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () ->
                EdgeListImporter.importGraph(
                    store, "g", bad, EdgeListImporter.Options.DIRECTED, CarafeGraph.Progress.NONE));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertTrue(e.detail().contains(": line 2: "), e.detail());
    for (String ns : new String[] {"g.vertices", "g.edges"}) {
      assertEquals(
          ErrorCode.NOT_FOUND,
          assertThrows(FerriteException.class, () -> store.joinNamespace(ns)).code(),
          "nothing left in the cluster: " + ns);
    }
    try (CarafeGraph g =
        EdgeListImporter.importGraph(
            store, "g", ok, EdgeListImporter.Options.DIRECTED, CarafeGraph.Progress.NONE)) {
      assertEquals(3, g.vertexCount());
      assertEquals(1, g.internalId(20));
      try (VertexHandle h = g.vertex(1)) {
        assertEquals(20, h.externalId());
        EdgeIterator it = h.edges();
        assertTrue(it.next());
        assertEquals(2, it.target());
        assertTrue(!it.next());
      }
    }
    // The name is taken: refused before the (missing) file is even opened.
    FerriteException taken =
        assertThrows(
            FerriteException.class,
            () ->
                EdgeListImporter.importGraph(
                    store,
                    "g",
                    dir.resolve("missing.txt"),
                    EdgeListImporter.Options.DIRECTED,
                    CarafeGraph.Progress.NONE));
    assertEquals(ErrorCode.CONFLICT, taken.code());
    assertTrue(CarafeGraph.delete(store, "g"));
  }
}
