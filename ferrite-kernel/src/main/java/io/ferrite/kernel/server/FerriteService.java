package io.ferrite.kernel.server;

import io.ferrite.fabric.RpcContext;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * The server half of a face, hosted by a memory server: its own RPC opcodes under its own service
 * id, and its own regions. Found by {@link java.util.ServiceLoader} (list the class in {@code
 * META-INF/services/io.ferrite.kernel.server.FerriteService}) or registered explicitly; the kernel
 * knows no face.
 *
 * <h2>Lifecycle and threading</h2>
 *
 * {@link #start} runs once, before the server accepts any connection; {@link #handle} then runs on
 * the fabric's bounded service executor, concurrently from several threads; {@link #stop} runs
 * once, after the endpoints are closed. A failure of {@code start} stops the memory server's start.
 */
public interface FerriteService {
  /** The service id; 1 to 15 are the kernel's, faces use 16 and up. Unique per memory server. */
  int id();

  /** A short name for logs and region ownership, e.g. {@code kv}. */
  String name();

  /** Starts the service; the context lets it create regions and call the master. */
  void start(ServiceContext context);

  /**
   * Handles one call. The request is valid until the returned future completes. Failing the future
   * with a {@link io.ferrite.fabric.FerriteException} sends that error to the caller; an unknown
   * opcode should fail with {@link io.ferrite.fabric.ErrorCode#UNKNOWN_OPCODE}.
   */
  CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request);

  /**
   * Handles one call on the thread that received it (a fabric I/O thread or shm ring poller), or
   * declines with {@code null}, after which {@link #handle} runs on the service executor: see
   * {@link io.ferrite.fabric.RpcHandler#handleInline} for what such a handler must never do (block,
   * wait for a lock anything slow may hold). The fabric calls it first for every request, in the
   * order a connection's requests arrived; a service can rely on that to keep a connection's
   * requests in order (the kv service does, for writes). The default declines everything.
   */
  default CompletableFuture<ByteBuffer> handleInline(
      RpcContext caller, int opcode, ByteBuffer request) {
    return null;
  }

  /** Stops the service; its regions are closed by the memory server afterwards. */
  default void stop() {}
}
