package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.testing.SeedExtension;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The hint cache alone ({@link ExtentHints}): sets of four ways, eviction, bounds, off. */
@ExtendWith(SeedExtension.class)
class ExtentHintsCacheTest {
  /**
   * {@code n} distinct non-zero hashes that fall in the same set of a cache of {@code capacity}.
   */
  static long[] sameSet(int capacity, int n, Random random) {
    long[] out = new long[n];
    out[0] = random.nextLong() | 1;
    for (int found = 1; found < n; ) {
      long h = random.nextLong();
      if (h != 0 && set(h, capacity) == set(out[0], capacity)) {
        out[found++] = h;
      }
    }
    return out;
  }

  /** The set a hash falls in, as {@link ExtentHints} computes it. */
  static int set(long h, int capacity) {
    return (int) (h ^ (h >>> 32)) & (capacity - 1) & -ExtentHints.WAYS;
  }

  @Test
  void fourKeysOfOneSetAreKeptAndAFifthEvictsOne(Random random) {
    ExtentHints hints = new ExtentHints(64);
    long[] hs = sameSet(64, 5, random);
    for (int k = 0; k < 4; k++) {
      hints.remember(hs[k], 1, 100 * k, 50 + k, 7 + k);
    }
    for (int k = 0; k < 4; k++) {
      ExtentHints.Hint h = hints.lookup(hs[k]);
      assertNotNull(h, "way " + k);
      assertEquals(new ExtentHints.Hint(hs[k], 1, 100 * k, 50 + k, 7 + k), h);
    }
    hints.remember(hs[4], 2, 0, 60, 9);
    assertNotNull(hints.lookup(hs[4]));
    int kept = 0;
    for (int k = 0; k < 4; k++) {
      kept += hints.lookup(hs[k]) != null ? 1 : 0;
    }
    assertEquals(3, kept, "one of the four was evicted");

    hints.forget(hs[4]);
    assertNull(hints.lookup(hs[4]));
    hints.remember(hs[4], 2, 0, 60, 9);
    hints.remember(hs[4], 3, 16, 61, 10); // a new pointer for the same key: replaced in place
    assertEquals(new ExtentHints.Hint(hs[4], 3, 16, 61, 10), hints.lookup(hs[4]));
  }

  @Test
  void offAndHashZeroKeepNothing() {
    ExtentHints off = new ExtentHints(0);
    assertEquals(0, off.capacity());
    off.remember(42, 1, 2, 3, 4);
    assertNull(off.lookup(42));
    assertEquals(-1, off.find(42));
    off.forget(42);

    ExtentHints on = new ExtentHints(5);
    assertEquals(8, on.capacity(), "rounded up to a power of two");
    on.remember(0, 1, 2, 3, 4);
    assertNull(on.lookup(0), "hash 0 marks a free way");
    assertThrows(IllegalArgumentException.class, () -> new ExtentHints(-1));
    assertThrows(
        IllegalArgumentException.class, () -> new ExtentHints(ExtentHints.MAX_CAPACITY + 1));
  }

  @Test
  void aHintOutsideTheLayoutIsNotARead() {
    ExtentHints hints = new ExtentHints(16);
    List<RegionRef> extents = List.of(new RegionRef(1, 7, 0, 4096));
    hints.remember(11, 0, 4000, 96, 1);
    assertNotNull(hints.regionIn(hints.find(11), extents));
    hints.remember(11, 0, 4001, 96, 1);
    assertNull(hints.regionIn(hints.find(11), extents), "past the region's end");
    hints.remember(11, 1, 0, 96, 1);
    assertNull(hints.regionIn(hints.find(11), extents), "an unknown region");
    hints.remember(11, 0, -16, 96, 1);
    assertNull(hints.regionIn(hints.find(11), extents), "an offset past 2^31");
    hints.remember(11, 0, 0, 0, 1);
    assertNull(hints.regionIn(hints.find(11), extents), "an empty read");
  }

  @Test
  void manyKeysInAFourTimesLargerCacheAreAlmostAllKept(Random random) {
    ExtentHints hints = new ExtentHints(1 << 16);
    int keys = 20_000;
    long[] hs = new long[keys];
    for (int k = 0; k < keys; k++) {
      hs[k] = random.nextLong() | 1;
      hints.remember(hs[k], 0, k, 100, k);
    }
    int kept = 0;
    for (int k = 0; k < keys; k++) {
      kept += hints.lookup(hs[k]) != null ? 1 : 0;
    }
    // Direct-mapped, about 13% of the keys would have been evicted by a later key of their entry.
    // 4-way, a set overflows for about 0.8% of them (167 of 20,000 on average, 2% of seeds lose
    // over 200: the former bound of 1% failed seed 4312426176963283539 with 214); 1.5% is ten
    // standard deviations away and still far below direct-mapped.
    assertTrue(kept > keys * 985 / 1000, "kept " + kept + " of " + keys);
  }
}
