package io.ferrite.fabric.netty;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;

/** Ops queued on the caller's thread and handed to the event loop together: one flush. */
final class NettyBatch implements Batch {
  private final NettyConnection conn;
  // Room for a 16-key multiGet's reads (a table read and an extent read per key) without growing:
  // the copies of growing lists showed up in a profile of such batches.
  private final List<Outbound> ops = new ArrayList<>(32);
  private final List<CompletableFuture<?>> futures = new ArrayList<>(32);
  private boolean flushed;

  NettyBatch(NettyConnection conn) {
    this.conn = conn;
  }

  private <T> CompletableFuture<T> add(Outbound op, CompletableFuture<T> f) {
    if (flushed) {
      throw new IllegalStateException("batch already flushed");
    }
    ops.add(op);
    futures.add(f);
    return f;
  }

  @Override
  public CompletableFuture<Void> read(RegionRef region, long offset, ByteBuffer dst) {
    if (dst.isReadOnly()) {
      return Futures.failed(ErrorCode.INVALID_ARGUMENT, "read into a read-only buffer");
    }
    RegionOps.Read op = new RegionOps.Read(conn.counters(), region, offset, dst);
    return add(op, op.future);
  }

  @Override
  public CompletableFuture<Void> write(RegionRef region, long offset, ByteBuffer src) {
    RegionOps.Write op = new RegionOps.Write(conn.counters(), region, offset, src);
    return add(op, op.future);
  }

  @Override
  public CompletableFuture<Long> compareAndSwap(
      RegionRef region, long offset, long expect, long update) {
    RegionOps.Atomic op =
        new RegionOps.Atomic(conn.counters(), true, region, offset, expect, update);
    return add(op, op.future);
  }

  @Override
  public CompletableFuture<Long> fetchAndAdd(RegionRef region, long offset, long delta) {
    RegionOps.Atomic op = new RegionOps.Atomic(conn.counters(), false, region, offset, delta, 0);
    return add(op, op.future);
  }

  @Override
  public CompletableFuture<ByteBuffer> call(
      int service, int opcode, ByteBuffer request, Duration deadline) {
    CallOps.Rpc op = conn.newRpc(service, opcode, request, deadline);
    if (op == null) {
      return Futures.failed(ErrorCode.TOO_LARGE, "request of " + request.remaining() + " B");
    }
    return add(op, op.future);
  }

  @Override
  public CompletableFuture<Void> flush() {
    if (flushed) {
      throw new IllegalStateException("batch already flushed");
    }
    flushed = true;
    int n = futures.size();
    if (n == 0) {
      return CompletableFuture.completedFuture(null);
    }
    // What CompletableFuture.allOf promises, with one completion per op rather than its tree of
    // relays (about three objects and completions per op): this is on the event loop's path.
    Countdown all = new Countdown(n);
    for (CompletableFuture<?> f : futures) {
      f.whenComplete(all);
    }
    conn.submitAll(ops);
    return all.future;
  }

  /** Small reads only: on one of the connection's lanes when it may take one, one write. */
  @Override
  public void flushSync() {
    if (flushed) {
      throw new IllegalStateException("batch already flushed");
    }
    List<RegionOps.Read> reads = new ArrayList<>(ops.size());
    for (Outbound op : ops) {
      if (!(op instanceof RegionOps.Read r) || r.length > Lane.MAX_READ) {
        Futures.join(flush());
        return;
      }
      reads.add(r);
    }
    if (reads.isEmpty() || !conn.readOnLane(reads)) {
      Futures.join(flush());
      return;
    }
    flushed = true;
    for (RegionOps.Read r : reads) {
      Futures.join(r.future);
    }
  }

  /** Completes once every op has ended; exceptionally with the first failure, if any. */
  private static final class Countdown implements BiConsumer<Object, Throwable> {
    final CompletableFuture<Void> future = new CompletableFuture<>();
    private final AtomicInteger left;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    Countdown(int n) {
      left = new AtomicInteger(n);
    }

    @Override
    public void accept(Object value, Throwable e) {
      if (e != null) {
        failure.compareAndSet(null, e);
      }
      if (left.decrementAndGet() == 0) {
        Throwable f = failure.get();
        if (f == null) {
          future.complete(null);
        } else {
          future.completeExceptionally(
              f instanceof CompletionException ? f : new CompletionException(f));
        }
      }
    }
  }

  @Override
  public int size() {
    return ops.size();
  }
}
