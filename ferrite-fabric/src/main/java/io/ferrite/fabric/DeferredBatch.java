package io.ferrite.fabric;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * A {@link Batch} for fabrics whose ops need no doorbell (shm, local): ops are recorded and issued
 * in order on the connection at {@link #flush()}. Fabrics that write to a socket batch at the
 * socket instead (one flush for many frames).
 */
public final class DeferredBatch implements Batch {
  private final FabricConnection connection;
  private final List<Runnable> issues = new ArrayList<>();
  private final List<CompletableFuture<?>> results = new ArrayList<>();
  private boolean flushed;

  public DeferredBatch(FabricConnection connection) {
    this.connection = connection;
  }

  private <T> CompletableFuture<T> defer(Supplier<CompletableFuture<T>> op) {
    if (flushed) {
      throw new IllegalStateException("batch already flushed");
    }
    CompletableFuture<T> result = new CompletableFuture<>();
    issues.add(
        () ->
            op.get()
                .whenComplete(
                    (v, t) -> {
                      if (t != null) {
                        result.completeExceptionally(FerriteException.unwrap(t));
                      } else {
                        result.complete(v);
                      }
                    }));
    results.add(result);
    return result;
  }

  @Override
  public CompletableFuture<Void> read(RegionRef region, long offset, ByteBuffer dst) {
    return defer(() -> connection.read(region, offset, dst));
  }

  @Override
  public CompletableFuture<Void> write(RegionRef region, long offset, ByteBuffer src) {
    return defer(() -> connection.write(region, offset, src));
  }

  @Override
  public CompletableFuture<Long> compareAndSwap(
      RegionRef region, long offset, long expect, long update) {
    return defer(() -> connection.compareAndSwap(region, offset, expect, update));
  }

  @Override
  public CompletableFuture<Long> fetchAndAdd(RegionRef region, long offset, long delta) {
    return defer(() -> connection.fetchAndAdd(region, offset, delta));
  }

  @Override
  public CompletableFuture<ByteBuffer> call(
      int service, int opcode, ByteBuffer request, Duration deadline) {
    return defer(() -> connection.call(service, opcode, request, deadline));
  }

  @Override
  public CompletableFuture<Void> flush() {
    if (flushed) {
      throw new IllegalStateException("batch already flushed");
    }
    flushed = true;
    for (Runnable r : issues) {
      r.run();
    }
    return CompletableFuture.allOf(results.toArray(new CompletableFuture<?>[0]));
  }

  @Override
  public int size() {
    return issues.size();
  }
}
