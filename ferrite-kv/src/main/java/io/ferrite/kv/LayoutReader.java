package io.ferrite.kv;

import io.ferrite.fabric.Batch;
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

  /** One lookup attempt of {@code key} (hash {@code h}) in shard layout {@code l}. */
  abstract Object probe(FabricConnection c, ShardLayout l, byte[] key, long h);

  /**
   * Looks up {@code keys} (hashes {@code hs}, layouts {@code ls}) in batched rounds; sets {@code
   * out[i]} and {@code done[i]} for every key it settled (a verified value, or a confirmed miss).
   */
  abstract void multiGet(
      List<byte[]> keys, long[] hs, ShardLayout[] ls, byte[][] out, boolean[] done);

  /**
   * Reads {@code dst} at {@code offset} of {@code table} and, in the same batch (one round trip),
   * the extent {@code hint} names; returns the extent copy.
   */
  final byte[] readBeside(
      FabricConnection c,
      RegionRef table,
      long offset,
      ByteBuffer dst,
      ExtentHints.Hint hint,
      RegionRef hinted,
      long h) {
    byte[] pre = new byte[hint.length()];
    Batch b = c.batch();
    b.read(table, offset, dst);
    b.read(hinted, hint.offset() & 0xFFFFFFFFL, ByteBuffer.wrap(pre));
    stats.hintedReads.increment();
    try {
      b.flushSync();
    } catch (FerriteException e) {
      hints.forget(h);
      throw e;
    }
    return pre;
  }
}
