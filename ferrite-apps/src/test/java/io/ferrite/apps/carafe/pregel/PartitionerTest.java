package io.ferrite.apps.carafe.pregel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Weighted vertex partitioning: contiguous ranges covering every vertex once, each within one
 * vertex's weight of an equal share; a vertex heavier than a share is never split.
 */
@ExtendWith(SeedExtension.class)
class PartitionerTest {
  @Test
  void rangesAreContiguousAndOfEqualWeight(Random random) {
    for (int round = 0; round < 50; round++) {
      int n = random.nextInt(2000);
      int[] degree = new int[n];
      for (int v = 0; v < n; v++) {
        // Skewed, like R-MAT: a few hubs, many small degrees, some zero.
        degree[v] = random.nextInt(20) == 0 ? random.nextInt(500) : random.nextInt(6);
      }
      long vw = random.nextInt(16);
      long ew = 1 + random.nextInt(3);
      int parts = 1 + random.nextInt(8);
      Partitioner p = new Partitioner(vw, ew);
      long[] b = p.bounds(degree, parts);
      assertEquals(parts + 1, b.length);
      assertEquals(0, b[0]);
      assertEquals(n, b[parts]);
      long total = 0;
      long heaviest = 0;
      for (int d : degree) {
        total += p.weight(d);
        heaviest = Math.max(heaviest, p.weight(d));
      }
      for (int k = 0; k < parts; k++) {
        assertTrue(b[k] <= b[k + 1], "bounds decrease at " + k);
        long w = 0;
        for (long v = b[k]; v < b[k + 1]; v++) {
          w += p.weight(degree[(int) v]);
        }
        // Each boundary is within half a vertex of its target: a part within one vertex.
        assertTrue(
            Math.abs(w - (double) total / parts) <= heaviest,
            "partition " + k + " weighs " + w + " of " + total + " in " + parts);
      }
    }
  }

  @Test
  void aHubHeavierThanAShareIsNotSplit() {
    // Weights 1001, 2, 2, 2 (total 1007): boundary 1 (target 335) is closer to 0 than to 1001,
    // boundary 2 (target 671) closer to 1001; the hub is a partition of its own, the first empty.
    long[] b = new Partitioner(1, 1).bounds(new int[] {1000, 1, 1, 1}, 3);
    assertArrayEquals(new long[] {0, 0, 1, 4}, b);
  }

  @Test
  void anEmptyGraphHasEmptyPartitions() {
    assertArrayEquals(new long[] {0, 0, 0}, Partitioner.defaults().bounds(new int[0], 2));
  }

  @Test
  void weightsAreChecked() {
    FerriteException e = assertThrows(FerriteException.class, () -> new Partitioner(0, 0));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertThrows(FerriteException.class, () -> new Partitioner(-1, 1));
    assertThrows(FerriteException.class, () -> Partitioner.defaults().bounds(new int[3], 0));
  }
}
