package io.ferrite.fabric;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * Ops queued on one connection and sent together by {@link #flush()} (one system call / one
 * doorbell for many ops). Nothing is sent before {@code flush()}. A batch is confined to the thread
 * that created it and is used once.
 *
 * <p>If the connection fails, every op not yet answered completes with {@link
 * ErrorCode#UNAVAILABLE}; ops already answered keep their result. A client that dies in the middle
 * of a batch leaves each region op either applied whole (for atomics and for each write frame) or
 * not at all on the server side; the server frees everything the batch held.
 */
public interface Batch extends OneSided {
  CompletableFuture<ByteBuffer> call(
      int service, int opcode, ByteBuffer request, Duration deadline);

  /** Sends every queued op; returns a future that completes when all of them have completed. */
  CompletableFuture<Void> flush();

  /**
   * Sends every queued op and waits for all of them; throws the first failure as a {@link
   * FerriteException}. Like {@code Futures.join(flush())}, which a fabric may do faster when the
   * caller waits anyway (tcp: on the caller's own socket, see {@code NettyConnection}).
   */
  default void flushSync() {
    Futures.join(flush());
  }

  /** Number of ops queued so far. */
  int size();
}
