package io.ferrite.bench.tx;

import io.ferrite.bench.BenchConfig;
import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.LatencyRecorder;
import io.ferrite.bench.Progress;
import io.ferrite.bench.kv.KvBench;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.local.InProcessCluster;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.TxClient;
import io.ferrite.tx.TxConfig;
import io.ferrite.tx.tao.Tao;
import io.ferrite.tx.tao.TaoWorkload;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.HdrHistogram.Histogram;

/**
 * {@code ferrite bench tx}: the tx face (FaRM) on a master and two memory servers (tcp + shm) in
 * this process, per {@code tx.replicas} value (a cluster each), per client fabric:
 *
 * <ul>
 *   <li>{@code tx.<fabric>.lockfree-read.8B.{p50,p99}}: {@link TxClient#lockFreeRead} of an account
 *       (one 64 B line), beside {@code ceiling.tx.<fabric>.read.64B}: the fabric's raw one-sided
 *       read of the same bytes on the same connection; {@code .reads-per-read}: one-sided reads per
 *       lock-free read, from the connections' counters (must be exactly 1);
 *   <li>{@code tx.<fabric>.r<r>.commit-{1,2}server.{p50,p99}}: {@code txCommit} of a transaction
 *       that read and wrote one account (single-server: one COMMIT_LOCAL) or two accounts on two
 *       servers (two-phase), beside {@code ceiling.tx.<fabric>.r<r>.rpc-empty}: an empty RPC to a
 *       memory server's service executor (the path the tx service's calls take), measured in the
 *       same run; {@code commit-2server.round-trips}: the two-phase p50 in empty-RPC p50s;
 *   <li>{@code tx.<fabric>.r<r>.bank.t<n>.{throughput,p50,abort-rate}}: bank transfers ({@link
 *       Bank}: read 2, write 2, retried until committed) on {@code n} threads; with {@code
 *       vsRedis}, {@code redis.bank.t<n>.*}: the same workload with WATCH/MULTI/EXEC ({@link
 *       RedisBank}), and the tcp transfers beside it;
 *   <li>{@code tx.<fabric>.r<r>.tao.t<n>.throughput}: TAO's read-heavy mix ({@link TaoWorkload},
 *       docs/TAO.md) on a graph loaded once per cluster ({@link #taoWorkload}; {@link
 *       Options#withTaoMix} swaps it, null skips it).
 * </ul>
 *
 * {@link TxTargets} reads the targets off the report. After every bank run the total is
 * checked in one transaction (and on redis by GETs): a benchmark that broke the invariant fails.
 */
public final class TxBench {
  static final String SUITE = "tx";

  static final Credentials CREDENTIALS =
      new Credentials(
          "bench-tx", "ferrite-bench-tx-secret-0123456789ab".getBytes(StandardCharsets.UTF_8));

  /** The master key setting the copies of each tx region (added with replication). */
  public static final String REPLICAS_KEY = "tx.replicas";

  /** Commits timed at least per commit measurement, however short the duration. */
  static final int MIN_COMMITS = 100;

  /** The balance every account starts with. */
  static final long INITIAL = 1000;

  /**
   * The Tao mix (issue #13: 99.8% reads, paper §4.4), the integrator's hook: loads its graph with
   * {@code client}, then runs the mix on {@code threads} threads for {@code d}.
   */
  @FunctionalInterface
  public interface TaoMix {
    /** Returns the mix's throughput in ops/s. */
    double run(FerriteClient client, int threads, Duration d) throws Exception;
  }

