package io.ferrite.fabric.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RpcContext;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Two-sided calls over tcp: round trips, deadlines, a saturated service executor. */
class TcpRpcTest extends TcpTestSupport {
  static final int ECHO = 1;
  static final int BLOCK = 2;
  static final int NEVER = 3;
  static final int THROW = 4;
  static final int COUNT = 5;

  private final CountDownLatch release = new CountDownLatch(1);
  private final AtomicInteger blocked = new AtomicInteger();
  private final AtomicInteger counted = new AtomicInteger();
  private final List<Long> connectionIds = new ArrayList<>();

  private CompletableFuture<ByteBuffer> handle(
      RpcContext ctx, int service, int opcode, ByteBuffer request) {
    switch (service) {
      case ECHO -> {
        synchronized (connectionIds) {
          connectionIds.add(ctx.connectionId());
        }
        ByteBuffer out = ByteBuffer.allocate(request.remaining());
        out.put(request).flip();
        return CompletableFuture.completedFuture(out);
      }
      case BLOCK -> {
        blocked.incrementAndGet();
        try {
          release.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return CompletableFuture.completedFuture(ByteBuffer.allocate(0));
      }
      case NEVER -> {
        return new CompletableFuture<>();
      }
      case THROW -> throw new IllegalStateException("handler bug");
      case COUNT -> {
        counted.incrementAndGet();
        return CompletableFuture.completedFuture(ByteBuffer.allocate(0));
      }
      default -> {
        return Futures.failed(ErrorCode.UNKNOWN_SERVICE, "no service " + service);
      }
    }
  }

  @AfterEach
  void unblock() {
    release.countDown();
  }

  @Test
  void echoRoundTripsSmallAndLarge() throws Exception {
    start(this::handle, 2, 16);
    FabricConnection c = connect();
    for (int size : new int[] {0, 1, 4096, 4097, 100_000, 3 << 20}) {
      byte[] payload = new byte[size];
      random.nextBytes(payload);
      ByteBuffer req = ByteBuffer.allocateDirect(size + 5);
      req.position(5);
      req.put(payload).position(5);
      // Through the shared connection (callSync of a small request takes a lane, a connection of
      // its own: TcpLaneTest).
      ByteBuffer rsp = Futures.join(c.call(ECHO, 9, req, Duration.ofSeconds(10)));
      assertEquals(5, req.position(), "the request is not consumed");
      byte[] back = new byte[rsp.remaining()];
      rsp.get(back);
      assertArrayEquals(payload, back, where() + ": size " + size);
    }
    assertEquals(6, server.counters().ops(OpKind.RPC));
    // One connection, one stable id.
    assertEquals(1, connectionIds.stream().distinct().count());
  }

  @Test
  void requestTooLargeForAFrameFailsLocally() throws Exception {
    start(this::handle, 1, 4);
    FabricConnection c = connect();
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> c.callSync(ECHO, 1, ByteBuffer.allocate(5 << 20), Duration.ofSeconds(5)));
    assertEquals(ErrorCode.TOO_LARGE, e.code());
    assertTrue(c.isOpen());
  }

  @Test
  void noAnswerWithinTheDeadlineIsTimeout() throws Exception {
    start(this::handle, 1, 4);
    FabricConnection c = connect();
    long t0 = System.nanoTime();
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> c.callSync(NEVER, 1, ByteBuffer.allocate(4), Duration.ofMillis(200)));
    assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
    assertTrue(System.nanoTime() - t0 >= TimeUnit.MILLISECONDS.toNanos(150));
    // The connection is still fine.
    assertEquals(3, c.callSync(ECHO, 1, ByteBuffer.allocate(3), Duration.ofSeconds(5)).remaining());
  }

  @Test
  void aCallThatQueuedPastItsDeadlineIsNotRun() throws Exception {
    start(this::handle, 1, 16);
    FabricConnection c = connect();
    CompletableFuture<ByteBuffer> blocker =
        c.call(BLOCK, 1, ByteBuffer.allocate(0), Duration.ofSeconds(10));
    await(() -> blocked.get() == 1, "the service thread is busy");
    CompletableFuture<ByteBuffer> late =
        c.call(COUNT, 1, ByteBuffer.allocate(0), Duration.ofMillis(100));
    FerriteException e = assertThrows(FerriteException.class, () -> Futures.join(late));
    assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
    Thread.sleep(200);
    release.countDown();
    Futures.join(blocker);
    // The server dropped the stale call: its handler never ran, and it answered TIMEOUT.
    await(() -> server.counters().errors(OpKind.RPC) == 1, "the server answered the stale call");
    assertEquals(0, counted.get(), where() + ": a call past its deadline was run");
  }

  @Test
  void aSaturatedExecutorAnswersBusy() throws Exception {
    start(this::handle, 1, 1);
    FabricConnection c = connect();
    CompletableFuture<ByteBuffer> running =
        c.call(BLOCK, 1, ByteBuffer.allocate(0), Duration.ofSeconds(10));
    await(() -> blocked.get() == 1, "the service thread is busy");
    CompletableFuture<ByteBuffer> queued =
        c.call(ECHO, 1, ByteBuffer.allocate(1), Duration.ofSeconds(10));
    CompletableFuture<ByteBuffer> refused =
        c.call(ECHO, 2, ByteBuffer.allocate(1), Duration.ofSeconds(10));
    FerriteException e = assertThrows(FerriteException.class, () -> Futures.join(refused));
    assertEquals(ErrorCode.BUSY, e.code(), e.getMessage());
    assertTrue(e.retryable());
    release.countDown();
    Futures.join(running);
    assertEquals(1, Futures.join(queued).remaining());
  }

  @Test
  void aThrowingHandlerIsInternalAndTheServerLivesOn() throws Exception {
    start(this::handle, 1, 4);
    FabricConnection c = connect();
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> c.callSync(THROW, 1, ByteBuffer.allocate(0), Duration.ofSeconds(5)));
    assertEquals(ErrorCode.INTERNAL, e.code(), e.getMessage());
    assertEquals(2, c.callSync(ECHO, 1, ByteBuffer.allocate(2), Duration.ofSeconds(5)).remaining());
  }

  @Test
  void manyThreadsShareOneConnection() throws Exception {
    start(this::handle, 2, 1024);
    FabricConnection c = connect();
    int threads = 4;
    int calls = 500;
    List<Thread> ts = new ArrayList<>();
    AtomicInteger failures = new AtomicInteger();
    for (int t = 0; t < threads; t++) {
      int id = t;
      Thread th =
          new Thread(
              () -> {
                for (int i = 0; i < calls; i++) {
                  ByteBuffer req = ByteBuffer.allocate(8);
                  req.putInt(0, id).putInt(4, i);
                  ByteBuffer rsp = c.callSync(ECHO, 1, req, Duration.ofSeconds(10));
                  if (rsp.getInt(0) != id || rsp.getInt(4) != i) {
                    failures.incrementAndGet();
                  }
                  c.writeSync(ref, 8L * id, req);
                }
              },
              "caller-" + t);
      ts.add(th);
      th.start();
    }
    for (Thread th : ts) {
      th.join();
    }
    assertEquals(0, failures.get(), where() + ": a response went to the wrong caller");
  }
}
