package io.ferrite.nodes.master;

import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Leases with callbacks on lookups (Gray &amp; Cheriton, SOSP '89): what lets a client answer a
 * lookup from its cache with no round trip, over any fabric (docs/NODES.md, "Leased lookups").
 *
 * <ul>
 *   <li>A client registers as a <b>holder</b> (WATCH with holder 0). A LOOKUP_LEASED of a File or
 *       KeyValue grants the holder a lease on every node of the path (root excluded) and renews the
 *       holder's lease: it is valid until {@code receipt + lease} on the master's clock; the client
 *       counts it from when it <i>sent</i> the request, minus a drift margin, so no clock sync is
 *       needed.
 *   <li>A mutation that changes what a lookup of a node returns calls {@link #enter} with that node
 *       under the metadata lock before it commits anything. If some holder has a lease on it the
 *       mutation aborts ({@link Held}, nothing committed), {@link #invalidate} revokes the leases
 *       (each holder's parked WATCH is completed with the node ids) and the mutation runs again
 *       once every holder acknowledged (its next WATCH carries the ack) or its lease expired. While
 *       a node is being invalidated or changed no lease on it is granted. So when the mutation is
 *       acknowledged no client can still answer from the old state, and a lookup that returns the
 *       new state is never followed by a cached one returning the old (the change is applied only
 *       after every cache dropped it).
 *   <li>A holder with invalidations it has not acknowledged gets no lease and no renewal: a dead or
 *       slow client costs a writer at most one lease.
 *   <li>A holder whose lease expired is <b>reset</b>: its leases are dropped, its epoch advances;
 *       the client, seeing the new epoch, drops everything it kept.
 *   <li>A restarted master does not know what clients kept: for one lease after it started, a
 *       change to a node it recovered (id below the first it gives out) waits out that lease.
 * </ul>
 *
 * All state is guarded by this object's monitor, taken after the metadata lock (in {@link #enter})
 * and after the namespace's read lock (in {@link #grant}); futures are completed outside it.
 */
final class NodesMasterLeases implements AutoCloseable {
  /** A mutation met leased nodes: invalidate {@link #ids} and run it again. */
  static final class Held extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final transient long[] ids;

    Held(long[] ids) {
      super("leased nodes", null, false, false);
      this.ids = ids;
    }
  }

  /** What a lookup gets: the holder's epoch and invalidation count, and the lease (ns) or 0. */
  record Grant(long epoch, long seq, long leaseNanos) {}

  private static final class Holder {
    final long id;
    long epoch;

    /** Master nanoTime at which the lease ends; frozen while invalidations are unacknowledged. */
    long expiresAt;

    /** Invalidations queued so far; {@code acked} of them acknowledged. */
    long seq;

    long acked;

    /** Unacknowledged invalidations: seq -> node id, in seq order. */
    final java.util.TreeMap<Long, Long> pending = new java.util.TreeMap<>();

    final Set<Long> nodes = new HashSet<>();

    /** Writers waiting for an ack: seq -> futures. */
    final java.util.TreeMap<Long, List<CompletableFuture<Void>>> waiters =
        new java.util.TreeMap<>();

    CompletableFuture<ByteBuffer> watch;
    ScheduledFuture<?> watchTimeout;

    Holder(long id) {
      this.id = id;
    }
  }

  private final long leaseNanos;
  private final long holdNanos;
  private final long startNanos = System.nanoTime();
  private volatile long firstNewId = Long.MAX_VALUE;
  private final ScheduledThreadPoolExecutor timer =
      new ScheduledThreadPoolExecutor(1, new NamedThreadFactory("nodes-leases", true));
  private long nextHolder;
  private final Map<Long, Holder> holders = new HashMap<>();
  private final Map<Long, Set<Holder>> byNode = new HashMap<>();

  /** Nodes a mutation is committing a change to (between enter and exit): no lease. */
  private final Map<Long, Integer> changing = new HashMap<>();

  /** Nodes invalidated for a mutation that has not run yet: no lease, no other mutation. */
  private final Map<Long, CompletableFuture<Void>> marks = new HashMap<>();

  /** Invalidation counters, for tests and the bench. */
  private long invalidations;

  private long expiredWhileHeld;

  long leaseNanos() {
    return leaseNanos;
  }

  NodesMasterLeases(Duration lease) {
    this.leaseNanos = Math.max(TimeUnit.MILLISECONDS.toNanos(10), lease.toNanos());
    // A WATCH is parked at most a third of a lease, so that the one after it renews the lease
    // before it lapses even when the answer and the next request each take a sixth.
    this.holdNanos = leaseNanos / 3;
    // Holder ids start at a random point, so a restarted master does not hand out an id a client
    // of the previous one still uses (that client would take the other's answers for its own).
    this.nextHolder = new SecureRandom().nextLong() & Long.MAX_VALUE | 1L << 40;
    timer.setRemoveOnCancelPolicy(true);
    timer.scheduleWithFixedDelay(this::sweep, leaseNanos, leaseNanos, TimeUnit.NANOSECONDS);
  }

  /** The ids below {@code firstNew} were recovered: for one lease a change to them waits it out. */
  void recovered(long firstNew) {
    firstNewId = firstNew;
  }

  /** The thread mutations retried after an invalidation run on (never an I/O thread). */
  Executor executor() {
    return timer;
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }

  // ------------------------------------------------------------------ lookups

  /**
   * Grants {@code holderId} a lease on {@code chain} (the path's nodes, root excluded), or says why
   * not (lease 0). Under the namespace's read lock, so no apply runs meanwhile.
   */
  synchronized Grant grant(long holderId, List<Node> chain, boolean leasable) {
    Holder h = holders.get(holderId);
    if (h == null) {
      return new Grant(-1, 0, 0);
    }
    long now = System.nanoTime();
    List<Runnable> after = new ArrayList<>();
    if (now - h.expiresAt >= 0) {
      reset(h, after);
    }
    boolean ok = leasable && !chain.isEmpty() && h.pending.isEmpty();
    for (int i = 0; ok && i < chain.size(); i++) {
      long id = chain.get(i).id;
      ok = !changing.containsKey(id) && !marks.containsKey(id);
    }
    if (ok) {
      for (Node n : chain) {
        if (h.nodes.add(n.id)) {
          byNode.computeIfAbsent(n.id, k -> new HashSet<>()).add(h);
        }
      }
      h.expiresAt = now + leaseNanos;
    }
    Grant g = new Grant(h.epoch, h.seq, ok ? leaseNanos : 0);
    runOutside(after);
    return g;
  }

  // ------------------------------------------------------------------ mutations

  /**
   * The ids the mutation running on this thread has {@link #invalidate}d and still marks (set while
   * a retried mutation runs, see {@link NodesMaster}): its own marks do not hold it back.
   */
  static final ThreadLocal<Set<Long>> MINE = ThreadLocal.withInitial(Set::of);

  /**
   * Marks {@code nodes} (nulls ignored) changing, for a mutation about to commit; returns their ids
   * for {@link #exit}. Throws {@link Held} (before anything is marked) if one has leases, is being
   * invalidated for another mutation, or is a recovered node within the first lease after start.
   * Under the metadata lock.
   */
  synchronized long[] enter(Node... nodes) {
    Set<Long> mine = MINE.get();
    long[] ids = new long[nodes.length];
    int n = 0;
    List<Long> held = null;
    long now = System.nanoTime();
    for (Node node : nodes) {
      if (node == null) {
        continue;
      }
      Set<Holder> hs = byNode.get(node.id);
      boolean fresh = node.id < firstNewId && now - startNanos < leaseNanos;
      boolean other = marks.containsKey(node.id) && !mine.contains(node.id);
      if ((hs != null && !hs.isEmpty()) || fresh || other) {
        if (held == null) {
          held = new ArrayList<>();
        }
        held.add(node.id);
      }
      ids[n++] = node.id;
    }
    if (held != null) {
      throw new Held(held.stream().mapToLong(Long::longValue).toArray());
    }
    ids = java.util.Arrays.copyOf(ids, n);
    for (long id : ids) {
      changing.merge(id, 1, Integer::sum);
    }
    return ids;
  }

  /** The mutation that {@link #enter}ed {@code ids} committed or failed. */
  synchronized void exit(long[] ids) {
    for (long id : ids) {
      changing.computeIfPresent(id, (k, c) -> c == 1 ? null : c - 1);
    }
  }

  /**
   * Revokes every lease on {@code ids} and marks them (no new lease, no other mutation) until
   * {@link #release}; adds the ids it marked to {@code mine}. An id another mutation marks is left
   * to it: this one waits until that one released it. The future completes once every holder
   * acknowledged or its lease expired, on the {@link #executor}.
   */
  CompletableFuture<Void> invalidate(long[] ids, Set<Long> mine) {
    List<CompletableFuture<?>> waits = new ArrayList<>();
    List<Runnable> after = new ArrayList<>();
    Set<Holder> told = new java.util.LinkedHashSet<>();
    synchronized (this) {
      long now = System.nanoTime();
      for (long id : ids) {
        if (mine.contains(id)) {
          // Marked by this mutation already (a holder cannot have come back): only the grace.
        } else if (marks.containsKey(id)) {
          waits.add(marks.get(id));
          continue;
        } else {
          marks.put(id, new CompletableFuture<>());
          mine.add(id);
        }
        if (id < firstNewId && now - startNanos < leaseNanos) {
          // Clients of the previous master may hold it: wait out their lease.
          CompletableFuture<Void> f = new CompletableFuture<>();
          timer.schedule(
              () -> f.complete(null),
              leaseNanos - (now - startNanos) + 1_000_000,
              TimeUnit.NANOSECONDS);
          waits.add(f);
        }
        Set<Holder> hs = byNode.remove(id);
        if (hs == null) {
          continue;
        }
        for (Holder h : hs) {
          h.nodes.remove(id);
          if (now - h.expiresAt >= 0) {
            reset(h, after);
            continue;
          }
          invalidations++;
          long s = ++h.seq;
          h.pending.put(s, id);
          CompletableFuture<Void> f = new CompletableFuture<>();
          h.waiters.computeIfAbsent(s, k -> new ArrayList<>()).add(f);
          waits.add(f);
          // The lease is frozen now: if the holder never acknowledges, it ends at expiresAt.
          timer.schedule(() -> expire(h), h.expiresAt - now, TimeUnit.NANOSECONDS);
          told.add(h);
        }
      }
      for (Holder h : told) {
        answerWatch(h, after); // once per holder, with all of its revocations
      }
    }
    runOutside(after);
    return CompletableFuture.allOf(waits.toArray(new CompletableFuture<?>[0]))
        .thenApplyAsync(v -> null, timer);
  }

  /** The mutation that marked {@code mine} is done: leases on them may be granted again. */
  void release(Set<Long> mine) {
    List<CompletableFuture<Void>> done = new ArrayList<>();
    synchronized (this) {
      for (long id : mine) {
        CompletableFuture<Void> f = marks.remove(id);
        if (f != null) {
          done.add(f);
        }
      }
    }
    for (CompletableFuture<Void> f : done) {
      f.complete(null);
    }
  }

  /** A holder's frozen lease ran out without an ack: reset it, releasing its writers. */
  private void expire(Holder h) {
    List<Runnable> after = new ArrayList<>();
    synchronized (this) {
      if (holders.get(h.id) == h && !h.pending.isEmpty() && System.nanoTime() - h.expiresAt >= 0) {
        expiredWhileHeld++;
        reset(h, after);
      }
    }
    runOutside(after);
  }

  /** Drops every lease of {@code h} and advances its epoch. Under the monitor. */
  private void reset(Holder h, List<Runnable> after) {
    for (long id : h.nodes) {
      Set<Holder> hs = byNode.get(id);
      if (hs != null) {
        hs.remove(h);
        if (hs.isEmpty()) {
          byNode.remove(id);
        }
      }
    }
    h.nodes.clear();
    h.pending.clear();
    h.acked = h.seq;
    h.epoch++;
    for (List<CompletableFuture<Void>> fs : h.waiters.values()) {
      for (CompletableFuture<Void> f : fs) {
        after.add(() -> f.complete(null));
      }
    }
    h.waiters.clear();
    answerWatch(h, after);
  }

  // ------------------------------------------------------------------ WATCH

  /**
   * WATCH: registers a holder (id 0), or acknowledges its invalidations up to {@code acked} and
   * renews its lease (if none is left unacknowledged), answering at once if it has some to deliver
   * or its epoch moved, else when one comes or after a third of a lease.
   */
  CompletableFuture<ByteBuffer> watch(long holderId, long epoch, long acked, long maxHold) {
    List<Runnable> after = new ArrayList<>();
    CompletableFuture<ByteBuffer> out = new CompletableFuture<>();
    ByteBuffer now;
    synchronized (this) {
      now = watchLocked(holderId, epoch, acked, maxHold, out, after);
    }
    runOutside(after);
    if (now != null) {
      out.complete(now);
    }
    return out;
  }

  /** The answer to give at once, or null when {@code out} is parked. Under the monitor. */
  private ByteBuffer watchLocked(
      long holderId,
      long epoch,
      long acked,
      long maxHold,
      CompletableFuture<ByteBuffer> out,
      List<Runnable> after) {
    long now = System.nanoTime();
    Holder h = holderId == 0 ? null : holders.get(holderId);
    if (h == null) {
      // New, or unknown here (a restarted master, or swept): a new holder, which the client takes
      // as a reset.
      h = new Holder(nextHolder++);
      holders.put(h.id, h);
      h.expiresAt = now + leaseNanos;
      return answer(h, true);
    }
    if (now - h.expiresAt >= 0) {
      reset(h, after);
    } else if (epoch == h.epoch && acked > h.acked) {
      long upTo = Math.min(acked, h.seq);
      h.acked = Math.max(h.acked, upTo);
      h.pending.headMap(upTo, true).clear();
      Map<Long, List<CompletableFuture<Void>>> done = h.waiters.headMap(upTo, true);
      for (List<CompletableFuture<Void>> fs : done.values()) {
        for (CompletableFuture<Void> f : fs) {
          after.add(() -> f.complete(null));
        }
      }
      done.clear();
    }
    if (h.watch != null) {
      answerWatch(h, after); // superseded
    }
    if (maxHold < 0) {
      // Released: the client keeps nothing any more.
      reset(h, after);
      return answer(h, false);
    }
    boolean renew = h.pending.isEmpty();
    if (renew) {
      h.expiresAt = now + leaseNanos;
    }
    if (!h.pending.isEmpty() || epoch != h.epoch) {
      return answer(h, renew);
    }
    Holder held = h;
    h.watch = out;
    h.watchTimeout =
        timer.schedule(
            () -> {
              List<Runnable> later = new ArrayList<>();
              synchronized (this) {
                if (held.watch == out) {
                  answerWatch(held, later);
                }
              }
              runOutside(later);
            },
            Math.max(0, Math.min(holdNanos, maxHold)),
            TimeUnit.NANOSECONDS);
    return null;
  }

  /** Completes {@code h}'s parked WATCH (if any) with what it has now. Under the monitor. */
  private void answerWatch(Holder h, List<Runnable> after) {
    CompletableFuture<ByteBuffer> w = h.watch;
    if (w == null) {
      return;
    }
    h.watch = null;
    if (h.watchTimeout != null) {
      h.watchTimeout.cancel(false);
      h.watchTimeout = null;
    }
    // The lease was renewed when this WATCH arrived, unless invalidations were pending then (it
    // would not have been parked) — so it was renewed.
    ByteBuffer b = answer(h, true);
    after.add(() -> w.complete(b));
  }

  /**
   *
   *
   * <pre>
   * holder i64 | epoch i64 | seq i64 | lease i64 (ns; 0 = not renewed) | count i32 | id i64 *
   * </pre>
   */
  private ByteBuffer answer(Holder h, boolean renewed) {
    Wire.Writer w = new Wire.Writer(40 + 8 * h.pending.size());
    w.i64(h.id).i64(h.epoch).i64(h.seq).i64(renewed ? leaseNanos : 0).i32(h.pending.size());
    for (long id : h.pending.values()) {
      w.i64(id);
    }
    return w.toBuffer();
  }

  /** Forgets holders silent for a whole lease past their end: a client that went away. */
  private void sweep() {
    List<Runnable> after = new ArrayList<>();
    synchronized (this) {
      long now = System.nanoTime();
      for (Iterator<Holder> it = holders.values().iterator(); it.hasNext(); ) {
        Holder h = it.next();
        if (h.watch == null && now - h.expiresAt - leaseNanos >= 0) {
          reset(h, after);
          it.remove();
        }
      }
    }
    runOutside(after);
  }

  private static void runOutside(List<Runnable> after) {
    for (Runnable r : after) {
      r.run();
    }
  }

  /** Leases revoked so far, and holders whose lease ran out while a writer waited (for tests). */
  synchronized long[] counts() {
    return new long[] {invalidations, expiredWhileHeld};
  }
}
