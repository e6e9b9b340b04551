package io.ferrite.fabric;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * One-sided operations on a remote region: served without running any application code on the
 * server, like RDMA READ, WRITE and ATOMIC verbs.
 *
 * <h2>Contract (checked by {@code FabricContractTest} for every fabric)</h2>
 *
 * <ul>
 *   <li>{@code offset} and the length are checked against {@link RegionRef#length()} and the rkey
 *       against the server's; a failure completes the future with a {@link FerriteException}
 *       ({@link ErrorCode#OUT_OF_BOUNDS}, {@link ErrorCode#BAD_RKEY}, {@link ErrorCode#MISALIGNED})
 *       and leaves the region unchanged.
 *   <li>Buffers: a read fills {@code dst} from its position to its limit; a write sends {@code src}
 *       from its position to its limit. Positions and limits are left unchanged. The caller must
 *       not touch the buffer until the future completes (as with a registered RDMA buffer).
 *   <li>Reads and writes are <b>not atomic</b>: a read that races a write may return a mix of old
 *       and new bytes (a torn read), on every fabric. Callers verify what they read.
 *   <li>Atomics act on an 8-byte aligned, little-endian word. They are atomic with respect to each
 *       other and to the server CPU's atomics on the same word, and return the previous value.
 *       {@code compareAndSwap} succeeded iff the returned value equals {@code expect}.
 *   <li>Ordering: ops issued by one thread on one connection take effect in issue order; ops from
 *       different connections are not ordered.
 * </ul>
 */
public interface OneSided {
  CompletableFuture<Void> read(RegionRef region, long offset, ByteBuffer dst);

  CompletableFuture<Void> write(RegionRef region, long offset, ByteBuffer src);

  CompletableFuture<Long> compareAndSwap(RegionRef region, long offset, long expect, long update);

  CompletableFuture<Long> fetchAndAdd(RegionRef region, long offset, long delta);
}
