package io.ferrite.fabric.netty;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Frames;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.ServerSpec;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.unix.FileDescriptor;
import io.netty.util.collection.LongObjectHashMap;
import io.netty.util.concurrent.ScheduledFuture;
import io.netty.util.internal.PlatformDependent;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.net.ssl.SSLException;

/**
 * The client end of a connection: the handshake, then the table of pending requests. Everything
 * here runs on the channel's event loop, so the pending table is a plain map, timeouts are plain
 * list operations, and a response, a timeout and the connection's loss can never race to end the
 * same op.
 *
 * <p>Ops are sent by caller threads ({@link ClientWriter}) and handed over through {@link
 * #register}, a lock-free queue the event loop drains into the pending table before it looks up a
 * response (an op is registered before its frame is written, so its answer always finds it), and at
 * least every {@link #SWEEP_MILLIS} ms while ops are being sent, so that an op whose answer never
 * comes still meets its deadline (at most that much late) without the senders waking the loop.
 */
final class ClientHandler extends FrameReader {
  private static final System.Logger LOG = System.getLogger(ClientHandler.class.getName());

  /** A HELLO response or an error message, with room to spare. */
  private static final int PRE_AUTH_MAX_FRAME =
      Frames.HEADER_AFTER_LENGTH + Math.max(Handshake.HELLO_RESPONSE, Wire.MAX_ERROR_MESSAGE);

  private static final int HELLO_SENT = 0;
  private static final int AUTH_SENT = 1;
  private static final int READY = 2;

  private final Credentials credentials;
  private final String address;
  private final long opTimeoutNanos;
  final CompletableFuture<Integer> handshake = new CompletableFuture<>();

  private int state = HELLO_SENT;
  private byte[] clientNonce;
  private int remoteId;
  private ChannelHandlerContext ctx;

  /** The socket for direct reads, or null when they must not run ({@link Tls#rawSocket}). */
  private FileDescriptor rawSocket;

  /** How often registrations are swept into the pending table while ops are being sent. */
  static final long SWEEP_MILLIS = 10;

  /** Sweeps stop after this many in a row found no new op (and restart with the next op). */
  private static final int IDLE_SWEEPS = 10;

  final ClientWriter writer = new ClientWriter(this);

  /** Ops sent by caller threads, not yet in {@link #pending}. Single consumer: the event loop. */
  private final Queue<ClientOp> registrations = PlatformDependent.newMpscQueue();

  /** Count of registrations; written under the writer's lock, read by the sweep. */
  private volatile long registered;

  private final AtomicBoolean sweeping = new AtomicBoolean();
  private final Runnable sweep = this::sweep;
  private long sweptAt;
  private int idleSweeps;

  private final LongObjectHashMap<ClientOp> pending = new LongObjectHashMap<>();
  private final TimeoutList opTimeouts = new TimeoutList();
  private final TimeoutList rpcTimeouts = new TimeoutList();
  private ScheduledFuture<?> timer;
  private long timerDeadline;

  /** The op whose response body is being read. */
  private ClientOp current;

  /** Run for every DOORBELL the server sends (shm rings); null: none expected. */
  volatile Runnable doorbell;

  /**
   * Set once the connection is lost, under the writer's lock; every op sent after that fails with
   * it at once.
   */
  private volatile FerriteException closedCause;

  ClientHandler(Credentials credentials, String address, long opTimeoutNanos) {
    // Until the server has proven the secret, it may send only small frames.
    super(PRE_AUTH_MAX_FRAME);
    this.credentials = credentials;
    this.address = address;
    this.opTimeoutNanos = opTimeoutNanos;
  }

  // ---- handshake

