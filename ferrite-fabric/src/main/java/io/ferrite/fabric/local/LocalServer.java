package io.ferrite.fabric.local;

import io.ferrite.fabric.Access;
import io.ferrite.fabric.Counters;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RegionAccess;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.ServerSpec;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The server half of the local fabric. One-sided ops run on the caller's thread against the
 * server's {@link io.ferrite.fabric.RegionTable} (like shm, the server's threads do nothing); RPCs
 * run on the server's bounded service executor, as on tcp.
 */
final class LocalServer implements FabricServer {
  private final LocalNetwork network;
  private final ServerSpec spec;
  private final String address;
  private final Counters counters = new Counters();
  private final ThreadPoolExecutor service;
  private final Set<LocalConnection> connections = ConcurrentHashMap.newKeySet();
  private final ConcurrentHashMap<Integer, AtomicLong> writeEpochs = new ConcurrentHashMap<>();
  private final AtomicLong connectionIds = new AtomicLong();

  /** Calls not yet answered: failed UNAVAILABLE when the server goes, as a closing socket does. */
  private final Set<CompletableFuture<ByteBuffer>> owed = ConcurrentHashMap.newKeySet();

  private volatile boolean dead;

  private final java.util.function.Consumer<AutoCloseable> onClose;

  LocalServer(
      LocalNetwork network, ServerSpec spec, java.util.function.Consumer<AutoCloseable> onClose) {
    this.network = network;
    this.onClose = onClose;
    this.spec = spec;
    this.service =
        new ThreadPoolExecutor(
            spec.serviceThreads(),
            spec.serviceThreads(),
            0,
            TimeUnit.MILLISECONDS,
            new ArrayBlockingQueue<>(Math.max(1, spec.serviceQueue())),
            new NamedThreadFactory("local-service-" + spec.nodeId(), true));
    this.address = network.register(this, spec.nodeId());
  }

  ServerSpec spec() {
    return spec;
  }

  LocalFaults faults() {
    return network.faults();
  }

  boolean isDead() {
    return dead;
  }

  long nextConnectionId() {
    return connectionIds.incrementAndGet();
  }

  void attach(LocalConnection c) {
    connections.add(c);
    if (dead) {
      connections.remove(c);
      throw down();
    }
  }

  void detach(LocalConnection c) {
    connections.remove(c);
  }

  void read(RegionRef ref, long offset, ByteBuffer dst) {
    int len = dst.remaining();
    MappedRegion r = resolve(OpKind.READ, ref, offset, len, Access.READ);
    if (network.faults().tearReads() && len >= 2) {
      // Copy the first half, wait for a write to land on the region, copy the rest.
      int half = len / 2;
      AtomicLong epoch = epoch(ref.regionId());
      long seen = epoch.get();
      r.readInto(offset, dst.duplicate().limit(dst.position() + half));
      long until = System.nanoTime() + network.faults().tearWait().toNanos();
      while (epoch.get() == seen && System.nanoTime() < until && !dead) {
        LockSupport.parkNanos(10_000);
      }
      r.readInto(offset + half, dst.duplicate().position(dst.position() + half));
    } else {
      r.readInto(offset, dst);
    }
    counters.record(OpKind.READ, len);
  }

  void write(RegionRef ref, long offset, ByteBuffer src) {
    int len = src.remaining();
    MappedRegion r = resolve(OpKind.WRITE, ref, offset, len, Access.WRITE);
    r.writeFrom(offset, src);
    epoch(ref.regionId()).incrementAndGet();
    counters.record(OpKind.WRITE, len);
  }

  long compareAndSwap(RegionRef ref, long offset, long expect, long update) {
    MappedRegion r = resolve(OpKind.COMPARE_AND_SWAP, ref, offset, 8, Access.ATOMIC);
    long prev = r.compareAndSwap(offset, expect, update);
    epoch(ref.regionId()).incrementAndGet();
    counters.record(OpKind.COMPARE_AND_SWAP, 8);
    return prev;
  }

