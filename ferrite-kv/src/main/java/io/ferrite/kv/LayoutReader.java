package io.ferrite.kv;

import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.extent.Extents;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * How a client reads one table layout with one-sided reads only: the layout-specific half of {@link
 * KvTable}'s gets. Implementations are stateless apart from their counts and thread-safe.
 *
 * <h2>Contract</h2>
 *
 * <ul>
 *   <li>A key with a hint ({@link ExtentHints}) is looked up first by one read of the hinted extent
 *       alone: a copy that verifies against the hint and is marked current is the key's value at
 *       the instant its current word was copied ({@link Extents}); any other outcome forgets the
 *       hint, and the table is read as without it. This part is the same for every layout and lives
 *       here.
 *   <li>{@link #probe} is one attempt: it returns the value, {@link #MISS} only for a key that was
 *       absent at some instant during the attempt, {@link #TORN} when a copy failed to verify (a
 *       racing write; {@link KvTable} retries with backoff) or {@link #STALE} when the cached
 *       layout is out of date (a moved array, an unknown region; {@link KvTable} fetches it again).
 *       It never returns a value the key did not hold at some instant during the attempt.
 *   <li>{@link #multiGet} fills what it could verify in as few rounds of batched reads as the
 *       layout allows (one flush per server per round) and leaves the rest null and not done, for
 *       {@link KvTable} to finish one key at a time.
 * </ul>
 */
abstract class LayoutReader {
  static final Object TORN = new Object();
  static final Object STALE = new Object();
  static final Object MISS = new Object();

  final KvTable table;
  final LookupStats stats;
  final ExtentHints hints;

  LayoutReader(KvTable table, LookupStats stats) {
    this.table = table;
    this.stats = stats;
    this.hints = table.extentHints();
  }

  static LayoutReader of(KvTable table, LookupStats stats) {
    return table.info().options().layout() == TableOptions.Layout.PILAF
        ? new PilafReader(table, stats)
        : new HopscotchReader(table, stats);
  }

  /**
   * One lookup attempt of {@code key} (hash {@code h}) in shard layout {@code l}: by its hint if it
   * has one that holds, else {@link #probeTable}.
   */
  final Object probe(FabricConnection c, ShardLayout l, byte[] key, long h) {
    if (table.hinting()) {
      byte[] v = probeHint(c, l, key, h);
      if (v != null) {
        return v;
      }
    }
    return probeTable(c, l, key, h);
  }

  /** One lookup attempt by the table's own reads (the layout's one-sided lookup). */
  abstract Object probeTable(FabricConnection c, ShardLayout l, byte[] key, long h);

  /**
   * Reads the hinted extent of {@code key} alone: its value if the copy verifies against the hint
   * and holds the key, else null, with the hint forgotten (the key was written or deleted since, or
   * the hint names a region this layout does not have). A failed read forgets it too and is thrown.
   */
  private byte[] probeHint(FabricConnection c, ShardLayout l, byte[] key, long h) {
    int i = hints.find(h);
    if (i < 0) {
      return null;
    }
    RegionRef r = hints.regionIn(i, l.extents());
    int length = hints.length(i);
    long checksum = hints.checksum(i);
    byte[] v = null;
    if (r != null) {
      byte[] e = scratch(length);
      stats.hintedReads.increment();
      try {
        c.readSync(r, hints.offset(i) & 0xFFFFFFFFL, ByteBuffer.wrap(e, 0, length));
      } catch (FerriteException ex) {
        stats.hintMisses.increment();
        hints.forget(h);
        throw ex;
      }
      v = Extents.currentValue(e, 0, length, checksum, key);
    }
    if (v == null) {
      if (r != null) {
        stats.hintMisses.increment();
      }
      hints.forget(h);
      return null;
    }
    stats.hintHit();
    return v;
  }

  private static final ThreadLocal<byte[]> HINT_SCRATCH =
      ThreadLocal.withInitial(() -> new byte[0]);

  /** The calling thread's buffer for hinted extent copies, at least {@code length} bytes. */
  private static byte[] scratch(int length) {
    byte[] b = HINT_SCRATCH.get();
    if (b.length < length) {
      b = new byte[Math.max(length, 2 * b.length)];
      HINT_SCRATCH.set(b);
    }
    return b;
  }

  /** Remembers the extent a lookup of {@code h} just read and verified through the table. */
  final void remember(long h, int region, int offset, int length, long checksum) {
    hints.remember(h, region, offset, length, checksum);
  }

  /**
   * Looks up {@code keys} (hashes {@code hs}, layouts {@code ls}) in batched rounds; sets {@code
   * out[i]} and {@code done[i]} for every key it settled (a verified value, or a confirmed miss).
   * Round 1 reads the hinted extent of every key with a hint and the layout's first reads of every
   * other key, one batch per server, one flush each.
   */
  final void multiGet(
      List<byte[]> keys, long[] hs, ShardLayout[] ls, byte[][] out, boolean[] done) {
    Batches round = new Batches(table.client());
    int n = keys.size();
    HintedRound h = new HintedRound(n);
    boolean hinting = table.hinting();
    for (int k = 0; hinting && k < n; k++) {
      int i = hints.find(hs[k]);
      if (i < 0) {
        continue;
      }
      RegionRef r = hints.regionIn(i, ls[k].extents());
      if (r != null) {
        h.add(k, r, hints.offset(i) & 0xFFFFFFFFL, hints.length(i), hints.checksum(i));
      }
    }
    h.queue(round);
    multiGet(keys, hs, ls, out, done, round, h);
  }

  /**
   * The layout's half of {@link #multiGet}: queues round 1's reads into {@code round} for every key
   * {@code hinted} does not {@link HintedRound#covers cover}, flushes it with {@link
   * HintedRound#flush}, and goes on with the rest; covered keys are settled by that flush or left
   * for the single-key path.
   */
  abstract void multiGet(
      List<byte[]> keys,
      long[] hs,
      ShardLayout[] ls,
      byte[][] out,
      boolean[] done,
      Batches round,
      HintedRound hinted);

  /**
   * The hinted extent reads of a multiGet's round 1, and what they settle: every copy in one
   * per-thread buffer, checked against the hint's fields as they were when the read was queued
   * (another thread may replace a hint before the round ends).
   */
  final class HintedRound {
    private final int n;
    private int[] at; // per key: where its copy starts in the buffer, or -1 (not hinted)
    private int[] lengths;
    private long[] checksums;
    private RegionRef[] regions;
    private long[] offsets;
    private int bytes;

    HintedRound(int n) {
      this.n = n;
    }

    /** Key {@code k} is read by its hint: {@code length} bytes at {@code offset} of {@code r}. */
    void add(int k, RegionRef r, long offset, int length, long checksum) {
      if (at == null) {
        at = new int[n];
        java.util.Arrays.fill(at, -1);
        lengths = new int[n];
        checksums = new long[n];
        regions = new RegionRef[n];
        offsets = new long[n];
      }
      at[k] = bytes;
      bytes += length;
      lengths[k] = length;
      checksums[k] = checksum;
      regions[k] = r;
      offsets[k] = offset;
    }

    /** Queues the hinted reads into {@code round}. */
    void queue(Batches round) {
      if (at == null) {
        return;
      }
      byte[] scratch = scratch(bytes);
      for (int k = 0; k < n; k++) {
        if (at[k] >= 0) {
          round.read(regions[k], offsets[k], ByteBuffer.wrap(scratch, at[k], lengths[k]));
        }
      }
    }

    /** Whether key {@code k} was read by its hint (the layout reads nothing for it in round 1). */
    boolean covers(int k) {
      return at != null && at[k] >= 0;
    }

    /**
     * Flushes round 1 and settles every covered key whose hinted copy verifies; forgets the hints
     * of the others, which are left not done for the single-key path. Returns false if a read of
     * the round failed (then every hint of the round is forgotten: one of them may be why).
     */
    boolean flush(Batches round, List<byte[]> keys, long[] hs, byte[][] out, boolean[] done) {
      boolean ok = round.flushAndWait();
      if (at == null) {
        return ok;
      }
      byte[] scratch = HINT_SCRATCH.get();
      int reads = 0;
      int hits = 0;
      for (int k = 0; k < n; k++) {
        if (at[k] < 0) {
          continue;
        }
        reads++;
        byte[] v =
            ok ? Extents.currentValue(scratch, at[k], lengths[k], checksums[k], keys.get(k)) : null;
        if (v == null) {
          hints.forget(hs[k]);
        } else {
          out[k] = v;
          done[k] = true;
          hits++;
        }
      }
      stats.hinted(reads, hits);
      return ok;
    }
  }
}
