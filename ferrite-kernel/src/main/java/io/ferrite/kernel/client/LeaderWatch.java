package io.ferrite.kernel.client;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.Counters;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RegionRef;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * The client's master connection, watched for NOT_LEADER: a master of a group that is no longer (or
 * not yet) the leader answers every call so. The first such answer tells {@code notLeader} (which
 * notes the leader the answer names and closes this connection), so the next call goes through a
 * new connect to the leader ({@link Connections#masterAsync}). The call itself still fails
 * NOT_LEADER (retryable): whether and when to repeat it is the caller's retry policy.
 *
 * <p>Everything else is passed through unchanged, at the cost of one {@code whenComplete} per call
 * (one-sided ops are not watched: only the master's RPCs answer NOT_LEADER).
 */
final class LeaderWatch implements FabricConnection {
  private final FabricConnection c;
  private final Consumer<FerriteException> notLeader;

  LeaderWatch(FabricConnection c, Consumer<FerriteException> notLeader) {
    this.c = c;
    this.notLeader = notLeader;
  }

  @Override
  public CompletableFuture<ByteBuffer> call(
      int service, int opcode, ByteBuffer request, Duration deadline) {
    CompletableFuture<ByteBuffer> f = c.call(service, opcode, request, deadline);
    f.whenComplete(
        (r, e) -> {
          Throwable t = e;
          while (t != null && !(t instanceof FerriteException)) {
            t = t.getCause();
          }
          if (t instanceof FerriteException fe && fe.code() == ErrorCode.NOT_LEADER) {
            notLeader.accept(fe);
          }
        });
    return f;
  }

  @Override
  public ByteBuffer callSync(int service, int opcode, ByteBuffer request, Duration deadline) {
    try {
      return c.callSync(service, opcode, request, deadline);
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.NOT_LEADER) {
        notLeader.accept(e);
      }
      throw e;
    }
  }

  @Override
  public int remoteId() {
    return c.remoteId();
  }

  @Override
  public Batch batch() {
    return c.batch();
  }

  @Override
  public Counters counters() {
    return c.counters();
  }

  @Override
  public boolean isOpen() {
    return c.isOpen();
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

  @Override
  public CompletableFuture<Void> read(RegionRef region, long offset, ByteBuffer dst) {
    return c.read(region, offset, dst);
  }

  @Override
  public CompletableFuture<Void> write(RegionRef region, long offset, ByteBuffer src) {
    return c.write(region, offset, src);
  }

  @Override
  public CompletableFuture<Long> compareAndSwap(
      RegionRef region, long offset, long expect, long update) {
    return c.compareAndSwap(region, offset, expect, update);
  }

  @Override
  public CompletableFuture<Long> fetchAndAdd(RegionRef region, long offset, long delta) {
    return c.fetchAndAdd(region, offset, delta);
  }

  @Override
  public void readSync(RegionRef region, long offset, ByteBuffer dst) {
    c.readSync(region, offset, dst);
  }

  @Override
  public void writeSync(RegionRef region, long offset, ByteBuffer src) {
    c.writeSync(region, offset, src);
  }

  @Override
  public long compareAndSwapSync(RegionRef region, long offset, long expect, long update) {
    return c.compareAndSwapSync(region, offset, expect, update);
  }

  @Override
  public long fetchAndAddSync(RegionRef region, long offset, long delta) {
    return c.fetchAndAddSync(region, offset, delta);
  }
}
