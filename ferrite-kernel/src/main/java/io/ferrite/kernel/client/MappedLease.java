package io.ferrite.kernel.client;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;

/**
 * The reader's half of a server's published lease ({@code ServerLease#publish}): the check a client
 * makes after a one-sided read it ran on its own mapping of a server's region (shm), which the
 * server's per-op lease check does not reach. A primary that is paused (SIGSTOP, a long GC) or
 * killed leaves its memory readable, and its backup may have been promoted and taken newer writes
 * since (docs/KV.md and docs/TX.md "Leases"). One implementation for every face that leases its
 * copies (kv's replicated shards, tx regions); each says where its word is.
 *
 * <p><b>Why a value that passes is linearizable.</b> The order is: the data's loads; the lease
 * word's load ({@link FabricConnection#mappedLongAcquire}: after every earlier read of this thread,
 * and the shm read ends with an acquire fence too); then this thread's {@code System.nanoTime()}
 * (the vDSO's {@code clock_gettime} reads the TSC with {@code rdtsc_ordered}, i.e. behind an {@code
 * lfence}, so the clock is read after those loads completed). So the data was read at a time before
 * {@code now}, and {@code now} is before the word's deadline {@code D}. Every non-zero value the
 * server ever wrote there was its lease expiry: at most the face's lease after a heartbeat it sent,
 * and the master declares it DEAD (and only then promotes a backup, which only then takes writes)
 * no sooner than {@code server.dead.timeout} after it last heard from it, which is at least twice
 * the lease. So no write of a promoted copy can precede {@code D}; the data read before {@code D}
 * was current when it was read (a write the old primary had not finished fails verification as
 * torn). Any older value of the word is an older, earlier deadline: the reader refuses sooner,
 * never later. 0 (lapsed, not granted yet, retired) always refuses. The clock is the host's {@code
 * CLOCK_MONOTONIC} in both processes, and a region is mapped only on its server's host.
 *
 * <p>Cost: one acquire load and one {@code nanoTime} per read; nothing on other fabrics, whose
 * server checks its lease on every op.
 */
public final class MappedLease {
  private MappedLease() {}

  /**
   * Throws the refusal a tcp reader gets from a server whose lease lapsed ({@link
   * ErrorCode#UNAVAILABLE}, {@link MappedRegion#LEASE_LAPSED}), so the caller does what it does for
   * that (refetch, fail over, wait), unless the word at {@code offset} of {@code region} holds a
   * deadline still ahead of this thread's clock. Call it after the data's reads.
   *
   * @param face the face whose lease it is ({@code kv}, {@code tx}), in the message
   * @param retired what else a 0 word means for this face ("the shard retired"), in the message
   */
  public static void check(
      FabricConnection c, RegionRef region, long offset, String face, String retired) {
    long until = c.mappedLongAcquire(region, offset);
    long now = System.nanoTime();
    if (until == 0 || now - until >= 0) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE,
          "server "
              + c.remoteId()
              + "'s "
              + face
              + " "
              + MappedRegion.LEASE_LAPSED
              + " (region "
              + region.regionId()
              + "'s shm lease word "
              + (until == 0
                  ? "is 0: lapsed, not granted yet, or " + retired + ")"
                  : "ran out " + (now - until) / 1_000_000 + " ms ago)"));
    }
  }
}
