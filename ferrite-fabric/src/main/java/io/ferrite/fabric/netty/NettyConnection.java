package io.ferrite.fabric.netty;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Counters;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricTuning;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Frames;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.ServerSpec;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.unix.FileDescriptor;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.concurrent.Future;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * A client connection over one Netty channel, shared by all of a client's threads.
 *
 * <p>Ops are pipelined: each gets a request id and waits in the {@link ClientHandler}'s pending
 * table for its answer, so many are in flight at once. The calling thread encodes its op and writes
 * it to the socket itself, under a short write lock ({@link ClientWriter}); when the socket is full
 * the frames queue, in order, for the event loop. {@link #batch()} sends many ops with one system
 * call. At most {@link ConnectOptions#maxInFlight()} ops are in flight: a caller beyond that waits
 * for one to end (an I/O thread never waits).
 *
 * <p>Futures complete on the event loop: a callback attached to one must not block.
 *
 * <p>{@link #readSync}, a batch's {@code flushSync} of small reads and {@link #callSync} of a small
 * request go instead over one of the connection's blocking lanes ({@link Lanes}) when the shared
 * connection has nothing in flight: the calling thread reads its own answer, as a blocking socket
 * client does.
 */
public final class NettyConnection implements FabricConnection {
  private static final System.Logger LOG = System.getLogger(NettyConnection.class.getName());

  private final String address;
  private final Channel channel;
  private final EventLoop loop;
  private final ClientHandler handler;
  private final int remoteId;
  private final Counters counters = new Counters();
  private final InFlight inFlight;
  private final Consumer<NettyConnection> onClose;

  /** Blocking lanes for synchronous small reads; null where there are none (not tcp, or off). */
  private final Lanes lanes;

  private volatile boolean closed;
  private volatile boolean lanesEnabled = true;

  private NettyConnection(
      String address,
      Channel channel,
      ClientHandler handler,
      int remoteId,
      ConnectOptions options,
      Consumer<NettyConnection> onClose,
      FabricTuning tuning) {
    this.address = address;
    this.inFlight = new InFlight(options.maxInFlight(), channel.eventLoop().parent());
    this.channel = channel;
    this.loop = channel.eventLoop();
    this.handler = handler;
    this.remoteId = remoteId;
    this.onClose = onClose;
    // Lanes are plain sockets of their own, beside the channel: never under TLS.
    this.lanes =
        tuning.lanes() > 0
                && !Tls.on(channel)
                && channel.remoteAddress() instanceof InetSocketAddress remote
            ? new Lanes(
                remote, address, options, remoteId, loop, tuning.lanes(), tuning.tcpPollSpinNanos())
            : null;
    if (lanes != null) {
      channel.closeFuture().addListener(f -> lanes.close());
    }
  }

  /**
   * Connects to {@code remote} and completes the handshake within {@code options.connectTimeout()}
   * (must not be called on an I/O thread), over TLS when {@code tls} is not null (TCP only): the
   * server's certificate is checked against the trust file before the cluster handshake starts, and
   * a rejected one fails with {@link ErrorCode#AUTH_FAILED} naming the certificate problem.
   */
  public static NettyConnection connect(
      EventLoopGroup group,
      NettyTransport transport,
      SocketAddress remote,
      String address,
      ConnectOptions options,
      Consumer<NettyConnection> onClose,
      Tls tls,
      FabricTuning tuning) {
    long timeoutNanos = options.connectTimeout().toNanos();
    long start = System.nanoTime();
    ClientHandler handler =
        new ClientHandler(options.credentials(), address, options.opTimeout().toNanos());
    Bootstrap b = new Bootstrap().group(group);
    if (tls == null) {
      b.handler(handler);
    } else {
      InetSocketAddress to = (InetSocketAddress) remote;
      b.handler(
          new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
              ch.pipeline().addLast(tls.clientHandler(ch, to), handler);
            }
          });
    }
    transport.configure(b, (int) Math.min(Integer.MAX_VALUE, options.connectTimeout().toMillis()));
    ChannelFuture cf = b.connect(remote);
    if (!cf.awaitUninterruptibly(timeoutNanos, TimeUnit.NANOSECONDS) || !cf.isSuccess()) {
      // Read the cause before the cancel, which would make every timeout a CancellationException.
      Throwable cause = cf.cause();
      cf.cancel(false);
      cf.channel().close();
      throw new FerriteException(
          ErrorCode.UNAVAILABLE,
          "cannot connect to "
              + address
              + ": "
              + (cause == null
                  ? "timed out after " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms"
                  : cause),
          cause);
    }
    Channel ch = cf.channel();
    try {
      long left = Math.max(0, timeoutNanos - (System.nanoTime() - start));
      SslHandler ssl = ch.pipeline().get(SslHandler.class);
      if (ssl != null) {
        // The TLS failure, not the closed channel the cluster handshake then sees, is the story.
        Future<Channel> hs = ssl.handshakeFuture();
        if (!hs.awaitUninterruptibly(left, TimeUnit.NANOSECONDS)) {
          // Not the cluster handshake's timeout either: that one never started.
          ch.close();
          throw new FerriteException(
              ErrorCode.UNAVAILABLE,
              "TLS handshake with "
                  + address
                  + " did not complete within "
                  + options.connectTimeout().toMillis()
                  + " ms (is the server using TLS? a server without tls.enabled closes on a TLS"
                  + " hello)");
        }
        if (!hs.isSuccess()) {
          ch.close();
          throw tls.handshakeFailure(address, hs.cause());
        }
        left = Math.max(0, timeoutNanos - (System.nanoTime() - start));
      }
      int remoteId = handler.handshake.get(left, TimeUnit.NANOSECONDS);
      // Whether caller threads write frames to the socket themselves (the default) or hand them to
      // the event loop: a diagnostic switch for comparisons (FabricTuning#directWrites).
      handler.writer.attach(ch, tuning.directWrites() ? duplicate(ch) : null);
      return new NettyConnection(address, ch, handler, remoteId, options, onClose, tuning);
    } catch (ExecutionException e) {
      ch.close();
      throw FerriteException.unwrap(e);
    } catch (TimeoutException e) {
      ch.close();
      throw new FerriteException(
          ErrorCode.UNAVAILABLE,
          "no handshake from "
              + address
              + " within "
              + options.connectTimeout().toMillis()
              + " ms");
    } catch (InterruptedException e) {
      ch.close();
      Thread.currentThread().interrupt();
      throw new FerriteException(ErrorCode.UNAVAILABLE, "interrupted connecting to " + address);
    }
  }

  /** A descriptor for caller-thread writes (see {@link ClientWriter}), or null to use the loop. */
  private static FileDescriptor duplicate(Channel ch) {
    FileDescriptor fd = Tls.rawSocket(ch);
    if (fd == null) {
      return null;
    }
    try {
      return FdDup.dup(fd);
    } catch (IOException | RuntimeException e) {
      LOG.log(Level.DEBUG, "no caller-thread writes on {0}: {1}", ch, e.toString());
      return null;
    }
  }

  @Override
  public int remoteId() {
    return remoteId;
  }

  /** True on this connection's I/O thread, where nothing may block. */
  public boolean inEventLoop() {
    return loop.inEventLoop();
  }

  public String address() {
    return address;
  }

  @Override
  public Counters counters() {
    return counters;
  }

  @Override
  public boolean isOpen() {
    return !closed && channel.isActive();
  }

  // ---- one-sided ops

  @Override
  public CompletableFuture<Void> read(RegionRef region, long offset, ByteBuffer dst) {
    if (dst.isReadOnly()) {
      return Futures.failed(ErrorCode.INVALID_ARGUMENT, "read into a read-only buffer");
    }
    RegionOps.Read op = new RegionOps.Read(counters, region, offset, dst);
    submit(op);
    return op.future;
  }

  /**
   * A blocking read: on a {@link Lane} when one is free and the shared connection has nothing in
   * flight (so the read cannot overtake an earlier op of this thread), else through the event loop.
   */
  @Override
  public void readSync(RegionRef region, long offset, ByteBuffer dst) {
    if (lanes != null && dst.remaining() <= Lane.MAX_READ && !dst.isReadOnly()) {
      RegionOps.Read op = new RegionOps.Read(counters, region, offset, dst);
      if (readOnLane(List.of(op))) {
        Futures.join(op.future);
        return;
      }
    }
    FabricConnection.super.readSync(region, offset, dst);
  }

  /**
   * Whether synchronous ops may take blocking lanes on this connection at all: tcp without TLS,
   * unless {@link FabricTuning#lanes} is 0. For tests and diagnostics.
   */
  public boolean hasLanes() {
    return lanes != null;
  }

  /**
   * Whether caller threads write this connection's frames to the socket themselves ({@link
   * FabricTuning#directWrites}, and a socket that allows it). For tests and diagnostics.
   */
  public boolean directWrites() {
    return handler.writer.direct();
  }

  /** The connection's writer: for tests of its locking. */
  ClientWriter writer() {
    return handler.writer;
  }

  /** Lanes open now (0 without lanes); for tests and diagnostics. */
  public int lanes() {
    return lanes == null ? 0 : lanes.count();
  }

  /**
   * Whether synchronous reads may take a lane from now on (default: yes, where lanes exist); lanes
   * already open stay open until the connection closes. For tests of the shared connection alone.
   */
  public void lanesEnabled(boolean on) {
    lanesEnabled = on;
  }

  /**
   * A lane for the calling thread's next op, or null if it must take the shared connection: no
   * lanes, or something in flight there (a lane op could overtake it), or an I/O thread.
   */
  private Lane laneForNextOp() {
    if (lanes == null || !lanesEnabled || closed || !inFlight.idle() || inFlight.onIoThread()) {
      return null;
    }
    return lanes.take();
  }

  /**
   * Runs {@code ops} (not yet sent) on a lane and waits for them, if a lane may be used now; false
   * if not (nothing was done). Each op has ended when this returns true: on the lane, or, if the
   * lane broke for a reason other than a timeout or the connection's close, on the shared
   * connection.
   */
  boolean readOnLane(List<RegionOps.Read> ops) {
    if (ops.size() > Lane.MAX_OPS) {
      return false;
    }
    Lane lane = laneForNextOp();
    if (lane == null) {
      return false;
    }
    lanes.begin(lane);
    try {
      lane.read(ops);
      lanes.give(lane);
      return true;
    } catch (IOException e) {
      lanes.discard(lane);
      FerriteException f = lanes.failure(lane, e, Lanes.describe(ops));
      List<Outbound> left = new ArrayList<>();
      for (RegionOps.Read op : ops) {
        if (!op.future.isDone()) {
          if (f != null) {
            op.endNow(f);
          } else {
            left.add(op);
          }
        }
      }
      if (!left.isEmpty()) {
        // The lane broke, the shared connection may not have (a lane closed by the server): READs
        // are idempotent, so ask again there, which also reports a dead server as before lanes.
        LOG.log(Level.DEBUG, "lane to {0} broke: {1}", address, e.toString());
        submitAll(left);
        for (Outbound op : left) {
          ((RegionOps.Read) op).future.exceptionally(x -> null).join();
        }
      }
      return true;
    }
  }

  @Override
  public CompletableFuture<Void> write(RegionRef region, long offset, ByteBuffer src) {
    RegionOps.Write op = new RegionOps.Write(counters, region, offset, src);
    submit(op);
    return op.future;
  }

  @Override
  public CompletableFuture<Long> compareAndSwap(
      RegionRef region, long offset, long expect, long update) {
    RegionOps.Atomic op = new RegionOps.Atomic(counters, true, region, offset, expect, update);
    submit(op);
    return op.future;
  }

  @Override
  public CompletableFuture<Long> fetchAndAdd(RegionRef region, long offset, long delta) {
    RegionOps.Atomic op = new RegionOps.Atomic(counters, false, region, offset, delta, 0);
    submit(op);
    return op.future;
  }

  // ---- RPC

  @Override
  public CompletableFuture<ByteBuffer> call(
      int service, int opcode, ByteBuffer request, Duration deadline) {
    CallOps.Rpc op = newRpc(service, opcode, request, deadline);
    if (op != null) {
      submit(op);
      return op.future;
    }
    return Futures.failed(
        ErrorCode.TOO_LARGE,
        "request of " + request.remaining() + " B (expected: <= " + maxRequest() + ")");
  }

  /**
   * A blocking call: on a {@link Lane} when one is free, the request is small and the shared
   * connection has nothing in flight (so the call cannot overtake an earlier op of this thread),
   * else through the event loop. On a lane the calling thread reads its own answer: no event-loop
   * to caller hand-off. A lane lost mid-call fails the call with {@link ErrorCode#UNAVAILABLE} (it
   * may have run: an RPC is not retried, unlike a lane READ); the lane watchdog ends a call past
   * its deadline with {@link ErrorCode#TIMEOUT}.
   */
  @Override
  public ByteBuffer callSync(int service, int opcode, ByteBuffer request, Duration deadline) {
    if (lanes != null && request.remaining() <= Lane.MAX_CALL_REQUEST) {
      if (service < 0 || service > 0xffff || opcode < 0 || opcode > 0xffff) {
        throw new IllegalArgumentException(
            "service: " + service + ", opcode: " + opcode + " (expected: 0 to 65535)");
      }
      Lane lane = laneForNextOp();
      if (lane != null) {
        return callOnLane(lane, service, opcode, request, deadline);
      }
    }
    return FabricConnection.super.callSync(service, opcode, request, deadline);
  }

  private ByteBuffer callOnLane(
      Lane lane, int service, int opcode, ByteBuffer request, Duration deadline) {
    long ms = Math.max(1, deadline.toMillis());
    lane.begin(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms));
    int requestBytes = request.remaining();
    try {
      ByteBuffer rsp = lane.call(service, opcode, request, ms, maxResponse());
      lanes.give(lane);
      counters.record(OpKind.RPC, (long) requestBytes + rsp.remaining());
      return rsp;
    } catch (FerriteException e) {
      lanes.give(lane); // an error answer: the lane is fine
      counters.recordError(OpKind.RPC);
      throw e;
    } catch (IOException e) {
      lanes.discard(lane);
      counters.recordError(OpKind.RPC);
      String what = "call to service " + service + " opcode " + opcode;
      if (lane.expired()) {
        throw new FerriteException(
            ErrorCode.TIMEOUT,
            "no answer to " + what + " from " + address + " within its deadline (" + ms + " ms)");
      }
      if (e instanceof ClosedByInterruptException) {
        throw new FerriteException(
            ErrorCode.UNAVAILABLE, "interrupted waiting for " + what + " from " + address);
      }
      throw new FerriteException(
          ErrorCode.UNAVAILABLE,
          "lane to " + address + " lost during " + what + " (it may have run): " + e,
          e);
    } catch (RuntimeException | Error e) {
      lanes.discard(lane); // in an unknown state: never reused, its place freed
      counters.recordError(OpKind.RPC);
      throw e;
    }
  }

  /** The largest response body a server sends: a frame of the default size. */
  private static int maxResponse() {
    return ServerSpec.DEFAULT_MAX_FRAME - Frames.HEADER_AFTER_LENGTH;
  }

  private static int maxRequest() {
    return ServerSpec.DEFAULT_MAX_FRAME - 12 - RpcDispatcher.RPC_HEADER;
  }

  /** A call op, or null if the request is too large for one frame. */
  CallOps.Rpc newRpc(int service, int opcode, ByteBuffer request, Duration deadline) {
    if (service < 0 || service > 0xffff || opcode < 0 || opcode > 0xffff) {
      throw new IllegalArgumentException(
          "service: " + service + ", opcode: " + opcode + " (expected: 0 to 65535)");
    }
    if (request.remaining() > maxRequest()) {
      return null;
    }
    long ms = Math.max(1, deadline.toMillis());
    return new CallOps.Rpc(counters, service, opcode, request, ms, System.nanoTime());
  }

  /** Asks the server for the file behind {@code region} (shm). */
  public CompletableFuture<MapAnswer> map(RegionRef region) {
    CallOps.Map op = new CallOps.Map(region);
    submit(op);
    return op.future;
  }

  /**
   * Asks the server for a file of shm RPC rings (shm only); the future completes with its path, or
   * fails if the server has none to give.
   */
  public CompletableFuture<String> rings() {
    CallOps.Rings op = new CallOps.Rings();
    submit(op);
    return op.future;
  }

  /** Sends a DOORBELL frame, waking the server's sleeping ring poller; never answered. */
  public void doorbell() {
    if (!closed) {
      handler.writer.send(new CallOps.Doorbell());
    }
  }

  /** Runs {@code r} on the event loop for every DOORBELL the server sends. */
  public void onDoorbell(Runnable r) {
    handler.doorbell = r;
  }

  /** Runs {@code r} once the connection is closed or lost (on the event loop, or at once). */
  public void onClosed(Runnable r) {
    channel.closeFuture().addListener(f -> r.run());
  }

  @Override
  public Batch batch() {
    return new NettyBatch(this);
  }

  // ---- submission

  private FerriteException closedException() {
    FerriteException cause = handler.closedCause();
    return cause != null
        ? cause
        : new FerriteException(ErrorCode.UNAVAILABLE, "connection to " + address + " is closed");
  }

  void submit(Outbound op) {
    if (closed) {
      op.failUnsent(closedException());
      return;
    }
    try {
      inFlight.acquire(op);
    } catch (FerriteException e) {
      op.failUnsent(e);
      return;
    }
    handler.writer.send(op);
  }

  /**
   * Sends {@code ops} together (one system call where the socket has room). If the in-flight bound
   * is reached part way, what has a permit is sent first, so the wait can end.
   */
  void submitAll(List<Outbound> ops) {
    if (closed) {
      FerriteException e = closedException();
      for (Outbound op : ops) {
        op.failUnsent(e);
      }
      return;
    }
    int from = 0;
    int n = ops.size();
    for (int i = 0; i < n; i++) {
      Outbound op = ops.get(i);
      if (inFlight.tryAcquire(op)) {
        continue;
      }
      handler.writer.send(ops, from, i);
      from = i;
      try {
        inFlight.acquire(op);
      } catch (FerriteException e) {
        for (int k = i; k < n; k++) {
          ops.get(k).failUnsent(e);
        }
        return;
      }
    }
    handler.writer.send(ops, from, n);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (lanes != null) {
      lanes.close();
    }
    ChannelFuture f = channel.close();
    if (!loop.inEventLoop()) {
      f.awaitUninterruptibly(2000);
    }
    // Frames queued concurrently with close() are dropped by a last drain; ops registered then are
    // failed by the handler, which saw the channel close.
    handler.writer.close();
    onClose.accept(this);
  }

  @Override
  public String toString() {
    return "connection to " + address;
  }
}
