package io.ferrite.fabric.netty;

import io.ferrite.fabric.Counters;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Frames;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The "server cores": a bounded pool of named service threads that runs {@link RpcHandler}s, apart
 * from the I/O threads that serve one-sided ops. When every thread is busy and the queue is full, a
 * call is answered {@link ErrorCode#BUSY} at once; a call that waited in the queue past its
 * deadline is answered {@link ErrorCode#TIMEOUT} without running.
 */
final class RpcDispatcher {
  private static final System.Logger LOG = System.getLogger(RpcDispatcher.class.getName());

  /** RPC body before the request: service u16 | opcode u16 | deadlineMillis u32. */
  static final int RPC_HEADER = 8;

  private final RpcHandler handler;
  private final Counters counters;
  private final ThreadPoolExecutor executor;
  private final int maxResponse;

  RpcDispatcher(
      RpcHandler handler,
      Counters counters,
      String name,
      int threads,
      int queue,
      int maxFrameBytes) {
    this.handler = handler;
    this.counters = counters;
    this.maxResponse = maxFrameBytes - Frames.HEADER_AFTER_LENGTH;
    BlockingQueue<Runnable> q =
        queue == 0 ? new SynchronousQueue<>() : new ArrayBlockingQueue<>(queue);
    this.executor =
        new ThreadPoolExecutor(
            threads,
            threads,
            0,
            TimeUnit.MILLISECONDS,
            q,
            new DefaultThreadFactory(name, true),
            new ThreadPoolExecutor.AbortPolicy());
  }

  /**
   * Called on the I/O thread: copies the request out of the read buffer (so no buffer outlives the
   * frame) and queues the call.
   */
  void dispatch(Channel ch, ServerHandler conn, long requestId, ByteBuf body) {
    int i = body.readerIndex();
    int service = body.getUnsignedShortLE(i);
    int opcode = body.getUnsignedShortLE(i + 2);
    long deadlineMillis = body.getUnsignedIntLE(i + 4);
    ByteBuffer request = ByteBuffer.allocate(body.readableBytes() - RPC_HEADER);
    body.getBytes(i + RPC_HEADER, request);
    request.flip();
    long received = System.nanoTime();
    try {
      executor.execute(
          () -> run(ch, conn, requestId, service, opcode, deadlineMillis, received, request));
    } catch (RejectedExecutionException e) {
      counters.recordError(OpKind.RPC);
      boolean down = executor.isShutdown();
      ch.write(
          Wire.error(
              ch.alloc(),
              Frames.TYPE_RPC,
              requestId,
              down ? ErrorCode.UNAVAILABLE : ErrorCode.BUSY,
              down
                  ? "server is shutting down"
                  : "service executor is saturated ("
                      + executor.getMaximumPoolSize()
                      + " threads, "
                      + executor.getQueue().size()
                      + " queued)"),
          ch.voidPromise());
    }
  }

  private void run(
      Channel ch,
      ServerHandler conn,
      long requestId,
      int service,
      int opcode,
      long deadlineMillis,
      long received,
      ByteBuffer request) {
    int requestBytes = request.remaining();
    if (deadlineMillis > 0) {
      long waited = System.nanoTime() - received;
      if (waited > TimeUnit.MILLISECONDS.toNanos(deadlineMillis)) {
        reply(
            ch,
            requestId,
            requestBytes,
            null,
            new FerriteException(
                ErrorCode.TIMEOUT,
                "call to service "
                    + service
                    + " opcode "
                    + opcode
                    + " waited "
                    + TimeUnit.NANOSECONDS.toMillis(waited)
                    + " ms in the service queue (deadline: "
                    + deadlineMillis
                    + " ms)"));
        return;
      }
    }
    CompletableFuture<ByteBuffer> f;
    try {
      f =
          handler.handle(
              new RpcContext(conn.connectionId(), conn.peer()), service, opcode, request);
      if (f == null) {
        f = CompletableFuture.failedFuture(new IllegalStateException("handler returned null"));
      }
    } catch (RuntimeException | Error e) {
      f = CompletableFuture.failedFuture(e);
    }
    f.whenComplete((rsp, err) -> reply(ch, requestId, requestBytes, rsp, err));
  }

  private void reply(Channel ch, long requestId, int requestBytes, ByteBuffer rsp, Throwable err) {
    if (err == null && rsp == null) {
      rsp = ByteBuffer.allocate(0);
    }
    if (err == null && rsp.remaining() > maxResponse) {
      err =
          new FerriteException(
              ErrorCode.TOO_LARGE,
              "response of " + rsp.remaining() + " B (expected: <= " + maxResponse + ")");
    }
    ByteBuf frame;
    if (err != null) {
      FerriteException fe = FerriteException.unwrap(err);
      if (fe.code() == ErrorCode.INTERNAL) {
        LOG.log(Level.WARNING, "RPC handler failed", err);
      }
      counters.recordError(OpKind.RPC);
      frame = Wire.error(ch.alloc(), Frames.TYPE_RPC, requestId, fe.code(), fe.detail());
    } else {
      int n = rsp.remaining();
      frame = Wire.response(ch.alloc(), Frames.TYPE_RPC, requestId, n);
      frame.writeBytes(rsp.duplicate());
      counters.record(OpKind.RPC, (long) requestBytes + n);
    }
    // On a closed channel the write fails and Netty releases the frame.
    ch.writeAndFlush(frame, ch.voidPromise());
  }

  void shutdown() {
    executor.shutdown();
    try {
      if (!executor.awaitTermination(1, TimeUnit.SECONDS)) {
        executor.shutdownNow();
      }
    } catch (InterruptedException e) {
      executor.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }
}
