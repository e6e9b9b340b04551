package io.ferrite.fabric.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.Futures;
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
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Answers written by dispatch threads straight to the socket ({@link ServerWriter}) and responses
 * the event loop writes for one-sided ops share one connection without a byte of one landing inside
 * another: large answers that fill the socket (the rest then goes through the loop, and direct
 * writes wait until Netty has written it) mixed with pipelined reads, from many threads.
 */
@ExtendWith({NettyLeakExtension.class, SeedExtension.class})
class ServerWriterTest {
  private static final int REGION_BYTES = 4 << 20;
  private static final Duration DEADLINE = Duration.ofSeconds(60);

  @Test
  void directAnswersAndLoopResponsesNeverInterleave(Random random) throws Exception {
    // Answers of a size given by the request, filled from the request's seed.
    RpcHandler sized =
        new RpcHandler() {
          @Override
          public CompletableFuture<ByteBuffer> handle(
              RpcContext ctx, int service, int opcode, ByteBuffer request) {
            int n = request.getInt(request.position());
            long seed = request.getLong(request.position() + 4);
            return CompletableFuture.completedFuture(
                ByteBuffer.wrap(PipelinedAnswers.bytes(seed, n)));
          }
        };
    try (PipelinedAnswers fixture =
            new PipelinedAnswers("writer", REGION_BYTES, random, sized, 2, 1024);
        FabricConnection c = fixture.connect()) {
      try (TestThreads users = new TestThreads()) {
        for (int t = 0; t < 6; t++) {
          Random r = new Random(random.nextLong());
          users.start("writer-user-" + t, () -> pipeline(fixture, c, r, users));
        }
      }
      assertTrue(c.isOpen(), "no protocol error closed the connection");
      assertEquals(0, c.counters().errors(OpKind.RPC));
      assertEquals(0, c.counters().errors(OpKind.READ));
    }
  }

  private static void pipeline(
      PipelinedAnswers fixture, FabricConnection c, Random r, TestThreads users) {
    for (int i = 0; i < 60 && !users.failed(); i++) {
      // Up to 3 MiB answered by a dispatch thread: more than a socket buffer.
      int n = r.nextInt(4) == 0 ? r.nextInt(3 << 20) : r.nextInt(70_000);
      long s = r.nextLong();
      CompletableFuture<ByteBuffer> call =
          c.call(PipelinedAnswers.SVC, 1, PipelinedAnswers.sizedRequest(n, s), DEADLINE);
      // Meanwhile pipelined reads, answered by the event loop.
      Batch b = c.batch();
      PipelinedAnswers.Reads reads = fixture.readSome(b, r, 16, 100_000);
      CompletableFuture<Void> flushed = b.flush();
      if (r.nextInt(3) == 0) {
        // A slow reader: the client's event loop (where the future completes) stops reading for
        // a while, the server's socket fills, and its writers must hand the rest of a frame to
        // its event loop and wait for it.
        flushed.thenRun(() -> LockSupport.parkNanos(5_000_000));
      }
      Futures.join(flushed);
      reads.check();
      ByteBuffer rsp = Futures.join(call);
      byte[] got = new byte[rsp.remaining()];
      rsp.get(got);
      assertArrayEquals(PipelinedAnswers.bytes(s, n), got, "answer of " + n + " B");
    }
  }
}
