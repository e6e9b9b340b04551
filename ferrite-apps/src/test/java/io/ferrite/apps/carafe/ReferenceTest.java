package io.ferrite.apps.carafe;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ferrite.fabric.FerriteException;
import org.junit.jupiter.api.Test;

/** The reference implementations on graphs small enough to work out by hand. */
class ReferenceTest {
  @Test
  void pageRankOfACycleStaysOneAndASinkLosesItsMassBeforeNormalization() {
    Csr cycle = new Csr(new long[] {0, 1}, new long[] {0, 1, 2}, new int[] {1, 0}, null, false);
    assertArrayEquals(new double[] {1, 1}, Reference.pageRank(cycle, 5), 1e-12);
    // 0 -> 1, 1 a sink: after 2 iterations 0.15 and 0.15 + 0.85 * 0.15, scaled to sum to 2.
    Csr sink = new Csr(new long[] {0, 1}, new long[] {0, 1, 1}, new int[] {1}, null, false);
    double r0 = 0.15;
    double r1 = 0.15 + 0.85 * 0.15;
    double f = 2 / (r0 + r1);
    assertArrayEquals(new double[] {r0 * f, r1 * f}, Reference.pageRank(sink, 2), 1e-12);
  }

  @Test
  void componentsAreLabelledByTheirSmallestVertex() {
    // 0-1, 2-3, 3-4 (each both ways), 5 alone, 4-4 a self-loop.
    long[] first = {0, 1, 2, 3, 5, 8, 8};
    int[] t = {1, 0, 3, 2, 4, 3, 4, 4};
    Csr g = new Csr(new long[6], first, t, null, true).check();
    assertArrayEquals(new long[] {0, 0, 2, 2, 2, 5}, Reference.components(g));
    Csr directed = new Csr(new long[6], first, t, null, false);
    assertEquals(
        io.ferrite.fabric.ErrorCode.INVALID_ARGUMENT,
        assertThrows(FerriteException.class, () -> Reference.components(directed)).code());
  }
}
