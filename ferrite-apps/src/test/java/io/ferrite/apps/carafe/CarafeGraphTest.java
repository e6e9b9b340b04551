package io.ferrite.apps.carafe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.apps.AppsCluster;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.memory.Mapping;
import io.ferrite.memory.MemoryFlags;
import io.ferrite.memory.RStore;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A graph goes into RStore as {@link GraphLayout} says, and comes back as it went in. */
class CarafeGraphTest {
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

  /** A random csr: {@code n} vertices, about {@code perVertex} out-edges each, some with none. */
  static Csr random(long seed, int n, int perVertex, boolean weighted) {
    Random r = new Random(seed);
    long[] first = new long[n + 1];
    for (int v = 0; v < n; v++) {
      first[v + 1] = first[v] + (r.nextInt(4) == 0 ? 0 : r.nextInt(2 * perVertex + 1));
    }
    int m = (int) first[n];
    int[] t = new int[m];
    float[] w = weighted ? new float[m] : null;
    for (int e = 0; e < m; e++) {
      t[e] = r.nextInt(n);
      if (w != null) {
        w[e] = 1 + r.nextInt(100) / 10f;
      }
    }
    long[] ext = new long[n];
    for (int v = 0; v < n; v++) {
      ext[v] = 1000L * v + 7;
    }
    return new Csr(ext, first, t, w, false);
  }

  @Test
  void roundTrip() {
    Csr csr = random(1, 20_000, 6, true);
    long[] reports = new long[1];
    CarafeGraph g = CarafeGraph.create(store, "g", csr, (phase, done, total) -> reports[0]++);
    assertTrue(reports[0] >= 2, "progress was reported");
    CarafeGraph o = CarafeGraph.open(store, "g");
    assertEquals(csr.vertices(), o.vertexCount());
    assertEquals(csr.edges(), o.edgeCount());
    assertTrue(o.weighted());
    assertFalse(o.undirected());
    assertEquals(g.bytes(), o.bytes());
    int n = csr.vertices();
    ByteBuffer vb = GraphLayout.le(n * GraphLayout.VERTEX);
    try (Mapping vm = o.vertices(0, n).map(MemoryFlags.MAP_NO_BUFFER)) {
      vm.readSync(0, vb);
    }
    ByteBuffer eb = GraphLayout.le((int) csr.edges() * GraphLayout.EDGE);
    try (Mapping em = o.edges(0, csr.edges()).map(MemoryFlags.MAP_NO_BUFFER)) {
      em.readSync(0, eb);
    }
    for (int v = 0; v < n; v++) {
      int at = v * GraphLayout.VERTEX;
      assertEquals(v, vb.getLong(at + GraphLayout.V_ID));
      assertEquals(csr.externalIds()[v], vb.getLong(at + GraphLayout.V_EXTERNAL));
      assertEquals(csr.firstEdge()[v], vb.getLong(at + GraphLayout.V_FIRST_EDGE));
      assertEquals(csr.degree(v), vb.getInt(at + GraphLayout.V_DEGREE));
    }
    for (int e = 0; e < csr.edges(); e++) {
      assertEquals(csr.targets()[e], eb.getInt(e * GraphLayout.EDGE + GraphLayout.E_TARGET));
      assertEquals(csr.weights()[e], eb.getFloat(e * GraphLayout.EDGE + GraphLayout.E_WEIGHT));
    }
    // A range in the middle maps on its own.
    try (Mapping em = o.edges(5, 3).map(MemoryFlags.MAP_NO_BUFFER)) {
      ByteBuffer b = GraphLayout.le(3 * GraphLayout.EDGE);
      em.readSync(0, b);
      assertEquals(csr.targets()[6], b.getInt(GraphLayout.EDGE));
    }
  }

  @Test
  void aSecondGraphOfTheSameNameIsRefusedAndDeleteRemovesBoth() {
    Csr csr = random(2, 100, 2, false);
    CarafeGraph.create(store, "g", csr, CarafeGraph.Progress.NONE);
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> CarafeGraph.create(store, "g", csr, CarafeGraph.Progress.NONE));
    assertEquals(ErrorCode.CONFLICT, e.code());
    assertTrue(CarafeGraph.open(store, "g") != null, "the first graph is untouched");
    assertTrue(CarafeGraph.delete(store, "g"));
    assertEquals(
        ErrorCode.NOT_FOUND,
        assertThrows(FerriteException.class, () -> CarafeGraph.open(store, "g")).code());
    assertFalse(CarafeGraph.delete(store, "g"));
  }

  @Test
  void anUnfinishedImportIsRefusedAtOpen() {
    store.createNamespace(GraphLayout.verticesNamespace("half"));
    store.createNamespace(GraphLayout.edgesNamespace("half"));
    FerriteException e =
        assertThrows(FerriteException.class, () -> CarafeGraph.open(store, "half"));
    assertEquals(ErrorCode.CONFLICT, e.code());
    assertTrue(e.getMessage().contains("incomplete"), e.getMessage());
    assertTrue(CarafeGraph.delete(store, "half"));
  }

  @Test
  void aGraphWithNoEdgesAndAMalformedCsr() {
    Csr none = new Csr(new long[] {5, 6}, new long[] {0, 0, 0}, new int[0], null, false);
    CarafeGraph g = CarafeGraph.create(store, "none", none, CarafeGraph.Progress.NONE);
    assertEquals(0, CarafeGraph.open(store, "none").edgeCount());
    assertEquals(2, g.vertexCount());
    Csr bad = new Csr(new long[] {5, 6}, new long[] {0, 1, 1}, new int[] {2}, null, false);
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> CarafeGraph.create(store, "bad", bad, CarafeGraph.Progress.NONE));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertEquals(
        ErrorCode.NOT_FOUND,
        assertThrows(FerriteException.class, () -> store.joinNamespace("bad.vertices")).code(),
        "a refused graph leaves no namespace");
  }
}
