package io.ferrite.tree;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;

/**
 * Cell's locality selector (§3): per memory server, picks the path of the next meganode search by
 * comparing what each path's queue costs, server-side if {@code l_s < m·l_r}, else client-side:
 *
 * <ul>
 *   <li>{@code l_s}: the moving average of the last {@code samples} server-side search latencies
 *       (one RPC); {@code l_r}: of the last {@code samples} one-sided read latencies (a client-side
 *       search's time over its reads). Measured latencies include the queueing, which is why Cell
 *       substitutes them for its {@code q/T} terms ("instead of directly measuring the queue
 *       lengths ... we examine l_s and l_r");
 *   <li>{@code m}: the one-sided reads a client-side search of this server's meganodes takes, as
 *       measured (an average, as Cell adjusts its height estimate), times {@code factor} (1: pick
 *       the path of lower latency; above 1 rations the client's reads, below 1 the server's CPU).
 * </ul>
 *
 * With {@code queues} the literal join-the-shortest-queue form {@code q_s·T_s < m·q_r·T_r} is used
 * instead, {@code q} this client's searches in flight on each path (the one being decided included)
 * and {@code T} the same averages. Measured (bench tree's load-shift over tcp, 16 threads), it sent
 * 84 % of the searches client-side while the server path was 1.8 times faster: a latency already
 * holds the queue, so multiplying it by the queue counts it twice, and in-process the two "queues"
 * share the same cores. So it is off by default.
 *
 * <p>Refinements, as the paper's: a sample farther than {@code K·σ} from its window's mean is
 * dropped as an outlier, and a window that dropped more samples than it kept over one period of
 * {@code samples} is forgotten (the conditions changed: its next samples start a new mean); a
 * window that had no sample for {@code idle} is forgotten; with probability {@code explore} (damped
 * by how much worse it is, {@link #explore}) the path estimated worse is taken, so that its
 * estimate follows changes. A path with no estimate is taken first.
 *
 * <p>Cell subtracts the round trip from both latencies to get pure queueing delays; Ferrite keeps
 * it in, because a client-side search pays it {@code m} times and a server-side one once, so the
 * rule compares what each path costs the caller. Thread-safe: {@link #choose} is lock-free; a
 * sample takes the server's lock if it is free. The clock and the exploration's random draws are
 * given (tests are deterministic).
 */
public final class PathSelector {
  /** The selector's constants ({@code tree.selector.*}). */
  public record Settings(
      int samples, double outlierK, double explore, double factor, long idleNanos, boolean queues) {
    public Settings {
      if (samples < 2) {
        throw new IllegalArgumentException("samples: " + samples + " (expected: >= 2)");
      }
      if (!(outlierK > 1)) {
        throw new IllegalArgumentException("outlierK: " + outlierK + " (expected: > 1)");
      }
      if (!(explore >= 0 && explore < 0.5)) {
        throw new IllegalArgumentException("explore: " + explore + " (expected: 0 to 0.5)");
      }
      if (!(factor > 0)) {
        throw new IllegalArgumentException("factor: " + factor + " (expected: > 0)");
      }
      if (idleNanos <= 0) {
        throw new IllegalArgumentException("idleNanos: " + idleNanos + " (expected: > 0)");
      }
    }

    /** Cell's: 100 samples, K = 3, 1 % exploration, factor 1, 3 s idle; latencies alone. */
    public static Settings defaults() {
      return new Settings(100, 3, 0.01, 1, 3_000_000_000L, false);
    }
  }

  /** Exploration is damped by the paths' cost ratio down to 1/this of its probability. */
  static final double MAX_EXPLORE_DAMPING = 1000;

  /** Samples a window needs before its outliers are judged (a σ of fewer means little). */
  static final int MIN_FOR_OUTLIERS = 10;

  private final Settings settings;
  private final LongSupplier clock;
  private final DoubleSupplier random;
  private final Map<Integer, Server> servers = new ConcurrentHashMap<>();

  /**
   * A selector deciding by {@code settings}, timing by {@code clock} (ns), exploring by {@code
   * random} (uniform in [0, 1)).
   */
  public PathSelector(Settings settings, LongSupplier clock, DoubleSupplier random) {
    this.settings = settings;
    this.clock = clock;
    this.random = random;
  }

  public Settings settings() {
    return settings;
  }

