package io.ferrite.apps.carafe;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
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
 * Dijkstra on a stored graph gives the reference's distance for random pairs (reachable or not, src
 * == dst), on directed and undirected, weighted and unweighted R-MAT graphs; its path is a real
 * path whose weights sum to the distance; and it explores exactly what the in-memory search does.
 */
@ExtendWith(SeedExtension.class)
class DijkstraTest {
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

  /** An R-MAT graph of about 1500 vertices, weights 0.5 to 10.5 or none. */
  static Csr graph(Random random, boolean undirected, boolean weighted) {
    RmatGenerator gen = new RmatGenerator(2048, 8000, 0.57, 0.19, 0.19, random.nextLong(), false);
    Csr dir = gen.generate(CarafeGraph.Progress.NONE);
    if (!undirected && !weighted) {
      return dir;
    }
    int m = (int) dir.edges();
    int[] s = new int[m];
    int[] d = new int[m];
    float[] w = weighted ? new float[m] : null;
    for (int v = 0; v < dir.vertices(); v++) {
      for (long e = dir.firstEdge()[v]; e < dir.firstEdge()[v + 1]; e++) {
        s[(int) e] = (int) dir.externalIds()[v];
        d[(int) e] = (int) dir.externalIds()[dir.targets()[(int) e]];
        if (w != null) {
          w[(int) e] = 0.5f + random.nextInt(100) / 10f;
        }
      }
    }
    return CsrBuilder.fromIntIds(s, d, w, m, 2048, undirected, CarafeGraph.Progress.NONE).check();
  }

  @Test
  void directedUnweighted(Random random) {
    check(graph(random, false, false), random);
  }

  @Test
  void directedWeighted(Random random) {
    check(graph(random, false, true), random);
  }

  @Test
  void undirectedUnweighted(Random random) {
    check(graph(random, true, false), random);
  }

  @Test
  void undirectedWeighted(Random random) {
    check(graph(random, true, true), random);
  }

  void check(Csr csr, Random random) {
    int n = csr.vertices();
    int sink = -1;
    for (int v = 0; v < n && sink < 0; v++) {
      sink = csr.degree(v) == 0 ? v : -1;
    }
    if (csr.undirected()) {
      // No sinks in an undirected graph: an unreachable pair is one across components.
      long[] comp = Reference.components(csr);
      sink = -1;
      for (int v = 0; v < n && sink < 0; v++) {
        sink = comp[v] != comp[0] ? v : -1;
      }
    }
    int unreachable = 0;
    try (CarafeGraph g = CarafeGraph.create(store, "g", csr, CarafeGraph.Progress.NONE);
        Dijkstra.Searcher stored = Dijkstra.on(g)) {
      Dijkstra.Searcher memory = Dijkstra.on(csr);
      for (int i = 0; i < 40; i++) {
        int src = random.nextInt(n);
        int dst = random.nextInt(n);
        if (i == 0) {
          dst = src;
        } else if (i == 1 && sink >= 0) {
          src = sink;
          dst = csr.undirected() ? 0 : sink == 0 ? 1 : 0;
        }
        Dijkstra.Path p = stored.shortest(src, dst);
        String what = "pair " + src + " -> " + dst + ": " + p;
        assertEquals(Reference.dijkstra(csr, src, dst), p.distance(), what);
        Dijkstra.Path q = memory.shortest(src, dst);
        assertArrayEquals(q.vertices(), p.vertices(), what);
        assertEquals(q.explored(), p.explored(), what);
        assertTrue(p.explored() >= 1 && p.explored() <= n, what);
        if (!p.reachable()) {
          unreachable++;
          assertEquals(Double.POSITIVE_INFINITY, p.distance(), what);
          assertEquals(0, p.vertices().length, what);
          continue;
        }
        assertEquals(p.hops() + 1, p.vertices().length, what);
        assertEquals(src, p.vertices()[0], what);
        assertEquals(dst, p.vertices()[p.hops()], what);
        assertTrue(p.explored() >= p.hops() + 1, what);
        double sum = 0;
        for (int k = 0; k < p.hops(); k++) {
          sum += lightest(csr, (int) p.vertices()[k], (int) p.vertices()[k + 1], what);
        }
        assertEquals(p.distance(), sum, what);
        if (src == dst) {
          assertEquals(0, p.hops());
          assertEquals(0.0, p.distance());
          assertEquals(1, p.explored());
        }
      }
      assertEquals(
          ErrorCode.OUT_OF_BOUNDS,
          assertThrows(FerriteException.class, () -> stored.shortest(0, n)).code());
      Dijkstra.Path once = Dijkstra.shortest(g, 0, n - 1);
      assertEquals(Reference.dijkstra(csr, 0, n - 1), once.distance());
    }
    assertTrue(sink < 0 || unreachable > 0, "an unreachable pair was tried");
    if (!csr.undirected()) {
      assertTrue(sink >= 0, "R-MAT graphs have vertices with no out-edges");
    }
    assertTrue(CarafeGraph.delete(store, "g"));
  }

  /**
   * The reference by hand: 0 -> 1 (4), 0 -> 2 (1), 2 -> 1 (2), a parallel 2 -> 1 (1.5), 1 -> 3 (1),
   * 3 -> 3 (0, a self-loop), and 4 reaches nothing and is reached by nothing.
   */
  @Test
  void theReferenceByHand() {
    Csr g =
        new Csr(
            new long[] {10, 11, 12, 13, 14},
            new long[] {0, 2, 3, 5, 6, 6},
            new int[] {1, 2, 3, 1, 1, 3},
            new float[] {4, 1, 1, 2, 1.5f, 0},
            false);
    assertEquals(0.0, Reference.dijkstra(g, 0, 0));
    assertEquals(2.5, Reference.dijkstra(g, 0, 1));
    assertEquals(1.0, Reference.dijkstra(g, 0, 2));
    assertEquals(3.5, Reference.dijkstra(g, 0, 3));
    assertEquals(Double.POSITIVE_INFINITY, Reference.dijkstra(g, 0, 4));
    assertEquals(Double.POSITIVE_INFINITY, Reference.dijkstra(g, 3, 0));
    Dijkstra.Path p = Dijkstra.shortest(g, 0, 3);
    assertEquals(3.5, p.distance());
    assertArrayEquals(new long[] {0, 2, 1, 3}, p.vertices());
    assertEquals(3, p.hops());
    assertEquals(4, p.explored(), "0, 2, 1 and 3 settled; never 4");
  }

  /** The lightest edge u -> v (a path takes the lightest of parallel edges). */
  static float lightest(Csr g, int u, int v, String what) {
    float best = Float.POSITIVE_INFINITY;
    for (long e = g.firstEdge()[u]; e < g.firstEdge()[u + 1]; e++) {
      if (g.targets()[(int) e] == v) {
        best = Math.min(best, g.weight(e));
      }
    }
    assertTrue(best < Float.POSITIVE_INFINITY, what + ": no edge " + u + " -> " + v);
    return best;
  }
}
