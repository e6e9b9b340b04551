package io.ferrite.fabric.netty;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Frames;
import io.ferrite.fabric.Role;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.unix.FileDescriptor;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;

/**
 * One accepted connection: the handshake, then dispatch of each frame to the {@link SoftNic}
 * (one-sided ops, on this I/O thread) or the {@link RpcDispatcher} (inline, or a dispatch thread).
 *
 * <p>Before authentication only HELLO then AUTH are accepted, and frames are limited to the size of
 * a HELLO, so an unauthenticated peer can make the server allocate at most a few hundred bytes and
 * can run nothing. Every request must carry flags 0 and status 0 and a body of exactly its type's
 * layout (at least, for WRITE and RPC); anything else closes the connection.
 */
final class ServerHandler extends FrameReader {
  private static final System.Logger LOG = System.getLogger(ServerHandler.class.getName());

  private static final int AWAIT_HELLO = 0;
  private static final int AWAIT_AUTH = 1;
  private static final int READY = 2;

  private final NettyServer server;
  private final long connectionId;
  private int state = AWAIT_HELLO;
  private byte[] clientNonce;
  private byte[] serverNonce;

  /** The role the HELLO claimed; proven once READY. Event loop only. */
  private Role role;

  private ScheduledFuture<?> handshakeTimer;
  private String peer = "?";

  /** The small responses of the current read burst; see {@link ResponseBuffer}. */
  private ResponseBuffer responses;

  /**
   * True while {@link #onFrame} dispatches an RPC on the event loop: an answer the handler gives
   * inline before that returns is gathered into {@link #responses}, like a one-sided op's, and
   * leaves with the burst's one flush. Event loop only.
   */
  private boolean dispatchingRpc;

  /**
   * Frames from other threads (RPC answers, doorbells), written by the thread that has them; set on
   * the event loop once the handshake is done, before any RPC of this connection is dispatched.
   */
  private volatile ServerWriter writer;

  ServerHandler(NettyServer server, long connectionId) {
    super(Frames.HEADER_AFTER_LENGTH + Handshake.MAX_HELLO);
    this.server = server;
    this.connectionId = connectionId;
  }

  String peer() {
    return peer;
  }

  long connectionId() {
    return connectionId;
  }

  /** The role the handshake proved; called on the event loop, only once the handshake is done. */
  Role role() {
    if (state != READY) {
      throw new IllegalStateException("no role before the handshake is done");
    }
    return role;
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) {
    responses = new ResponseBuffer(ctx);
  }

  @Override
  public void handlerRemoved(ChannelHandlerContext ctx) {
    responses.release();
    super.handlerRemoved(ctx);
  }

  @Override
  public void channelActive(ChannelHandlerContext ctx) throws Exception {
    String remote = String.valueOf(ctx.channel().remoteAddress());
    peer = (remote.isEmpty() ? "local socket" : remote) + "#" + connectionId;
    long ms = server.handshakeTimeoutMillis();
    handshakeTimer =
        ctx.executor()
            .schedule(
                () -> {
                  if (state != READY && ctx.channel().isActive()) {
                    server
                        .refusals()
                        .log(
                            ctx.executor(),
                            "no handshake in time",
                            null,
                            "closing connection from {0} to {1}: no handshake within {2} ms",
                            peer,
                            server.address(),
                            ms);
                    ctx.close();
                  }
                },
                ms,
                TimeUnit.MILLISECONDS);
    super.channelActive(ctx);
  }

  /**
   * Room for an RPC answer of {@code frameBytes} in the current read burst's {@link
   * ResponseBuffer}, or null when the caller must {@link #send} a frame of its own: not on the
   * event loop, not inside {@link #onFrame}'s dispatch of an RPC (the handler answered later), or
   * too large to copy. Why: an inline answer written directly was one {@code write(2)} of its own,
   * and the burst's other answers (one-sided reads of other threads, other RPCs) another; the
   * syscalls, with loopback's delivery to the peer inside them, were the largest part of the tcp
   * server's CPU per transaction request (docs/PERFORMANCE.md "Tx face", 2026-11-27 09:59).
   */
  ByteBuf burstRoom(Channel ch, int frameBytes) {
    if (!ch.eventLoop().inEventLoop()
        || !dispatchingRpc
        || frameBytes > Frames.HEADER + SoftNic.COPY_READ_LIMIT) {
      return null;
    }
    return responses.room(frameBytes);
  }