  @Override
  public void channelActive(ChannelHandlerContext ctx) throws Exception {
    this.ctx = ctx;
    this.rawSocket = Tls.rawSocket(ctx.channel());
    clientNonce = Handshake.nonce();
    byte[] id = credentials.clusterId().getBytes(StandardCharsets.UTF_8);
    ByteBuf hello =
        Wire.request(
            ctx.alloc(),
            Frames.TYPE_HELLO,
            0,
            Handshake.HELLO_FIXED + id.length + Handshake.HELLO_TAIL);
    hello.writeIntLE(Frames.MAGIC);
    hello.writeShortLE(Frames.PROTOCOL_VERSION);
    hello.writeShortLE(id.length);
    hello.writeBytes(id);
    hello.writeBytes(clientNonce);
    hello.writeByte(credentials.role().wire());
    hello.writeBytes(Handshake.helloCheck(credentials, credentials.role(), clientNonce));
    ctx.writeAndFlush(hello, ctx.voidPromise());
    super.channelActive(ctx);
  }

  private void onHandshakeFrame(ChannelHandlerContext ctx, int type, int status, ByteBuf body) {
    if (status != ErrorCode.OK.wire()) {
      refused(
          ctx,
          Handshake.refusedHello(
              credentials, address, ErrorCode.fromWire(status), Wire.message(body)));
      return;
    }
    if (type == Frames.TYPE_HELLO) {
      if (body.readableBytes() != Handshake.HELLO_RESPONSE) {
        throw new FrameReader.BadFrameException(
            "HELLO response of "
                + body.readableBytes()
                + " B (expected: "
                + Handshake.HELLO_RESPONSE
                + ")");
      }
      int i = body.readerIndex();
      remoteId = body.getIntLE(i);
      byte[] serverNonce = new byte[Frames.NONCE_BYTES];
      byte[] proof = new byte[Frames.PROOF_BYTES];
      body.getBytes(i + 4, serverNonce);
      body.getBytes(i + 4 + Frames.NONCE_BYTES, proof);
      byte[] binding = Tls.serverEndPoint(ctx.channel(), false);
      // Check the server before proving ourselves: never talk to a peer without the secret.
      // The server accepted our helloCheck, so our secret is right: a bad proof is the server's.
      Role role = credentials.role();
      if (!Handshake.verify(
          Handshake.serverProof(credentials, role, clientNonce, serverNonce, binding), proof)) {
        refused(
            ctx,
            new FerriteException(
                ErrorCode.AUTH_FAILED,
                "server at "
                    + address
                    + " failed to prove the cluster secret"
                    + (binding.length > 0
                        ? " over this TLS session (a relay terminating TLS?)"
                        : "")));
        return;
      }
      ByteBuf auth = Wire.request(ctx.alloc(), Frames.TYPE_AUTH, 0, Frames.PROOF_BYTES);
      auth.writeBytes(Handshake.clientProof(credentials, role, serverNonce, clientNonce, binding));
      ctx.writeAndFlush(auth, ctx.voidPromise());
      state = AUTH_SENT;
    } else {
      if (body.isReadable()) {
        throw new FrameReader.BadFrameException("AUTH response with a body");
      }
      state = READY;
      maxFrameLength(ServerSpec.DEFAULT_MAX_FRAME);
      handshake.complete(remoteId);
    }
  }

  private void refused(ChannelHandlerContext ctx, FerriteException e) {
    markFailed();
    handshake.completeExceptionally(e);
    ctx.close();
  }

  // ---- registration (caller threads, under the writer's lock)

  /** Hands a just-numbered op to the event loop; called before its frame is written. */
  void register(ClientOp op, long nowNanos) {
    if (!op.isRpc()) {
      op.deadlineNanos = nowNanos + opTimeoutNanos;
    }
    registrations.offer(op);
    registered++; // under the writer's lock: no lost update
  }

  /** After registering: makes sure a sweep will pick the op up even if no answer ever comes. */
  void ensureSweeping() {
    if (!sweeping.get() && sweeping.compareAndSet(false, true)) {
      try {
        ctx.executor().execute(sweep);
      } catch (RejectedExecutionException e) {
        // The event loop is gone (the fabric closed); nothing else will end these ops.
        sweeping.set(false);
        ClientOp op;
        FerriteException cause =
            new FerriteException(ErrorCode.UNAVAILABLE, "connection to " + address + " is closed");
        while ((op = registrations.poll()) != null) {
          op.fail(cause);
        }
      }
    }
  }

