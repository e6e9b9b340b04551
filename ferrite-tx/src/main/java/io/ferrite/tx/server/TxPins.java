package io.ferrite.tx.server;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * A decider's <b>pinned</b> commit decisions (docs/TX.md "Truncation"): a transaction decided
 * commit whose other participant regions may still hold its LOCK record, so may still ask OUTCOME.
 * Unlike the bounded maps of recent decisions ({@link RecentTxids}) a pin is never forgotten for
 * room: it goes only when every one of its regions answered that it resolved the transaction
 * durably (FaRM §3.4's truncation, asked by the decider: {@link TxService}'s reaper). Oldest first.
 * Thread-safe (its own monitor; held briefly, never across a call).
 */
final class TxPins {
  /** One pin: the decider region whose decision it is, the regions yet to resolve it. */
  static final class Pin {
    final long txid;
    final int deciderRegion;
    final Set<Integer> regions;

    /** When the pin was taken (or taken over by a promotion, a rebuild): asked after a tick. */
    final long sinceNanos;

    Pin(long txid, int deciderRegion, int[] regions, long sinceNanos) {
      this.txid = txid;
      this.deciderRegion = deciderRegion;
      this.regions = new HashSet<>();
      for (int r : regions) {
        this.regions.add(r);
      }
      this.sinceNanos = sinceNanos;
    }

    @Override
    public String toString() {
      return "tx "
          + Long.toHexString(txid)
          + " (decider region "
          + deciderRegion
          + ", waiting for regions "
          + new java.util.TreeSet<>(regions)
          + ")";
    }
  }

  private final Map<Long, Pin> pins = new LinkedHashMap<>();

  /** Pins {@code txid}'s commit until each of {@code regions} resolved it; nothing if none. */
  synchronized void pin(long txid, int deciderRegion, int[] regions, long nowNanos) {
    if (regions.length > 0 && !pins.containsKey(txid)) {
      pins.put(txid, new Pin(txid, deciderRegion, regions, nowNanos));
    }
  }

  /** Whether {@code txid} is pinned (then it was decided commit). */
  synchronized boolean pinned(long txid) {
    return pins.containsKey(txid);
  }

  synchronized int count() {
    return pins.size();
  }

  /** The oldest pin, or null. */
  synchronized Pin oldest() {
    return pins.isEmpty() ? null : pins.values().iterator().next();
  }

  /** The regions still waited for by the pins of decider region {@code deciderRegion}. */
  synchronized Map<Long, int[]> of(int deciderRegion) {
    Map<Long, int[]> out = new LinkedHashMap<>();
    for (Pin p : pins.values()) {
      if (p.deciderRegion == deciderRegion) {
        out.put(p.txid, p.regions.stream().mapToInt(Integer::intValue).toArray());
      }
    }
    return out;
  }

  /**
   * The pins taken at or before {@code beforeNanos}, by the participant region to ask: region →
   * txids (at most {@code max} per region, oldest first).
   */
  synchronized Map<Integer, List<Long>> due(long beforeNanos, int max) {
    Map<Integer, List<Long>> out = new TreeMap<>();
    for (Pin p : pins.values()) {
      if (p.sinceNanos - beforeNanos > 0) {
        break; // oldest first: the rest are newer
      }
      for (int r : p.regions) {
        List<Long> l = out.computeIfAbsent(r, k -> new ArrayList<>());
        if (l.size() < max) {
          l.add(p.txid);
        }
      }
    }
    return out;
  }

  /**
   * Region {@code region} resolved {@code txids} durably: each pin drops the region; those left
   * with none are released. The released ones, by decider region.
   */
  synchronized Map<Integer, List<Long>> resolved(int region, Collection<Long> txids) {
    Map<Integer, List<Long>> released = new TreeMap<>();
    for (long txid : txids) {
      Pin p = pins.get(txid);
      if (p != null && p.regions.remove(region) && p.regions.isEmpty()) {
        pins.remove(txid);
        released.computeIfAbsent(p.deciderRegion, k -> new ArrayList<>()).add(txid);
      }
    }
    return released;
  }
}
