package io.ferrite.tree;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
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
 * rule compares what each path costs the caller. Thread-safe: one lock per server, held for a few
 * arithmetic operations. The clock and the exploration's random draws are given (tests are
 * deterministic).
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
   * #finished}.
   */
  public Tree.Path choose(int server) {
    Server s = servers.computeIfAbsent(server, k -> new Server(settings.samples()));
    synchronized (s) {
      long now = clock.getAsLong();
      s.server.expire(now, settings.idleNanos());
      s.reads.expire(now, settings.idleNanos());
      Tree.Path p;
      if (s.server.count == 0) {
        p = Tree.Path.SERVER;
      } else if (s.reads.count == 0) {
        p = Tree.Path.CLIENT;
      } else {
        double serverCost = s.serverCost(settings.queues());
        double clientCost = settings.factor() * s.clientCost(settings.queues());
        Tree.Path best = serverCost < clientCost ? Tree.Path.SERVER : Tree.Path.CLIENT;
        p = random.getAsDouble() < explore(serverCost, clientCost) ? other(best) : best;
      }
      if (p == Tree.Path.SERVER) {
        s.inFlightServer++;
      } else {
        s.inFlightClient++;
      }
      return p;
    }
  }

  /**
   * A search {@link #choose chosen} for {@code server} ended after {@code nanos}: server-side, one
   * RPC; client-side, {@code reads} one-sided reads (0: a search that needed none, its time says
   * nothing of the reads' queue). A failed search is reported too (its sample is dropped).
   */
  public void finished(int server, Tree.Path path, long nanos, long reads, boolean ok) {
    Server s = servers.get(server);
    if (s == null) {
      return;
    }
    synchronized (s) {
      if (path == Tree.Path.SERVER) {
        s.inFlightServer--;
      } else {
        s.inFlightClient--;
      }
      if (ok) {
        sample(s, path, nanos, reads);
      }
    }
  }

  /** Adds one latency sample of {@code path} for {@code server} (nothing in flight changes). */
  void sample(int server, Tree.Path path, long nanos, long reads) {
    Server s = servers.computeIfAbsent(server, k -> new Server(settings.samples()));
    synchronized (s) {
      sample(s, path, nanos, reads);
    }
  }

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
  }

  /** The estimates for {@code server}: {@code {T_s, T_r, m, q_s, q_r}} (ns, ns, reads, n, n). */
  public double[] estimates(int server) {
    Server s = servers.get(server);
    if (s == null) {
      return new double[5];
    }
    synchronized (s) {
      return new double[] {
        s.server.mean(), s.reads.mean(), s.readsPerSearch, s.inFlightServer, s.inFlightClient
      };
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

  /** One server's estimates. Guarded by its own lock. */
  private static final class Server {
    final Window server;
    final Window reads;
    int inFlightServer;
    int inFlightClient;
    double readsPerSearch;
    long searches;

    Server(int samples) {
      server = new Window(samples);
      reads = new Window(samples);
    }

    /** {@code q_s·T_s}, the search being decided counted in the queue; or {@code T_s}. */
    double serverCost(boolean queues) {
      return (queues ? inFlightServer + 1 : 1) * server.mean();
    }

    /** {@code m·q_r·T_r} before the factor; or {@code m·T_r}. */
    double clientCost(boolean queues) {
      return Math.max(1, readsPerSearch) * (queues ? inFlightClient + 1 : 1) * reads.mean();
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
