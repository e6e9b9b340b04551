package io.ferrite.kv;

import io.ferrite.fabric.verify.Checksum64;

/**
 * Every hash the kv face derives from a key, so that clients and servers agree: one XXH3-64 of the
 * key bytes, then cheap independent mixes of it for the shard, the three cuckoo slots (Pilaf §3.4)
 * and the 32-bit tag an entry keeps so that a probe can skip the extent read of another key.
 */
public final class KeyHash {
  private static final long SHARD_SALT = 0x9E3779B97F4A7C15L;
  private static final long TAG_SALT = 0xC2B2AE3D27D4EB4FL;
  private static final long[] SLOT_SALTS = {
    0x165667B19E3779F9L, 0x27D4EB2F165667C5L, 0x85EBCA77C2B2AE63L
  };

  /** Number of cuckoo hash functions (Pilaf §3.4: 3-way is the best trade-off). */
  public static final int WAYS = 3;

  private KeyHash() {}

  /** The key's 64-bit hash (XXH3-64). */
  public static long of(byte[] key) {
    return Checksum64.of(key);
  }

  /** Splitmix64's finaliser: a bijective mix with full avalanche. */
  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /**
   * The shard of a key among {@code shards}: Lamping and Veach's jump consistent hash, so growing a
   * table from n to n + 1 shards moves only 1/(n + 1) of the keys.
   */
  public static int shard(long hash, int shards) {
    long key = mix(hash ^ SHARD_SALT);
    long b = -1;
    long j = 0;
    while (j < shards) {
      b = j;
      key = key * 2862933555777941757L + 1;
      j = (long) ((b + 1) * ((double) (1L << 31) / (double) ((key >>> 33) + 1)));
    }
    return (int) b;
  }

  /** Candidate slot {@code way} (0, 1 or 2) of a key in a shard of {@code slots} entries. */
  public static int slot(long hash, int way, int slots) {
    return (int) Long.remainderUnsigned(mix(hash ^ SLOT_SALTS[way]), slots);
  }

  /** The tag stored in an entry: a probe whose tag differs skips the extent read. */
  public static int tag(long hash) {
    return (int) mix(hash ^ TAG_SALT);
  }
}
