package io.ferrite.kv;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.client.FerriteClient;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One round of one-sided reads of a multiGet: at most one {@link Batch} per server, all flushed
 * together (one flush per connection), then awaited. Confined to the calling thread.
 */
final class Batches {
  private final FerriteClient client;
  // The round's batches by server: a list, not a map (a multiGet touches a few servers, and a
  // boxed lookup per read showed up in its profile).
  private final List<Batch> batches = new ArrayList<>(2);
  private int[] servers = new int[2];
  private final List<CompletableFuture<Void>> reads = new ArrayList<>(32);

  Batches(FerriteClient client) {
    this.client = client;
  }

  /** Queues a read of {@code dst.remaining()} bytes at {@code offset} of {@code region}. */
  void read(RegionRef region, long offset, ByteBuffer dst) {
    reads.add(batch(region.serverId()).read(region, offset, dst));
  }

  private Batch batch(int server) {
    int n = batches.size();
    for (int i = 0; i < n; i++) {
      if (servers[i] == server) {
        return batches.get(i);
      }
    }
    Batch b = client.batch(server);
    if (n == servers.length) {
      servers = Arrays.copyOf(servers, 2 * n);
    }
    servers[n] = server;
    batches.add(b);
    return b;
  }

  boolean isEmpty() {
    return reads.isEmpty();
  }

  /**
   * Flushes every batch, then waits for every read. Returns false if any read failed (a stale
   * region, a lost connection): the caller then finishes the round's keys one by one, through the
   * single-key path that knows how to recover.
   */
  boolean flushAndWait() {
    if (batches.size() == 1) {
      // One server: the caller waits anyway, so let the fabric answer on the caller's thread
      // (Batch#flushSync). Several servers' batches are flushed together below instead.
      Batch b = batches.get(0);
      batches.clear();
      boolean ok = true;
      try {
        b.flushSync();
      } catch (FerriteException e) {
        ok = false;
      }
      for (CompletableFuture<Void> f : reads) {
        ok &= quietly(f);
      }
      reads.clear();
      return ok;
    }
    List<CompletableFuture<Void>> flushes = new ArrayList<>(batches.size());
    for (Batch b : batches) {
      flushes.add(b.flush());
    }
    batches.clear();
    boolean ok = true;
    for (CompletableFuture<Void> f : flushes) {
      ok &= quietly(f);
    }
    for (CompletableFuture<Void> f : reads) {
      ok &= quietly(f);
    }
    reads.clear();
    return ok;
  }

  private static boolean quietly(CompletableFuture<Void> f) {
    try {
      Futures.join(f);
      return true;
    } catch (FerriteException e) {
      return false;
    }
  }
}