  /** The clock searches are timed by (ns). */
  public long now() {
    return clock.getAsLong();
  }

  /**
   * The path of the next search of a meganode on {@code server}, counted in flight until {@link
   * #finished}. Lock-free: reads the estimates the last sample published (volatile), takes the
   * server's lock only to forget a history idle too long.
   */
  public Tree.Path choose(int server) {
    Server s = servers.computeIfAbsent(server, k -> new Server(settings.samples()));
    long now = clock.getAsLong();
    long idle = settings.idleNanos();
    if ((!Double.isNaN(s.serverUnit) && now - s.serverLast > idle)
        || (!Double.isNaN(s.clientUnit) && now - s.clientLast > idle)) {
      s.lock.lock();
      try {
        s.server.expire(now, idle);
        s.reads.expire(now, idle);
        s.publish();
      } finally {
        s.lock.unlock();
      }
    }
    double ts = s.serverUnit;
    double tr = s.clientUnit;
    Tree.Path p;
    if (Double.isNaN(ts)) {
      p = Tree.Path.SERVER;
    } else if (Double.isNaN(tr)) {
      p = Tree.Path.CLIENT;
    } else {
      boolean q = settings.queues();
      double serverCost = (q ? s.inFlightServer.get() + 1 : 1) * ts;
      double clientCost = settings.factor() * (q ? s.inFlightClient.get() + 1 : 1) * tr;
      Tree.Path best = serverCost < clientCost ? Tree.Path.SERVER : Tree.Path.CLIENT;
      p = random.getAsDouble() < explore(serverCost, clientCost) ? other(best) : best;
    }
    (p == Tree.Path.SERVER ? s.inFlightServer : s.inFlightClient).incrementAndGet();
    return p;
  }

  /**
   * A search {@link #choose chosen} for {@code server} ended after {@code nanos}: server-side, one
   * RPC; client-side, {@code reads} one-sided reads (0: a search that needed none, its time says
   * nothing of the reads' queue). A failed search is reported too (its sample is dropped). The
   * sample is also dropped when another thread holds the server's lock: at a million searches a
   * second from 16 threads a lock taken by every search halved the throughput (bench tree, shm),
   * and a moving average over the last 100 samples loses nothing by missing some.
   */
  public void finished(int server, Tree.Path path, long nanos, long reads, boolean ok) {
    Server s = servers.get(server);
    if (s == null) {
      return;
    }
    (path == Tree.Path.SERVER ? s.inFlightServer : s.inFlightClient).decrementAndGet();
    if (ok && s.lock.tryLock()) {
      try {
        sample(s, path, nanos, reads);
      } finally {
        s.lock.unlock();
      }
    }
  }

  /** Adds one latency sample of {@code path} for {@code server} (nothing in flight changes). */
  void sample(int server, Tree.Path path, long nanos, long reads) {
    Server s = servers.computeIfAbsent(server, k -> new Server(settings.samples()));
    s.lock.lock();
    try {
      sample(s, path, nanos, reads);
    } finally {
      s.lock.unlock();
    }
  }

  /** Under {@code s.lock}. */
  private void sample(Server s, Tree.Path path, long nanos, long reads) {
    long now = clock.getAsLong();
    if (path == Tree.Path.SERVER) {
      s.server.add(nanos, now, settings.outlierK());
    } else if (reads > 0) {
      s.reads.add(nanos / (double) reads, now, settings.outlierK());
      // m: reads per client-side search, an exponential average (a meganode's height changes
      // slowly; the caches make it drop as they warm).
      s.readsPerSearch += (reads - s.readsPerSearch) * (s.searches == 0 ? 1 : 0.05);
      s.searches++;
    }
    s.publish();
  }

  /** The estimates for {@code server}: {@code {T_s, T_r, m, q_s, q_r}} (ns, ns, reads, n, n). */
  public double[] estimates(int server) {
    Server s = servers.get(server);
    if (s == null) {
      return new double[5];
    }
    s.lock.lock();
    try {
      return new double[] {
        s.server.mean(),
        s.reads.mean(),
        s.readsPerSearch,
        s.inFlightServer.get(),
        s.inFlightClient.get()
      };
    } finally {
      s.lock.unlock();
    }
  }

