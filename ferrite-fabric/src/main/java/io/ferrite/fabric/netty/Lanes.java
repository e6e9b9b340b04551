package io.ferrite.fabric.netty;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.nio.channels.ClosedByInterruptException;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A connection's blocking lanes ({@link Lane}): at most {@link
 * io.ferrite.fabric.FabricTuning#lanes} sockets, opened on first need by the thread that needs one,
 * each used by one thread at a time for a synchronous read and then put back, all closed with the
 * connection (also when the connection is lost).
 *
 * <p>A lane is a separate socket, so ops on it are not ordered with the shared connection's: {@link
 * NettyConnection} takes a lane only while the shared connection has no op in flight, so a thread's
 * earlier op has always taken effect before its lane read is sent ({@link
 * io.ferrite.fabric.OneSided}: ops of one thread take effect in issue order).
 *
 * <p>A lane that cannot be opened (refused, a handshake failure) is not retried for {@link
 * #RETRY_NANOS}; meanwhile reads take the shared connection, as they do when every lane is taken.
 */
final class Lanes {
  private static final System.Logger LOG = System.getLogger(Lanes.class.getName());

  private static final long RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final InetSocketAddress remote;
  private final String address;
  private final ConnectOptions options;
  private final int remoteId;
  private final EventLoop loop;
  private final long opTimeoutNanos;

  /** Lanes of this connection at most ({@link io.ferrite.fabric.FabricTuning#lanes}, > 0). */
  private final int max;

  /** How long a lane's caller polls for its answer before it blocks ({@link Lane}). */
  private final long spinNanos;

  /** Callers of this connection's lanes waiting for an answer now; only a lone one polls. */
  private final AtomicInteger waiters = new AtomicInteger();

  private final Queue<Lane> idle = new ConcurrentLinkedQueue<>();
  private final Set<Lane> all = ConcurrentHashMap.newKeySet();
  private final AtomicInteger count = new AtomicInteger();
  private volatile boolean closed;
  private volatile long retryAfter;
  private volatile boolean retryArmed;
  private ScheduledFuture<?> watchdog;

  Lanes(
      InetSocketAddress remote,
      String address,
      ConnectOptions options,
      int remoteId,
      EventLoop l,
      int max,
      long spinNanos) {
    this.max = max;
    this.spinNanos = spinNanos;
    this.remote = remote;
    this.address = address;
    this.options = options;
    this.remoteId = remoteId;
    this.loop = l;
    this.opTimeoutNanos = options.opTimeout().toNanos();
  }

  /** An idle lane for the calling thread, a new one if the bound allows, or null. */
  Lane take() {
    Lane l = idle.poll();
    if (l != null || closed) {
      return l;
    }
    if (retryArmed && System.nanoTime() - retryAfter < 0) {
      return null;
    }
    int c = count.get();
    if (c >= max || !count.compareAndSet(c, c + 1)) {
      return null;
    }
    try {
      l = new Lane(spinNanos, waiters);
    } catch (IOException e) {
      count.decrementAndGet();
      return null;
    }
    all.add(l);
    if (!startWatchdog() || closed) {
      discard(l);
      return null;
    }
    long timeout = options.connectTimeout().toNanos();
    l.begin(System.nanoTime() + timeout);
    try {
      l.open(remote, (int) TimeUnit.NANOSECONDS.toMillis(timeout), options.credentials(), remoteId);
      if (l.end()) {
        return l;
      }
    } catch (IOException | FerriteException e) {
      if (e instanceof ClosedByInterruptException) {
        Thread.currentThread().interrupt();
      }
      LOG.log(Level.DEBUG, "no lane to {0}: {1}", address, e.toString());
    }
    discard(l);
    retryAfter = System.nanoTime() + RETRY_NANOS;
    retryArmed = true;
    return null;
  }

  /** Starts an op on {@code l} with the connection's op timeout. */
  void begin(Lane l) {
    l.begin(System.nanoTime() + opTimeoutNanos);
  }

  /** Puts a lane back after a call that left it usable. */
  void give(Lane l) {
    if (!l.end()) {
      discard(l);
      return;
    }
    idle.offer(l);
    if (closed) {
      closeIdle(); // close() may have drained the queue before the offer
    }
  }

  /** Closes a broken or expired lane and frees its place. */
  void discard(Lane l) {
    l.close();
    if (all.remove(l)) {
      count.decrementAndGet();
    }
  }

  /** The failure of the unanswered ops of a call on {@code l} that broke with {@code e}. */
  FerriteException failure(Lane l, IOException e, String what) {
    if (l.expired()) {
      return new FerriteException(
          ErrorCode.TIMEOUT,
          "no answer to "
              + what
              + " from "
              + address
              + " within "
              + TimeUnit.NANOSECONDS.toMillis(opTimeoutNanos)
              + " ms");
    }
    if (e instanceof ClosedByInterruptException) {
      return new FerriteException(
          ErrorCode.UNAVAILABLE, "interrupted waiting for " + what + " from " + address);
    }
    if (closed) {
      return new FerriteException(ErrorCode.UNAVAILABLE, "connection to " + address + " closed");
    }
    return null; // broken for another reason: the caller retries on the shared connection
  }

  /** Lanes open or opening now. */
  int count() {
    return count.get();
  }

  /** Closes every lane, busy ones too (their callers' reads end with an error). Idempotent. */
  void close() {
    closed = true;
    ScheduledFuture<?> w;
    synchronized (this) {
      w = watchdog;
    }
    if (w != null) {
      w.cancel(false);
    }
    for (Lane l : all) {
      discard(l);
    }
    closeIdle();
  }

  private void closeIdle() {
    Lane l;
    while ((l = idle.poll()) != null) {
      discard(l);
    }
  }

  // ---- the watchdog, on the connection's event loop

  /** Starts the watchdog with the first lane; false if the event loop is gone. */
  private synchronized boolean startWatchdog() {
    if (closed) {
      return false; // close() has cancelled it, or will see none
    }
    if (watchdog != null) {
      return true;
    }
    long shortest = Math.min(opTimeoutNanos, options.connectTimeout().toNanos());
    long period =
        Math.max(TimeUnit.MILLISECONDS.toNanos(5), Math.min(shortest / 8, MAX_WATCHDOG_NANOS));
    try {
      watchdog = loop.scheduleAtFixedRate(this::expireLate, period, period, TimeUnit.NANOSECONDS);
      return true;
    } catch (RejectedExecutionException e) {
      return false;
    }
  }

  /** The watchdog wakes at most this often: ops end at most that much after their deadline. */
  private static final long MAX_WATCHDOG_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  private void expireLate() {
    long now = System.nanoTime();
    for (Lane l : all) {
      l.expireIfLate(now);
    }
  }

  /** Describes ops for error messages. */
  static String describe(List<RegionOps.Read> ops) {
    return ops.size() == 1 ? ops.get(0).describe(0, ops.get(0).length) : ops.size() + " READs";
  }
}
