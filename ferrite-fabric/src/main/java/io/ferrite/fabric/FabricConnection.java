package io.ferrite.fabric;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * A client's authenticated connection to one server (a memory server or the master). Thread-safe:
 * one connection per server is shared by all of a client's threads.
 *
 * <p>Every op is asynchronous and sent at once; use {@link #batch()} to send many with one flush.
 * The {@code *Sync} conveniences block and throw {@link FerriteException}.
 */
public interface FabricConnection extends OneSided, AutoCloseable {
  /** The id the server announced in the handshake. */
  int remoteId();

  /**
   * Calls {@code opcode} of service {@code service} on the server. The response completes the
   * future; a service error completes it with the service's {@link FerriteException}; no answer
   * within {@code deadline} completes it with {@link ErrorCode#TIMEOUT}.
   *
   * <p>The request is read from position to limit and not modified. The returned buffer is owned by
   * the caller.
   */
  CompletableFuture<ByteBuffer> call(
      int service, int opcode, ByteBuffer request, Duration deadline);

  Batch batch();

  /** Client-side counts of ops and bytes on this connection. */
  Counters counters();

  boolean isOpen();

  /**
   * Tells the connection that the caller no longer needs {@code region} (its owner freed it, or the
   * caller's layout stopped naming it): a connection that caches something per region (the shm
   * fabric's mapping of the region file) drops it, so the memory can go back. Safe while other
   * threads run ops on the region: those finish or fail with {@link ErrorCode#NO_SUCH_REGION}; a
   * later op on it asks the server again. Does nothing if {@code region} (with its rkey) is not
   * cached, and by default.
   */
  default void release(RegionRef region) {}

  /**
   * Whether one-sided ops run on this process's own mapping of the server's region files (the shm
   * fabric), with no work by the server: then nothing the server checks per op ({@link
   * MappedRegion#check}, a {@link MappedRegion.Lease}) gates them, and a face whose regions serve
   * under a lease must check one of its own after the read (docs/KV.md "Leases"). False by default
   * (the server serves every op).
   */
  default boolean mapsRegions() {
    return false;
  }

  /**
   * Loads the aligned 8-byte word at {@code offset} of {@code region} from this process's own
   * mapping: one atomic load with acquire ordering, ordered after every read this thread made
   * before it (a fence word read after data, e.g. a kv shard's lease word). Native byte order.
   * Checked like an 8-byte read; not counted as one. Only for connections that {@link
   * #mapsRegions}; blocks only to map the region the first time.
   *
   * @throws FerriteException {@link ErrorCode#UNSUPPORTED} on a connection that does not map
   *     regions (the default); {@link ErrorCode#MISALIGNED} for an offset not a multiple of 8; as a
   *     read otherwise
   */
  default long mappedLongAcquire(RegionRef region, long offset) {
    throw new FerriteException(
        ErrorCode.UNSUPPORTED, "this connection does not map regions (expected: mapsRegions())");
  }

  /** Fails all outstanding ops with {@link ErrorCode#UNAVAILABLE} and releases every resource. */
  @Override
  void close();

  default void readSync(RegionRef region, long offset, ByteBuffer dst) {
    Futures.join(read(region, offset, dst));
  }

  default void writeSync(RegionRef region, long offset, ByteBuffer src) {
    Futures.join(write(region, offset, src));
  }

  default long compareAndSwapSync(RegionRef region, long offset, long expect, long update) {
    return Futures.join(compareAndSwap(region, offset, expect, update));
  }

  default long fetchAndAddSync(RegionRef region, long offset, long delta) {
    return Futures.join(fetchAndAdd(region, offset, delta));
  }

  default ByteBuffer callSync(int service, int opcode, ByteBuffer request, Duration deadline) {
    return Futures.join(call(service, opcode, request, deadline));
  }
}
