package io.ferrite.fabric.shm;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.fabric.netty.RingHost;
import io.ferrite.fabric.netty.RpcDispatcher;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The server side of shm RPC rings for one endpoint: one {@link ServerRings} per connection that
 * asked for rings, and one <b>ring poller</b> thread that reads every connection's request ring and
 * hands each request to the endpoint's {@link RpcDispatcher} (which answers non-blocking operations
 * right there, on the poller, and queues the rest for its dispatch threads).
 *
 * <h2>Idle strategy</h2>
 *
 * After the last request it served, the poller keeps polling, yielding between looks ({@link
 * #spinNanos} of busy spinning first, 0 by default), until its idle budget is spent, then sleeps:
 * it sets the server-asleep flag of every connection, looks at every request ring once more, and
 * parks until a client rings the doorbell (a DOORBELL frame; the endpoint's I/O thread then reads
 * that connection's requests itself, {@link #doorbell}, and wakes the poller). So a busy client is
 * served with no system call at all, and an idle endpoint costs no CPU.
 *
 * <p>The idle budget adapts: it starts at {@link #MIN_IDLE_NANOS}; when a doorbell wakes the poller
 * less than {@link #SHORT_SLEEP_NANOS} after it went to sleep, traffic had only paused (typically
 * because the machine is loaded and a round trip took longer than the budget), so the budget
 * doubles, up to {@link #MAX_IDLE_NANOS}; a longer sleep resets it. Without that, a loaded machine
 * locks into the slow path: the poller sleeps between requests, every request needs a doorbell,
 * every round trip gets slower.
 *
 * <p>While some connection's response ring is full (its client does not drain it), the poller
 * instead parks for a growing interval (10 µs to 1 ms) and retries, not reading that connection's
 * requests meanwhile.
 */
final class RingServer implements RingHost {
  private static final System.Logger LOG = System.getLogger(RingServer.class.getName());

  /** Idle budget (spin, then yield) after the last request before sleeping: least and most. */
  static final long MIN_IDLE_NANOS = TimeUnit.MICROSECONDS.toNanos(50);

  static final long MAX_IDLE_NANOS = TimeUnit.MICROSECONDS.toNanos(800);

  /** A sleep shorter than this doubles the idle budget; a longer one resets it. */
  static final long SHORT_SLEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

  private static final long MIN_BACKOFF_NANOS = TimeUnit.MICROSECONDS.toNanos(10);
  private static final long MAX_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  final RpcDispatcher dispatcher;
  private final Path dir;
  private final String prefix;
  private final int requestCapacity;
  private final int responseCapacity;
  private final String threadName;

  /**
   * Busy-spin ({@link Thread#onSpinWait}) this long after the last request before yielding; 0 by
   * default: polls between {@code yield}s. Measured on a 2-vCPU VM shared with other work: when the
   * poller and the calling thread land on one core, each busy spin holds the core the other needs
   * (a 4-byte inline call took ~12 us with 5 us of spinning, ~4 us yielding), while on two cores
   * yielding costs ~0.4 us more per call. {@link io.ferrite.fabric.FabricTuning#shmPollerSpinNanos}
   * (config {@code shm.poller.spin.nanos}) for machines with cores to spare.
   */
  final long spinNanos;

  private final Map<Long, ServerRings> byConnection = new ConcurrentHashMap<>();

  /** What the poller polls; replaced (copy on write) under {@code this}. */
  private volatile ServerRings[] polled = new ServerRings[0];

  /** Responses that found their ring full and waited on the server (for tests). */
  final java.util.concurrent.atomic.LongAdder queuedResponses =
      new java.util.concurrent.atomic.LongAdder();

  private volatile Thread poller;
  private volatile boolean shutdown;

  RingServer(
      RpcDispatcher dispatcher,
      Path dir,
      int nodeId,
      int requestCapacity,
      int responseCapacity,
      long spinNanos) {
    this.spinNanos = spinNanos;
    this.dispatcher = dispatcher;
    this.dir = dir;
    this.prefix = "rpc-" + nodeId + "-";
    this.requestCapacity = requestCapacity;
    this.responseCapacity = responseCapacity;
    this.threadName = "ferrite-shm-rpc-" + nodeId;
  }

  @Override
  public String open(RingPeer peer) {
    long id = peer.context().connectionId();
    synchronized (this) {
      if (shutdown) {
        throw new FerriteException(ErrorCode.UNAVAILABLE, "server is shutting down");
      }
      if (byConnection.containsKey(id)) {
        throw new FerriteException(ErrorCode.CONFLICT, "this connection has its rings already");
      }
      RingFile file = RingFile.create(dir, prefix, requestCapacity, responseCapacity);
      ServerRings rings = new ServerRings(this, peer, file);
      byConnection.put(id, rings);
      ServerRings[] now = Arrays.copyOf(polled, polled.length + 1);
      now[now.length - 1] = rings;
      polled = now;
      if (poller == null) {
        Thread t = new NamedThreadFactory(threadName, true).newThread(this::run);
        poller = t;
        t.start();
      }
      // The new rings start with the server-asleep flag up: the client's first request rings.
      wake();
      return file.file().toString();
    }
  }

  @Override
  public void doorbell(long connectionId) {
    ServerRings rings = byConnection.get(connectionId);
    if (rings != null) {
      rings.readNow();
    }
    // Then the poller, for what the client sends next (off the critical path of this call).
    wake();
  }

  @Override
  public void closed(long connectionId) {
    ServerRings rings = byConnection.remove(connectionId);
    if (rings == null) {
      return;
    }
    synchronized (this) {
      ServerRings[] now = Arrays.stream(polled).filter(r -> r != rings).toArray(ServerRings[]::new);
      polled = now;
    }
    rings.close();
  }

  @Override
  public void shutdown() {
    Thread t;
    synchronized (this) {
      if (shutdown) {
        return;
      }
      shutdown = true;
      t = poller;
    }
    if (t != null) {
      LockSupport.unpark(t);
      try {
        t.join(2000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    for (Long id : byConnection.keySet()) {
      closed(id);
    }
  }

  /** Number of connections with rings (for tests). */
  int connections() {
    return byConnection.size();
  }

  /** Wakes the poller if it sleeps (harmless otherwise: the next park returns at once). */
  void wake() {
    Thread t = poller;
    if (t != null) {
      LockSupport.unpark(t);
    }
  }

  boolean onPoller() {
    return Thread.currentThread() == poller;
  }

  // ---------------------------------------------------------------- the poller

  private void run() {
    long lastWork = System.nanoTime();
    long backoff = MIN_BACKOFF_NANOS;
    long budget = MIN_IDLE_NANOS;
    while (!shutdown) {
      ServerRings[] all = polled;
      int work = 0;
      boolean backlog = false;
      for (ServerRings r : all) {
        try {
          work += r.poll();
          backlog |= r.backlogged();
        } catch (RuntimeException | Error e) {
          // Never let one connection stop the poller that serves all of them.
          LOG.log(Level.ERROR, "ring poller failed on a connection; closing it", e);
          r.closeConnection("ring poller failed: " + e);
        }
      }
      // Answers to the calls this thread's inline handlers made to other servers (their forwards):
      // read here rather than rung for (RingClient.InFlight.poll).
      work += RingClient.InFlight.poll();
      long now = System.nanoTime();
      if (work > 0) {
        lastWork = now;
        backoff = MIN_BACKOFF_NANOS;
        continue;
      }
      long idle = now - lastWork;
      if (idle < spinNanos) {
        Thread.onSpinWait();
        continue;
      }
      if (idle < budget) {
        Thread.yield();
        continue;
      }
      RingClient.InFlight.letGo(); // parking: answers are rung for meanwhile
      if (backlog) {
        LockSupport.parkNanos(this, backoff);
        backoff = Math.min(MAX_BACKOFF_NANOS, backoff * 2);
        continue;
      }
      sleep(all);
      lastWork = System.nanoTime();
      long slept = lastWork - now;
      budget = slept < SHORT_SLEEP_NANOS ? Math.min(MAX_IDLE_NANOS, budget * 2) : MIN_IDLE_NANOS;
    }
    RingClient.InFlight.letGo();
  }

  /**
   * Raises every connection's server-asleep flag, looks once more for requests (a client that wrote
   * one before it could see the flag does not ring), and parks until a doorbell unless it found
   * one. Then lowers the flags again: while the poller polls, clients need not ring.
   */
  private void sleep(ServerRings[] all) {
    boolean work = false;
    for (ServerRings r : all) {
      r.setAsleep(true);
    }
    for (ServerRings r : all) {
      work |= r.hasWork();
    }
    if (!work && !shutdown && polled == all) {
      LockSupport.park(this);
    }
    for (ServerRings r : polled) {
      r.setAsleep(false);
    }
  }
}
