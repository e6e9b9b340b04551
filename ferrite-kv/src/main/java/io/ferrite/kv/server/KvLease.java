package io.ferrite.kv.server;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.kernel.server.ServiceContext;
import io.ferrite.kv.ShardLayout;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A kv server's lease from the master (docs/KV.md "Leases"; FaRM §5.1 "leases"): replicated shards,
 * their RPCs and the one-sided ops on their regions, are served only while it is valid. It is valid
 * until {@code kv.lease} after the newest registration or heartbeat the master acknowledged was
 * <em>sent</em>, and never longer than half the dead timeout the master itself told the server at
 * registration.
 *
 * <p><b>Why this is safe.</b> The master declares a server DEAD (and promotes its shards' backups)
 * only after {@code server.dead.timeout} without hearing from it, counted from the last heartbeat
 * it received, which was sent no earlier than the last one acknowledged. With {@code kv.lease}
 * shorter than the dead timeout, the lease of a server that is paused (SIGSTOP, a long GC), cut
 * off, or slow has run out before the master can promote anything away from it: when it resumes, a
 * reader or writer whose placement still names it gets UNAVAILABLE, asks the master, and goes to
 * the promoted backup. It never reads old data there (issue #20's Jepsen run: a resumed primary
 * that had been deposed answered reads and took writes).
 *
 * <p><b>After a lapse.</b> The first acknowledgement after the lease ran out (or the first after a
 * start, with durable shards replayed from the log) does not renew it at once: the master may have
 * declared the server DEAD meanwhile, and it comes back as the same process with copies that are no
 * longer copies. The lease's {@code verify} (KvService) first checks every replicated copy against
 * the directory and retires those it no longer lists; only then is the lease granted, from the
 * acknowledgement's send time.
 *
 * <p><b>Same-host readers (shm).</b> A client that maps the regions reads them without the server,
 * so {@link #valid} never runs for its reads. For it the lease is also <em>published</em>: every
 * replicated shard's table region carries a lease word ({@link ShardLayout#LEASE_OFFSET}) holding
 * {@link #untilNanos} while the lease is granted, 0 otherwise; the client reads it after its data
 * and compares it with its own {@code System.nanoTime()} (KvTable's lease check). One word per
 * table region rather than one per-server page: the reader already maps the table region (a second
 * mapping would need a path, a key and a MAP of its own, and a failure mode of its own), and the
 * word sits in the header, away from the buckets or entries: a renewal (one per heartbeat, hundreds
 * of ms) costs readers one miss on the header line, not on their data. The regions are registered
 * here ({@link #publish}) when the shard makes them and withdrawn (0 written, never written again)
 * before they are retired or freed; the word goes on being renewed as long as the shard serves.
 *
 * <p><b>One clock for every process of the host.</b> {@code System.nanoTime()} is {@code
 * clock_gettime(CLOCK_MONOTONIC)} on Linux (HotSpot's {@code os::javaTimeNanos}): one system-wide
 * clock, the same in every process, so the deadline this process writes means the same to a reader
 * in another JVM. Only processes on this host map the region (shm never leaves the host), and
 * Ferrite's network-namespace hosts do not use time namespaces, whose offsets would break this.
 *
 * <p><b>Cost.</b> A volatile read and {@code System.nanoTime()} per request and per one-sided op on
 * a replicated shard's regions (tcp: the server's thread; shm: the client's own, reading the lease
 * word); a thread that polls the master link every {@value #POLL_MILLIS} ms and, on each renewal,
 * writes one word per replicated table region.
 */
final class KvLease implements MappedRegion.Lease, AutoCloseable {
  private static final System.Logger LOG = System.getLogger(KvLease.class.getName());

  /** How often the master link's last acknowledgement is looked at. */
  static final int POLL_MILLIS = 10;

  private final ServiceContext ctx;
  private final long periodNanos;
  private final Runnable verify;
  private final ScheduledThreadPoolExecutor thread;

  /** The lease runs until (System.nanoTime()); meaningful once {@link #granted}. */
  private volatile long untilNanos;

  private volatile boolean granted;

  /** The acknowledgement the lease was last renewed from (the poll thread's). */
  private long renewedFrom;

  private String lastFailure = "";

  /**
   * The table regions whose lease word this lease writes (replicated shards'), guarded by {@code
   * this}: publishing, withdrawing and writing the words are serialised, so a withdrawn region is
   * never written again (it may be unmapped right after).
   */
  private final Set<MappedRegion> published = new LinkedHashSet<>();

  private boolean closed; // guarded by this

  KvLease(ServiceContext ctx, Duration period, Runnable verify) {
    this.ctx = ctx;
    this.periodNanos = period.toNanos();
    this.verify = verify;
    this.thread = new ScheduledThreadPoolExecutor(1, new NamedThreadFactory("kv-lease", true));
    thread.scheduleWithFixedDelay(this::poll, 0, POLL_MILLIS, TimeUnit.MILLISECONDS);
  }

  @Override
  public boolean valid() {
    // untilNanos is written before granted (volatile order): a reader that sees granted sees it.
    return granted && System.nanoTime() - untilNanos < 0;
  }

  /**
   * What an UNAVAILABLE answer says of the lease: when it ran out, or that it was never granted.
   */
  @Override
  public String toString() {
    if (!granted) {
      return "server "
          + ctx.serverId()
          + "'s kv "
          + MappedRegion.LEASE_LAPSED
          + " (not granted again yet: checking its copies with the master)";
    }
    long ago = (System.nanoTime() - untilNanos) / 1_000_000;
    return "server "
        + ctx.serverId()
        + "'s kv "
        + MappedRegion.LEASE_LAPSED
        + ": it ran out "
        + ago
        + " ms ago (the master last acknowledged a heartbeat sent "
        + (System.nanoTime() - renewedFrom) / 1_000_000
        + " ms ago)";
  }

  private void poll() {
    try {
      OptionalLong ack = ctx.masterAckSentNanos();
      if (ack.isEmpty()) {
        return;
      }
      long sent = ack.getAsLong();
      if (granted && sent == renewedFrom) {
        return; // nothing new
      }
      if (!granted || sent - untilNanos >= 0) {
        // The lease had run out when this was sent (or was never granted): the master may have
        // declared the server DEAD in between. Check every copy before serving again. (The words
        // hold a past deadline already; 0 says so to a reader in any case.)
        granted = false;
        writeWords(0);
        verify.run();
      }
      renewedFrom = sent;
      untilNanos = sent + periodNanos();
      granted = true;
      writeWords(untilNanos);
      lastFailure = "";
    } catch (FerriteException | IllegalStateException e) {
      // The master cannot answer now (reconnecting, no leader): the lease stays as it is, lapsed
      // or running out; the next poll tries again. Logged once per distinct failure.
      String why = String.valueOf(e.getMessage());
      if (!why.equals(lastFailure)) {
        LOG.log(System.Logger.Level.INFO, "kv lease not renewed yet: " + why);
        lastFailure = why;
      }
    } catch (RuntimeException e) {
      // Never out of the periodic task (that would cancel it, and the lease with it).
      LOG.log(System.Logger.Level.WARNING, "kv lease renewal failed; trying again", e);
    }
  }

  /**
   * The lease's length: {@code kv.lease}, cut to half of the shortest {@code server.dead.timeout} a
   * master told this server at registration when that is shorter (the server's own key is only a
   * guess at the master's: a master that declares DEAD sooner than this server's configuration says
   * would otherwise promote a backup while this copy still held its lease). Logged once.
   */
  private long periodNanos() {
    OptionalLong masters = ctx.masterDeadTimeoutMillis();
    if (masters.isEmpty()) {
      return periodNanos;
    }
    long cap = TimeUnit.MILLISECONDS.toNanos(masters.getAsLong()) / 2;
    if (cap >= periodNanos) {
      return periodNanos;
    }
    if (!cutLogged) {
      cutLogged = true;
      LOG.log(
          System.Logger.Level.WARNING,
          "kv lease cut from {0} ms to {1} ms: a master declares servers DEAD after {2} ms (set"
              + " server.dead.timeout alike on masters and servers)",
          periodNanos / 1_000_000,
          cap / 1_000_000,
          masters.getAsLong());
    }
    return cap;
  }

  private boolean cutLogged; // the poll thread's

  /**
   * Writes {@code until} into every published lease word (release: a reader that loads the new
   * deadline sees whatever the server wrote before it). A deadline only ever grows while the lease
   * is granted, and a region registered concurrently is written the value current when it was
   * registered, which is never later than this one: a word may briefly hold an earlier deadline
   * than the lease (a reader refuses a little early), never a later one.
   */
  private synchronized void writeWords(long until) {
    if (closed) {
      return;
    }
    for (MappedRegion r : published) {
      r.putLongRelease(ShardLayout.LEASE_OFFSET, until);
    }
  }

  /**
   * Starts publishing the lease in table region {@code r} of a replicated shard (made by the shard;
   * not reachable by clients yet): writes the current deadline, or 0 if the lease is not granted,
   * and every renewal's from then on.
   */
  synchronized void publish(MappedRegion r) {
    if (closed) {
      return;
    }
    published.add(r);
    r.putLongRelease(ShardLayout.LEASE_OFFSET, granted ? untilNanos : 0);
  }

  /**
   * Stops publishing the lease in {@code r} and writes 0 there: the shard retired it (retired,
   * dropped) or is about to free it. Never written again after this returns, so the caller may free
   * (unmap) it. Idempotent; a region never published is left alone.
   */
  synchronized void withdraw(MappedRegion r) {
    if (published.remove(r) && !closed) {
      r.putLongRelease(ShardLayout.LEASE_OFFSET, 0);
    }
  }

  /** For tests: whether {@code r}'s lease word is being renewed. */
  synchronized boolean publishes(MappedRegion r) {
    return published.contains(r);
  }

  @Override
  public void close() {
    thread.shutdownNow();
    synchronized (this) {
      // Regions may be unmapped once the service stops: write none of them again. The words keep
      // the deadline they hold, which passes within one lease.
      closed = true;
      published.clear();
    }
  }
}
