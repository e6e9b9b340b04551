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
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * How an endpoint runs its {@link RpcHandler}, whatever carried the request (a frame on a socket,
 * or a record in a shm ring):
 *
 * <ul>
 *   <li><b>inline</b> first: {@link RpcHandler#handleInline} on the receiving thread (an I/O thread
 *       or the shm ring poller). Operations the handler declares non-blocking are answered right
 *       there, without the hand-off to a dispatch thread and back;
 *   <li>otherwise the "server cores": the endpoint's {@link DispatchThreads}, named threads started
 *       with the endpoint, apart from the I/O threads that serve one-sided ops, taking calls from a
 *       lock-free queue (an idle one spins briefly, so a call usually costs no wake-up). When every
 *       thread is busy and the queue is full, a call is answered {@link ErrorCode#BUSY} at once; a
 *       call that waited in the queue past its deadline is answered {@link ErrorCode#TIMEOUT}
 *       without running.
 * </ul>
 *
 * Both paths answer through a {@link Responder}, and count the same {@link OpKind#RPC} ops, bytes
 * and errors.
 */
public final class RpcDispatcher {
  private static final System.Logger LOG = System.getLogger(RpcDispatcher.class.getName());

  /** RPC body before the request: service u16 | opcode u16 | deadlineMillis u32. */
  static final int RPC_HEADER = 8;

  /**
   * Where the answer to one request goes. Called once per request, on whichever thread finished it
   * (the receiving thread, a service thread, or the thread that completed the handler's future).
   */
  public interface Responder {
    /** The response body is {@code body}'s position to limit (not modified). */
    void respond(long requestId, ByteBuffer body);

    /** The call failed with {@code code}; {@code message} says why. */
    void fail(long requestId, ErrorCode code, String message);
  }

  private final RpcHandler handler;
  private final Counters counters;
  private final DispatchThreads threads;
  private final int maxResponse;
  private final LongAdder inline = new LongAdder();

  RpcDispatcher(
      RpcHandler handler,
      Counters counters,
      String name,
      int threads,
      int queue,
      int maxFrameBytes,
      long spinNanos) {
    this.handler = handler;
    this.counters = counters;
    this.maxResponse = maxFrameBytes - Frames.HEADER_AFTER_LENGTH;
    this.threads = new DispatchThreads(name, threads, queue, spinNanos);
  }

  /** The largest response body a call may return; a longer one is answered TOO_LARGE. */
  public int maxResponse() {
    return maxResponse;
  }

  /** How many calls were answered inline (for tests and diagnostics). */
  public long inlineCalls() {
    return inline.sum();
  }

  /**
   * Called on the I/O thread for an RPC frame: copies the request out of the read buffer (so no
   * buffer outlives the frame) and dispatches it, answering with frames on {@code ch}.
   */
  void dispatch(Channel ch, ServerHandler conn, long requestId, ByteBuf body) {
    int i = body.readerIndex();
    int service = body.getUnsignedShortLE(i);
    int opcode = body.getUnsignedShortLE(i + 2);
    long deadlineMillis = body.getUnsignedIntLE(i + 4);
    ByteBuffer request = ByteBuffer.allocate(body.readableBytes() - RPC_HEADER);
    body.getBytes(i + RPC_HEADER, request);
    request.flip();
    dispatch(
        new RpcContext(conn.connectionId(), conn.peer(), conn.role()),
        requestId,
        service,
        opcode,
        deadlineMillis,
        request,
        new SocketResponder(ch, conn));
  }

  /**
   * Runs one call: inline if the handler takes it there, else on a dispatch thread (or answers BUSY
   * at once). {@code request} must be owned by the call (a copy), since it may outlive the caller's
   * buffers.
   */
  public void dispatch(
      RpcContext caller,
      long requestId,
      int service,
      int opcode,
      long deadlineMillis,
      ByteBuffer request,
      Responder out) {
    int requestBytes = request.remaining();
    CompletableFuture<ByteBuffer> f;
    try {
      f = handler.handleInline(caller, service, opcode, request);
    } catch (RuntimeException | Error e) {
      f = CompletableFuture.failedFuture(e);
    }
    if (f != null) {
      inline.increment();
      f.whenComplete((rsp, err) -> reply(out, requestId, requestBytes, rsp, err));
      return;
    }
    Call call =
        new Call(
            caller, requestId, service, opcode, deadlineMillis, System.nanoTime(), request, out);
    if (!threads.offer(call)) {
      counters.recordError(OpKind.RPC);
      boolean down = threads.isShutdown();
      out.fail(
          requestId,
          down ? ErrorCode.UNAVAILABLE : ErrorCode.BUSY,
          down
              ? "server is shutting down"
              : "every dispatch thread is busy and the queue is full ("
                  + threads.threads()
                  + " threads, "
                  + threads.admitted()
                  + " calls admitted)");
    }
  }

  /** A call waiting for a dispatch thread. */
  private final class Call implements DispatchThreads.Task {
    private final RpcContext caller;
    private final long requestId;
    private final int service;
    private final int opcode;
    private final long deadlineMillis;
    private final long received;
    private final ByteBuffer request;
    private final Responder out;

    Call(
        RpcContext caller,
        long requestId,
        int service,
        int opcode,
        long deadlineMillis,
        long received,
        ByteBuffer request,
        Responder out) {
      this.caller = caller;
      this.requestId = requestId;
      this.service = service;
      this.opcode = opcode;
      this.deadlineMillis = deadlineMillis;
      this.received = received;
      this.request = request;
      this.out = out;
    }

    /** On a dispatch thread: TIMEOUT if it waited past its deadline, else the handler. */
    @Override
    public void run() {
      int requestBytes = request.remaining();
      if (deadlineMillis > 0) {
        long waited = System.nanoTime() - received;
        if (waited > TimeUnit.MILLISECONDS.toNanos(deadlineMillis)) {
          reply(
              out,
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
        f = handler.handle(caller, service, opcode, request);
        if (f == null) {
          f = CompletableFuture.failedFuture(new IllegalStateException("handler returned null"));
        }
      } catch (RuntimeException | Error e) {
        f = CompletableFuture.failedFuture(e);
      }
      f.whenComplete((rsp, err) -> reply(out, requestId, requestBytes, rsp, err));
    }

    @Override
    public void abandon() {
      counters.recordError(OpKind.RPC);
      out.fail(requestId, ErrorCode.UNAVAILABLE, "server is shutting down");
    }
  }

  private void reply(
      Responder out, long requestId, int requestBytes, ByteBuffer rsp, Throwable err) {
    if (err == null && rsp == null) {
      rsp = ByteBuffer.allocate(0);
    }
    if (err == null && rsp.remaining() > maxResponse) {
      err =
          new FerriteException(
              ErrorCode.TOO_LARGE,
              "response of " + rsp.remaining() + " B (expected: <= " + maxResponse + ")");
    }
    if (err != null) {
      FerriteException fe = FerriteException.unwrap(err);
      if (fe.code() == ErrorCode.INTERNAL) {
        LOG.log(Level.WARNING, "RPC handler failed", err);
      }
      counters.recordError(OpKind.RPC);
      out.fail(requestId, fe.code(), fe.detail());
    } else {
      counters.record(OpKind.RPC, (long) requestBytes + rsp.remaining());
      out.respond(requestId, rsp);
    }
  }

  void shutdown() {
    threads.shutdown(1000);
  }

  /**
   * Answers with frames on a socket, written by the answering thread where it can ({@link
   * ServerWriter}); on a closed channel the write fails and Netty frees it.
   */
  private static final class SocketResponder implements Responder {
    private final Channel ch;
    private final ServerHandler conn;

    SocketResponder(Channel ch, ServerHandler conn) {
      this.ch = ch;
      this.conn = conn;
    }

    @Override
    public void respond(long requestId, ByteBuffer body) {
      int n = body.remaining();
      ByteBuf room = conn.burstRoom(ch, Frames.HEADER + n);
      if (room != null) { // answered inline: with the read burst's other answers, one write(2)
        Wire.writeResponseHeader(room, Frames.TYPE_RPC, requestId, n);
        room.writeBytes(body.duplicate());
        return;
      }
      ByteBuf frame = Wire.response(ch.alloc(), Frames.TYPE_RPC, requestId, n);
      frame.writeBytes(body.duplicate());
      conn.send(ch, frame);
    }

    @Override
    public void fail(long requestId, ErrorCode code, String message) {
      byte[] msg = Wire.truncatedUtf8(message);
      ByteBuf room = conn.burstRoom(ch, Frames.HEADER + msg.length);
      if (room != null) {
        Wire.writeError(room, Frames.TYPE_RPC, requestId, code, msg);
        return;
      }
      conn.send(ch, Wire.error(ch.alloc(), Frames.TYPE_RPC, requestId, code, message));
    }
  }
}
