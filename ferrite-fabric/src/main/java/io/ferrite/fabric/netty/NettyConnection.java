package io.ferrite.fabric.netty;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Counters;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.ServerSpec;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.util.internal.PlatformDependent;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * A client connection over one Netty channel, shared by all of a client's threads.
 *
 * <p>Ops are pipelined: each gets a request id and waits in the {@link ClientHandler}'s pending
 * table for its answer, so many are in flight at once. Caller threads never touch the channel: they
 * put ops on a lock-free queue, and the first to find the queue idle schedules one drain task on
 * the event loop, which writes everything queued with one flush. Under load many ops from many
 * threads share one wake-up and one system call; {@link #batch()} does the same deliberately.
 *
 * <p>Futures complete on the event loop: a callback attached to one must not block.
 */
public final class NettyConnection implements FabricConnection {
  private final String address;
  private final Channel channel;
  private final EventLoop loop;
  private final ClientHandler handler;
  private final int remoteId;
  private final Counters counters = new Counters();
  private final Queue<Outbound> queue = PlatformDependent.newMpscQueue();
  private final AtomicBoolean drainScheduled = new AtomicBoolean();
  private final Runnable drain = this::drain;
  private final Consumer<NettyConnection> onClose;
  private volatile boolean closed;

  private NettyConnection(
      String address,
      Channel channel,
      ClientHandler handler,
      int remoteId,
      Consumer<NettyConnection> onClose) {
    this.address = address;
    this.channel = channel;
    this.loop = channel.eventLoop();
    this.handler = handler;
    this.remoteId = remoteId;
    this.onClose = onClose;
  }

  /**
   * Connects to {@code remote} and completes the handshake within {@code options.connectTimeout()}.
   * Must not be called on an I/O thread.
   */
  public static NettyConnection connect(
      EventLoopGroup group,
      NettyTransport transport,
      SocketAddress remote,
      String address,
      ConnectOptions options,
      Consumer<NettyConnection> onClose) {
    long timeoutNanos = options.connectTimeout().toNanos();
    long start = System.nanoTime();
    ClientHandler handler =
        new ClientHandler(options.credentials(), address, options.opTimeout().toNanos());
    Bootstrap b = new Bootstrap().group(group).handler(handler);
    transport.configure(b, (int) Math.min(Integer.MAX_VALUE, options.connectTimeout().toMillis()));
    ChannelFuture cf = b.connect(remote);
    if (!cf.awaitUninterruptibly(timeoutNanos, TimeUnit.NANOSECONDS) || !cf.isSuccess()) {
      cf.cancel(false);
      cf.channel().close();
      throw new FerriteException(
          ErrorCode.UNAVAILABLE,
          "cannot connect to " + address + ": " + (cf.cause() == null ? "timed out" : cf.cause()),
          cf.cause());
    }
    Channel ch = cf.channel();
    try {
      long left = Math.max(0, timeoutNanos - (System.nanoTime() - start));
      int remoteId = handler.handshake.get(left, TimeUnit.NANOSECONDS);
      return new NettyConnection(address, ch, handler, remoteId, onClose);
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
    queue.offer(op);
    scheduleDrain();
  }

  void submitAll(List<Outbound> ops) {
    if (closed) {
      FerriteException e = closedException();
      for (Outbound op : ops) {
        op.failUnsent(e);
      }
      return;
    }
    for (Outbound op : ops) {
      queue.offer(op);
    }
    scheduleDrain();
  }

  private void scheduleDrain() {
    if (!drainScheduled.get() && drainScheduled.compareAndSet(false, true)) {
      try {
        loop.execute(drain);
      } catch (RejectedExecutionException e) {
        // The event loop is gone (the fabric closed): nothing will ever send these.
        drainScheduled.set(false);
        FerriteException cause =
            new FerriteException(ErrorCode.UNAVAILABLE, "connection to " + address + " is closed");
        Outbound op;
        while ((op = queue.poll()) != null) {
          op.failUnsent(cause);
        }
      }
    }
  }

  /** On the event loop: sends everything queued, then one flush. */
  private void drain() {
    // Cleared first: an op queued after this point schedules another drain, so none is stranded.
    drainScheduled.set(false);
    long now = System.nanoTime();
    Outbound op;
    int n = 0;
    while ((op = queue.poll()) != null) {
      op.sendOn(handler, now);
      n++;
    }
    if (n > 0) {
      handler.flush();
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    ChannelFuture f = channel.close();
    if (!loop.inEventLoop()) {
      f.awaitUninterruptibly(2000);
      // Ops queued concurrently with close() are failed by a last drain.
      scheduleDrain();
    }
    onClose.accept(this);
  }

  @Override
  public String toString() {
    return "connection to " + address;
  }
}