  /**
   * The Tao mix of {@link TaoWorkload}: the first run on a client loads a graph of {@code objects}
   * objects with about {@code assocsPerObject} associations each; every run then measures TAO's
   * read-heavy mix on it. A run in which any operation failed fails the benchmark.
   */
  public static TaoMix taoWorkload(int objects, int assocsPerObject, long seed) {
    Map<FerriteClient, TaoWorkload> loaded = new java.util.IdentityHashMap<>();
    return (client, threads, d) -> {
      TaoWorkload w;
      synchronized (loaded) {
        w = loaded.get(client);
        if (w == null) {
          w =
              TaoWorkload.load(
                  new Tao(new TxClient(client)), objects, assocsPerObject, seed, (x, y) -> {});
          loaded.put(client, w);
        }
      }
      TaoWorkload.Result r = w.run(threads, d, seed + threads);
      if (r.errors() > 0) {
        throw new IllegalStateException("the Tao mix failed: " + r);
      }
      return r.opsPerSecond();
    };
  }

  /** What to measure. */
  public record Options(
      List<String> fabrics,
      List<Integer> threads,
      List<Integer> replicas,
      Duration duration,
      int accounts,
      Path directory,
      PrintStream progress,
      TaoMix taoMix) {
    public Options {
      fabrics = List.copyOf(fabrics);
      threads = List.copyOf(threads);
      replicas = List.copyOf(replicas);
      Objects.requireNonNull(duration, "duration");
      if (accounts < 2) {
        throw new IllegalArgumentException("accounts: " + accounts + " (expected: >= 2)");
      }
      for (int t : threads) {
        if (t < 1) {
          throw new IllegalArgumentException("threads: " + t + " (expected: >= 1)");
        }
      }
      for (int r : replicas) {
        if (r < 1 || r > 2) {
          throw new IllegalArgumentException(
              "replicas: " + r + " (expected: 1 or 2: the cluster has two memory servers)");
        }
      }
      if (duration.isNegative() || duration.isZero()) {
        throw new IllegalArgumentException("duration: " + duration + " (expected: > 0)");
      }
    }

    /**
     * shm and tcp, 1 and 16 threads, replicas 1 and 2, 1 s each, 10 000 accounts, a Tao graph of 10
     * 000 objects with about 8 associations each.
     */
    public static Options defaults() {
      return new Options(
          List.of("shm", "tcp"),
          List.of(1, 16),
          List.of(1, 2),
          Duration.ofSeconds(1),
          10_000,
          Path.of(System.getProperty("java.io.tmpdir")),
          System.err,
          taoWorkload(10_000, 8, 1));
    }

    /** 300 ms each, 1 000 accounts, a Tao graph of 1 000 objects. */
    public static Options quick() {
      return defaults()
          .withDuration(Duration.ofMillis(300))
          .withAccounts(1000)
          .withTaoMix(taoWorkload(1_000, 4, 1));
    }

    public Options withFabrics(List<String> f) {
      return new Options(f, threads, replicas, duration, accounts, directory, progress, taoMix);
    }

    public Options withThreads(List<Integer> t) {
      return new Options(fabrics, t, replicas, duration, accounts, directory, progress, taoMix);
    }

    public Options withReplicas(List<Integer> r) {
      return new Options(fabrics, threads, r, duration, accounts, directory, progress, taoMix);
    }

    public Options withDuration(Duration d) {
      return new Options(fabrics, threads, replicas, d, accounts, directory, progress, taoMix);
    }

    public Options withAccounts(int a) {
      return new Options(fabrics, threads, replicas, duration, a, directory, progress, taoMix);
    }

    public Options withProgress(PrintStream p) {
      return new Options(fabrics, threads, replicas, duration, accounts, directory, p, taoMix);
    }

    /** The Tao mix to measure beside the transfers (null: none). */
    public Options withTaoMix(TaoMix mix) {
      return new Options(fabrics, threads, replicas, duration, accounts, directory, progress, mix);
    }
  }

  private TxBench() {}

  /** Whether this build's configuration knows {@link #REPLICAS_KEY} (replication is merged). */
  public static boolean replicasKnown() {
    return FerriteConfig.KEYS.containsKey(REPLICAS_KEY);
  }

