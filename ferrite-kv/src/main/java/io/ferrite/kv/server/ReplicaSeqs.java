package io.ferrite.kv.server;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;

/**
 * The write sequence of one copy of a replicated shard (docs/KV.md "Replication"): every write the
 * primary applies gets a sequence number, unique and increasing in the shard, and every copy
 * remembers, per key, the sequence of the write its value came from (deletes included, as
 * tombstones). A backup applies a shipped write only if its sequence is newer than the key's, so
 * copies converge to the primary's state whatever order concurrent clients ship writes in.
 *
 * <p>Sequences are {@code max(last + 1, wall clock in microseconds)}: increasing in a shard, and,
 * on one host, larger after a failover than any sequence the dead primary gave (a promoted backup
 * continues from what it saw and the clock). Guarded by the shard's monitor, like the shard.
 *
 * <p>Cost: one hash map entry per key ever written (about 80 B beside the key); a deleted key's
 * entry stays (a late, older put must not bring the key back).
 */
final class ReplicaSeqs {
  private final Map<ByteBuffer, Long> byKey = new HashMap<>();
  private long last;

  /** The sequence of a write the primary just applied to {@code key}. */
  long stamp(byte[] key) {
    long seq = Math.max(last + 1, nowMicros());
    last = seq;
    byKey.put(ByteBuffer.wrap(key.clone()), seq);
    return seq;
  }

  /** Whether a shipped write of {@code key} with sequence {@code seq} is newer than this copy's. */
  boolean newer(byte[] key, long seq) {
    Long have = byKey.get(ByteBuffer.wrap(key));
    return have == null || have < seq;
  }

  /** Records that {@code key} now holds the write with sequence {@code seq}. */
  void record(byte[] key, long seq) {
    byKey.put(ByteBuffer.wrap(key.clone()), seq);
    last = Math.max(last, seq);
  }

  /** The sequence of {@code key}'s write on this copy, 0 if unknown. */
  long seqOf(byte[] key) {
    Long have = byKey.get(ByteBuffer.wrap(key));
    return have == null ? 0 : have;
  }

  /** The newest sequence this copy gave or took. */
  long last() {
    return last;
  }

  private static long nowMicros() {
    java.time.Instant now = java.time.Instant.now();
    return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
  }
}
