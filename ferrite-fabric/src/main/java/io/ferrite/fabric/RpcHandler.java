package io.ferrite.fabric;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * The server side of two-sided RPC. The fabric calls it on its bounded service executor (the
 * "server cores"), never on an I/O thread.
 *
 * <p>The handler returns a future of the response body; failing it with a {@link FerriteException}
 * sends that error to the caller; any other exception is sent as {@link ErrorCode#INTERNAL} and
 * logged. The {@code request} buffer is valid only until the returned future completes.
 */
@FunctionalInterface
public interface RpcHandler {
  CompletableFuture<ByteBuffer> handle(RpcContext ctx, int service, int opcode, ByteBuffer request);

  /** A handler that knows no service: every call fails with {@link ErrorCode#UNKNOWN_SERVICE}. */
  static RpcHandler none() {
    return (ctx, service, opcode, request) ->
        Futures.failed(ErrorCode.UNKNOWN_SERVICE, "no service " + service + " on this endpoint");
  }
}