  /** On the event loop: moves registered ops into the pending table and their timeout lists. */
  private void drainRegistrations() {
    ClientOp op = registrations.poll();
    if (op == null) {
      return;
    }
    do {
      if (closedCause != null) {
        op.fail(closedCause);
      } else {
        pending.put(op.requestId, op);
        (op.isRpc() ? rpcTimeouts : opTimeouts).add(op);
      }
    } while ((op = registrations.poll()) != null);
    if (closedCause == null) {
      armTimer(System.nanoTime());
    }
  }

  private void sweep() {
    drainRegistrations();
    long r = registered;
    if (r != sweptAt) {
      sweptAt = r;
      idleSweeps = 0;
    } else {
      idleSweeps++;
    }
    if (closedCause == null && idleSweeps < IDLE_SWEEPS) {
      ctx.executor().schedule(sweep, SWEEP_MILLIS, TimeUnit.MILLISECONDS);
      return;
    }
    sweeping.set(false);
    // An op registered after the drain above saw the flag still set: pick it up (Dekker-style:
    // the sender offers then reads the flag; this clears the flag then reads the queue).
    if (!registrations.isEmpty() && sweeping.compareAndSet(false, true)) {
      idleSweeps = 0;
      ctx.executor().execute(sweep);
    }
  }

  /** The failure of ops sent from now on, or null while the connection is open. */
  FerriteException closedCause() {
    return closedCause;
  }

  // ---- timeouts

  private void armTimer(long nowNanos) {
    ClientOp a = opTimeouts.head();
    ClientOp b = rpcTimeouts.head();
    if (a == null && b == null) {
      return;
    }
    long earliest;
    if (a == null) {
      earliest = b.deadlineNanos;
    } else if (b == null) {
      earliest = a.deadlineNanos;
    } else {
      earliest = a.deadlineNanos - b.deadlineNanos <= 0 ? a.deadlineNanos : b.deadlineNanos;
    }
    if (timer != null) {
      if (timerDeadline - earliest <= 0) {
        return; // fires early enough; it re-arms itself for whatever is left
      }
      timer.cancel(false);
    }
    timerDeadline = earliest;
    timer =
        ctx.executor()
            .schedule(this::onTimer, Math.max(0, earliest - nowNanos), TimeUnit.NANOSECONDS);
  }

  private void onTimer() {
    timer = null;
    long now = System.nanoTime();
    expire(opTimeouts, now);
    expire(rpcTimeouts, now);
    if (closedCause == null) {
      armTimer(now);
    }
  }

  private void expire(TimeoutList list, long now) {
    ClientOp op;
    while ((op = list.head()) != null && op.deadlineNanos - now <= 0) {
      TimeoutList.remove(op);
      pending.remove(op.requestId);
      long ms =
          op instanceof CallOps.Rpc rpc
              ? rpc.deadlineMillis()
              : TimeUnit.NANOSECONDS.toMillis(opTimeoutNanos);
      op.fail(
          new FerriteException(
              ErrorCode.TIMEOUT,
              "no answer to " + op.describe() + " from " + address + " within " + ms + " ms"));
    }
  }

  // ---- receiving

  @Override
  protected int onHeader(
      ChannelHandlerContext ctx, int type, int flags, int status, long requestId, int bodyLength) {
    Runnable bell = doorbell;
    if (type == Frames.TYPE_DOORBELL && state == READY && bell != null) {
      // Not an answer: the server's ring producer woke our sleeping ring consumer.
      if (flags != 0 || status != 0 || bodyLength != 0) {
        throw new FrameReader.BadFrameException("DOORBELL with flags, status or a body");
      }
      bell.run();
      return DISCARD;
    }
    if (flags != Frames.FLAG_RESPONSE) {
      throw new FrameReader.BadFrameException(
          Wire.typeName(type) + " frame with flags " + flags + " (expected: a response)");
    }
    if (state != READY) {
      int expected = state == HELLO_SENT ? Frames.TYPE_HELLO : Frames.TYPE_AUTH;
      if (type != expected) {
        throw new FrameReader.BadFrameException(
            Wire.typeName(type)
                + " during the handshake (expected: "
                + Wire.typeName(expected)
                + ")");
      }
      return AGGREGATE;
    }
    drainRegistrations();
    ClientOp op = pending.get(requestId);
    if (op == null) {
      return DISCARD; // a late answer to an op that timed out
    }
    if (op.type() != type) {
      throw new FrameReader.BadFrameException(
          Wire.typeName(type) + " response to a " + Wire.typeName(op.type()) + " request");
    }
    int mode = op.onHeader(status, bodyLength);
    pending.remove(requestId);
    current = op;
    return mode;
  }

