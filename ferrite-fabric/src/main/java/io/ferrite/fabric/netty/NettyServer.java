package io.ferrite.fabric.netty;

import io.ferrite.fabric.Counters;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.ServerSpec;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import java.net.SocketAddress;
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
 * either transport. One-sided ops are served on the I/O threads by the {@link SoftNic}; RPCs on the
 * {@link RpcDispatcher}'s bounded executor.
 */
public final class NettyServer implements FabricServer {
  /** Bound on connect-to-AUTH on the server side; a peer that takes longer is dropped. */
  public static final long DEFAULT_HANDSHAKE_TIMEOUT_MILLIS = 5000;

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

  /**
   * Binds and starts serving.
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
      Runnable onClose) {
    this.spec = spec;
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
            spec.maxFrameBytes());
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
            ch.pipeline()
                .addLast(new ServerHandler(NettyServer.this, nextConnectionId.getAndIncrement()));
          }
        });
    ChannelFuture bound = b.bind(bindTo).awaitUninterruptibly();
    if (!bound.isSuccess()) {
      rpc.shutdown();
      throw new FerriteException(
          ErrorCode.UNAVAILABLE, "cannot bind " + bindTo + ": " + bound.cause(), bound.cause());
    }
    this.serverChannel = bound.channel();
    try {
      this.address = addressOf.apply(serverChannel.localAddress());
    } catch (RuntimeException e) {
      serverChannel.close().awaitUninterruptibly(2000);
      rpc.shutdown();
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

  Credentials credentials() {
    return spec.credentials();
  }

  int nodeId() {
    return spec.nodeId();
  }

  int maxFrameBytes() {
    return spec.maxFrameBytes();
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
      rpc.shutdown();
    } finally {
      onClose.run();
    }
  }

  @Override
  public String toString() {
    return "server " + spec.nodeId() + " at " + address;
  }
}
