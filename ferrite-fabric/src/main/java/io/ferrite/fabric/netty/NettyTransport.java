package io.ferrite.fabric.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufHolder;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.FileRegion;
import io.netty.channel.MessageSizeEstimator;
import io.netty.channel.ServerChannel;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;

/**
 * The socket flavours the byte-stream fabrics run on: TCP (epoll when the native library loads, NIO
 * otherwise) and Unix domain sockets (epoll only). One pipeline serves both.
 */
public enum NettyTransport {
  TCP,
  UNIX;

  /** True when Netty's native epoll transport is usable on this machine. */
  public static boolean epoll() {
    return Epoll.isAvailable();
  }

  /** Why epoll is not available, for logs and addresses; null when it is. */
  public static Throwable epollUnavailabilityCause() {
    return Epoll.unavailabilityCause();
  }

  /** A group of named daemon I/O threads of the kind every channel of this process can use. */
  public static EventLoopGroup newGroup(String name, int threads) {
    return newGroup(name, threads, 0);
  }

  /**
   * A group of named daemon I/O threads whose loops, on epoll, keep polling without blocking for
   * {@code spinNanos} after they last had work ({@link SpinThenWait}); 0, and NIO, block at once.
   */
  public static EventLoopGroup newGroup(String name, int threads, long spinNanos) {
    DefaultThreadFactory tf = new DefaultThreadFactory(name, true);
    return epoll()
        ? new EpollEventLoopGroup(threads, tf, SpinThenWait.factory(spinNanos))
        : new NioEventLoopGroup(threads, tf);
  }

  private static final WriteBufferWaterMark WATER_MARK =
      new WriteBufferWaterMark(8 << 20, 16 << 20);

  /**
   * Counts an outbound buffer by the memory it holds rather than its readable bytes, so the water
   * mark bounds memory even for gathered responses whose buffer is larger than what it holds (see
   * {@link ResponseBuffer}).
   */
  private static final MessageSizeEstimator BY_CAPACITY =
      () ->
          msg -> {
            if (msg instanceof ByteBuf b) {
              return b.capacity();
            }
            if (msg instanceof ByteBufHolder h) {
              return h.content().capacity();
            }
            return msg instanceof FileRegion ? 0 : 8;
          };

  // Small requests fit the first guess; bulk transfers grow the read size to 1 MiB so that a
  // large WRITE is gathered from few read buffers (FrameReader slices them rather than copying).
  private static final AdaptiveRecvByteBufAllocator RECV =
      new AdaptiveRecvByteBufAllocator(64, 2048, 1 << 20);

  // Clients: a large READ response is read from the socket straight into the caller's buffer
  // (FrameReader#readDirect), and only what a read buffer took first is copied twice; a small cap
  // keeps that part small (16 KiB of a 1 MiB response) while one read still takes hundreds of
  // small responses.
  private static final AdaptiveRecvByteBufAllocator CLIENT_RECV =
      new AdaptiveRecvByteBufAllocator(64, 2048, 16 << 10);

  Class<? extends ServerChannel> serverChannel() {
    if (this == UNIX) {
      requireEpoll();
      return EpollServerDomainSocketChannel.class;
    }
    return epoll() ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
  }

  Class<? extends Channel> channel() {
    if (this == UNIX) {
      requireEpoll();
      return EpollDomainSocketChannel.class;
    }
    return epoll() ? EpollSocketChannel.class : NioSocketChannel.class;
  }

  private static void requireEpoll() {
    if (!epoll()) {
      throw new IllegalStateException("Unix domain sockets need epoll", epollUnavailabilityCause());
    }
  }

  void configure(ServerBootstrap b) {
    b.channel(serverChannel());
    b.childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, WATER_MARK);
    b.childOption(ChannelOption.MESSAGE_SIZE_ESTIMATOR, BY_CAPACITY);
    b.childOption(ChannelOption.RCVBUF_ALLOCATOR, RECV);
    if (this == TCP) {
      b.option(ChannelOption.SO_REUSEADDR, true);
      b.childOption(ChannelOption.TCP_NODELAY, true);
      b.childOption(ChannelOption.SO_KEEPALIVE, true);
    }
  }

  void configure(Bootstrap b, int connectTimeoutMillis) {
    b.channel(channel());
    b.option(ChannelOption.WRITE_BUFFER_WATER_MARK, WATER_MARK);
    b.option(ChannelOption.RCVBUF_ALLOCATOR, CLIENT_RECV);
    b.option(ChannelOption.CONNECT_TIMEOUT_MILLIS, connectTimeoutMillis);
    if (this == TCP) {
      b.option(ChannelOption.TCP_NODELAY, true);
      b.option(ChannelOption.SO_KEEPALIVE, true);
    }
  }
}