  @Override
  protected void onFrame(
      ChannelHandlerContext ctx, int type, int flags, int status, long requestId, ByteBuf body) {
    if (state != READY) {
      onHandshakeFrame(ctx, type, status, body);
      return;
    }
    ClientOp op = current;
    current = null;
    TimeoutList.remove(op);
    op.complete(status, body);
  }

  @Override
  protected void onBodyChunk(ChannelHandlerContext ctx, ByteBuf in, int n, boolean last) {
    ClientOp op = current;
    op.onBodyChunk(in, n, last);
    if (last) {
      current = null;
      TimeoutList.remove(op);
    }
  }

  /**
   * Below this, a read buffer's copy costs less than the extra system call. At the read buffers'
   * cap (16 KiB, see NettyTransport), so a body longer than one read buffer is never copied twice.
   */
  private static final int DIRECT_READ_MIN = 16 << 10;

  @Override
  protected int readBodyDirect(ChannelHandlerContext ctx, int remaining) {
    ClientOp op = current;
    FileDescriptor fd = rawSocket;
    if (op == null || remaining < DIRECT_READ_MIN || fd == null) {
      return 0;
    }
    return op.readDirect(fd, remaining);
  }

  @Override
  protected int readHeaderDirect(ChannelHandlerContext ctx, ByteBuffer dst) {
    FileDescriptor fd = rawSocket;
    if (state != READY || fd == null) {
      return 0;
    }
    try {
      int n = fd.read(dst, dst.position(), dst.limit());
      return Math.max(0, n);
    } catch (IOException e) {
      return 0; // left for Netty's next read of the socket to report
    }
  }

  @Override
  protected void badFrame(ChannelHandlerContext ctx, String reason) {
    LOG.log(Level.WARNING, "closing connection to {0}: {1}", address, reason);
    lost(
        new FerriteException(
            ErrorCode.PROTOCOL, "connection to " + address + " closed: " + reason));
    ctx.close();
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    // A failed TLS handshake is reported by connect (Tls#handshakeFailure), not logged here.
    if (!(cause instanceof IOException) && !(cause.getCause() instanceof SSLException)) {
      LOG.log(Level.WARNING, "closing connection to " + address + " after an error", cause);
    }
    lost(
        new FerriteException(
            ErrorCode.UNAVAILABLE, "connection to " + address + " failed: " + cause, cause));
    ctx.close();
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    lost(new FerriteException(ErrorCode.UNAVAILABLE, "connection to " + address + " closed"));
    writer.onInactive();
    super.channelInactive(ctx);
  }

  /** Fails every op not yet answered; later sends fail at once. Idempotent. */
  private void lost(FerriteException cause) {
    writer.lock();
    try {
      if (closedCause != null) {
        return;
      }
      // Under the writer's lock: every op registered before this is in the queue drained below,
      // and none is registered after it.
      closedCause = cause;
    } finally {
      writer.unlock();
    }
    if (timer != null) {
      timer.cancel(false);
      timer = null;
    }
    handshake.completeExceptionally(
        cause.code() == ErrorCode.UNAVAILABLE
            ? new FerriteException(ErrorCode.UNAVAILABLE, cause.detail() + " during the handshake")
            : cause);
    List<ClientOp> ops = new ArrayList<>(pending.values());
    pending.clear();
    ClientOp queued;
    while ((queued = registrations.poll()) != null) {
      ops.add(queued);
    }
    if (current != null) {
      ops.add(current);
      current = null;
    }
    for (ClientOp op : ops) {
      TimeoutList.remove(op);
      op.fail(cause);
    }
  }
}
