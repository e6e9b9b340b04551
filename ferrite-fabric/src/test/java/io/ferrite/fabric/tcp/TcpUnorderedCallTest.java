package io.ferrite.fabric.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.netty.NettyConnection;
import io.ferrite.fabric.testing.TestThreads;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code callUnordered}: a call later ops may overtake does not keep the calling thread's next
 * synchronous op off a blocking lane while it is in flight (an ordinary call does: a lane op could
 * overtake it), it still ends with its own answer or error, and it still counts against the bound
 * on ops in flight.
 */
class TcpUnorderedCallTest extends TcpTestSupport {
  private static final int SVC = 1;
  private static final int HELD = 1; // answered when the test releases it
  private static final int ECHO = 2; // answered at once
  private static final Duration DEADLINE = Duration.ofSeconds(30);

  /** Answers of HELD calls not yet given, completed by the test. */
  private final ConcurrentLinkedQueue<CompletableFuture<ByteBuffer>> held =
      new ConcurrentLinkedQueue<>();

  private final RpcHandler handler =
      new RpcHandler() {
        @Override
        public CompletableFuture<ByteBuffer> handle(
            RpcContext ctx, int service, int opcode, ByteBuffer request) {
          if (opcode == HELD) {
            CompletableFuture<ByteBuffer> f = new CompletableFuture<>();
            held.add(f);
            return f;
          }
          ByteBuffer copy = ByteBuffer.allocate(request.remaining());
          copy.put(request.duplicate()).flip();
          return CompletableFuture.completedFuture(copy);
        }
      };

  @AfterEach
  void releaseHeld() throws Exception {
    for (CompletableFuture<ByteBuffer> f; (f = held.poll()) != null; ) {
      f.complete(ByteBuffer.allocate(0));
    }
    closeAll();
  }

  @Test
  void aSynchronousCallTakesALaneWhileAnUnorderedCallIsInFlight() throws Exception {
    start(handler, 2, 64);
    NettyConnection c = (NettyConnection) connect();
    CompletableFuture<ByteBuffer> unordered =
        c.callUnordered(SVC, HELD, ByteBuffer.wrap(new byte[] {7}), DEADLINE);
    await(() -> held.size() == 1, "the held call to reach its handler; " + where());
    byte[] echo = new byte[48];
    random.nextBytes(echo);
    ByteBuffer back = c.callSync(SVC, ECHO, ByteBuffer.wrap(echo), DEADLINE);
    assertArrayEquals(echo, bytes(back), where());
    assertEquals(1, c.lanes(), "the synchronous call took a lane; " + where());
    assertFalse(unordered.isDone(), "the unordered call is still in flight");
    ByteBuffer answer = ByteBuffer.wrap(new byte[] {1, 2, 3});
    held.poll().complete(answer);
    assertArrayEquals(new byte[] {1, 2, 3}, bytes(Futures.join(unordered)), where());
    assertEquals(0, c.counters().errors(OpKind.RPC), where());
  }

  @Test
  void anOrdinaryCallInFlightKeepsTheNextSynchronousCallOffTheLanes() throws Exception {
    start(handler, 2, 64);
    NettyConnection c = (NettyConnection) connect();
    CompletableFuture<ByteBuffer> ordered =
        c.call(SVC, HELD, ByteBuffer.wrap(new byte[] {7}), DEADLINE);
    await(() -> held.size() == 1, "the held call to reach its handler; " + where());
    byte[] echo = new byte[48];
    random.nextBytes(echo);
    assertArrayEquals(echo, bytes(c.callSync(SVC, ECHO, ByteBuffer.wrap(echo), DEADLINE)), where());
    assertEquals(0, c.lanes(), "no lane while an ordered call is in flight; " + where());
    held.poll().complete(ByteBuffer.allocate(0));
    Futures.join(ordered);
  }

  @Test
  void unorderedCallsEndWithTheirOwnAnswersAndErrors() throws Exception {
    start(handler, 2, 64);
    NettyConnection c = (NettyConnection) connect();
    CompletableFuture<ByteBuffer> first =
        c.callUnordered(SVC, HELD, ByteBuffer.allocate(1), DEADLINE);
    CompletableFuture<ByteBuffer> second =
        c.callUnordered(SVC, HELD, ByteBuffer.allocate(1), DEADLINE);
    await(() -> held.size() == 2, "both held calls to reach their handler; " + where());
    CompletableFuture<ByteBuffer> a = held.poll();
    CompletableFuture<ByteBuffer> b = held.poll();
    b.completeExceptionally(new FerriteException(ErrorCode.INVALID_ARGUMENT, "refused on purpose"));
    a.complete(ByteBuffer.wrap(new byte[] {9}));
    ByteBuffer got = Futures.join(first);
    FerriteException e = assertThrowsFerrite(second);
    boolean firstGotAnswer = got.remaining() == 1 && got.get(0) == 9;
    assertTrue(firstGotAnswer, "the first call got the first handler's answer; " + where());
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), e.getMessage());
    // A request over the limit fails as an ordinary call does.
    CompletableFuture<ByteBuffer> big =
        c.callUnordered(SVC, ECHO, ByteBuffer.allocate(ServerSpec.DEFAULT_MAX_FRAME), DEADLINE);
    assertEquals(ErrorCode.TOO_LARGE, assertThrowsFerrite(big).code());
  }

  @Test
  void unorderedCallsStillCountAgainstTheBoundOnOpsInFlight() throws Exception {
    start(handler, 2, 64);
    int max = 4;
    NettyConnection c =
        (NettyConnection)
            closeLater(
                fabric.connect(
                    server.address(), ConnectOptions.of(credentials).withMaxInFlight(max)));
    for (int i = 0; i < max; i++) {
      c.callUnordered(SVC, HELD, ByteBuffer.allocate(1), DEADLINE);
    }
    await(() -> held.size() == max, "every held call at its handler; " + where());
    AtomicReference<ByteBuffer> answer = new AtomicReference<>();
    try (TestThreads caller = new TestThreads()) {
      caller.start(
          "past-the-bound",
          () ->
              answer.set(
                  Futures.join(c.callUnordered(SVC, ECHO, ByteBuffer.allocate(4), DEADLINE))));
      // The caller waits for a permit: its call cannot be sent, so no answer may come meanwhile.
      Thread.sleep(200);
      assertNull(answer.get(), "a call past the bound went out; " + where());
      held.poll().complete(ByteBuffer.allocate(0));
    }
    assertEquals(4, answer.get().remaining(), where());
  }

  private static byte[] bytes(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.duplicate().get(out);
    return out;
  }

  private static FerriteException assertThrowsFerrite(CompletableFuture<ByteBuffer> f) {
    try {
      Futures.join(f);
    } catch (FerriteException e) {
      return e;
    }
    throw new AssertionError("expected a FerriteException");
  }
}
