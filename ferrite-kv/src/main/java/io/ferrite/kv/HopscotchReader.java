package io.ferrite.kv;

import static io.ferrite.kv.HopscotchLayout.BLOCK_SLOTS;
import static io.ferrite.kv.HopscotchLayout.BUCKET_HEADER;
import static io.ferrite.kv.HopscotchLayout.BUCKET_SLOTS;
import static io.ferrite.kv.HopscotchLayout.NEXT;
import static io.ferrite.kv.HopscotchLayout.OVERFLOW;

import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.RegionRef;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;

/**
 * One-sided lookups in a hopscotch table (FaRM §3.6; layout in {@link HopscotchLayout}). A lookup
 * is one read of the key's neighbourhood — its home bucket and the next, {@code 2 ×} {@link
 * HopscotchLayout#bucketBytes} — verified whole: both versions even, both checksums matching, and
 * the joint versions equal ({@code fwd(b) == back(b + 1)}), so a copy that straddles a move between
 * the two buckets is retried. An inline pair is answered from that copy; an out-of-line pair costs
 * one more read, of its extent, verified by incarnation and checksum. Where a batch saves a round
 * trip (tcp), a key read before has a hint ({@link ExtentHints}) that names its bucket and extent:
 * both are read in one batch, and the answer is taken only if the verified bucket names exactly
 * that extent and the extent copy verifies; otherwise the lookup goes on as without the hint. Only
 * when the key is in neither bucket and the home bucket has an overflow chain are the chain's
 * blocks read, each checked against the incarnation of the fat pointer that led to it. A consistent
 * neighbourhood without the key and without a chain is a miss in one read.
 */
final class HopscotchReader extends LayoutReader {
  /**
   * Longest chain a lookup follows before it takes the copy for torn (a chain is never this long).
   */
  static final int MAX_CHAIN = 1 << 16;

  /** The {@code where} of a hint to a pair in an overflow chain (bucket slots are 0..7). */
  private static final int CHAINED = 2 * BUCKET_SLOTS;

  private static final ThreadLocal<byte[]> SCRATCH = ThreadLocal.withInitial(() -> new byte[0]);
  private static final ThreadLocal<byte[]> MULTI_SCRATCH =
      ThreadLocal.withInitial(() -> new byte[0]);

  private final int slotBytes;
  private final int bucketBytes;
  private final int blockBytes;

  HopscotchReader(KvTable table, LookupStats stats) {
    super(table, stats);
    this.slotBytes = HopscotchLayout.slotBytes(table.info().options().inlineBytes());
    this.bucketBytes = HopscotchLayout.bucketBytes(slotBytes);
    this.blockBytes = HopscotchLayout.blockBytes(slotBytes);
  }

  /** The calling thread's buffer for a neighbourhood copy (no allocation per get). */
  private byte[] scratch() {
    byte[] b = SCRATCH.get();
    if (b.length < 2 * bucketBytes) {
      b = new byte[2 * bucketBytes];
      SCRATCH.set(b);
    }
    return b;
  }

  private long neighbourhoodOffset(ShardLayout l, long h) {
    int buckets = l.slots() / BUCKET_SLOTS;
    return HopscotchLayout.bucketOffset(HopscotchLayout.home(h, buckets), bucketBytes);
  }

