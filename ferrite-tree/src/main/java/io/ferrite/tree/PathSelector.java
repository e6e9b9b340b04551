package io.ferrite.tree;

import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
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
 * window that had no sample for {@code idle} is forgotten; the path estimated worse is explored, so
 * that its estimate follows changes, about {@code explore} of the searches and of their time. And
 * Ferrite's, for load shifts and for what a switch of path costs (measured over tcp):
 *
 * <ul>
 *   <li>an exploration is {@link #BURST} searches of one thread in a row, the first one's sample
 *       dropped: a thread's first search after a switch of path pays for the switch, up to 40 times
 *       the path's steady cost over tcp, and explorations of one search saw nothing else;
 *   <li>{@link #SHIFT_RUN} samples in a row beyond a window on one side (outliers, or outside every
 *       sample it holds) restart it from them: a level shift, followed at once instead of after a
 *       period of dropped samples (for the path not taken, a period of explorations);
 *   <li>at most one exploration at a time per server; the next waits until the work of the searches
 *       since (all threads', from the samples) or the clock has paid its time over {@code explore}
 *       ({@link #finished});
 *   <li>a path with no estimate is taken first, and one whose window holds fewer than {@link
 *       #BOOTSTRAP} samples (its first ones, or restarted by a shift) explored again at once.
 * </ul>
 *
 * <p>Cell subtracts the round trip from both latencies to get pure queueing delays; Ferrite keeps
 * it in, because a client-side search pays it {@code m} times and a server-side one once, so the
 * rule compares what each path costs the caller.
 *
 * <p>Cheap on the common path (a get over shm takes about a microsecond, and timing, recording and
 * counting every one cost a fifth of it with 16 threads): only a sample of the searches is timed, 1
 * in {@code sampling} while the chosen path's window is steady (full, and its current period has
 * dropped few outliers), every one otherwise (a window being filled, or a load shift suspected); an
 * untimed {@link #choose} is one array read, a few volatile reads and one random draw: no clock, no
 * lock, no write to shared memory (one more volatile read: whether the calling thread is
 * exploring). Explorations are always timed, and at most one is in flight per server, after which
 * the next waits until the time spent exploring is at most about {@code explore} of the time since
 * ({@link #finished}): a path that stalls (tens of milliseconds over tcp) then costs the mean about
 * {@code explore} whatever its estimate says. Thread-safe: {@link #choose} is lock-free; a sample
 * takes the server's lock if it is free. The clock and the random draws are given (tests are
 * deterministic).
 */
public final class PathSelector {
  /** The selector's constants ({@code tree.selector.*}). */
  public record Settings(
      int samples,
      double outlierK,
      double explore,
      double factor,
      long idleNanos,
      boolean queues,
      int sampling,
      int burst) {
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
      if (sampling < 1) {
        throw new IllegalArgumentException("sampling: " + sampling + " (expected: >= 1)");
      }
      if (burst < 1 || burst > 64) {
        throw new IllegalArgumentException("burst: " + burst + " (expected: 1 to 64)");
      }
    }

    /** With explorations of {@link #BURST} searches. */
    public Settings(
        int samples,
        double outlierK,
        double explore,
        double factor,
        long idleNanos,
        boolean queues,
        int sampling) {
      this(samples, outlierK, explore, factor, idleNanos, queues, sampling, BURST);
    }

    /**
     * Cell's: 100 samples, K = 3, 1 % exploration, factor 1, 3 s idle; latencies alone; 1 in 16
     * searches timed while steady.
     */
    public static Settings defaults() {
      return new Settings(100, 3, 0.01, 1, 3_000_000_000L, false, 16, BURST);
    }
  }

  /**
   * A decision of {@link #choose}: the path, whether the search is to be timed and reported with
   * its latency, whether it explores (the path estimated worse, or one without an estimate).
   */
  public enum Choice {
    SERVER(Tree.Path.SERVER, false, false),
    SERVER_TIMED(Tree.Path.SERVER, true, false),
    SERVER_EXPLORED(Tree.Path.SERVER, true, true),
    CLIENT(Tree.Path.CLIENT, false, false),
    CLIENT_TIMED(Tree.Path.CLIENT, true, false),
    CLIENT_EXPLORED(Tree.Path.CLIENT, true, true);

    private final Tree.Path path;
    private final boolean timed;
    private final boolean explored;

    Choice(Tree.Path path, boolean timed, boolean explored) {
      this.path = path;
      this.timed = timed;
      this.explored = explored;
    }

    public Tree.Path path() {
      return path;
    }

    /** Whether {@link #finished} wants this search's latency (else it may be given 0). */
    public boolean timed() {
      return timed;
    }

    public boolean explored() {
      return explored;
    }

    static Choice of(Tree.Path path, boolean timed, boolean explored) {
      if (path == Tree.Path.SERVER) {
        return explored ? SERVER_EXPLORED : timed ? SERVER_TIMED : SERVER;
      }
      return explored ? CLIENT_EXPLORED : timed ? CLIENT_TIMED : CLIENT;
    }
  }

  /** Samples a window needs before its outliers are judged (a σ of fewer means little). */
  static final int MIN_FOR_OUTLIERS = 10;

  /** Servers with an id below this are found by index (no boxing, no hashing on each search). */
  static final int DIRECT_SERVERS = 1024;

  /**
   * Samples a path needs before the explorations of it are left to chance and time-gated: its first
   * search pays its cold start (a connection, code not yet compiled), and a one-sample estimate of
   * 10 ms for a 9 µs server path kept the selector on the slower client path for a second (tcp). As
   * many as outliers are judged from ({@link #MIN_FOR_OUTLIERS}), so that a window restarted by a
   * level shift ({@link #SHIFT_RUN}) is refilled the same way: a stall of the shared machine read
   * as a shift of the path taken sent the searches to the other path until a gated exploration came
   * back (measured over tcp at 1 thread: 12 to 18 % of the searches client-side while the server
   * path was 2.6 times faster); now three explorations (nine samples) of the stalled path follow at
   * once.
   */
  static final int BOOTSTRAP = MIN_FOR_OUTLIERS;

  /**
   * Searches of one exploration, made by one thread back to back: the first one's sample is
   * dropped, the others are kept. A thread's first search by the path it has not been taking pays
   * for the switch, and over tcp that is most of it: measured at 1 thread (bench tree, tcp), a
   * server-side get took 7 to 17 µs after a server-side get and 27 to 320 µs after a client-side
   * one (the client-side get, 23 µs warm, 29 to 360 µs after a server-side one). Explorations of
   * one search each therefore saw only the switched cost of the path not taken, and AUTO stayed on
   * whichever path it was on: 0.18 to 0.44 of the server path at 1 thread. The share of the
   * searches and of the time spent exploring stays about {@code explore}: an exploration starts
   * with probability {@code explore / BURST} and its whole time gates the next one.
   */
  public static final int BURST = 4;

  /**
   * Consecutive samples beyond their window, on the same side, that are read as a level shift: the
   * window is then restarted from them. Beyond means farther than {@code K·σ} from the mean (an
   * outlier, else dropped) or outside every sample the window holds (for independent samples and a
   * full window of 100, 1 in 101 per side for one, about 2 in a million for three in a row).
   * Without it a window followed a shift only once a period of {@code samples} dropped more than it
   * kept: for the path not taken, whose samples are explorations about {@code explore} of the time,
   * that was most of a bench phase, the 16 threads on the slower path all along (the tcp herd); and
   * a shift within {@code K·σ} of a wide window, never dropped, moved its mean by 1/{@code samples}
   * per sample. Three: one exploration's kept samples ({@link #BURST} − 1).
   */
  static final int SHIFT_RUN = 3;

  /**
   * How long an exploration's thread keeps the gate between its searches ({@link #BURST}): no other
   * exploration starts meanwhile; past it, a thread that stopped searching no longer holds it.
   */
  static final long BURST_HOLD_NANOS = 10_000_000L;

  /** An exploration is in flight: no other starts until it ends. */
  private static final long EXPLORING = Long.MAX_VALUE;

  private final Settings settings;
  private final LongSupplier clock;
  private final DoubleSupplier random;
  private final double sampled;

  /**
   * The probability that a choice starts an exploration: q such that explorations of {@link #BURST}
   * searches are {@code explore} of the searches, p = B·q / (1 + (B − 1)·q).
   */
  private final double startExplore;

  private final Map<Integer, Server> servers = new ConcurrentHashMap<>();

  /** {@link #servers} by id below {@link #DIRECT_SERVERS}, copied on growth (rare). */
  private volatile Server[] direct = new Server[0];

  /**
   * A selector deciding by {@code settings}, timing by {@code clock} (ns), exploring and sampling
   * by {@code random} (uniform in [0, 1)).
   */
  public PathSelector(Settings settings, LongSupplier clock, DoubleSupplier random) {
    this.settings = settings;
    this.clock = clock;
    this.random = random;
    this.sampled = 1.0 / settings.sampling();
    double p = settings.explore();
    int b = settings.burst();
    this.startExplore = p / (b - (b - 1) * p);
  }

  public Settings settings() {
    return settings;
  }

  /** The clock searches are timed by (ns). */
  public long now() {
    return clock.getAsLong();
  }

  private Server server(int id) {
    Server[] d = direct;
    if (id >= 0 && id < d.length) {
      Server s = d[id];
      if (s != null) {
        return s;
      }
    }
    return register(id);
  }

  private Server register(int id) {
    Server s = servers.computeIfAbsent(id, k -> new Server(settings.samples()));
    if (id >= 0 && id < DIRECT_SERVERS) {
      synchronized (servers) {
        Server[] d = direct;
        if (id >= d.length || d[id] != s) {
          Server[] grown = Arrays.copyOf(d, Math.max(d.length, id + 1));
          grown[id] = s;
          direct = grown; // volatile: publishes the array and the Server it holds
        }
      }
    }
    return s;
  }

  private Server existing(int id) {
    Server[] d = direct;
    return id >= 0 && id < d.length && d[id] != null ? d[id] : servers.get(id);
  }

  /**
   * The path of the next search of a meganode on {@code server}; with {@code queues} counted in
   * flight until {@link #finished}. Lock-free and, when the choice is untimed, without a clock read
   * or a write to shared memory: reads the estimates the last sample published (volatile). A timed
   * choice first forgets a history idle too long (under the server's lock, rare); an untimed one
   * leaves that to the next timed one (within about {@code sampling} searches).
   */
  public Choice choose(int server) {
    Server s = server(server);
    // A volatile read of a field written twice per exploration; the owner's next searches go on
    // exploring (BURST), without a draw.
    Thread owner = s.burstOwner;
    if (owner != null && owner == Thread.currentThread()) {
      Choice b = continueBurst(s);
      if (b != null) {
        if (settings.queues()) {
          (b.path() == Tree.Path.SERVER ? s.inFlightServer : s.inFlightClient).incrementAndGet();
        }
        return b;
      }
    }
    double u = random.getAsDouble();
    double ts = s.serverUnit;
    double tr = s.clientUnit;
    Choice c;
    if (Double.isNaN(ts)) {
      c = Choice.SERVER_TIMED; // the server path first: every caller, until it has an estimate
    } else if (Double.isNaN(tr)) {
      c = explore(s, Tree.Path.CLIENT, Choice.SERVER_TIMED);
    } else {
      boolean q = settings.queues();
      double serverCost = (q ? s.inFlightServer.get() + 1 : 1) * ts;
      double clientCost = settings.factor() * (q ? s.inFlightClient.get() + 1 : 1) * tr;
      boolean server1 = serverCost < clientCost;
      Tree.Path best = server1 ? Tree.Path.SERVER : Tree.Path.CLIENT;
      // Explored with probability p, then gated by the exploration's measured time (finished):
      // a share of the time, not of the searches, whatever the estimates say. Cell explores a
      // fixed share of the searches, cheap when the paths are within a small factor; here one may
      // be 50 to 10 000 times slower (a one-sided read over shm is a copy in memory, a tcp one may
      // stall for milliseconds). Damping p by the estimated cost ratio instead (down to p/1000)
      // trusted the estimate: a wrong one (a cold start) was then refreshed a few times a second.
      double pe = settings.explore();
      boolean steady = server1 ? s.serverSteady : s.clientSteady;
      boolean timed = !steady || u < pe + sampled;
      Choice b = Choice.of(best, timed, false);
      // The worse path's estimate from fewer than BOOTSTRAP samples is no estimate yet (its
      // first searches pay a cold start, or a stall restarted its window): it is explored again,
      // one exploration at a time, ungated, until its median sees past that.
      boolean cold = (server1 ? s.clientSamples : s.serverSamples) < BOOTSTRAP;
      c = cold || u < startExplore ? explore(s, other(best), Choice.of(best, true, false)) : b;
    }
    if (c.timed()) {
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
        if (!c.explored() && Double.isNaN(s.serverUnit)) {
          c = Choice.SERVER_TIMED;
        }
      }
    }
    if (settings.queues()) {
      (c.path() == Tree.Path.SERVER ? s.inFlightServer : s.inFlightClient).incrementAndGet();
    }
    return c;
  }

  /**
   * {@code path} explored if no exploration is in flight on {@code s} and the time since the last
   * one ended is long enough ({@link #finished}); else {@code otherwise}. Reads the clock and
   * compare-and-sets the gate only here, about {@code explore} of the searches or fewer.
   */
  private Choice explore(Server s, Tree.Path path, Choice otherwise) {
    long gate = s.exploreGate.get();
    // Compared directly, not by difference: the gate starts at Long.MIN_VALUE (open), and
    // System.nanoTime wraps only after centuries.
    if (gate != EXPLORING
        && (s.debtPaid || clock.getAsLong() >= gate)
        && s.exploreGate.compareAndSet(gate, EXPLORING)) {
      // Plain fields, published to whichever thread next takes the gate by its volatile writes;
      // read and written only by the thread holding it.
      s.burstPath = path;
      s.burstDone = 0;
      s.burstLeast = Double.POSITIVE_INFINITY;
      s.burstOwner = Thread.currentThread();
      // Not paid until this exploration ends and its time is worked off (the debt is set then;
      // samples pay nothing while an exploration has an owner). A sample racing this write may
      // leave it paid: at worst a second exploration overlaps this one.
      s.debtPaid = false;
      return Choice.of(path, true, true);
    }
    return otherwise;
  }

  /**
   * The next search of the calling thread's exploration of {@code s}, or null if another thread
   * took the gate after this one's hold lapsed ({@link #BURST_HOLD_NANOS}).
   */
  private Choice continueBurst(Server s) {
    long gate = s.exploreGate.get();
    if (gate != EXPLORING && s.exploreGate.compareAndSet(gate, EXPLORING)) {
      if (s.burstOwner == Thread.currentThread()) {
        return Choice.of(s.burstPath, true, true);
      }
      s.exploreGate.set(gate); // lost to a new exploration between the two reads: given back
    }
    return null;
  }

  /**
   * A search {@link #choose chosen} for {@code server} ended after {@code nanos} (0 if it was not
   * timed): server-side, one RPC; client-side, {@code reads} one-sided reads (0: a search that
   * needed none, its time says nothing of the reads' queue). A failed search is reported too (its
   * sample is dropped). The sample is also dropped when another thread holds the server's lock: at
   * a million searches a second from 16 threads a lock taken by every search halved the throughput
   * (bench tree, shm), and a moving average over the last 100 samples loses nothing by missing
   * some.
   *
   * <p>An exploration ({@link #BURST} searches) whose quickest search took {@code t} (at most its
   * path's estimate) bars the next one for {@code B·t·(1/explore − 1)} of the clock (at most {@code
   * idle}) or of the work of the searches since, summed over the threads from their samples,
   * whichever comes first: the time spent exploring stays about {@code explore} of one thread's
   * time, or of all threads' searches, however wrong the estimate that let it start (over tcp a
   * one-sided read may stall for tens of milliseconds). Not while the path has fewer than {@link
   * #BOOTSTRAP} samples.
   */
  public void finished(int server, Choice c, long nanos, long reads, boolean ok) {
    Server s = existing(server);
    if (s == null) {
      return;
    }
    if (settings.queues()) {
      (c.path() == Tree.Path.SERVER ? s.inFlightServer : s.inFlightClient).decrementAndGet();
    }
    // The first search of an exploration by its thread (BURST) pays the switch: not sampled,
    // unless the exploration is that one search (burst 1: the selector before explorations of
    // several searches).
    int burst = settings.burst();
    boolean mine = c.explored() && s.burstOwner == Thread.currentThread();
    boolean switched = mine && s.burstDone == 0 && burst > 1;
    if (ok && c.timed() && !switched && s.lock.tryLock()) {
      try {
        // The searches this sample stands for: 1 in (explore + 1/sampling) of a steady path's
        // searches is timed; explorations are no work of the chosen path.
        boolean steady = c.path() == Tree.Path.SERVER ? s.serverSteady : s.clientSteady;
        double weight = c.explored() ? 0 : steady ? 1 / (settings.explore() + sampled) : 1;
        sample(s, c.path(), nanos, reads, weight);
      } finally {
        s.lock.unlock();
      }
    }
    if (c.explored()) {
      double p = settings.explore();
      boolean server1 = c.path() == Tree.Path.SERVER;
      int had = server1 ? s.serverSamples : s.clientSamples;
      // The exploration's time, but no more than its path's estimate (this sample in it): a
      // search descheduled for 30 ms (16 threads on 2 cores) or a one-off stall is not what the
      // path costs, and it barred exploration for the rest of a bench phase; a path that stalls
      // every time has the stalls in its estimate.
      double unit = server1 ? s.serverUnit : s.clientUnit;
      double cost = Math.max(0, Double.isNaN(unit) ? nanos : Math.min(nanos, unit));
      long now = clock.getAsLong();
      if (mine) {
        // The exploration costs BURST times its quickest search: measured over tcp on the shared
        // machine, two of a path's first searches stalled for about 100 ms, its estimate from
        // three samples was then their median, and the sum of the four barred exploration (and
        // kept the selector on the slower path) for 2.8 s.
        s.burstLeast = Math.min(s.burstLeast, cost);
        if (++s.burstDone < burst) {
          s.exploreGate.set(now + BURST_HOLD_NANOS); // volatile: after the burst's fields
          return;
        }
        cost = burst * s.burstLeast;
        s.burstOwner = null;
      }
      double wait = p > 0 && had >= BOOTSTRAP ? cost * (1 / p - 1) : 0;
      s.lock.lock(); // once per exploration
      try {
        s.exploreDebt = wait;
        s.debtPaid = wait <= 0;
      } finally {
        s.lock.unlock();
      }
      s.exploreGate.set(now + (long) Math.min(wait, settings.idleNanos()));
    }
  }

  /** Adds one latency sample of {@code path} for {@code server} (nothing in flight changes). */
  void sample(int server, Tree.Path path, long nanos, long reads) {
    Server s = server(server);
    s.lock.lock();
    try {
      sample(s, path, nanos, reads, 1);
    } finally {
      s.lock.unlock();
    }
  }

  /** Under {@code s.lock}; the sample stands for {@code weight} searches' work. */
  private void sample(Server s, Tree.Path path, long nanos, long reads, double weight) {
    long now = clock.getAsLong();
    if (!s.debtPaid && s.burstOwner == null) {
      s.exploreDebt -= nanos * weight;
      if (s.exploreDebt <= 0) {
        s.debtPaid = true; // volatile: opens the gate to explore()
      }
    }
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

  /**
   * The estimates for {@code server}: {@code {T_s, T_r, m, q_s, q_r}} (ns, ns, reads, n, n; the
   * in-flight counts are kept with {@code queues} only).
   */
  public double[] estimates(int server) {
    Server s = existing(server);
    if (s == null) {
      return new double[5];
    }
    s.lock.lock();
    try {
      return new double[] {
        s.server.estimate(),
        s.reads.estimate(),
        s.readsPerSearch,
        s.inFlightServer.get(),
        s.inFlightClient.get()
      };
    } finally {
      s.lock.unlock();
    }
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
    final LatencyWindow server;
    final LatencyWindow reads;
    final AtomicInteger inFlightServer = new AtomicInteger();
    final AtomicInteger inFlightClient = new AtomicInteger();

    /**
     * The clock time from which an exploration may start, {@link #EXPLORING} while one is in
     * flight. Its own object: written by explorations only, not on the line every choice reads.
     */
    final AtomicLong exploreGate = new AtomicLong(Long.MIN_VALUE);

    /**
     * The thread whose exploration this is ({@link #BURST}), null between explorations. Volatile:
     * read by every {@link #choose}; the burst fields below are the owner's alone.
     */
    volatile Thread burstOwner;

    /**
     * The work (ns of searches, summed over the threads, from the samples) still to be done by the
     * paths chosen before the next exploration may start: an exploration's time over {@code
     * explore}. With one thread it is about the time the clock gate {@link #exploreGate} waits;
     * with 16 it is paid 16 times sooner, so that explorations keep about {@code explore} of all
     * the searches' time, not of one thread's (simulated: 16 threads came back to the server path
     * 40 to 60 ms after a busy phase ended, the gate set by 200 µs explorations). Under {@link
     * #lock}.
     */
    double exploreDebt;

    /** Whether {@link #exploreDebt} is paid: the gate is then open whatever its time says. */
    volatile boolean debtPaid = true;

    Tree.Path burstPath;
    int burstDone;
    double burstLeast;

    double readsPerSearch;
    long searches;

    /** {@code T_s}, NaN while there is no estimate. */
    volatile double serverUnit = Double.NaN;

    /** {@code m·T_r} before the factor, NaN while there is no estimate. */
    volatile double clientUnit = Double.NaN;

    /**
     * Whether each window is {@link LatencyWindow#steady steady}: its path is then timed 1 in N.
     */
    volatile boolean serverSteady;

    volatile boolean clientSteady;
    volatile long serverLast;
    volatile long clientLast;

    /** Samples in each window, for {@link #BOOTSTRAP}. */
    volatile int serverSamples;

    volatile int clientSamples;

    Server(int samples) {
      server = new LatencyWindow(samples);
      reads = new LatencyWindow(samples);
    }

    /** Under {@code lock}: makes the windows' estimates visible to {@link #choose}. */
    void publish() {
      serverLast = server.last;
      clientLast = reads.last;
      serverSamples = server.count;
      clientSamples = reads.count;
      serverSteady = server.steady();
      clientSteady = reads.steady();
      serverUnit = server.count == 0 ? Double.NaN : server.estimate();
      clientUnit = reads.count == 0 ? Double.NaN : Math.max(1, readsPerSearch) * reads.estimate();
    }
  }
}