  /**
   * The probability of taking the worse path: {@code explore} times the ratio of the better cost to
   * the worse, at least 1/{@link #MAX_EXPLORE_DAMPING} of it. Cell explores a fixed share of the
   * searches, which costs little when the paths are within a small factor of each other; here one
   * may be 50 to 500 times slower than the other (a one-sided read over shm is a copy in memory, a
   * server-side search a round trip through the server's threads, milliseconds on a busy machine),
   * and a fixed 1 % of searches on it would cost half the throughput or more. So the share of the
   * time spent exploring is what is kept at about {@code explore} (measured with a floor of 1/20
   * instead, the exploration still cost a quarter of the selector's throughput over shm). The
   * price: the worse path's estimate is refreshed more slowly (a few samples a second when it is
   * 500 times slower), so a change back takes that much longer to be seen.
   */
  private double explore(double server, double client) {
    double lo = Math.min(server, client);
    double hi = Math.max(server, client);
    double ratio = hi > 0 ? lo / hi : 1;
    return settings.explore() * Math.max(1.0 / MAX_EXPLORE_DAMPING, ratio);
  }

  private static Tree.Path other(Tree.Path p) {
    return p == Tree.Path.SERVER ? Tree.Path.CLIENT : Tree.Path.SERVER;
  }

  /**
   * One server's estimates: the windows under {@code lock}; what {@link #choose} reads, published
   * after each sample as volatile fields (a reader sees a whole estimate of each path, though maybe
   * one sample older than the other's: harmless for a moving average).
   */
  private static final class Server {
    final ReentrantLock lock = new ReentrantLock();
    final Window server;
    final Window reads;
    final AtomicInteger inFlightServer = new AtomicInteger();
    final AtomicInteger inFlightClient = new AtomicInteger();
    double readsPerSearch;
    long searches;

    /** {@code T_s}, NaN while there is no estimate. */
    volatile double serverUnit = Double.NaN;

    /** {@code m·T_r} before the factor, NaN while there is no estimate. */
    volatile double clientUnit = Double.NaN;

    volatile long serverLast;
    volatile long clientLast;

    Server(int samples) {
      server = new Window(samples);
      reads = new Window(samples);
    }

    /** Under {@code lock}: makes the windows' estimates visible to {@link #choose}. */
    void publish() {
      serverLast = server.last;
      clientLast = reads.last;
      serverUnit = server.count == 0 ? Double.NaN : server.mean();
      clientUnit = reads.count == 0 ? Double.NaN : Math.max(1, readsPerSearch) * reads.mean();
    }
  }

  /** The last {@code n} kept samples of one kind, their sum and sum of squares. */
  static final class Window {
    final double[] ring;
    int count;
    int next;
    double sum;
    double sumSquares;
    int keptInPeriod;
    int droppedInPeriod;
    long last;

    Window(int n) {
      ring = new double[n];
    }

    double mean() {
      return count == 0 ? 0 : sum / count;
    }

    double sigma() {
      if (count < 2) {
        return 0;
      }
      double m = mean();
      return Math.sqrt(Math.max(0, sumSquares / count - m * m));
    }

    /** Drops an outlier, or keeps the sample (evicting the oldest); forgets a changed history. */
    void add(double sample, long now, double k) {
      last = now;
      double sigma = sigma();
      if (count >= MIN_FOR_OUTLIERS && sigma > 0 && Math.abs(sample - mean()) >= k * sigma) {
        droppedInPeriod++;
      } else {
        keptInPeriod++;
        if (count == ring.length) {
          double old = ring[next];
          sum -= old;
          sumSquares -= old * old;
        } else {
          count++;
        }
        ring[next] = sample;
        next = (next + 1) % ring.length;
        sum += sample;
        sumSquares += sample * sample;
      }
      if (keptInPeriod + droppedInPeriod >= ring.length) {
        boolean changed = droppedInPeriod > keptInPeriod;
        keptInPeriod = 0;
        droppedInPeriod = 0;
        if (changed) {
          clear();
        }
      }
    }

    /** Forgets the history if its last sample is older than {@code idle}. */
    void expire(long now, long idle) {
      if (count > 0 && now - last > idle) {
        clear();
      }
    }

    void clear() {
      count = 0;
      next = 0;
      sum = 0;
      sumSquares = 0;
      keptInPeriod = 0;
      droppedInPeriod = 0;
    }
  }
}
