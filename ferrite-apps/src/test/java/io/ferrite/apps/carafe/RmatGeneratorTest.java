package io.ferrite.apps.carafe;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** R-MAT: one graph per seed whatever the threads, the skew R-MAT is for, only touched vertices. */
@ExtendWith(SeedExtension.class)
class RmatGeneratorTest {
  static void assertSameCsr(Csr x, Csr y) {
    assertArrayEquals(x.externalIds(), y.externalIds(), "external ids");
    assertArrayEquals(x.firstEdge(), y.firstEdge(), "offsets");
    assertArrayEquals(x.targets(), y.targets(), "targets");
    assertArrayEquals(x.weights(), y.weights(), "weights");
    assertEquals(x.undirected(), y.undirected());
  }

  @Test
  void theSameSeedGivesTheSameGraphWhateverTheThreads(Random random) {
    long seed = random.nextLong();
    RmatGenerator g = new RmatGenerator(5000, 40_000, 0.57, 0.19, 0.19, seed, random.nextBoolean());
    // Blocks of 1000 edges: 40 random streams shared out over 1, 2 or 5 threads.
    Csr one = g.generate(CarafeGraph.Progress.NONE, 1, 1000).check();
    assertSameCsr(one, g.generate(CarafeGraph.Progress.NONE, 2, 1000));
    assertSameCsr(one, g.generate(CarafeGraph.Progress.NONE, 5, 1000));
    Csr other =
        new RmatGenerator(5000, 40_000, 0.57, 0.19, 0.19, seed + 1, g.undirected())
            .generate(CarafeGraph.Progress.NONE, 2, 1000);
    assertFalse(Arrays.equals(one.targets(), other.targets()), "another seed, another graph");
  }

  @Test
  void theSmallPresetIsSkewedAndHasOnlyTouchedVertices(Random random) {
    RmatGenerator g = RmatGenerator.preset("small", random.nextLong());
    Csr c = g.generate(CarafeGraph.Progress.NONE).check();
    assertEquals(100_000, c.edges());
    assertTrue(c.vertices() > 8_000 && c.vertices() <= 16_384, "vertices: " + c.vertices());
    boolean[] touched = new boolean[c.vertices()];
    int maxDegree = 0;
    long selfLoops = 0;
    for (int v = 0; v < c.vertices(); v++) {
      maxDegree = Math.max(maxDegree, c.degree(v));
      for (long e = c.firstEdge()[v]; e < c.firstEdge()[v + 1]; e++) {
        touched[v] = true;
        touched[c.targets()[(int) e]] = true;
        selfLoops += c.targets()[(int) e] == v ? 1 : 0;
      }
      assertTrue(c.externalIds()[v] < 16_384);
      assertTrue(v == 0 || c.externalIds()[v] > c.externalIds()[v - 1], "ascending ids");
    }
    for (int v = 0; v < c.vertices(); v++) {
      assertTrue(touched[v], "vertex " + v + " is touched by an edge");
    }
    // Average out-degree is about 10; R-MAT's hubs have hundreds of times that.
    assertTrue(maxDegree > 500, "max degree " + maxDegree);
    assertTrue(selfLoops > 0, "R-MAT makes self-loops, and they are kept");
  }

  @Test
  void undirectedStoresEachEdgeBothWays(Random random) {
    long seed = random.nextLong();
    RmatGenerator d = new RmatGenerator(300, 2000, 0.57, 0.19, 0.19, seed, false);
    Csr dir = d.generate(CarafeGraph.Progress.NONE);
    Csr und = d.asUndirected().generate(CarafeGraph.Progress.NONE).check();
    assertEquals(4000, und.edges());
    assertArrayEquals(dir.externalIds(), und.externalIds());
    // Per ordered pair, the undirected count is the directed count both ways.
    int n = dir.vertices();
    long[] cd = new long[n * n];
    long[] cu = new long[n * n];
    for (int v = 0; v < n; v++) {
      for (long e = dir.firstEdge()[v]; e < dir.firstEdge()[v + 1]; e++) {
        int t = dir.targets()[(int) e];
        cd[v * n + t]++;
        cd[t * n + v]++;
      }
      for (long e = und.firstEdge()[v]; e < und.firstEdge()[v + 1]; e++) {
        cu[v * n + und.targets()[(int) e]]++;
      }
    }
    assertArrayEquals(cd, cu);
  }

  /** The issue's target graph: at least 1 M vertices that have edges and 16 M edges. */
  @Test
  void theBenchPresetHasTheIssuesShape(Random random) {
    Csr c = RmatGenerator.preset("bench", random.nextLong()).generate(CarafeGraph.Progress.NONE);
    assertTrue(c.vertices() >= 1_000_000, "vertices: " + c.vertices());
    assertTrue(c.edges() >= 16_000_000, "edges: " + c.edges());
  }

  @Test
  void presetsAndBadParameters() {
    assertEquals(4_847_571, RmatGenerator.preset("livejournal", 1).vertices());
    assertEquals(68_993_773, RmatGenerator.preset("livejournal", 1).edges());
    assertTrue(RmatGenerator.preset("bench", 1).edges() >= 16_000_000);
    assertEquals(300, RmatGenerator.preset("tiny", 1).generate(CarafeGraph.Progress.NONE).edges());
    FerriteException e =
        assertThrows(FerriteException.class, () -> RmatGenerator.preset("huge", 1));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertTrue(e.detail().contains("livejournal, bench, small, tiny"), e.detail());
    assertThrows(
        FerriteException.class, () -> new RmatGenerator(0, 10, 0.57, 0.19, 0.19, 1, false));
    assertThrows(
        FerriteException.class, () -> new RmatGenerator(10, 0, 0.57, 0.19, 0.19, 1, false));
    assertThrows(FerriteException.class, () -> new RmatGenerator(10, 10, 0.7, 0.2, 0.2, 1, false));
  }
}
