package io.ferrite.fabric.local;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.Counters;
import io.ferrite.fabric.DeferredBatch;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.Role;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/** The client half of the local fabric. */
final class LocalConnection implements FabricConnection {
  private final LocalServer server;
  private final ScheduledExecutorService scheduler;
  private final long id;
  private final Counters counters = new Counters();
  private volatile boolean open = true;

  private final java.util.function.Consumer<AutoCloseable> onClose;

  /** The role the client's credentials proved at connect. */
  private final Role role;

  LocalConnection(
      LocalServer server,
      Role role,
      ScheduledExecutorService scheduler,
      java.util.function.Consumer<AutoCloseable> onClose) {
    this.server = server;
    this.role = role;
    this.onClose = onClose;
    this.scheduler = scheduler;
    this.id = server.nextConnectionId();
    server.attach(this);
  }

  @Override
  public int remoteId() {
    return server.spec().nodeId();
  }

  @Override
  public CompletableFuture<Void> read(RegionRef region, long offset, ByteBuffer dst) {
    int len = dst.remaining();
    return perform(
        OpKind.READ,
        len,
        () -> {
          server.read(region, offset, dst);
          return null;
        });
  }

  @Override
  public CompletableFuture<Void> write(RegionRef region, long offset, ByteBuffer src) {
    int len = src.remaining();
    return perform(
        OpKind.WRITE,
        len,
        () -> {
          server.write(region, offset, src);
          return null;
        });
  }

  @Override
  public CompletableFuture<Long> compareAndSwap(
      RegionRef region, long offset, long expect, long update) {
    return perform(
        OpKind.COMPARE_AND_SWAP, 8, () -> server.compareAndSwap(region, offset, expect, update));
  }

  @Override
  public CompletableFuture<Long> fetchAndAdd(RegionRef region, long offset, long delta) {
    return perform(OpKind.FETCH_AND_ADD, 8, () -> server.fetchAndAdd(region, offset, delta));
  }

  /** Runs a one-sided op on the calling thread (or after the injected delay), applying faults. */
  private <T> CompletableFuture<T> perform(OpKind kind, long bytes, Supplier<T> op) {
    if (!open) {
      counters.recordError(kind);
      return Futures.failed(ErrorCode.UNAVAILABLE, "connection to " + server.address() + " closed");
    }
    LocalFaults faults = server.faults();
    if (faults.takeDropRequest()) {
      counters.recordError(kind);
      return Futures.failed(ErrorCode.DROPPED, "request dropped by fault injection");
    }
    Duration delay = faults.delay();
    if (delay.isZero()) {
      return run(kind, bytes, op, faults);
    }
    CompletableFuture<T> f = new CompletableFuture<>();
    scheduler.schedule(
        () -> {
          run(kind, bytes, op, faults)
              .whenComplete(
                  (v, t) -> {
                    if (t != null) {
                      f.completeExceptionally(t);
                    } else {
                      f.complete(v);
                    }
                  });
        },
        delay.toNanos(),
        TimeUnit.NANOSECONDS);
    return f;
  }

  private <T> CompletableFuture<T> run(
      OpKind kind, long bytes, Supplier<T> op, LocalFaults faults) {
    if (!open) {
      counters.recordError(kind);
      return Futures.failed(ErrorCode.UNAVAILABLE, "connection to " + server.address() + " closed");
    }
    T v;
    try {
      v = op.get();
    } catch (FerriteException e) {
      counters.recordError(kind);
      return CompletableFuture.failedFuture(e);
    }
    if (faults.takeDropResponse()) {
      counters.recordError(kind);
      return Futures.failed(ErrorCode.DROPPED, "response dropped by fault injection");
    }
    counters.record(kind, bytes);
    return CompletableFuture.completedFuture(v);
  }

  @Override
  public CompletableFuture<ByteBuffer> call(
      int service, int opcode, ByteBuffer request, Duration deadline) {
    if (!open) {
      counters.recordError(OpKind.RPC);
      return Futures.failed(ErrorCode.UNAVAILABLE, "connection to " + server.address() + " closed");
    }
    LocalFaults faults = server.faults();
    if (faults.takeDropRequest()) {
      counters.recordError(OpKind.RPC);
      return Futures.failed(ErrorCode.DROPPED, "request dropped by fault injection");
    }
    long reqBytes = request.remaining();
    CompletableFuture<ByteBuffer> f;
    Duration delay = faults.delay();
    LocalFaults.Hold hold = faults.takeHold(server.spec().nodeId(), service, opcode);
    if (hold != null) {
      // Delivered on the scheduler once released: the caller's thread never runs the server.
      ByteBuffer copy = ByteBuffer.allocate(request.remaining());
      copy.put(request.duplicate()).flip();
      f = new CompletableFuture<>();
      CompletableFuture<ByteBuffer> out = f;
      hold.released.thenAcceptAsync(
          deliver -> {
            if (!deliver) {
              out.completeExceptionally(
                  new FerriteException(
                      ErrorCode.DROPPED, "held request dropped by fault injection"));
              return;
            }
            server
                .call(id, role, service, opcode, copy, deadline)
                .whenComplete(
                    (v, t) -> {
                      if (t != null) {
                        out.completeExceptionally(t);
                      } else {
                        out.complete(v);
                      }
                    });
          },
          scheduler);
      hold.caught();
    } else if (delay.isZero()) {
      f = server.call(id, role, service, opcode, request, deadline);
    } else {
      ByteBuffer copy = ByteBuffer.allocate(request.remaining());
      copy.put(request.duplicate()).flip();
      f = new CompletableFuture<>();
      CompletableFuture<ByteBuffer> out = f;
      scheduler.schedule(
          () -> {
            server
                .call(id, role, service, opcode, copy, deadline)
                .whenComplete(
                    (v, t) -> {
                      if (t != null) {
                        out.completeExceptionally(t);
                      } else {
                        out.complete(v);
                      }
                    });
          },
          delay.toNanos(),
          TimeUnit.NANOSECONDS);
    }
    return f.orTimeout(deadline.toNanos(), TimeUnit.NANOSECONDS)
        .handle(
            (resp, t) -> {
              if (t != null) {
                counters.recordError(OpKind.RPC);
                Throwable c =
                    t instanceof java.util.concurrent.CompletionException ? t.getCause() : t;
                if (c instanceof TimeoutException) {
                  throw new FerriteException(
                      ErrorCode.TIMEOUT, "no answer from " + server.address() + " in " + deadline);
                }
                throw FerriteException.unwrap(t);
              }
              if (faults.takeDropResponse()) {
                counters.recordError(OpKind.RPC);
                throw new FerriteException(
                    ErrorCode.DROPPED, "response dropped by fault injection");
              }
              counters.record(OpKind.RPC, reqBytes + resp.remaining());
              return resp;
            });
  }

  @Override
  public Batch batch() {
    return new DeferredBatch(this);
  }

  @Override
  public Counters counters() {
    return counters;
  }

  @Override
  public boolean isOpen() {
    return open && !server.isDead();
  }

  @Override
  public void close() {
    open = false;
    server.detach(this);
    onClose.accept(this);
  }
}