  long fetchAndAdd(RegionRef ref, long offset, long delta) {
    MappedRegion r = resolve(OpKind.FETCH_AND_ADD, ref, offset, 8, Access.ATOMIC);
    long prev = r.fetchAndAdd(offset, delta);
    epoch(ref.regionId()).incrementAndGet();
    counters.record(OpKind.FETCH_AND_ADD, 8);
    return prev;
  }

  private MappedRegion resolve(OpKind kind, RegionRef ref, long offset, long len, Access access) {
    if (dead) {
      throw down();
    }
    try {
      return RegionAccess.resolve(spec.regions(), ref.regionId(), ref.rkey(), offset, len, access);
    } catch (FerriteException e) {
      counters.recordError(kind);
      throw e;
    }
  }

  private AtomicLong epoch(int regionId) {
    return writeEpochs.computeIfAbsent(regionId, k -> new AtomicLong());
  }

  CompletableFuture<ByteBuffer> call(
      long connectionId,
      Role role,
      int serviceId,
      int opcode,
      ByteBuffer request,
      Duration deadline) {
    if (dead) {
      return CompletableFuture.failedFuture(down());
    }
    long deadlineNanos = System.nanoTime() + deadline.toNanos();
    ByteBuffer copy = ByteBuffer.allocate(request.remaining());
    copy.put(request.duplicate()).flip();
    CompletableFuture<ByteBuffer> result = new CompletableFuture<>();
    owed.add(result);
    result.whenComplete((v, t) -> owed.remove(result));
    if (dead) {
      // Went between the check above and the add: kill() may have missed this call.
      result.completeExceptionally(down());
      return result;
    }
    RpcContext ctx = new RpcContext(connectionId, "local", role);
    CompletableFuture<ByteBuffer> inline;
    try {
      // A non-blocking operation is answered on the thread that "received" it: here, the caller's.
      inline = spec.rpc().handleInline(ctx, serviceId, opcode, copy);
    } catch (RuntimeException e) {
      inline = CompletableFuture.failedFuture(e);
    }
    if (inline != null) {
      inline.whenComplete((resp, t) -> answer(result, copy, resp, t));
      return result;
    }
    try {
      service.execute(
          () -> {
            if (System.nanoTime() > deadlineNanos) {
              result.completeExceptionally(
                  new FerriteException(ErrorCode.TIMEOUT, "deadline passed in the service queue"));
              return;
            }
            CompletableFuture<ByteBuffer> f;
            try {
              f = spec.rpc().handle(ctx, serviceId, opcode, copy);
            } catch (RuntimeException e) {
              f = CompletableFuture.failedFuture(e);
            }
            f.whenComplete((resp, t) -> answer(result, copy, resp, t));
          });
    } catch (RejectedExecutionException e) {
      counters.recordError(OpKind.RPC);
      result.completeExceptionally(
          dead
              ? down()
              : new FerriteException(
                  ErrorCode.BUSY, "service executor of " + address + " is saturated"));
    }
    return result;
  }

  private void answer(
      CompletableFuture<ByteBuffer> result, ByteBuffer request, ByteBuffer resp, Throwable t) {
    if (t != null) {
      counters.recordError(OpKind.RPC);
      result.completeExceptionally(FerriteException.unwrap(t));
    } else {
      ByteBuffer out = ByteBuffer.allocate(resp == null ? 0 : resp.remaining());
      if (resp != null) {
        out.put(resp.duplicate()).flip();
      }
      counters.record(OpKind.RPC, request.capacity() + out.capacity());
      result.complete(out);
    }
  }

  private FerriteException down() {
    return new FerriteException(ErrorCode.UNAVAILABLE, "endpoint " + address + " is down");
  }

  void kill() {
    dead = true;
    for (LocalConnection c : connections) {
      c.close();
    }
    service.shutdownNow();
    // Queued calls were dropped and running ones may never answer: the caller learns now.
    for (CompletableFuture<ByteBuffer> f : owed) {
      f.completeExceptionally(down());
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
    return connections.size();
  }

  @Override
  public void close() {
    network.deregister(address, this);
    kill();
    onClose.accept(this);
  }
}
