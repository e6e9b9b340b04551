package io.ferrite.kernel.server;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.kernel.config.FerriteConfig;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A memory server's lease from the master (docs/KV.md "Leases", docs/TX.md "Leases"; FaRM §5.1
 * "leases"): a face's replicated data (kv's replicated shards, tx regions), its RPCs and the
 * one-sided ops on its regions, are served only while it is valid. It is valid until the face's
 * lease period ({@code kv.lease}, {@code tx.lease}) after the newest registration or heartbeat the
 * master acknowledged was <em>sent</em>, and never longer than half the dead timeout the master
 * itself told the server at registration. One implementation for every face (one per face and
 * server: each face verifies its own copies after a lapse).
 *
 * <p><b>Why this is safe.</b> The master declares a server DEAD (and promotes its backups) only
 * after {@code server.dead.timeout} without hearing from it, counted from the last heartbeat it
 * received, which was sent no earlier than the last one acknowledged. With the lease shorter than
 * the dead timeout, the lease of a server that is paused (SIGSTOP, a long GC), cut off, or slow has
 * run out before the master can promote anything away from it: when it resumes, a reader or writer
 * whose placement still names it gets UNAVAILABLE ({@link MappedRegion#LEASE_LAPSED}), asks the
 * master, and goes to the promoted backup. It never reads old data there (issue #20's Jepsen run: a
 * resumed primary that had been deposed answered reads and took writes).
 *
 * <p><b>After a lapse.</b> The first acknowledgement after the lease ran out (or the first after a
 * start) does not renew it at once: the master may have declared the server DEAD meanwhile, and it
 * comes back as the same process with copies that are no longer copies. The face's {@code verify}
 * first checks every copy it holds against the master and retires those no longer its own; only
 * then is the lease granted, from the acknowledgement's send time.
 *
 * <p><b>Same-host readers (shm).</b> A client that maps the regions reads them without the server,
 * so {@link #valid} never runs for its reads. For it the lease is also <em>published</em>: a word
 * the face chose in each of its leased regions ({@link #publish}: kv's table header, tx's last
 * line) holds {@link #untilNanos} while the lease is granted, 0 otherwise; the client reads it
 * after its data and compares it with its own {@code System.nanoTime()}. A region is registered
 * before any client can learn of it and withdrawn (0 written, never written again) before it is
 * retired or freed; the word goes on being renewed as long as the face serves it.
 *
 * <p><b>One clock for every process of the host.</b> {@code System.nanoTime()} is {@code
 * clock_gettime(CLOCK_MONOTONIC)} on Linux (HotSpot's {@code os::javaTimeNanos}): one system-wide
 * clock, the same in every process, so the deadline this process writes means the same to a reader
 * in another JVM. Only processes on this host map the region (shm never leaves the host), and
 * Ferrite's network-namespace hosts do not use time namespaces, whose offsets would break this.
 *
 * <p><b>Cost.</b> A volatile read and {@code System.nanoTime()} per request and per one-sided op on
 * a leased region (tcp: the server's thread; shm: the client's own, reading the lease word); a
 * thread that polls the master link every {@value #POLL_MILLIS} ms and, on each renewal, writes one
 * word per published region.
 */
public class ServerLease implements MappedRegion.Lease, AutoCloseable {
  private static final System.Logger LOG = System.getLogger(ServerLease.class.getName());

  /** How often the master link's last acknowledgement is looked at. */
  public static final int POLL_MILLIS = 10;

  private final ServiceContext ctx;
  private final String face;
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
   * The regions whose lease word this lease writes, with the word's offset, guarded by {@code
   * this}: publishing, withdrawing and writing the words are serialised, so a withdrawn region is
   * never written again (it may be unmapped right after).
   */
  private final Map<MappedRegion, Long> published = new LinkedHashMap<>();

  private boolean closed; // guarded by this

  /**
   * Starts polling the master link.
   *
   * @param face the face whose copies this lease covers ("kv", "tx"): names the thread and messages
   * @param period the lease's length (see {@link #period}); cut to half the master's dead timeout
   * @param verify run on the lease's thread before the lease is granted after a lapse (or first):
   *     retires every copy the master no longer names here; throws {@link FerriteException} if the
   *     master cannot answer (the lease stays lapsed, tried again)
   */
  public ServerLease(ServiceContext ctx, String face, Duration period, Runnable verify) {
    this.ctx = ctx;
    this.face = face;
    this.periodNanos = period.toNanos();
    this.verify = verify;
    this.thread = new ScheduledThreadPoolExecutor(1, new NamedThreadFactory(face + "-lease", true));
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
    String lapsed = "server " + ctx.serverId() + "'s " + face + " " + MappedRegion.LEASE_LAPSED;
    if (!granted) {
      return lapsed + " (not granted again yet: checking its copies with the master)";
    }
    return lapsed
        + ": it ran out "
        + (System.nanoTime() - untilNanos) / 1_000_000
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
        LOG.log(System.Logger.Level.INFO, face + " lease not renewed yet: " + why);
        lastFailure = why;
      }
    } catch (RuntimeException e) {
      // Never out of the periodic task (that would cancel it, and the lease with it).
      LOG.log(System.Logger.Level.WARNING, face + " lease renewal failed; trying again", e);
    }
  }

  /**
   * The lease's length (the face's key), cut to half of the shortest {@code server.dead.timeout} a
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
          "{3} lease cut from {0} ms to {1} ms: a master declares servers DEAD after {2} ms (set"
              + " server.dead.timeout alike on masters and servers)",
          periodNanos / 1_000_000,
          cap / 1_000_000,
          masters.getAsLong(),
          face);
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
    for (Map.Entry<MappedRegion, Long> e : published.entrySet()) {
      e.getKey().putLongRelease(e.getValue(), until);
    }
  }

  /**
   * Starts publishing the lease in region {@code r}'s word at {@code offset} (8-byte aligned; a
   * region made by the face, not reachable by clients yet): writes the current deadline, or 0 if
   * the lease is not granted, and every renewal's from then on.
   */
  public synchronized void publish(MappedRegion r, long offset) {
    if (closed) {
      return;
    }
    published.put(r, offset);
    r.putLongRelease(offset, granted ? untilNanos : 0);
  }

  /**
   * Stops publishing the lease in {@code r} and writes 0 there: the face retired it (retired,
   * dropped, deposed) or is about to free it. Never written again after this returns, so the caller
   * may free (unmap) it. Idempotent; a region never published is left alone.
   */
  public synchronized void withdraw(MappedRegion r) {
    Long offset = published.remove(r);
    if (offset != null && !closed) {
      r.putLongRelease(offset, 0);
    }
  }

  /** For tests: whether {@code r}'s lease word is being renewed. */
  public synchronized boolean publishes(MappedRegion r) {
    return published.containsKey(r);
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

  /**
   * A face's lease length from its key {@code key}: {@code auto} is half of {@code
   * server.dead.timeout} (heartbeats late by that much, a loaded machine, do not lapse it, and the
   * other half is the margin over the master's dead check); a set value must be shorter than the
   * dead timeout.
   *
   * @throws IllegalArgumentException naming the key for any other value
   */
  public static Duration period(FerriteConfig cfg, String key) {
    Duration dead = cfg.deadTimeout();
    String v = cfg.get(key).trim();
    if (v.equals("auto")) {
      return dead.dividedBy(2);
    }
    Duration d = cfg.getDuration(key);
    if (d.compareTo(dead) >= 0) {
      throw new IllegalArgumentException(
          key
              + ": "
              + v
              + " (expected: auto, or shorter than "
              + FerriteConfig.DEAD_TIMEOUT
              + " "
              + dead.toMillis()
              + "ms)");
    }
    return d;
  }
}