  /** Starts redis-server (with {@code vsRedis}) and a cluster per replicas value; measures. */
  public static BenchReport run(Options o, boolean vsRedis) throws Exception {
    BenchReport report = new BenchReport(SUITE);
    Progress progress = new Progress("bench " + SUITE, o.progress());
    Path root = Files.createTempDirectory(o.directory(), "ferrite-bench-tx-");
    try {
      Map<Integer, BenchResult> redis = Map.of();
      if (vsRedis) {
        redis = RedisBank.measure(report, o, root, progress);
      }
      boolean first = true;
      for (int replicas : o.replicas()) {
        if (replicas != 1 && !replicasKnown()) {
          progress.step(
              "replicas "
                  + replicas
                  + ": skipped, this build does not know "
                  + REPLICAS_KEY
                  + " (replication not merged)");
          continue;
        }
        try (InProcessCluster cluster = startCluster(root.resolve("r" + replicas), replicas)) {
          measureCluster(report, o, cluster, replicas, first, redis, progress);
        }
        first = false;
      }
    } finally {
      FileTrees.delete(root);
    }
    return report;
  }

  /**
   * A master and two memory servers; {@code tx.replicas} set when not 1 (a build without
   * replication rejects the key), and an {@link EmptyService} on each server.
   */
  static InProcessCluster startCluster(Path root, int replicas) {
    FerriteConfig.Builder b =
        BenchConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, "bench-tx")
            .set(FerriteConfig.DATA_DIR, root.resolve("data").toString())
            .set(FerriteConfig.SHM_DIR, root.resolve("shm").toString())
            .set(FerriteConfig.MASTER_PORT, "0")
            .set(FerriteConfig.SERVER_HOST, "127.0.0.1")
            .set(FerriteConfig.MASTER_HOST, "127.0.0.1")
            .set(FerriteConfig.CAPACITY_DRAM, "1g")
            .set(FerriteConfig.CAPACITY_DISK, "0")
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .set(FerriteConfig.METRICS_PORT, "-1")
            .set(TxConfig.REGION_SIZE, "16m");
    if (replicas != 1 || replicasKnown()) {
      b.set(REPLICAS_KEY, Integer.toString(replicas));
    }
    return InProcessCluster.builder(b.build(), CREDENTIALS)
        .masterFabrics(List.of("tcp"))
        .servers(2)
        .serverNames(i -> "bench-tx-" + i)
        .services(List.of(new EmptyService()))
        .start();
  }

  static FerriteClient connect(String masterAddress, String fabric) {
    return Ferrite.connect(
        masterAddress,
        ClientOptions.builder(CREDENTIALS)
            .fabric(fabric)
            .fabrics(BenchConfig.fabrics())
            .config(BenchConfig.environment())
            .session(false)
            .build());
  }

  private static void measureCluster(
      BenchReport report,
      Options o,
      InProcessCluster cluster,
      int replicas,
      boolean first,
      Map<Integer, BenchResult> redis,
      Progress progress)
      throws Exception {
    Bank bank = null;
    for (String fabric : o.fabrics()) {
      try (FerriteClient client = connect(cluster.masterAddress(), fabric);
          FerriteClient second = connect(cluster.masterAddress(), fabric)) {
        TxClient tx = new TxClient(client);
        if (bank == null) {
          progress.step("r" + replicas + ": creating " + o.accounts() + " accounts");
          // Two tx clients, each allocating in a region of its own: one on each server.
          bank = Bank.create(List.of(tx, new TxClient(second)), o.accounts(), INITIAL);
        }
        String prefix = "tx." + fabric + ".";
        FatPointer a = bank.accounts().get(0);
        FatPointer b = null;
        for (FatPointer p : bank.accounts()) {
          if (primary(tx, p) != primary(tx, a)) {
            b = p;
            break;
          }
        }
        if (b == null) {
          throw new IllegalStateException("every account on one server: no two-server commit");
        }
        if (first) {
          lockFreeRead(report, o, prefix, client, tx, a, progress);
        }
        String pr = prefix + "r" + replicas + ".";
        // Measured in each cluster (one per replicas value), beside that cluster's commits.
        BenchResult[] rpc = emptyRpc(report, o, pr, client, primary(tx, a), progress);
        commits(report, o, pr + "commit-1server", tx, List.of(a), rpc, progress);
        BenchResult[] two =
            commits(report, o, pr + "commit-2server", tx, List.of(a, b), rpc, progress);
        report.add(
            BenchResult.of(
                pr + "commit-2server.round-trips",
                two[0].value() / rpc[0].value(),
                "rtt",
                Better.LOWER));
        for (int threads : o.threads()) {
          bankRun(
              report,
              o,
              pr + "bank.t" + threads,
              bank,
              tx,
              threads,
              fabric.equals("tcp") ? redis.get(threads) : null,
              progress);
        }
        for (int threads : o.threads()) {
          String name = pr + "tao.t" + threads + ".throughput";
          if (o.taoMix() == null) {
            continue;
          }
          progress.step(name);
          report.add(
              BenchResult.of(
                  name, o.taoMix().run(client, threads, o.duration()), "ops/s", Better.HIGHER));
        }
      }
    }
    if (o.taoMix() == null) {
      progress.step("r" + replicas + ": Tao mix not measured (no TxBench.TaoMix given)");
    }
  }

  /** Lock-free reads of {@code p} beside raw one-sided reads of its line; reads per read. */
  private static void lockFreeRead(
      BenchReport report,
      Options o,
      String prefix,
      FerriteClient client,
      TxClient tx,
      FatPointer p,
      Progress progress)
      throws Exception {
    RegionRef ref = tx.readCapability(p.region()); // the client's own: its primary's copy
    int server = ref.serverId();
    String ceiling = "ceiling." + prefix + "read.64B";
    progress.step(ceiling);
    KvBench.Result raw =
        KvBench.drive(
            r -> client.connection(server).readSync(ref, p.offset(), ByteBuffer.wrap(new byte[64])),
            1,
            o.duration());
    String name = prefix + "lockfree-read.8B";
    progress.step(name);
    KvBench.Result lf = KvBench.drive(r -> tx.lockFreeRead(p), 1, o.duration());
    latencies(report, name, lf.latency(), latencies(report, ceiling, raw.latency(), null));
    // One-sided reads per lock-free read, from every connection's counters (no writer runs).
    int n = 10_000;
    List<Integer> servers = client.members().stream().map(m -> m.serverId()).toList();
    long before = reads(client, servers);
    for (int i = 0; i < n; i++) {
      tx.lockFreeRead(p);
    }
    report.add(
        BenchResult.of(
            name + ".reads-per-read",
            (reads(client, servers) - before) / (double) n,
            "reads",
            Better.LOWER));
  }

  /** The server {@code tx} reads and commits {@code p} at. */
  private static int primary(TxClient tx, FatPointer p) {
    return tx.readCapability(p.region()).serverId();
  }

  private static long reads(FerriteClient client, List<Integer> servers) {
    long sum = 0;
    for (int s : servers) {
      sum += client.connection(s).counters().ops(OpKind.READ);
    }
    return sum;
  }

  /** Empty RPCs to {@code server}'s {@link EmptyService}, one thread. */
  private static BenchResult[] emptyRpc(
      BenchReport report,
      Options o,
      String prefix,
      FerriteClient client,
      int server,
      Progress progress)
      throws Exception {
    String name = "ceiling." + prefix + "rpc-empty";
    progress.step(name);
    KvBench.Result res =
        KvBench.drive(
            r ->
                client.callSync(
                    server, EmptyService.ID, EmptyService.EMPTY, ByteBuffer.allocate(0)),
            1,
            o.duration());
    return latencies(report, name, res.latency(), null);
  }

  /**
   * The time of {@code txCommit} alone, one thread, for transactions that read and write back every
   * object of {@code objects}; a quarter of the duration warms up.
   */
  private static BenchResult[] commits(
      BenchReport report,
      Options o,
      String name,
      TxClient tx,
      List<FatPointer> objects,
      BenchResult[] rpc,
      Progress progress) {
    progress.step(name);
    Histogram h = new Histogram(3);
    long start = System.nanoTime();
    long measureFrom = start + o.duration().toNanos() / 4;
    long end = measureFrom + o.duration().toNanos();
    // For the duration, and at least MIN_COMMITS measured (a p50 of a handful is noise).
    for (long now = start; now < end || h.getTotalCount() < MIN_COMMITS; now = System.nanoTime()) {
      var t = tx.txBegin();
      for (FatPointer p : objects) {
        t.txWrite(p, t.txRead(p));
      }
      long s = System.nanoTime();
      var res = t.txCommit();
      long e = System.nanoTime();
      if (!res.committed()) {
        throw new IllegalStateException(name + ": an uncontended commit aborted: " + res);
      }
      if (s >= measureFrom || now >= end) {
        h.recordValue(e - s);
      }
    }
    return latencies(report, name, h, rpc);
  }

  /** Transfers on {@code threads} threads; the total checked after. */
  private static void bankRun(
      BenchReport report,
      Options o,
      String name,
      Bank bank,
      TxClient tx,
      int threads,
      BenchResult peer,
      Progress progress)
      throws Exception {
    progress.step(name);
    BankStats stats = new BankStats();
    KvBench.Result res = KvBench.drive(r -> bank.transfer(tx, r, stats), threads, o.duration());
    addBank(report, name, res, stats.snapshot(), peer);
    long sum = bank.sumInTransaction(tx, new BankStats());
    if (sum != bank.expectedTotal() || bank.sumLockFree(tx) != bank.expectedTotal()) {
      throw new IllegalStateException(
          name + ": the total is " + sum + " (expected: " + bank.expectedTotal() + ")");
    }
  }

  static void addBank(
      BenchReport report, String name, KvBench.Result res, BankStats.Snapshot s, BenchResult peer) {
    BenchResult tp =
        peer == null
            ? BenchResult.of(name + ".throughput", res.throughput(), "ops/s", Better.HIGHER)
            : BenchResult.against(
                name + ".throughput", res.throughput(), "ops/s", Better.HIGHER, peer);
    report.add(tp);
    report.add(
        BenchResult.of(
            name + ".p50",
            res.latency().getValueAtPercentile(50),
            LatencyRecorder.UNIT,
            Better.LOWER));
    report.add(BenchResult.of(name + ".abort-rate", s.abortPercent(), "%", Better.LOWER));
    long attempts = s.commits() + s.abortTotal();
    // By reason (LOCKED, VALIDATION, error BUSY, EXEC nil): what the abort rate is made of.
    s.aborts()
        .forEach(
            (reason, n) ->
                report.add(
                    BenchResult.of(
                        name + ".abort-rate." + reason.replace(' ', '-'),
                        attempts == 0 ? 0 : 100.0 * n / attempts,
                        "%",
                        Better.LOWER)));
  }

  /** p50 and p99 of {@code h} as {@code name.p50}, {@code name.p99}, each beside {@code ref}'s. */
  private static BenchResult[] latencies(
      BenchReport report, String name, Histogram h, BenchResult[] ref) {
    List<LatencyRecorder.Statistic> stats =
        List.of(LatencyRecorder.Statistic.P50, LatencyRecorder.Statistic.P99);
    BenchResult[] out = new BenchResult[2];
    for (int i = 0; i < 2; i++) {
      LatencyRecorder.Statistic s = stats.get(i);
      double v = h.getValueAtPercentile(s.percentile());
      String n = name + "." + s.label();
      out[i] =
          report.add(
              ref == null
                  ? BenchResult.of(n, v, LatencyRecorder.UNIT, Better.LOWER)
                  : BenchResult.against(n, v, LatencyRecorder.UNIT, Better.LOWER, ref[i]));
    }
    return out;
  }
}
