package io.ferrite.tx;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.client.MappedLease;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.locks.LockSupport;

/**
 * Where a tx region publishes its primary's lease for same-host readers, and the reader's check
 * (docs/TX.md "Leases"). The word is the first 8 bytes of the region's <b>last line</b> ({@code
 * length - 64}): the allocator never places an object there, and a line of its own keeps the
 * server's renewals (one per heartbeat) off every object's line. It holds the lease's expiry as
 * {@code System.nanoTime()} while the lease is granted, 0 while it is not and from the moment the
 * region is retired (its server was deposed).
 *
 * <pre>
 *   0                                              length - 64        length
 *   | slab | slab | ... | slab (its objects end before the last line) | lease word | 56 bytes 0 |
 * </pre>
 */
public final class TxLeaseWord {
  private TxLeaseWord() {}

  /** The bytes at the end of every tx region that hold no object (the lease word's line). */
  public static final int RESERVED = ObjectLayout.LINE;

  /** The lease word's offset in a region of {@code length} bytes. */
  public static long offset(long length) {
    return length - RESERVED;
  }

  /**
   * After a one-sided read of {@code region} that this process read from its own mapping ({@link
   * FabricConnection#mapsRegions}): throws UNAVAILABLE ({@link MappedRegion#LEASE_LAPSED}) unless
   * the region's lease word holds a deadline still ahead of this thread's clock ({@link
   * MappedLease#check}, which says why that makes the read linearizable).
   */
  static void check(FabricConnection c, RegionRef region) {
    MappedLease.check(c, region, offset(region.length()), "tx", "the primary deposed");
  }

  /** Whether {@code e} is a server's refusal because its lease lapsed (nothing ran). */
  static boolean lapsed(FerriteException e) {
    return e.code() == ErrorCode.UNAVAILABLE
        && String.valueOf(e.getMessage()).contains(MappedRegion.LEASE_LAPSED);
  }

  /**
   * Calls {@code opcode} (one the server refuses before running it while its lease lapsed: LOCK,
   * COMMIT_LOCAL) at {@code server}, sending it again while the answer is "lease lapsed": a lease
   * renewed late (a loaded machine: heartbeats late by half the dead timeout) serves again within a
   * heartbeat or two, and a deposed server answers MOVED once it checked with the master. Backoff 1
   * ms doubling to 50 ms, for up to {@link TxClient#FAILOVER_PATIENCE_NANOS}; then the refusal is
   * thrown (the caller aborts: nothing ran).
   */
  static ByteBuffer callWhileLeaseLapses(
      FerriteClient client, int server, int opcode, ByteBuffer body) {
    long first = 0;
    for (int attempt = 0; ; attempt++) {
      try {
        return client.callSync(server, TxProtocol.SERVER_SERVICE, opcode, body.duplicate());
      } catch (FerriteException e) {
        if (!lapsed(e)) {
          throw e;
        }
        first = attempt == 0 ? System.nanoTime() : first;
        if (System.nanoTime() - first > TxClient.FAILOVER_PATIENCE_NANOS) {
          throw e;
        }
        LockSupport.parkNanos(Math.min(50_000_000L, 1_000_000L << Math.min(attempt, 6)));
      }
    }
  }

  /**
   * {@code sent}'s answer, or, when it was a "lease lapsed" refusal, {@link
   * #callWhileLeaseLapses}'s (on this thread).
   */
  static CompletableFuture<ByteBuffer> againWhileLeaseLapses(
      FerriteClient client,
      int server,
      int opcode,
      ByteBuffer body,
      CompletableFuture<ByteBuffer> sent) {
    try {
      sent.join();
      return sent;
    } catch (CompletionException e) {
      if (!(e.getCause() instanceof FerriteException fe) || !lapsed(fe)) {
        return sent;
      }
    }
    try {
      return CompletableFuture.completedFuture(callWhileLeaseLapses(client, server, opcode, body));
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    }
  }
}
