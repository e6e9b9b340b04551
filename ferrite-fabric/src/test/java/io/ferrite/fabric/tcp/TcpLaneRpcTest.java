package io.ferrite.fabric.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.netty.NettyConnection;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Synchronous small RPCs on blocking lanes ({@code NettyConnection.callSync}): a call takes effect
 * after the calling thread's earlier async ops; a call nobody answers times out by the lane
 * watchdog and leaves the connection usable; a call whose connection is lost fails with
 * UNAVAILABLE; error answers leave the lane usable; a request larger than the lane's buffer (up to
 * 64 KiB) still rides the lane.
 */
class TcpLaneRpcTest extends TcpTestSupport {
  private static final int SVC = 7;
  private static final int READ_REGION = 1;
  private static final int NEVER = 2;
  private static final int BLOCK = 3;
  private static final int FAIL = 4;
  private static final int ECHO = 5;
  private static final Duration DEADLINE = Duration.ofSeconds(60);

  private final Set<Long> connectionIds = ConcurrentHashMap.newKeySet();
  private final CountDownLatch blocked = new CountDownLatch(1);
  private final CountDownLatch release = new CountDownLatch(1);

  /**
   * Reads {@code length} bytes of the region at {@code offset} (request: offset i32, length i32).
   */
  private ByteBuffer readRegion(RpcContext ctx, ByteBuffer request) {
    connectionIds.add(ctx.connectionId());
    int off = request.getInt(request.position());
    int len = request.getInt(request.position() + 4);
    ByteBuffer out = ByteBuffer.allocate(len);
    region.readInto(off, out);
    return out.clear(); // readInto may or may not move the position: the whole buffer
  }

  /** The request back, and the id of the connection it came on (in echoedOn). */
  private ByteBuffer echo(RpcContext ctx, ByteBuffer request) {
    echoedOn.add(ctx.connectionId());
    ByteBuffer out = ByteBuffer.allocate(request.remaining());
    out.put(request.duplicate());
    return out.flip();
  }

  private final Set<Long> echoedOn = ConcurrentHashMap.newKeySet();