  /**
   * Sends one whole frame of this connection from any thread (an RPC answer, a doorbell): see
   * {@link ServerWriter}. Ownership of {@code frame} passes here.
   */
  void send(Channel ch, ByteBuf frame) {
    ServerWriter w = writer;
    if (w != null) {
      w.send(frame);
    } else {
      ch.writeAndFlush(frame, ch.voidPromise());
    }
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    responses.release();
    ServerWriter w = writer;
    if (w != null) {
      w.close();
    }
    if (handshakeTimer != null) {
      handshakeTimer.cancel(false);
    }
    if (state == READY) {
      server.connectionClosed();
      server.ringsClosed(connectionId);
    }
    super.channelInactive(ctx);
  }

  @Override
  protected int onHeader(
      ChannelHandlerContext ctx, int type, int flags, int status, long requestId, int bodyLength) {
    if (flags != 0 || status != 0) {
      throw new FrameReader.BadFrameException(
          Wire.typeName(type)
              + " request with flags "
              + flags
              + " and status "
              + status
              + " (expected: 0 and 0)");
    }
    if (state != READY) {
      int expected = state == AWAIT_HELLO ? Frames.TYPE_HELLO : Frames.TYPE_AUTH;
      if (type != expected) {
        throw new FrameReader.BadFrameException(
            Wire.typeName(type)
                + " before authentication (expected: "
                + Wire.typeName(expected)
                + ")");
      }
    }
    int min;
    int max;
    switch (type) {
      case Frames.TYPE_HELLO -> {
        if (state != AWAIT_HELLO) {
          throw new FrameReader.BadFrameException("HELLO after the handshake");
        }
        min = Handshake.HELLO_FIXED + Frames.NONCE_BYTES;
        max = Handshake.MAX_HELLO;
      }
      case Frames.TYPE_AUTH -> {
        if (state != AWAIT_AUTH) {
          throw new FrameReader.BadFrameException("AUTH after the handshake");
        }
        min = max = Frames.PROOF_BYTES;
      }
      case Frames.TYPE_READ -> min = max = Frames.REGION_OP_HEADER + 4;
      case Frames.TYPE_WRITE -> {
        min = Frames.REGION_OP_HEADER;
        max = Integer.MAX_VALUE;
      }
      case Frames.TYPE_CAS -> min = max = Frames.REGION_OP_HEADER + 16;
      case Frames.TYPE_FAA -> min = max = Frames.REGION_OP_HEADER + 8;
      case Frames.TYPE_MAP -> min = max = 16;
      case Frames.TYPE_RPC -> {
        min = 8;
        max = Integer.MAX_VALUE;
      }
      case Frames.TYPE_RINGS, Frames.TYPE_DOORBELL -> {
        if (!server.hasRings()) {
          throw new FrameReader.BadFrameException(
              Wire.typeName(type) + " on a server without rings");
        }
        min = max = 0;
      }
      default -> throw new FrameReader.BadFrameException("unknown frame type " + type);
    }
    if (bodyLength < min || bodyLength > max) {
      throw new FrameReader.BadFrameException(
          Wire.typeName(type)
              + " body of "
              + bodyLength
              + " B (expected: "
              + (min == max
                  ? String.valueOf(min)
                  : max == Integer.MAX_VALUE ? ">= " + min : ">= " + min + " and <= " + max)
              + ")");
    }
    return AGGREGATE;
  }

