package io.ferrite.kv;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * A table handle's client-side counts of one-sided lookups: probes per lookup (table reads: Pilaf
 * entries, hopscotch neighbourhoods and overflow blocks; not extents), torn copies retried and
 * layouts fetched again. Thread-safe.
 */
public final class LookupStats {
  final LongAdder lookups = new LongAdder();

  /** Probes beyond the first of each lookup (most lookups have none: one add saved per get). */
  final LongAdder extraProbes = new LongAdder();

  final AtomicLong maxProbes = new AtomicLong();
  final LongAdder tornRetries = new LongAdder();
  final LongAdder layoutFetches = new LongAdder();
  final LongAdder missConfirms = new LongAdder();

  /** Extents read beside the table read, where a hint said they would be ({@link ExtentHints}). */
  final LongAdder hintedReads = new LongAdder();

  /** Hinted extent reads whose copy was the one the table named (the others cost one more read). */
  final LongAdder hintHits = new LongAdder();

  /** Table placements fetched again from the master (a shard moved, or its server restarted). */
  final LongAdder placementFetches = new LongAdder();

  /** Writes sent again after BUSY (a shard frozen while it moves, or a saturated server). */
  final LongAdder busyRetries = new LongAdder();

  void lookup(int p) {
    lookups.increment();
    if (p > 1) {
      extraProbes.add(p - 1);
    }
    if (p > maxProbes.get()) {
      maxProbes.accumulateAndGet(p, Math::max);
    }
  }

  /** {@code n} lookups of one table read each (a multiGet's, added at once). */
  void oneProbeLookups(int n) {
    if (n > 0) {
      lookups.add(n);
      if (maxProbes.get() < 1) {
        maxProbes.accumulateAndGet(1, Math::max);
      }
    }
  }

  public long lookups() {
    return lookups.sum();
  }

  public long probes() {
    return lookups.sum() + extraProbes.sum();
  }

  public long maxProbes() {
    return maxProbes.get();
  }

  public long tornRetries() {
    return tornRetries.sum();
  }

  public long layoutFetches() {
    return layoutFetches.sum();
  }

  public long missConfirms() {
    return missConfirms.sum();
  }

  public long hintedReads() {
    return hintedReads.sum();
  }

  public long hintHits() {
    return hintHits.sum();
  }

  public long placementFetches() {
    return placementFetches.sum();
  }

  public long busyRetries() {
    return busyRetries.sum();
  }

  /** Zeroes every count (between benchmark phases). */
  public void reset() {
    lookups.reset();
    extraProbes.reset();
    maxProbes.set(0);
    tornRetries.reset();
    layoutFetches.reset();
    missConfirms.reset();
    placementFetches.reset();
    busyRetries.reset();
    hintedReads.reset();
    hintHits.reset();
  }

  @Override
  public String toString() {
    long l = lookups();
    return String.format(
        java.util.Locale.ROOT,
        "%d lookups, %.3f probes/lookup (max %d), %d torn retries, %d layout fetches,"
            + " %d of %d hinted extent reads hit",
        l,
        l == 0 ? 0.0 : (double) probes() / l,
        maxProbes(),
        tornRetries(),
        layoutFetches(),
        hintHits(),
        hintedReads());
  }
}
