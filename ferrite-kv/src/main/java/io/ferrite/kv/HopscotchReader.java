package io.ferrite.kv;

import static io.ferrite.kv.HopscotchLayout.BLOCK_SLOTS;
import static io.ferrite.kv.HopscotchLayout.BUCKET_HEADER;
import static io.ferrite.kv.HopscotchLayout.BUCKET_SLOTS;
import static io.ferrite.kv.HopscotchLayout.NEXT;
import static io.ferrite.kv.HopscotchLayout.OVERFLOW;

import io.ferrite.fabric.FabricConnection;
import io.ferrite.kernel.extent.Extents;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * One-sided lookups in a hopscotch table (FaRM §3.6; layout in {@link HopscotchLayout}). A lookup
 * is one read of the key's neighbourhood — its home bucket and the next, {@code 2 ×} {@link
 * HopscotchLayout#bucketBytes} — verified whole: both versions even, both checksums matching, and
 * the joint versions equal ({@code fwd(b) == back(b + 1)}), so a copy that straddles a move between
 * the two buckets is retried. An inline pair is answered from that copy; an out-of-line pair costs
 * one more read, of its extent, verified against the slot's checksum ({@link Extents}); where hints
 * are used ({@link ExtentHints}), a key read before skips the bucket and reads its extent alone
 * ({@link LayoutReader}). Only when the key is in neither bucket and the home bucket has an
 * overflow chain are the chain's blocks read, each checked against the incarnation of the fat
 * pointer that led to it. A consistent neighbourhood without the key and without a chain is a miss
 * in one read.
 */
final class HopscotchReader extends LayoutReader {
  /**
   * Longest chain a lookup follows before it takes the copy for torn (a chain is never this long).
   */
  static final int MAX_CHAIN = 1 << 16;

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
  Object probeTable(FabricConnection c, ShardLayout l, byte[] key, long h) {
    byte[] nb = scratch();
    // readSync, not join(read): over tcp the caller then reads the answer itself (a lane).
    c.readSync(l.entries(), neighbourhoodOffset(l, h), ByteBuffer.wrap(nb, 0, 2 * bucketBytes));
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
        Object v = readExtent(c, l, nb, at, key, h, 1);
        if (v != MISS) {
          return v; // the value, TORN or STALE; MISS is another key with the same hash
        }
      }
    }
    Object bad = verify(nb);
    if (bad != null) {
      return bad;
    }
    return followChain(c, l, nb, key, h);
  }

  /** Remembers the pointer of the verified slot at {@code at} of {@code src} as the key's hint. */
  private void remember(long h, byte[] src, int at) {
    remember(
        h,
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
   * there becomes the key's hint.
   */
  private Object readExtent(
      FabricConnection c, ShardLayout l, byte[] src, int at, byte[] key, long h, int probes) {
    int region = HopscotchLayout.extentRegion(src, at);
    if (region >= l.extents().size()) {
      return STALE; // a region added since the layout was fetched (the epoch moved)
    }
    byte[] e = new byte[HopscotchLayout.extentLength(src, at)];
    c.readSync(
        l.extents().get(region),
        HopscotchLayout.extentOffset(src, at) & 0xFFFFFFFFL,
        ByteBuffer.wrap(e));
    Object v = extentValue(e, HopscotchLayout.extentChecksum(src, at), key);
    if (v instanceof byte[]) {
      stats.lookup(probes);
      remember(h, src, at);
    }
    return v;
  }

  private static Object extentValue(byte[] e, long sum, byte[] key) {
    if (!Extents.valid(e, sum)) {
      return TORN; // freed and reused (incarnation), or a torn copy (checksum)
    }
    return Extents.hasKey(e, key) ? Extents.value(e) : MISS;
  }

  /**
   * Follows the home bucket's overflow chain (FaRM §3.6: "only then"): each block read one-sided,
   * verified, and its incarnation matched against the pointer that led to it, else the lookup
   * restarts. No chain, or the end of it, is a miss.
   */
  private Object followChain(FabricConnection c, ShardLayout l, byte[] nb, byte[] key, long h) {
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
          Object v = readExtent(c, l, block, at, key, h, probes);
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
   * Round 1: every unhinted key's neighbourhood (and the hinted extents, {@link LayoutReader}), one
   * batch per server, one flush each. Inline hits and confirmed misses (a consistent neighbourhood
   * without the key and without a chain) finish here; round 2 reads the out-of-line hits' extents.
   * Torn or stale copies and keys that need their chain are left for the single-key path.
   */
  @Override
  void multiGet(
      List<byte[]> keys,
      long[] hs,
      ShardLayout[] ls,
      byte[][] out,
      boolean[] done,
      Batches round,
      HintedRound hinted) {
    int n = keys.size();
    int nbBytes = 2 * bucketBytes;
    // Every key's neighbourhood in one per-thread buffer: no allocation per key but its value.
    byte[] all = MULTI_SCRATCH.get();
    if (all.length < n * nbBytes) {
      all = new byte[n * nbBytes];
      MULTI_SCRATCH.set(all);
    }
    for (int i = 0; i < n; i++) {
      if (!hinted.covers(i)) {
        round.read(
            ls[i].entries(),
            neighbourhoodOffset(ls[i], hs[i]),
            ByteBuffer.wrap(all, i * nbBytes, nbBytes));
      }
    }
    if (!hinted.flush(round, keys, hs, out, done)) {
      return;
    }
    int found = 0; // lookups of one table read, counted once at the end (they showed in a profile)
    byte[][] ext = null;
    int[] extAt = null;
    for (int i = 0; i < n; i++) {
      if (hinted.covers(i)) {
        continue; // settled by its hint, or left for the single-key path
      }
      byte[] key = keys.get(i);
      int base = i * nbBytes;
      int at = -1;
      for (int s = 0; s < 2 * BUCKET_SLOTS && at < 0; s++) {
        if (HopscotchLayout.slotMatches(all, base + slotAt(s), slotBytes, key, hs[i])) {
          at = base + slotAt(s);
          if (verifyBucket(all, base + (s < BUCKET_SLOTS ? 0 : bucketBytes)) != null) {
            at = -2; // torn or moved: the single-key path
          }
        }
      }
      if (at == -2) {
        continue;
      }
      if (at < 0) {
        if (verify(all, base) == null && HopscotchLayout.isNull(all, base + OVERFLOW)) {
          done[i] = true; // a consistent neighbourhood, no chain: absent
          found++;
        }
      } else if (!HopscotchLayout.outOfLine(all, at)) {
        out[i] = HopscotchLayout.inlineValue(all, at);
        done[i] = true;
        found++;
      } else {
        int region = HopscotchLayout.extentRegion(all, at);
        if (region < ls[i].extents().size()) {
          if (ext == null) {
            ext = new byte[n][];
            extAt = new int[n];
          }
          extAt[i] = at;
          ext[i] = new byte[HopscotchLayout.extentLength(all, at)];
          round.read(
              ls[i].extents().get(region),
              HopscotchLayout.extentOffset(all, at) & 0xFFFFFFFFL,
              ByteBuffer.wrap(ext[i]));
        }
      }
    }
    if (ext != null && round.flushAndWait()) {
      for (int i = 0; i < n; i++) {
        if (ext[i] != null) {
          int at = extAt[i];
          Object v = extentValue(ext[i], HopscotchLayout.extentChecksum(all, at), keys.get(i));
          if (v instanceof byte[] value) {
            out[i] = value;
            done[i] = true;
            found++;
            remember(hs[i], all, at);
          }
        }
      }
    }
    stats.oneProbeLookups(found);
  }
}
