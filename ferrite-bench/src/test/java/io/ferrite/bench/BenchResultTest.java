package io.ferrite.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class BenchResultTest {
  @Test
  void lowerIsBetterRatioIsReferenceOverValue() {
    BenchResult ceiling = BenchResult.of("ceiling", 100, "ns", Better.LOWER);
    // Twice as slow as the ceiling: half as good.
    assertEquals(0.5, BenchResult.against("slow", 200, "ns", Better.LOWER, ceiling).ratio());
    // Faster than the ceiling: better than it.
    assertEquals(2.0, BenchResult.against("fast", 50, "ns", Better.LOWER, ceiling).ratio());
  }

  @Test
  void higherIsBetterRatioIsValueOverReference() {
    BenchResult ceiling = BenchResult.of("ceiling", 1000, "MiB/s", Better.HIGHER);
    assertEquals(0.25, BenchResult.against("slow", 250, "MiB/s", Better.HIGHER, ceiling).ratio());
    assertEquals(2.0, BenchResult.against("fast", 2000, "MiB/s", Better.HIGHER, ceiling).ratio());
  }

  @Test
  void ratioAboveOneAlwaysMeansBetter() {
    for (Better b : Better.values()) {
      double better = b == Better.LOWER ? 1 : 100;
      double worse = b == Better.LOWER ? 100 : 1;
      assertTrue(BenchResult.ratio(b, better, 10) > 1, b.label());
      assertTrue(BenchResult.ratio(b, worse, 10) < 1, b.label());
      assertEquals(1.0, BenchResult.ratio(b, 10, 10), b.label());
    }
  }

  @Test
  void ratioIsNaNWithoutPositiveFiniteValues() {
    assertTrue(Double.isNaN(BenchResult.ratio(Better.LOWER, 0, 10)));
    assertTrue(Double.isNaN(BenchResult.ratio(Better.LOWER, 10, 0)));
    assertTrue(Double.isNaN(BenchResult.ratio(Better.HIGHER, -1, 10)));
    assertTrue(Double.isNaN(BenchResult.ratio(Better.HIGHER, Double.NaN, 10)));
    assertTrue(Double.isNaN(BenchResult.ratio(Better.HIGHER, 1, Double.POSITIVE_INFINITY)));
  }

  @Test
  void keepsTheReference() {
    BenchResult ceiling = BenchResult.of("ceiling.memcpy.8B.p50", 40, "ns", Better.LOWER);
    BenchResult r = BenchResult.against("shm.read.8B.p50", 80, "ns", Better.LOWER, ceiling);
    assertTrue(r.hasReference());
    assertEquals("ceiling.memcpy.8B.p50", r.reference());
    assertEquals(40, r.referenceValue());
    assertFalse(ceiling.hasReference());
    assertTrue(Double.isNaN(ceiling.ratio()));
  }

  @Test
  void refusesAReferenceOfAnotherUnitOrDirection() {
    BenchResult ns = BenchResult.of("a", 1, "ns", Better.LOWER);
    assertThrows(
        IllegalArgumentException.class,
        () -> BenchResult.against("b", 1, "MiB/s", Better.HIGHER, ns));
    assertThrows(
        IllegalArgumentException.class, () -> BenchResult.against("b", 1, "ns", Better.HIGHER, ns));
  }

  @Test
  void sizeLabels() {
    assertEquals("8B", Sizes.label(8));
    assertEquals("1000B", Sizes.label(1000));
    assertEquals("1KiB", Sizes.label(1024));
    assertEquals("64KiB", Sizes.label(65536));
    assertEquals("1MiB", Sizes.label(1 << 20));
    assertEquals("1536KiB", Sizes.label(1536 * 1024));
  }

  @Test
  void workloadStaysInsideTheWindow() {
    Workload w = new Workload(1 << 20);
    for (int size : new int[] {8, 1024, 65536, 1 << 20}) {
      for (long i = 0; i < 5000; i++) {
        long off = w.offset(i, size);
        assertTrue(off >= 0 && off + size <= w.window(), size + "@" + i + " -> " + off);
        assertEquals(0, off % 64, "cache-line aligned");
      }
    }
  }
}
