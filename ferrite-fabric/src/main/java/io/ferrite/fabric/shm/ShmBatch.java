package io.ferrite.fabric.shm;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.RegionRef;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * A shm batch: memory ops run in issue order at {@link #flush()} (nothing happens before it, as on
 * every fabric); calls go into a batch of the control connection, flushed once at the end.
 */
final class ShmBatch implements Batch {
  private final ShmConnection conn;
  private final Batch calls;
  private final List<Runnable> ops = new ArrayList<>();
  private final List<CompletableFuture<?>> futures = new ArrayList<>();
  private boolean flushed;

  ShmBatch(ShmConnection conn, Batch calls) {
    this.conn = conn;
    this.calls = calls;
  }

  private <T> CompletableFuture<T> add(Supplier<CompletableFuture<T>> op) {
    if (flushed) {
      throw new IllegalStateException("batch already flushed");
    }
    CompletableFuture<T> f = new CompletableFuture<>();
    ops.add(
        () ->
            op.get()
                .whenComplete(
                    (v, e) -> {
                      if (e != null) {
                        f.completeExceptionally(e);
                      } else {
                        f.complete(v);
                      }
                    }));
    futures.add(f);
    return f;
  }

  @Override
  public CompletableFuture<Void> read(RegionRef region, long offset, ByteBuffer dst) {
    return add(() -> conn.read(region, offset, dst));
  }

  @Override
  public CompletableFuture<Void> write(RegionRef region, long offset, ByteBuffer src) {
    return add(() -> conn.write(region, offset, src));
  }

  @Override
  public CompletableFuture<Long> compareAndSwap(
      RegionRef region, long offset, long expect, long update) {
    return add(() -> conn.compareAndSwap(region, offset, expect, update));
  }

  @Override
  public CompletableFuture<Long> fetchAndAdd(RegionRef region, long offset, long delta) {
    return add(() -> conn.fetchAndAdd(region, offset, delta));
  }

  @Override
  public CompletableFuture<ByteBuffer> call(
      int service, int opcode, ByteBuffer request, Duration deadline) {
    return add(() -> calls.call(service, opcode, request, deadline));
  }

  @Override
  public CompletableFuture<Void> flush() {
    if (flushed) {
      throw new IllegalStateException("batch already flushed");
    }
    flushed = true;
    for (Runnable op : ops) {
      op.run();
    }
    calls.flush();
    return CompletableFuture.allOf(futures.toArray(new CompletableFuture<?>[0]));
  }

  @Override
  public int size() {
    return ops.size();
  }
}
