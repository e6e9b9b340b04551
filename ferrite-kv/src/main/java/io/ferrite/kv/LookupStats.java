package io.ferrite.kv;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * A table handle's client-side counts of one-sided lookups: probes per lookup (table reads: Pilaf
 * entries, hopscotch neighbourhoods and overflow blocks; not extents), torn copies retried and
 * layouts fetched again. Thread-safe.
 */
public final class LookupStats {
  /**
   * Lookups through the table ({@link #lookup}). A hinted get adds to {@link #hintedReads} before
   * its read and nothing after it unless the hint failed: a counter add is a locked instruction,
   * which right after the copy of a 1 KiB extent waits for the copy's stores to drain (the three
   * adds a hinted get made after its copy took a fifth to a quarter of a shm get's CPU).
   */
  final LongAdder lookups = new LongAdder();

  /** Probes beyond the first of each lookup (most lookups have none: one add saved per get). */
  final LongAdder extraProbes = new LongAdder();

  final AtomicLong maxProbes = new AtomicLong();
  final LongAdder tornRetries = new LongAdder();
  final LongAdder layoutFetches = new LongAdder();
  final LongAdder missConfirms = new LongAdder();

  /** Hinted extent reads ({@link ExtentHints}), counted before the read. */
  final LongAdder hintedReads = new LongAdder();

  /** Hinted extent reads that did not answer (the key changed since): the lookup read the table. */
  final LongAdder hintMisses = new LongAdder();

  /** Table placements fetched again from the master (a shard moved, or its server restarted). */
  final LongAdder placementFetches = new LongAdder();

  /** Writes sent again after BUSY (a shard frozen while it moves, or a saturated server). */
  final LongAdder busyRetries = new LongAdder();

  /**
   * Shipping rounds of a replicated write retried after a copy failed (docs/KV.md "Replication").
   */
  final LongAdder replicaRetries = new LongAdder();

  /** Writes that waited for a replicated shard's failover (its primary unreachable). */
  final LongAdder failoverWaits = new LongAdder();

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
      oneProbe();
    }
  }

  /**
   * A lookup answered by its hinted extent alone, a lookup of one probe: already counted by {@link
   * #hintedReads} (no add here, after the copy).
   */
  void hintHit() {
    oneProbe();
  }

  /** {@code hits} of {@code reads} hinted extent reads answered their lookups (a multiGet's). */
  void hinted(int reads, int hits) {
    if (reads > 0) {
      hintedReads.add(reads);
    }
    if (hits > 0) {
      oneProbe();
    }
    if (reads > hits) {
      hintMisses.add(reads - hits);
    }
  }

  private void oneProbe() {
    if (maxProbes.get() < 1) {
      maxProbes.accumulateAndGet(1, Math::max);
    }
  }

  public long lookups() {
    return lookups.sum() + hintHits();
  }

  public long probes() {
    return lookups() + extraProbes.sum();
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

  /** Hinted extent reads, whether they answered or not. */
  public long hintedReads() {
    return hintedReads.sum();
  }

  /** Hinted extent reads that answered their lookups (one read each). */
  public long hintHits() {
    return hintedReads.sum() - hintMisses.sum();
  }

  public long placementFetches() {
    return placementFetches.sum();
  }

  public long busyRetries() {
    return busyRetries.sum();
  }

  public long replicaRetries() {
    return replicaRetries.sum();
  }

  public long failoverWaits() {
    return failoverWaits.sum();
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
    replicaRetries.reset();
    failoverWaits.reset();
    hintedReads.reset();
    hintMisses.reset();
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