  @Override
  protected void onFrame(
      ChannelHandlerContext ctx, int type, int flags, int status, long requestId, ByteBuf body) {
    SoftNic nic = server.nic();
    switch (type) {
      case Frames.TYPE_READ -> nic.read(responses, requestId, body);
      case Frames.TYPE_WRITE -> nic.write(responses, requestId, body);
      case Frames.TYPE_CAS, Frames.TYPE_FAA -> nic.atomic(responses, type, requestId, body);
      case Frames.TYPE_MAP -> nic.map(responses, requestId, body);
      case Frames.TYPE_RPC -> {
        dispatchingRpc = true;
        try {
          server.rpc().dispatch(ctx.channel(), this, requestId, body);
        } finally {
          dispatchingRpc = false;
        }
      }
      case Frames.TYPE_RINGS -> server.openRings(ctx, this, requestId);
      case Frames.TYPE_DOORBELL -> server.ringDoorbell(connectionId);
      case Frames.TYPE_HELLO -> hello(ctx, requestId, body);
      case Frames.TYPE_AUTH -> auth(ctx, requestId, body);
      default -> throw new FrameReader.BadFrameException("unknown frame type " + type);
    }
  }

  // HELLO  magic u32 'FRRT' | version u16 | idLen u16 | clusterId utf8 | clientNonce 16 B
  //        | role u8 | helloCheck 32 B
  private void hello(ChannelHandlerContext ctx, long requestId, ByteBuf body) {
    int i = body.readerIndex();
    int magic = body.getIntLE(i);
    int version = body.getUnsignedShortLE(i + 4);
    int idLen = body.getUnsignedShortLE(i + 6);
    if (magic != Frames.MAGIC) {
      throw new FrameReader.BadFrameException(
          "HELLO magic 0x" + Integer.toHexString(magic) + " (expected: 'FRRT')");
    }
    Credentials creds = server.credentials();
    // Before the length check: another version's HELLO has another layout, and deserves a reason.
    if (version != Frames.PROTOCOL_VERSION) {
      refuse(
          ctx,
          Frames.TYPE_HELLO,
          requestId,
          "protocol version " + version + " (expected: " + Frames.PROTOCOL_VERSION + ")");
      return;
    }
    if (body.readableBytes() != Handshake.HELLO_FIXED + idLen + Handshake.HELLO_TAIL) {
      throw new FrameReader.BadFrameException(
          "HELLO body of "
              + body.readableBytes()
              + " B does not match its cluster id length "
              + idLen);
    }
    String clusterId = body.toString(i + Handshake.HELLO_FIXED, idLen, StandardCharsets.UTF_8);
    if (!clusterId.equals(creds.clusterId())) {
      refuse(
          ctx,
          Frames.TYPE_HELLO,
          requestId,
          "cluster id '" + clusterId + "' (expected: '" + creds.clusterId() + "')");
      return;
    }
    int tail = i + Handshake.HELLO_FIXED + idLen;
    clientNonce = new byte[Frames.NONCE_BYTES];
    body.getBytes(tail, clientNonce);
    int roleByte = body.getUnsignedByte(tail + Frames.NONCE_BYTES);
    Role claimed = Role.fromWire(roleByte);
    if (claimed == null) {
      refuse(ctx, Frames.TYPE_HELLO, requestId, "role " + roleByte + " (expected: 0, 1 or 2)");
      return;
    }
    if (!creds.canDerive(claimed)) {
      refuse(
          ctx,
          Frames.TYPE_HELLO,
          requestId,
          "this server holds a " + creds.role() + " secret and cannot verify role " + claimed);
      return;
    }
    byte[] check = new byte[Frames.PROOF_BYTES];
    body.getBytes(tail + Frames.NONCE_BYTES + 1, check);
    if (!Handshake.verify(Handshake.helloCheck(creds, claimed, clientNonce), check)) {
      refuse(
          ctx,
          Frames.TYPE_HELLO,
          requestId,
          Handshake.WRONG_SECRET + claimed + " of cluster '" + creds.clusterId() + "'");
      return;
    }
    role = claimed;
    serverNonce = Handshake.nonce();
    byte[] proof =
        Handshake.serverProof(
            creds, role, clientNonce, serverNonce, Tls.serverEndPoint(ctx.channel(), true));
    ByteBuf rsp =
        Wire.response(ctx.alloc(), Frames.TYPE_HELLO, requestId, Handshake.HELLO_RESPONSE);
    rsp.writeIntLE(server.nodeId());
    rsp.writeBytes(serverNonce);
    rsp.writeBytes(proof);
    ctx.writeAndFlush(rsp, ctx.voidPromise());
    state = AWAIT_AUTH;
  }