  @Override
  Object probe(FabricConnection c, ShardLayout l, byte[] key, long h) {
    ExtentHints.Hint hint = table.hinting(c) ? hints.lookup(h) : null;
    RegionRef hinted = hint == null ? null : hint.regionIn(l.extents());
    if (hinted != null && hint.where() < CHAINED) {
      Object v = probeHintedBucket(c, l, key, h, hint, hinted);
      if (v != null) {
        return v;
      }
      hints.forget(h); // the key is not where the hint said: the full lookup, which remembers anew
      hint = null;
      hinted = null;
    }
    byte[] nb = scratch();
    ByteBuffer nbb = ByteBuffer.wrap(nb, 0, 2 * bucketBytes);
    long offset = neighbourhoodOffset(l, h);
    byte[] pre = null;
    if (hinted == null) {
      // readSync, not join(read): over tcp the caller then reads the answer itself (a lane).
      c.readSync(l.entries(), offset, nbb);
    } else {
      // A pair in the chain: the neighbourhood and the hinted extent in one round trip.
      pre = readBeside(c, l.entries(), offset, nbb, hint, hinted, h);
    }
    for (int i = 0; i < 2 * BUCKET_SLOTS; i++) {
      int at = slotAt(i);
      if (HopscotchLayout.slotMatches(nb, at, slotBytes, key, h)) {
        // A hit needs only its own bucket whole: the pair was there at the instant that bucket's
        // version was current. (A miss needs both buckets and their joint versions, below.)
        Object bad = verifyBucket(nb, i < BUCKET_SLOTS ? 0 : bucketBytes);
        if (bad != null) {
          return bad;
        }
        if (!HopscotchLayout.outOfLine(nb, at)) {
          stats.lookup(1);
          return HopscotchLayout.inlineValue(nb, at);
        }
        Object v = readExtent(c, l, nb, at, key, h, i, 1);
        if (v != MISS) {
          return v; // the value, TORN or STALE; MISS is another key with the same hash
        }
      }
    }
    Object bad = verify(nb);
    if (bad != null) {
      return bad;
    }
    Object v = followChain(c, l, nb, key, h, pre != null ? hint : null, pre);
    if (v == MISS && hint != null) {
      hints.forget(h);
    }
    return v;
  }

  /**
   * A lookup by a hint to a bucket slot ({@link ExtentHints}): one round trip reads the one bucket
   * of the neighbourhood the hint names and the hinted extent. A hit needs only its own bucket
   * whole (see {@link #probe}), so a verified bucket whose slot for the key names exactly the
   * hinted extent, and a copy of that extent that verifies, answer the lookup. Returns the value,
   * TORN or STALE; if the key's slot names another extent, that extent's read result; null if the
   * key is not in that bucket (it moved, or is gone: the full lookup decides).
   */
  private Object probeHintedBucket(
      FabricConnection c,
      ShardLayout l,
      byte[] key,
      long h,
      ExtentHints.Hint hint,
      RegionRef hinted) {
    byte[] nb = scratch();
    int half = hint.where() < BUCKET_SLOTS ? 0 : bucketBytes;
    byte[] pre =
        readBeside(
            c,
            l.entries(),
            neighbourhoodOffset(l, h) + half,
            ByteBuffer.wrap(nb, half, bucketBytes),
            hint,
            hinted,
            h);
    Object bad = verifyBucket(nb, half);
    if (bad != null) {
      // Not tried again: the retry takes the plain path. A copy of one bucket cut by a racing write
      // fails where the neighbourhood's other bucket could have answered, and a hot key's bucket
      // changes all the time.
      hints.forget(h);
      return bad;
    }
    int from = half == 0 ? 0 : BUCKET_SLOTS;
    for (int i = from; i < from + BUCKET_SLOTS; i++) {
      int at = slotAt(i);
      if (HopscotchLayout.slotMatches(nb, at, slotBytes, key, h)) {
        if (!HopscotchLayout.outOfLine(nb, at)) {
          stats.lookup(1);
          return HopscotchLayout.inlineValue(nb, at);
        }
        Object v =
            names(hint, nb, at)
                ? countedHintedValue(pre, nb, at, key, 1, h)
                : readExtent(c, l, nb, at, key, h, i, 1);
        if (v != MISS) {
          return v;
        }
      }
    }
    return null;
  }

  /** Whether {@code hint} names the extent of the verified slot at {@code at} of {@code src}. */
  private static boolean names(ExtentHints.Hint hint, byte[] src, int at) {
    return hint.names(
        HopscotchLayout.extentRegion(src, at),
        HopscotchLayout.extentOffset(src, at),
        HopscotchLayout.extentLength(src, at),
        HopscotchLayout.extentChecksum(src, at));
  }

  /** The value in {@code pre}, an extent copy read on a hint that names the slot at {@code at}. */
  private static Object hintedValue(byte[] pre, byte[] src, int at, byte[] key) {
    return extentValue(
        pre,
        HopscotchLayout.extentIncarnation(src, at),
        HopscotchLayout.extentChecksum(src, at),
        key);
  }

