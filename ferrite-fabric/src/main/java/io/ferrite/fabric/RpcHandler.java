package io.ferrite.fabric;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * The server side of two-sided RPC. The fabric calls {@link #handle} on one of the endpoint's
 * dispatch threads (the "server cores", {@link ServerSpec#serviceThreads}), never on an I/O thread;
 * {@link #handleInline}, for the few operations that declare themselves non-blocking, on the thread
 * that received the request.
 *
 * <p>The handler returns a future of the response body; failing it with a {@link FerriteException}
 * sends that error to the caller; any other exception is sent as {@link ErrorCode#INTERNAL} and
 * logged. The {@code request} buffer is valid only until the returned future completes.
 */
@FunctionalInterface
public interface RpcHandler {
  CompletableFuture<ByteBuffer> handle(RpcContext ctx, int service, int opcode, ByteBuffer request);

  /**
   * Handles a call on the thread that received it — a fabric I/O thread, or the shm fabric's ring
   * poller — saving the hand-off to a dispatch thread, or declines by returning {@code null}, after
   * which {@link #handle} runs on a dispatch thread as usual.
   *
   * <p>Overriding this is how an operation declares itself non-blocking. Such an operation must be
   * cheap (microseconds) and must never block: no I/O, no waiting for a lock that anything slow may
   * hold (a lock held across a journal fsync counts): try such a lock and decline when it is taken.
   * While it runs, no other request of the same I/O thread or ring poller is served. The fabric
   * calls this first for every request; declining costs only the attempt.
   *
   * <p>Results and failures are reported as by {@link #handle}. The default declines everything.
   */
  default CompletableFuture<ByteBuffer> handleInline(
      RpcContext ctx, int service, int opcode, ByteBuffer request) {
    return null;
  }

  /** A handler that knows no service: every call fails with {@link ErrorCode#UNKNOWN_SERVICE}. */
  static RpcHandler none() {
    return (ctx, service, opcode, request) ->
        Futures.failed(ErrorCode.UNKNOWN_SERVICE, "no service " + service + " on this endpoint");
  }
}
