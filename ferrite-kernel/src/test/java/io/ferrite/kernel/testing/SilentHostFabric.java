package io.ferrite.kernel.testing;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Counters;
import io.ferrite.fabric.DeferredBatch;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.ServerSpec;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * A fault-injecting wrapper of a client's fabric: an address can be made silent, as a host whose
 * network went quiet. A connect to a silent address answers nothing: it waits out the connect
 * timeout (or until {@link #heal}) and fails with {@link ErrorCode#UNAVAILABLE}, as a tcp connect
 * to a black-holed host does. A connection to it that was open still looks open until its next op,
 * which fails with {@code UNAVAILABLE} (as a tcp connection learns its peer is gone from an op that
 * gets no answer); from then on it reports itself closed. Everything else passes through to the
 * wrapped fabric.
 */
public final class SilentHostFabric implements Fabric {
  private final Fabric inner;
  private final Set<String> silent = ConcurrentHashMap.newKeySet();
  private final Set<String> dropNext = ConcurrentHashMap.newKeySet();
  private volatile CountDownLatch healed = new CountDownLatch(1);

  /** Connects that found their address silent (they waited the whole connect timeout). */
  public final java.util.concurrent.atomic.AtomicInteger blackHoled =
      new java.util.concurrent.atomic.AtomicInteger();

  public SilentHostFabric(Fabric inner) {
    this.inner = inner;
  }

  /** From now on {@code address} answers nothing. */
  public void silence(String address) {
    silent.add(address);
  }

  /** The next op on a connection to {@code address} fails with {@link ErrorCode#DROPPED}. */
  public void dropNext(String address) {
    dropNext.add(address);
  }

  /** Every address answers again; connects waiting on a silent one fail at once. */
  public void heal() {
    silent.clear();
    CountDownLatch h = healed;
    healed = new CountDownLatch(1);
    h.countDown();
  }

  @Override
  public String name() {
    return inner.name();
  }

  @Override
  public FabricServer serve(ServerSpec spec) {
    return inner.serve(spec);
  }

  @Override
  public FabricConnection connect(String address, ConnectOptions options) {
    if (silent.contains(address)) {
      blackHoled.incrementAndGet();
      try {
        healed.await(options.connectTimeout().toMillis(), TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      throw new FerriteException(
          ErrorCode.UNAVAILABLE,
          "no answer from " + address + " within " + options.connectTimeout() + " (silent host)");
    }
    return new Conn(address, inner.connect(address, options));
  }

  @Override
  public void close() {
    heal();
    inner.close();
  }

  private final class Conn implements FabricConnection {
    private final String address;
    private final FabricConnection c;
    private volatile boolean lost;

    Conn(String address, FabricConnection c) {
      this.address = address;
      this.c = c;
    }

    private <T> CompletableFuture<T> unlessSilent(Supplier<CompletableFuture<T>> op) {
      if (silent.contains(address)) {
        lost = true;
        return Futures.failed(ErrorCode.UNAVAILABLE, "connection to " + address + " lost");
      }
      if (dropNext.remove(address)) {
        return Futures.failed(ErrorCode.DROPPED, "request to " + address + " dropped");
      }
      return op.get();
    }

    @Override
    public CompletableFuture<Void> read(RegionRef region, long offset, ByteBuffer dst) {
      return unlessSilent(() -> c.read(region, offset, dst));
    }

    @Override
    public CompletableFuture<Void> write(RegionRef region, long offset, ByteBuffer src) {
      return unlessSilent(() -> c.write(region, offset, src));
    }

    @Override
    public CompletableFuture<Long> compareAndSwap(
        RegionRef region, long offset, long expect, long update) {
      return unlessSilent(() -> c.compareAndSwap(region, offset, expect, update));
    }

    @Override
    public CompletableFuture<Long> fetchAndAdd(RegionRef region, long offset, long delta) {
      return unlessSilent(() -> c.fetchAndAdd(region, offset, delta));
    }

    @Override
    public int remoteId() {
      return c.remoteId();
    }

    @Override
    public CompletableFuture<ByteBuffer> call(
        int service, int opcode, ByteBuffer request, Duration deadline) {
      return unlessSilent(() -> c.call(service, opcode, request, deadline));
    }

    @Override
    public Batch batch() {
      return new DeferredBatch(this);
    }

    @Override
    public Counters counters() {
      return c.counters();
    }

    @Override
    public boolean isOpen() {
      return !lost && c.isOpen();
    }

    @Override
    public void release(RegionRef region) {
      c.release(region);
    }

    @Override
    public boolean mapsRegions() {
      return c.mapsRegions();
    }

    @Override
    public long mappedLongAcquire(RegionRef region, long offset) {
      return c.mappedLongAcquire(region, offset);
    }

    @Override
    public void close() {
      c.close();
    }
  }
}
