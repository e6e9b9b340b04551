package io.ferrite.kv;

import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RegionRef;
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
    if (table.hinting(c)) {
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
    ExtentHints.Hint hint = hints.lookup(h);
    if (hint == null) {
      return null;
    }
    RegionRef r = hint.regionIn(l.extents());
    byte[] v = null;
    if (r != null) {
      byte[] e = new byte[hint.length()];
      stats.hintedReads.increment();
      try {
        c.readSync(r, hint.offset() & 0xFFFFFFFFL, ByteBuffer.wrap(e));
      } catch (FerriteException ex) {
        hints.forget(h);
        throw ex;
      }
      v = hintedValue(e, hint, key);
    }
    if (v == null) {
      hints.forget(h);
      return null;
    }
    stats.hintHits.increment();
    stats.lookup(1);
    return v;
  }

  /** The value in {@code e}, a copy of the extent {@code hint} names, if it verifies; else null. */
  private static byte[] hintedValue(byte[] e, ExtentHints.Hint hint, byte[] key) {
    return Extents.current(e, hint.checksum()) && Extents.hasKey(e, key) ? Extents.value(e) : null;
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
    ExtentHints.Hint[] hinted = null;
    byte[][] copies = null;
    int hintServer = -1; // whether hints are worth it, for the last server asked about
    boolean hinting = false;
    for (int i = 0; i < n; i++) {
      ExtentHints.Hint hint = hints.lookup(hs[i]);
      if (hint == null) {
        continue;
      }
      if (ls[i].entries().serverId() != hintServer) {
        hintServer = ls[i].entries().serverId();
        hinting = table.hinting(table.client().connection(hintServer));
      }
      RegionRef r = hinting ? hint.regionIn(ls[i].extents()) : null;
      if (r == null) {
        continue;
      }
      if (hinted == null) {
        hinted = new ExtentHints.Hint[n];
        copies = new byte[n][];
      }
      hinted[i] = hint;
      copies[i] = new byte[hint.length()];
      round.read(r, hint.offset() & 0xFFFFFFFFL, ByteBuffer.wrap(copies[i]));
    }
    multiGet(keys, hs, ls, out, done, round, new HintedRound(hinted, copies));
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

  /** The hinted extent reads of a multiGet's round 1, and what they settle. */
  final class HintedRound {
    private final ExtentHints.Hint[] hints;
    private final byte[][] copies;

    HintedRound(ExtentHints.Hint[] hints, byte[][] copies) {
      this.hints = hints;
      this.copies = copies;
    }

    /** Whether key {@code i} was read by its hint (the layout reads nothing for it in round 1). */
    boolean covers(int i) {
      return hints != null && hints[i] != null;
    }

    /**
     * Flushes round 1 and settles every covered key whose hinted copy verifies; forgets the hints
     * of the others, which are left not done for the single-key path. Returns false if a read of
     * the round failed (then every hint of the round is forgotten: one of them may be why).
     */
    boolean flush(Batches round, List<byte[]> keys, long[] hs, byte[][] out, boolean[] done) {
      boolean ok = round.flushAndWait();
      if (hints == null) {
        return ok;
      }
      int reads = 0;
      int hits = 0;
      for (int i = 0; i < hints.length; i++) {
        if (hints[i] == null) {
          continue;
        }
        reads++;
        byte[] v = ok ? hintedValue(copies[i], hints[i], keys.get(i)) : null;
        copies[i] = null;
        if (v == null) {
          LayoutReader.this.hints.forget(hs[i]);
        } else {
          out[i] = v;
          done[i] = true;
          hits++;
        }
      }
      stats.hintedReads.add(reads);
      stats.hintHits.add(hits);
      stats.oneProbeLookups(hits);
      return ok;
    }
  }
}