  // AUTH   clientProof 32 B
  private void auth(ChannelHandlerContext ctx, long requestId, ByteBuf body) {
    byte[] presented = new byte[Frames.PROOF_BYTES];
    body.getBytes(body.readerIndex(), presented);
    byte[] expected =
        Handshake.clientProof(
            server.credentials(),
            role,
            serverNonce,
            clientNonce,
            Tls.serverEndPoint(ctx.channel(), true));
    if (!Handshake.verify(expected, presented)) {
      refuse(
          ctx,
          Frames.TYPE_AUTH,
          requestId,
          "client proof does not match the secret of role " + role);
      return;
    }
    state = READY;
    handshakeTimer.cancel(false);
    maxFrameLength(server.maxFrameBytes());
    server.connectionOpened();
    ctx.writeAndFlush(
        Wire.response(ctx.alloc(), Frames.TYPE_AUTH, requestId, 0), ctx.voidPromise());
    ServerWriter w = new ServerWriter(ctx, server.directWrites() ? duplicate(ctx.channel()) : null);
    responses.writer(w);
    writer = w;
  }

  /** A duplicate of the socket's descriptor for {@link ServerWriter}, or null to use the loop. */
  private FileDescriptor duplicate(Channel ch) {
    FileDescriptor fd = Tls.rawSocket(ch);
    if (fd == null) {
      return null;
    }
    try {
      return FdDup.dup(fd);
    } catch (IOException | RuntimeException e) {
      LOG.log(Level.DEBUG, "no direct answers on {0}: {1}", peer, e.toString());
      return null;
    }
  }

  private void refuse(ChannelHandlerContext ctx, int type, long requestId, String reason) {
    // One cause for every refused handshake: the reasons name the peer's values.
    server
        .refusals()
        .log(
            ctx.executor(),
            "handshake refused",
            null,
            "refusing connection from {0} to {1}: {2}",
            peer,
            server.address(),
            reason);
    ctx.writeAndFlush(Wire.error(ctx.alloc(), type, requestId, ErrorCode.AUTH_FAILED, reason))
        .addListener(ChannelFutureListener.CLOSE);
    // Ignore whatever else this peer sends before the close lands.
    markFailed();
  }

  @Override
  protected void badFrame(ChannelHandlerContext ctx, String reason) {
    server
        .refusals()
        .log(
            ctx.executor(),
            "bad frame",
            null,
            "closing connection from {0} to {1}: {2}",
            peer,
            server.address(),
            reason);
    ctx.close();
  }

  @Override
  public void channelReadComplete(ChannelHandlerContext ctx) {
    // One buffer and one flush (one system call) for the responses of a read burst of pipelined
    // requests.
    ServerWriter w = writer;
    if (w != null) {
      w.flush(responses); // under the writer's lock: no direct write lands inside this flush
    } else {
      responses.push();
      ctx.flush();
    }
  }

  @Override
  public void channelWritabilityChanged(ChannelHandlerContext ctx) throws Exception {
    // A peer that does not read its answers stops being read: memory stays bounded by the mark.
    ctx.channel().config().setAutoRead(ctx.channel().isWritable());
    super.channelWritabilityChanged(ctx);
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    if (cause instanceof IOException) {
      LOG.log(Level.DEBUG, "connection from {0} failed: {1}", peer, cause.toString());
    } else if (cause.getCause() instanceof SSLException tls) {
      // A peer's TLS failure (its trust file, or not TLS): one line, no stack.
      server
          .refusals()
          .log(
              ctx.executor(),
              "TLS failed",
              null,
              "TLS with {0} failed: {1}",
              peer,
              tls.getMessage());
    } else {
      server
          .refusals()
          .log(
              ctx.executor(),
              "connection error",
              cause,
              "closing connection from {0} after an error",
              peer);
    }
    ctx.close();
  }
}