  private final RpcHandler handler =
      new RpcHandler() {
        @Override
        public CompletableFuture<ByteBuffer> handle(
            RpcContext ctx, int service, int opcode, ByteBuffer request) {
          switch (opcode) {
            case READ_REGION -> {
              return CompletableFuture.completedFuture(readRegion(ctx, request));
            }
            case ECHO -> {
              return CompletableFuture.completedFuture(echo(ctx, request));
            }
            case NEVER -> {
              connectionIds.add(ctx.connectionId());
              return new CompletableFuture<>();
            }
            case BLOCK -> {
              blocked.countDown();
              try {
                release.await(60, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              return CompletableFuture.completedFuture(ByteBuffer.allocate(0));
            }
            default -> {
              return Futures.failed(ErrorCode.CONFLICT, "opcode " + opcode + " always fails");
            }
          }
        }

        @Override
        public CompletableFuture<ByteBuffer> handleInline(
            RpcContext ctx, int service, int opcode, ByteBuffer request) {
          // Inline too, on whichever I/O thread got it first: the tightest race with a write
          // still travelling on the shared connection.
          return opcode == READ_REGION && (request.getInt(request.position()) & 64) == 0
              ? CompletableFuture.completedFuture(readRegion(ctx, request))
              : null;
        }
      };

  private static ByteBuffer where(int offset, int length) {
    ByteBuffer b = ByteBuffer.allocate(8);
    b.putInt(0, offset).putInt(4, length);
    return b;
  }

  @Test
  void aLaneCallTakesEffectAfterTheThreadsEarlierAsyncOps() throws Exception {
    start(handler, 2, 64);
    NettyConnection c = (NettyConnection) connect();
    for (int i = 0; i < 2000; i++) {
      int off = random.nextInt(REGION_BYTES - 512) & ~7;
      int len = 1 + random.nextInt(256);
      byte[] data = new byte[len];
      random.nextBytes(data);
      CompletableFuture<Void> w = null;
      if (random.nextBoolean()) {
        // Not awaited: the call that follows must still see it (issue order).
        w = c.write(ref, off, ByteBuffer.wrap(data));
      } else {
        c.writeSync(ref, off, ByteBuffer.wrap(data));
      }
      ByteBuffer back = c.callSync(SVC, READ_REGION, where(off, len), DEADLINE);
      assertArrayEquals(data, back.array(), "call " + i + "; " + where());
      if (w != null) {
        w.join();
      }
    }
    assertTrue(c.lanes() > 0, "no call took a lane; " + where());
    assertTrue(connectionIds.size() > 1, "calls came on the shared connection only");
    assertEquals(0, c.counters().errors(OpKind.RPC));
    assertEquals(2000, c.counters().ops(OpKind.RPC));
  }

  @Test
  void aRequestLargerThanTheLanesBufferRidesTheLaneWhole() throws Exception {
    start(handler, 2, 64);
    NettyConnection c = (NettyConnection) connect();
    c.callSync(SVC, ECHO, ByteBuffer.allocate(8), DEADLINE);
    assertEquals(1, c.lanes(), "the first call took a lane");
    // Around the lane's own buffer (256 read frames, about 12 KiB) and a kv multiPut of 16 pairs
    // of 1 KiB (about 17 KiB), up to the largest request a lane takes.
    for (int n : new int[] {4096, 4097, 12_000, 12_289, 17_000, 64 << 10}) {
      byte[] data = new byte[n];
      random.nextBytes(data);
      ByteBuffer request = ByteBuffer.allocate(n + 3).position(3); // not at the array's start
      request.put(data).position(3);
      ByteBuffer back = c.callSync(SVC, ECHO, request, DEADLINE);
      assertArrayEquals(data, back.array(), n + " B; " + where());
      assertEquals(3, request.position(), "the caller's buffer is not consumed");
    }
    assertEquals(1, echoedOn.size(), "every call came on the one lane: " + echoedOn);
    assertEquals(1, c.lanes());
    assertEquals(0, c.counters().errors(OpKind.RPC));
  }

  @Test
  void anUnansweredLaneCallTimesOutAndTheConnectionStaysUsable() throws Exception {
    start(handler, 2, 64);
    NettyConnection c = (NettyConnection) connect();
    assertEquals(8, c.callSync(SVC, READ_REGION, where(0, 8), DEADLINE).remaining());
    assertEquals(1, c.lanes(), "the call took a lane");
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> c.callSync(SVC, NEVER, ByteBuffer.allocate(0), Duration.ofMillis(200)));
    assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
    assertTrue(c.isOpen(), "a lane's timeout closes only the lane");
    assertEquals(0, c.lanes(), "the expired lane is gone");
    assertEquals(16, c.callSync(SVC, READ_REGION, where(64, 16), DEADLINE).remaining());
    assertEquals(1, c.counters().errors(OpKind.RPC));
  }

  @Test
  void anErrorAnswerLeavesTheLaneUsable() throws Exception {
    start(handler, 2, 64);
    NettyConnection c = (NettyConnection) connect();
    for (int i = 0; i < 3; i++) {
      FerriteException e =
          assertThrows(
              FerriteException.class,
              () -> c.callSync(SVC, FAIL, ByteBuffer.allocate(3), DEADLINE));
      assertEquals(ErrorCode.CONFLICT, e.code(), e.getMessage());
      assertTrue(e.getMessage().contains("always fails"), e.getMessage());
      assertEquals(4, c.callSync(SVC, READ_REGION, where(8, 4), DEADLINE).remaining());
    }
    assertEquals(1, c.lanes(), "one lane served every call");
  }

  @Test
  void aConnectionLostMidCallFailsTheCall() throws Exception {
    start(handler, 2, 64);
    NettyConnection c = (NettyConnection) connect();
    c.callSync(SVC, READ_REGION, where(0, 8), DEADLINE);
    assertEquals(1, c.lanes());
    AtomicReference<Throwable> outcome = new AtomicReference<>();
    Thread caller =
        new Thread(
            () -> {
              try {
                c.callSync(SVC, BLOCK, ByteBuffer.allocate(0), DEADLINE);
                outcome.set(new AssertionError("answered after the server stopped"));
              } catch (Throwable e) {
                outcome.set(e);
              }
            },
            "lane-caller");
    caller.start();
    assertTrue(blocked.await(60, TimeUnit.SECONDS), "the call reached its handler");
    server.close();
    caller.join(60_000);
    assertTrue(!caller.isAlive(), "the caller hangs after the server stopped");
    Throwable e = outcome.get();
    assertTrue(e instanceof FerriteException, String.valueOf(e));
    assertEquals(ErrorCode.UNAVAILABLE, ((FerriteException) e).code(), e.getMessage());
  }
}
