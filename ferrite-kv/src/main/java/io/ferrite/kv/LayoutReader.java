package io.ferrite.kv;

import io.ferrite.fabric.FabricConnection;
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
}
