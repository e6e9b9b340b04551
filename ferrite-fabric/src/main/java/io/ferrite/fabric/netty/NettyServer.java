package io.ferrite.fabric.netty;

import io.ferrite.fabric.Counters;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Frames;
import io.ferrite.fabric.RateLimitedLog;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.ServerSpec;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import java.lang.System.Logger.Level;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * A listening endpoint of a byte-stream fabric (tcp, or shm's control socket): one pipeline over
 * either transport. One-sided ops are served on the I/O threads by the {@link SoftNic}; RPCs by the
 * {@link RpcDispatcher} (inline, or on its bounded executor). An shm endpoint also has a {@link
 * RingHost}, which carries RPCs through shared-memory rings.
 */
public final class NettyServer implements FabricServer {
  private static final System.Logger LOG = System.getLogger(NettyServer.class.getName());

  /** Bound on connect-to-AUTH on the server side; a peer that takes longer is dropped. */
  public static final long DEFAULT_HANDSHAKE_TIMEOUT_MILLIS = 5000;

  private final boolean directWrites;
  private final ServerSpec spec;
  private final Counters counters = new Counters();
  private final SoftNic nic;
  private final RpcDispatcher rpc;
  private final AtomicInteger connections = new AtomicInteger();
  private final AtomicLong nextConnectionId = new AtomicLong(1);
  private final Set<Channel> channels = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final long handshakeTimeoutMillis;
  private final Runnable onClose;
  private final Channel serverChannel;
  private final String address;
  private final RingHost rings;

  /**
   * Refused and failed connections: one line per cause per 10 s, then a count, so a peer opening
   * hundreds of bad connections (a slowloris of 500 wrote over 1,000 lines) costs a few.
   */
  private final RateLimitedLog refusals;

  /**
   * Binds and starts serving, with RPC rings made by {@code rings} from the endpoint's dispatcher
   * (null: none, RINGS and DOORBELL frames are protocol errors), over TLS when {@code tls} is not
   * null (TCP only: every accepted connection must open with a TLS hello; a plaintext one is
   * answered with an error and closed).
   *
   * @param serveMap whether MAP frames are answered (same-host shm clients) or refused
   * @param addressOf the client-facing address of the bound socket
   * @param onClose run once after the server closed (e.g. removes a socket file)
   */
  public NettyServer(
      ServerSpec spec,
      EventLoopGroup group,
      NettyTransport transport,
      SocketAddress bindTo,
      boolean serveMap,
      Function<SocketAddress, String> addressOf,
      long handshakeTimeoutMillis,
      Runnable onClose,
      Function<RpcDispatcher, RingHost> rings,
      Tls tls,
      boolean directWrites) {
    if (tls != null) {
      tls.requireServer();
    }
    this.spec = spec;
    this.refusals =
        new RateLimitedLog(
            LOG,
            Level.WARNING,
            RateLimitedLog.DEFAULT_INTERVAL,
            "server "
                + spec.nodeId()
                + ": refused or closed {0} more connection(s) in the last {1} s: {2}");
    this.directWrites = directWrites;
    this.handshakeTimeoutMillis = handshakeTimeoutMillis;
    this.onClose = onClose;
    this.nic = new SoftNic(spec.regions(), counters, serveMap, spec.maxFrameBytes());
    this.rpc =
        new RpcDispatcher(
            spec.rpc(),
            counters,
            "ferrite-svc-" + spec.nodeId(),
            spec.serviceThreads(),
            spec.serviceQueue(),
            spec.maxFrameBytes(),
            spec.dispatchSpinNanos());
    this.rings = rings == null ? null : rings.apply(rpc);
    ServerBootstrap b = new ServerBootstrap().group(group);
    transport.configure(b);
    b.childHandler(
        new ChannelInitializer<Channel>() {
          @Override
          protected void initChannel(Channel ch) {
            if (closed.get()) {
              ch.close();
              return;
            }
            channels.add(ch);
            ch.closeFuture().addListener(f -> channels.remove(ch));
            if (tls != null) {
              ch.pipeline().addLast(tls.serverGate(NettyServer.this.address, refusals));
            }
            ch.pipeline()
                .addLast(new ServerHandler(NettyServer.this, nextConnectionId.getAndIncrement()));
          }
        });
    ChannelFuture bound = b.bind(bindTo).awaitUninterruptibly();
    if (!bound.isSuccess()) {
      rpc.shutdown();
      if (this.rings != null) {
        this.rings.shutdown();
      }
      throw new FerriteException(
          ErrorCode.UNAVAILABLE, "cannot bind " + bindTo + ": " + bound.cause(), bound.cause());
    }
    this.serverChannel = bound.channel();
    try {
      this.address = addressOf.apply(serverChannel.localAddress());
    } catch (RuntimeException e) {
      serverChannel.close().awaitUninterruptibly(2000);
      rpc.shutdown();
      if (this.rings != null) {
        this.rings.shutdown();
      }
      throw e;
    }
  }

  @Override
  public String address() {
    return address;
  }

  @Override
  public Counters counters() {
    return counters;
  }

  @Override
  public int connections() {
    return connections.get();
  }

  SoftNic nic() {
    return nic;
  }

  RpcDispatcher rpc() {
    return rpc;
  }

  /** The endpoint's RPC rings (shm), or null: for tests and diagnostics. */
  public RingHost ringHost() {
    return rings;
  }

  /** The endpoint's RPC dispatcher: for tests and diagnostics. */
  public RpcDispatcher dispatcher() {
    return rpc;
  }

  /** Whether this endpoint carries RPCs through shm rings (RINGS and DOORBELL frames). */
  boolean hasRings() {
    return rings != null;
  }

  // RINGS  (empty)                                                 [pathLen u16 | path utf8]
  void openRings(ChannelHandlerContext ctx, ServerHandler conn, long requestId) {
    Channel ch = ctx.channel();
    RpcContext caller = new RpcContext(conn.connectionId(), conn.peer(), conn.role());
    String path;
    try {
      path =
          rings.open(
              new RingHost.RingPeer() {
                @Override
                public RpcContext context() {
                  return caller;
                }

                @Override
                public void ringDoorbell() {
                  conn.send(ch, Wire.request(ch.alloc(), Frames.TYPE_DOORBELL, 0, 0));
                }

                @Override
                public void close(String reason) {
                  refusals.log(
                      ch.eventLoop(),
                      "misbehaving rings",
                      null,
                      "closing connection from {0} to {1}: {2}",
                      caller.peer(),
                      address,
                      reason);
                  ch.close();
                }
              });
    } catch (FerriteException e) {
      conn.send(ch, Wire.error(ctx.alloc(), Frames.TYPE_RINGS, requestId, e.code(), e.detail()));
      return;
    }
    byte[] p = path.getBytes(StandardCharsets.UTF_8);
    ByteBuf rsp = Wire.response(ctx.alloc(), Frames.TYPE_RINGS, requestId, 2 + p.length);
    rsp.writeShortLE(p.length);
    rsp.writeBytes(p);
    conn.send(ch, rsp);
  }

  void ringDoorbell(long connectionId) {
    rings.doorbell(connectionId);
  }

  void ringsClosed(long connectionId) {
    if (rings != null) {
      rings.closed(connectionId);
    }
  }

  Credentials credentials() {
    return spec.credentials();
  }

  int nodeId() {
    return spec.nodeId();
  }

  int maxFrameBytes() {
    return spec.maxFrameBytes();
  }

  /** Where handlers log refused and failed connections (rate-limited per cause). */
  RateLimitedLog refusals() {
    return refusals;
  }

  /**
   * Whether answers from other threads may be written to the socket by those threads (the default)
   * or always go through the event loop ({@link io.ferrite.fabric.FabricTuning}).
   */
  boolean directWrites() {
    return directWrites;
  }

  long handshakeTimeoutMillis() {
    return handshakeTimeoutMillis;
  }

  void connectionOpened() {
    connections.incrementAndGet();
  }

  void connectionClosed() {
    connections.decrementAndGet();
  }

  public boolean isClosed() {
    return closed.get();
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    try {
      serverChannel.close().awaitUninterruptibly(2000);
      List<ChannelFuture> closing = new ArrayList<>();
      for (Channel ch : channels) {
        closing.add(ch.close());
      }
      for (ChannelFuture f : closing) {
        f.awaitUninterruptibly(2000);
      }
      if (rings != null) {
        rings.shutdown();
      }
      rpc.shutdown();
    } finally {
      refusals.flush(); // the counts of windows still open
      onClose.run();
    }
  }

  @Override
  public String toString() {
    return "server " + spec.nodeId() + " at " + address;
  }
}
