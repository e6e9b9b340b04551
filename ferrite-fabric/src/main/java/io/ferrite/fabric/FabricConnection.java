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