  /** {@link #hintedValue}, counted as a lookup of {@code probes} table reads. */
  private Object countedHintedValue(
      byte[] pre, byte[] src, int at, byte[] key, int probes, long h) {
    Object v = hintedValue(pre, src, at, key);
    if (v instanceof byte[]) {
      stats.hintHits.increment();
      stats.lookup(probes);
    } else {
      // A hinted copy that fails to verify is not tried again: the retry takes the plain path.
      hints.forget(h);
    }
    return v;
  }

  /** Remembers the pointer of the slot at {@code at} of {@code src} ({@code i}: where it is). */
  private void remember(long h, int i, byte[] src, int at) {
    hints.remember(
        h,
        i,
        HopscotchLayout.extentRegion(src, at),
        HopscotchLayout.extentOffset(src, at),
        HopscotchLayout.extentLength(src, at),
        HopscotchLayout.extentChecksum(src, at));
  }

  private Object verifyBucket(byte[] nb, int at) {
    // A bucket copy at 'at' of 'nb' (a neighbourhood buffer, or multiGet's buffer of many).
    return switch (HopscotchLayout.check(nb, at, bucketBytes)) {
      case OK -> null;
      case MOVED -> STALE;
      case TORN -> TORN;
    };
  }

  /** Offset of neighbourhood slot {@code i} (0..7) in a neighbourhood copy. */
  private int slotAt(int i) {
    return (i / BUCKET_SLOTS) * bucketBytes + BUCKET_HEADER + (i % BUCKET_SLOTS) * slotBytes;
  }

  /**
   * Verifies a neighbourhood copy: null if both buckets are whole and consistent with each other,
   * else TORN or STALE.
   */
  private Object verify(byte[] nb) {
    return verify(nb, 0);
  }

  private Object verify(byte[] b, int at) {
    return switch (HopscotchLayout.verifyNeighbourhood(b, at, bucketBytes)) {
      case OK -> null;
      case MOVED -> STALE;
      case TORN -> TORN;
    };
  }

  /**
   * Reads the extent of the verified out-of-line slot at {@code at} of {@code src}; a value found
   * there becomes the key's hint ({@code slot}: neighbourhood slot 0..7, or {@link #CHAINED}).
   */
  private Object readExtent(
      FabricConnection c,
      ShardLayout l,
      byte[] src,
      int at,
      byte[] key,
      long h,
      int slot,
      int probes) {
    int region = HopscotchLayout.extentRegion(src, at);
    if (region >= l.extents().size()) {
      return STALE; // a region added since the layout was fetched (the epoch moved)
    }
    byte[] e = new byte[HopscotchLayout.extentLength(src, at)];
    int inc = HopscotchLayout.extentIncarnation(src, at);
    long sum = HopscotchLayout.extentChecksum(src, at);
    c.readSync(
        l.extents().get(region),
        HopscotchLayout.extentOffset(src, at) & 0xFFFFFFFFL,
        ByteBuffer.wrap(e));
    Object v = extentValue(e, inc, sum, key);
    if (v instanceof byte[]) {
      stats.lookup(probes);
      remember(h, slot, src, at);
    }
    return v;
  }

  private static Object extentValue(byte[] e, int inc, long sum, byte[] key) {
    if (!HopscotchLayout.extentValid(e, inc, sum)) {
      return TORN; // freed and reused (incarnation), or a torn copy (checksum)
    }
    return HopscotchLayout.extentHasKey(e, key) ? HopscotchLayout.extentValue(e) : MISS;
  }

