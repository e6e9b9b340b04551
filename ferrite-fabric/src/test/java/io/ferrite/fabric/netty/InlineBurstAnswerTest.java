package io.ferrite.fabric.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.testing.NettyLeakExtension;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestThreads;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * RPC answers the handler gives inline on the tcp server's event loop go out with the read burst's
 * other responses ({@link ResponseBuffer}), answers given later from another thread go directly
 * ({@link ServerWriter}), and answers too large to gather go as frames of their own: pipelined from
 * many threads beside one-sided reads, each answer reaches its own call whole, an inline error its
 * own call with its code, and no protocol error closes the connection.
 */
@ExtendWith({NettyLeakExtension.class, SeedExtension.class})
class InlineBurstAnswerTest {
  private static final int NOW = 1; // answered inline, before handleInline returns
  private static final int LATER = 2; // taken inline, answered afterwards by another thread
  private static final int FAIL = 3; // taken inline, failed before handleInline returns
  private static final int REGION_BYTES = 1 << 20;
  private static final Duration DEADLINE = Duration.ofSeconds(60);

  @Test
  void inlineAnswersReachTheirCallsAmongPipelinedReads(Random random) throws Exception {
    ExecutorService later =
        Executors.newSingleThreadExecutor(new NamedThreadFactory("inline-burst-later", true));
    try (PipelinedAnswers fixture =
            new PipelinedAnswers("burst", REGION_BYTES, random, new SizedInline(later), 1, 64);
        FabricConnection c = fixture.connect()) {
      try (TestThreads users = new TestThreads()) {
        for (int t = 0; t < 6; t++) {
          Random r = new Random(random.nextLong());
          users.start("burst-" + t, () -> pipeline(fixture, c, r, users));
        }
      }
      assertTrue(c.isOpen(), "no protocol error closed the connection");
      assertEquals(0, c.counters().errors(OpKind.READ));
      assertTrue(((NettyServer) fixture.server()).dispatcher().inlineCalls() >= 6 * 200);
    } finally {
      later.shutdownNow();
      assertTrue(later.awaitTermination(10, TimeUnit.SECONDS));
    }
  }

  private static void pipeline(
      PipelinedAnswers fixture, FabricConnection c, Random r, TestThreads users) {
    for (int i = 0; i < 200 && !users.failed(); i++) {
      int op = 1 + r.nextInt(3);
      // Around the gathering limit (a 4 KiB body), and now and then a large one.
      int n = r.nextInt(8) == 0 ? r.nextInt(200_000) : r.nextInt(2 * SoftNic.COPY_READ_LIMIT);
      long s = r.nextLong();
      Batch b = c.batch();
      PipelinedAnswers.Reads reads = fixture.readSome(b, r, 1 + r.nextInt(8), 8192);
      CompletableFuture<ByteBuffer> call =
          c.call(PipelinedAnswers.SVC, op, PipelinedAnswers.sizedRequest(n, s), DEADLINE);
      Futures.join(b.flush());
      reads.check();
      if (op == FAIL) {
        FerriteException e = assertThrows(FerriteException.class, () -> Futures.join(call));
        assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains("refused " + s), e.getMessage());
      } else {
        ByteBuffer rsp = Futures.join(call);
        byte[] got = new byte[rsp.remaining()];
        rsp.get(got);
        assertArrayEquals(PipelinedAnswers.bytes(s, n), got, "answer of " + n + " B, opcode " + op);
      }
    }
  }

  /** Answers of a size given by the request, filled from the request's seed; all taken inline. */
  private static final class SizedInline implements RpcHandler {
    private final Executor later;

    SizedInline(Executor later) {
      this.later = later;
    }

    @Override
    public CompletableFuture<ByteBuffer> handle(
        RpcContext ctx, int service, int opcode, ByteBuffer request) {
      int n = request.getInt(request.position());
      long seed = request.getLong(request.position() + 4);
      return switch (opcode) {
        case NOW ->
            CompletableFuture.completedFuture(ByteBuffer.wrap(PipelinedAnswers.bytes(seed, n)));
        case LATER ->
            CompletableFuture.supplyAsync(
                () -> ByteBuffer.wrap(PipelinedAnswers.bytes(seed, n)), later);
        default ->
            CompletableFuture.failedFuture(
                new FerriteException(ErrorCode.INVALID_ARGUMENT, "refused " + seed));
      };
    }

    @Override
    public CompletableFuture<ByteBuffer> handleInline(
        RpcContext ctx, int service, int opcode, ByteBuffer request) {
      return handle(ctx, service, opcode, request);
    }
  }
}
