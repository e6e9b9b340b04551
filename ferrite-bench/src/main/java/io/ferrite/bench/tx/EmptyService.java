package io.ferrite.bench.tx;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.server.FerriteService;
import io.ferrite.kernel.server.ServiceContext;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * The RPC ceiling of {@code bench tx}: a memory-server service whose one opcode answers an empty
 * response. It answers from {@link #handle}, on the service executor, as the tx service answers
 * LOCK, COMMIT and COMMIT_LOCAL (it has no inline path), so an empty call costs what a tx call
 * costs minus the tx work: the fabric's round trip and the server's dispatch.
 */
final class EmptyService implements FerriteService {
  /** Service id, unused by the kernel (1-15) and the faces (20, 24, 41, 44, 47). */
  static final int ID = 60;

  /** The opcode answering nothing. */
  static final int EMPTY = 0;

  private static final ByteBuffer NOTHING = ByteBuffer.allocate(0);

  @Override
  public int id() {
    return ID;
  }

  @Override
  public String name() {
    return "bench-tx-empty";
  }

  @Override
  public void start(ServiceContext context) {}

  @Override
  public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
    if (opcode != EMPTY) {
      return CompletableFuture.failedFuture(
          new FerriteException(
              ErrorCode.UNKNOWN_OPCODE, "bench-tx-empty: opcode " + opcode + " (expected: 0)"));
    }
    return CompletableFuture.completedFuture(NOTHING.duplicate());
  }
}