  /**
   * Follows the home bucket's overflow chain (FaRM §3.6: "only then"): each block read one-sided,
   * verified, and its incarnation matched against the pointer that led to it, else the lookup
   * restarts. No chain, or the end of it, is a miss.
   */
  private Object followChain(
      FabricConnection c,
      ShardLayout l,
      byte[] nb,
      byte[] key,
      long h,
      ExtentHints.Hint hint,
      byte[] pre) {
    byte[] src = nb;
    int ptr = OVERFLOW;
    int probes = 1;
    while (!HopscotchLayout.isNull(src, ptr)) {
      int region = HopscotchLayout.pointerRegion(src, ptr);
      if (region >= l.extents().size()) {
        return STALE;
      }
      long inc = HopscotchLayout.pointerIncarnation(src, ptr);
      byte[] block = new byte[blockBytes];
      c.readSync(
          l.extents().get(region),
          HopscotchLayout.pointerOffset(src, ptr) & 0xFFFFFFFFL,
          ByteBuffer.wrap(block));
      probes++;
      if (HopscotchLayout.verifyBlock(block, blockBytes, inc) != HopscotchLayout.Check.OK
          || probes > MAX_CHAIN) {
        return TORN;
      }
      for (int i = 0; i < BLOCK_SLOTS; i++) {
        int at = BUCKET_HEADER + i * slotBytes;
        if (HopscotchLayout.slotMatches(block, at, slotBytes, key, h)) {
          if (!HopscotchLayout.outOfLine(block, at)) {
            stats.lookup(probes);
            return HopscotchLayout.inlineValue(block, at);
          }
          Object v =
              pre != null && names(hint, block, at)
                  ? countedHintedValue(pre, block, at, key, probes, h)
                  : readExtent(c, l, block, at, key, h, CHAINED, probes);
          if (v != MISS) {
            return v;
          }
        }
      }
      src = block;
      ptr = NEXT;
    }
    stats.lookup(probes);
    return MISS;
  }

  /**
   * Round 1: every key's neighbourhood, or for a key with a hint ({@link ExtentHints}) the one
   * bucket it names and the hinted extent, one batch per server, one flush each. Inline hits,
   * confirmed misses (a consistent neighbourhood without the key and without a chain) and
   * out-of-line hits whose hint named the slot's extent finish here; round 2 reads the other
   * out-of-line hits' extents. Torn or stale copies and keys that need their chain are left for the
   * single-key path.
   */
  @Override
  void multiGet(List<byte[]> keys, long[] hs, ShardLayout[] ls, byte[][] out, boolean[] done) {
    Counts counts = new Counts();
    try {
      multiGet(keys, hs, ls, out, done, counts);
    } finally {
      counts.addTo(stats); // once per call, not per key (they showed up in its profile)
    }
  }

  /** What a multiGet counted, added to the handle's stats once at its end. */
  private static final class Counts {
    int found;
    int hinted;
    int hits;

    void addTo(LookupStats s) {
      s.oneProbeLookups(found);
      if (hinted > 0) {
        s.hintedReads.add(hinted);
        s.hintHits.add(hits);
      }
    }
  }

