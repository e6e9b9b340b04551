package io.ferrite.nodes;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Lookups a client answers itself while it holds a lease on them (Gray &amp; Cheriton leases with
 * callbacks; the master half is {@code NodesMasterLeases}, the argument docs/NODES.md, "Leased
 * lookups"). A hit is a hash-map read and a clock read: no fabric op.
 *
 * <ul>
 *   <li>A LOOKUP_LEASED answer with a lease is kept; the lease runs from when the request was
 *       <i>sent</i> (the master counts it from when it received it, later) minus a drift margin.
 *   <li>One WATCH is kept outstanding while anything is kept: the master answers it with the nodes
 *       whose leases it revoked; this client drops every entry whose path runs through one, and its
 *       next WATCH acknowledges them and renews the lease. The master applies the change, and
 *       answers its writer, only after that acknowledgement (or after the lease ran out).
 *   <li>An answer computed before an invalidation this client already applied is not kept: every
 *       answer carries the holder's invalidation count when it was made ({@code seq}).
 *   <li>A new epoch (the master let the lease lapse) or a new holder id (a restarted master), a
 *       failed WATCH: everything kept is dropped.
 * </ul>
 */
final class LeaseCache {
  /** {@code nodes.leased.lookups=false}: every lookup asks the master. */
  final boolean on;

  /**
   * {@code nodes.leased.lookups=always}: leases also where gets would use the master's version
   * words (shm, local), for comparisons.
   */
  final boolean always;

  /** Entries kept at most; beyond, the cache starts over. */
  static final int MAX_ENTRIES = 65_536;

  /** A kept lookup and the ids of its path's nodes (root excluded). */
  private record Entry(NodeInfo node, long[] chain) {}

  private final FerriteClient client;
  private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();

  /** Until when (client nanoTime) kept entries may answer. Written under the monitor. */
  private volatile long deadline = System.nanoTime();

  /**
   * Last hit or keep (nanoTime, as seen by the WATCH loop): an idle cache gives its leases back
   * after {@link #IDLE_LEASES} leases.
   */
  private volatile long lastUse;

  /** A hit since the WATCH loop last looked. */
  private volatile boolean touched;

  private static final int IDLE_LEASES = 10;

  // Guarded by this.
  private final Map<Long, Set<String>> byId = new HashMap<>();
  private volatile long holder;
  private long epoch = -2;
  private long processed;
  private boolean watching;
  private FabricConnection conn;
  private boolean releasing;
  private long leaseNanos;

  private final LongAdder hits = new LongAdder();
  private final LongAdder misses = new LongAdder();
  private final LongAdder invalidated = new LongAdder();

  LeaseCache(FerriteClient client) {
    this.client = client;
    String mode = NodesConfig.leasedLookups(client.config());
    this.on = !mode.equals("false");
    this.always = mode.equals("always");
  }

  /** The kept answer for {@code path} while the lease holds, else null (counted as a miss). */
  NodeInfo hit(String path) {
    Entry e = entries.get(path);
    // The entry is read before the deadline: an entry dropped by an invalidation is gone before
    // the acknowledgement leaves, and a lease that lapsed is seen as lapsed.
    if (e != null && System.nanoTime() - deadline < 0) {
      hits.increment();
      if (!touched) {
        touched = true; // read-mostly: threads hitting the cache do not write one line each time
      }
      return e.node;
    }
    misses.increment();
    return null;
  }

  /** The holder id to present in a LOOKUP_LEASED (0 before the first WATCH answered). */
  long holder() {
    return holder;
  }

  /**
   * Reads the lease part of a LOOKUP_LEASED answer after its node and keeps the node if it may.
   *
   * @param sent nanoTime when the request was sent
   * @param via the master connection it came on: where WATCHes go
   */
  synchronized void keep(
      String path, NodeInfo node, Wire.Reader r, long sent, FabricConnection via) {
    conn = via;
    long ep = r.i64("epoch");
    long seq = r.i64("seq");
    long lease = r.i64("lease");
    int n = r.count("count", 4096);
    long[] chain = new long[n];
    for (int i = 0; i < n; i++) {
      chain[i] = r.i64("id");
    }
    r.end();
    if (!watching) {
      arm(false); // registers (holder 0), or re-registers after a failure or a restarted master
    }
    // While a release is in flight the master may drop this holder's leases at any moment: the
    // answer would be served past the master's view of the lease.
    if (lease <= 0 || ep != epoch || seq < processed || n == 0 || releasing) {
      return;
    }
    if (entries.size() >= MAX_ENTRIES) {
      entries.clear();
      byId.clear();
    }
    entries.put(path, new Entry(node, chain));
    for (long id : chain) {
      byId.computeIfAbsent(id, k -> new HashSet<>()).add(path);
    }
    extend(sent, lease);
    lastUse = System.nanoTime();
  }

  /** Drops what is kept for {@code path} (its value did not verify). */
  synchronized void forget(String path) {
    entries.remove(path);
  }

  private void extend(long sent, long lease) {
    leaseNanos = lease;
    // 2% for the rate drift of two clocks (quartz: 1e-4), which bounds the error of counting the
    // lease on this clock from before the master's receipt.
    long until = sent + lease - lease / 50;
    if (until - deadline > 0) {
      deadline = until;
    }
  }

  /**
   * Sends the next WATCH, acknowledging what was applied; with {@code release}, one that gives all
   * leases back (answered at once, with a new epoch). Under the monitor.
   */
  private void arm(boolean release) {
    watching = true;
    releasing = release;
    long sent = System.nanoTime();
    ByteBuffer body =
        new Wire.Writer()
            .i64(holder)
            .i64(epoch)
            .i64(processed)
            .i64(release ? -1 : client.rpcTimeout().toNanos() / 2)
            .toBuffer();
    // Sent on the connection the lookups came on, never by FerriteClient.callMaster, which
    // reconnects in the calling thread: this runs on fabric threads. A closed connection fails the
    // WATCH, which drops everything kept; the next lookup takes a new connection.
    CompletableFuture<ByteBuffer> f;
    FabricConnection c = conn;
    try {
      f =
          c == null || !c.isOpen()
              ? CompletableFuture.failedFuture(
                  new FerriteException(ErrorCode.UNAVAILABLE, "master connection closed"))
              : c.call(NodesProtocol.SERVICE, NodesProtocol.WATCH, body, client.rpcTimeout());
    } catch (RuntimeException e) {
      f = CompletableFuture.failedFuture(e);
    }
    f.whenComplete((b, t) -> watched(b, t, sent));
  }

  private synchronized void watched(ByteBuffer b, Throwable t, long sent) {
    if (t != null) {
      // Nothing renews the lease now and revocations may be missed: drop everything; the next
      // kept lookup arms a WATCH again.
      dropAll();
      deadline = System.nanoTime();
      watching = false;
      releasing = false;
      return;
    }
    Wire.Reader r = new Wire.Reader(b, "nodes watch");
    long h = r.i64("holder");
    long ep = r.i64("epoch");
    long seq = r.i64("seq");
    long lease = r.i64("lease");
    int n = r.count("count", Integer.MAX_VALUE / 8);
    if (h != holder || ep != epoch) {
      dropAll();
      holder = h;
      epoch = ep;
      processed = seq;
      for (int i = 0; i < n; i++) {
        r.i64("id");
      }
    } else {
      for (int i = 0; i < n; i++) {
        drop(r.i64("id"));
      }
      invalidated.add(n);
      processed = Math.max(processed, seq);
    }
    r.end();
    if (lease > 0) {
      extend(sent, lease);
    }
    if (touched) {
      touched = false;
      lastUse = System.nanoTime();
    }
    long idle = System.nanoTime() - lastUse;
    if (n > 0) {
      arm(false); // the acknowledgement a writer waits for
    } else if (releasing) {
      // The master dropped this holder's leases (new epoch, entries dropped above).
      watching = false;
    } else if (entries.isEmpty() || idle - IDLE_LEASES * Math.max(leaseNanos, 1) > 0) {
      // Nothing to answer from: give the leases back, so that no writer waits for this client.
      dropAll();
      arm(true);
    } else {
      arm(false);
    }
  }

  private void drop(long id) {
    Set<String> paths = byId.remove(id);
    if (paths != null) {
      for (String p : paths) {
        entries.remove(p);
      }
    }
  }

  private void dropAll() {
    entries.clear();
    byId.clear();
  }

  /** Hits, misses and revocations applied so far. */
  Nodes.CacheCounters counters() {
    return new Nodes.CacheCounters(hits.sum(), misses.sum(), invalidated.sum());
  }

  int size() {
    return entries.size();
  }
}