  private void multiGet(
      List<byte[]> keys, long[] hs, ShardLayout[] ls, byte[][] out, boolean[] done, Counts counts) {
    int n = keys.size();
    int nbBytes = 2 * bucketBytes;
    // Every key's neighbourhood in one per-thread buffer: no allocation per key but its value.
    byte[] all = MULTI_SCRATCH.get();
    if (all.length < n * nbBytes) {
      all = new byte[n * nbBytes];
      MULTI_SCRATCH.set(all);
    }
    Batches round = new Batches(table.client());
    ExtentHints.Hint[] hinted = null;
    byte[][] ext = null;
    int hintServer = -1; // whether hints are worth it, for the last server asked about
    boolean hinting = false;
    int[] only = null; // per key: -1 the whole neighbourhood was read, else the one bucket's offset
    for (int i = 0; i < n; i++) {
      ShardLayout l = ls[i];
      ExtentHints.Hint hint = hints.lookup(hs[i]);
      if (hint != null && l.entries().serverId() != hintServer) {
        hintServer = l.entries().serverId();
        hinting = table.hinting(table.client().connection(hintServer));
      }
      RegionRef r = hint != null && hinting ? hint.regionIn(l.extents()) : null;
      long offset = neighbourhoodOffset(l, hs[i]);
      if (r == null) {
        round.read(l.entries(), offset, ByteBuffer.wrap(all, i * nbBytes, nbBytes));
        continue;
      }
      if (ext == null) {
        ext = new byte[n][];
        hinted = new ExtentHints.Hint[n];
        only = new int[n];
        Arrays.fill(only, -1);
      }
      if (hint.where() < CHAINED) {
        // The one bucket the hint names, as probeHintedBucket reads it.
        only[i] = hint.where() < BUCKET_SLOTS ? 0 : bucketBytes;
        round.read(
            l.entries(),
            offset + only[i],
            ByteBuffer.wrap(all, i * nbBytes + only[i], bucketBytes));
      } else {
        round.read(l.entries(), offset, ByteBuffer.wrap(all, i * nbBytes, nbBytes));
      }
      hinted[i] = hint;
      ext[i] = new byte[hint.length()];
      round.read(r, hint.offset() & 0xFFFFFFFFL, ByteBuffer.wrap(ext[i]));
      counts.hinted++;
    }
    if (!round.flushAndWait()) {
      if (hinted != null) {
        for (int i = 0; i < n; i++) {
          if (hinted[i] != null) {
            hints.forget(hs[i]); // one of them may be why the round failed
          }
        }
      }
      return;
    }
    int[] extAt = null;
    int[] extSlot = null;
    boolean second = false;
    for (int i = 0; i < n; i++) {
      byte[] key = keys.get(i);
      int base = i * nbBytes;
      int at = -1;
      int slot = -1;
      int half = only == null ? -1 : only[i];
      int from = half <= 0 ? 0 : BUCKET_SLOTS;
      int to = half < 0 ? 2 * BUCKET_SLOTS : from + BUCKET_SLOTS;
      for (int s = from; s < to && at < 0; s++) {
        if (HopscotchLayout.slotMatches(all, base + slotAt(s), slotBytes, key, hs[i])) {
          at = base + slotAt(s);
          slot = s;
          if (verifyBucket(all, base + (s < BUCKET_SLOTS ? 0 : bucketBytes)) != null) {
            at = -2; // torn or moved: the single-key path
          }
        }
      }
      byte[] pre = ext == null ? null : ext[i];
      if (ext != null) {
        ext[i] = null; // from here on: only the extents of round 2
      }
      if (at == -2) {
        continue;
      }
      if (at < 0 && half >= 0) {
        hints.forget(hs[i]); // not in the bucket the hint named: the single-key path looks
      } else if (at < 0) {
        if (verify(all, base) == null && HopscotchLayout.isNull(all, base + OVERFLOW)) {
          done[i] = true; // a consistent neighbourhood, no chain: absent
          counts.found++;
          if (pre != null) {
            hints.forget(hs[i]);
          }
        }
      } else if (!HopscotchLayout.outOfLine(all, at)) {
        out[i] = HopscotchLayout.inlineValue(all, at);
        done[i] = true;
        counts.found++;
      } else if (pre != null && names(hinted[i], all, at)) {
        Object v = hintedValue(pre, all, at, key);
        if (v instanceof byte[] value) {
          counts.found++;
          counts.hits++;
          out[i] = value;
          done[i] = true;
        } else {
          hints.forget(hs[i]); // torn or another key: the single-key path, without the hint
        }
      } else {
        int region = HopscotchLayout.extentRegion(all, at);
        if (region < ls[i].extents().size()) {
          if (ext == null) {
            ext = new byte[n][];
          }
          if (extAt == null) {
            extAt = new int[n];
            extSlot = new int[n];
          }
          extAt[i] = at;
          extSlot[i] = slot;
          ext[i] = new byte[HopscotchLayout.extentLength(all, at)];
          second = true;
          RegionRef r = ls[i].extents().get(region);
          round.read(
              r, HopscotchLayout.extentOffset(all, at) & 0xFFFFFFFFL, ByteBuffer.wrap(ext[i]));
        }
      }
    }
    if (!second || !round.flushAndWait()) {
      return;
    }
    for (int i = 0; i < n; i++) {
      if (ext[i] != null) {
        int at = extAt[i];
        Object v =
            extentValue(
                ext[i],
                HopscotchLayout.extentIncarnation(all, at),
                HopscotchLayout.extentChecksum(all, at),
                keys.get(i));
        if (v instanceof byte[] value) {
          out[i] = value;
          done[i] = true;
          counts.found++;
          remember(hs[i], extSlot[i], all, at);
        }
      }
    }
  }
}
