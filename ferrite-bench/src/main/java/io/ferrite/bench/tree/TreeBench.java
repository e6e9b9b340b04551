package io.ferrite.bench.tree;

import io.ferrite.bench.BenchConfig;
import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.LatencyRecorder;
import io.ferrite.bench.Progress;
import io.ferrite.bench.kv.KvBench;
import io.ferrite.bench.kv.RedisPeer;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.FileTrees;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.local.InProcessCluster;
import io.ferrite.tree.Tree;
import io.ferrite.tree.TreeClient;
import io.ferrite.tree.TreeConfig;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code ferrite bench tree}: the tree face (Cell) on a master and one memory server (tcp + shm) in
 * this process, loaded with {@code keys} 16 B keys of 32 B values in a scattered order:
 *
 * <ul>
 *   <li>{@code tree.shape.{meganodes,levels,splits}}: the tree's shape at the configured meganode
 *       and node sizes (Cell: 5 levels of 1 KiB nodes in 64 MiB meganodes at its scale);
 *   <li>{@code tree.<fabric>.get-client.reads-per-get}: one-sided reads per client-side get with
 *       warm caches, from the handle's counters (node reads, torn ones included, and extent reads),
 *       beside {@code get-client-nocache.reads-per-get} of a handle without caches; {@code
 *       tree.<fabric>.cache.mib}: what the caches hold then;
 *   <li>{@code tree.<fabric>.{get,scan100}-{server,client}.t<n>.{throughput,p50,p99}}: gets of
 *       uniformly drawn keys and 100-key scans from one, each search path alone; the client path
 *       beside the server path; {@code get-auto.t<n>}: the locality selector, beside the better
 *       fixed path, and its {@code client-share} of meganode searches;
 *   <li>{@code tree.<fabric>.shift.<phase>.{server,client,auto}.t<n>.throughput}: the load-shift
 *       experiment ({@link #loadShift}), the selector beside the better fixed path and (as {@code
 *       throughput-vs-worse}) the worse one, per phase, and the share of its searches that went
 *       client-side;
 *   <li>with {@code vsRedis}, on tcp: {@code redis.{zscore,zrangebylex100}.t<n>} on a sorted set of
 *       the same keys, one connection per thread, beside which the tree's get and scan by each path
 *       are given.
 * </ul>
 *
 * Every get goes through one handle, whose caches stay warm across cases.
 */
public final class TreeBench {
  static final String SUITE = "tree";

  static final Credentials CREDENTIALS =
      new Credentials(
          "bench-tree", "ferrite-bench-tree-secret-0123456789".getBytes(StandardCharsets.UTF_8));

  /** What to measure. */
  public record Options(
      List<String> fabrics,
      List<Integer> threads,
      Duration duration,
      int keys,
      String meganodeSize,
      String nodeSize,
      Path directory,
      PrintStream progress) {
    public Options {
      fabrics = List.copyOf(fabrics);
      threads = List.copyOf(threads);
      Objects.requireNonNull(duration, "duration");
      if (keys < 200) {
        throw new IllegalArgumentException("keys: " + keys + " (expected: >= 200)");
      }
    }

    /** shm and tcp, 1 and 16 threads, 1 s each, 100 000 keys, Cell's 64 MiB / 1 KiB. */
    public static Options defaults() {
      return new Options(
          List.of("shm", "tcp"),
          List.of(1, 16),
          Duration.ofSeconds(1),
          100_000,
          "64m",
          "1k",
          Path.of(System.getProperty("java.io.tmpdir")),
          System.err);
    }

    /** 300 ms each, 20 000 keys in 1 MiB meganodes (so that the tree has several levels). */
    public static Options quick() {
      return defaults().withDuration(Duration.ofMillis(300)).withKeys(20_000).withMeganode("1m");
    }

    public Options withFabrics(List<String> f) {
      return new Options(f, threads, duration, keys, meganodeSize, nodeSize, directory, progress);
    }

    public Options withThreads(List<Integer> t) {
      return new Options(fabrics, t, duration, keys, meganodeSize, nodeSize, directory, progress);
    }

    public Options withDuration(Duration d) {
      return new Options(fabrics, threads, d, keys, meganodeSize, nodeSize, directory, progress);
    }

    public Options withKeys(int k) {
      return new Options(
          fabrics, threads, duration, k, meganodeSize, nodeSize, directory, progress);
    }

    public Options withMeganode(String size) {
      return new Options(fabrics, threads, duration, keys, size, nodeSize, directory, progress);
    }

    public Options withNode(String size) {
      return new Options(fabrics, threads, duration, keys, meganodeSize, size, directory, progress);
    }

    public Options withProgress(PrintStream p) {
      return new Options(fabrics, threads, duration, keys, meganodeSize, nodeSize, directory, p);
    }
  }

  private TreeBench() {}

  static byte[] key(int i) {
    return String.format(Locale.ROOT, "k%015d", i).getBytes(StandardCharsets.US_ASCII);
  }

  /** Starts the cluster (and redis-server with {@code vsRedis}), measures, stops them. */
  public static BenchReport run(Options o, boolean vsRedis) throws Exception {
    BenchReport report = new BenchReport(SUITE);
    Progress progress = new Progress("bench " + SUITE, o.progress());
    Path root = Files.createTempDirectory(o.directory(), "ferrite-bench-tree-");
    byte[][] keys = new byte[o.keys()][];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = key(i);
    }
    RedisPeer redis = null;
    try (InProcessCluster cluster = startCluster(root, o)) {
      if (vsRedis) {
        progress.step("starting redis-server on 127.0.0.1, loading a sorted set");
        redis = RedisPeer.start(root);
        loadRedis(redis, keys);
      }
      boolean loaded = false;
      for (String fabric : o.fabrics()) {
        try (FerriteClient client = connect(cluster.masterAddress(), fabric)) {
          TreeClient tc = new TreeClient(client);
          Tree tree = tc.create("bench");
          if (!loaded) {
            progress.step("loading " + keys.length + " keys (" + o.meganodeSize() + " meganodes)");
            load(tree, keys);
            loaded = true;
            shape(report, tree);
          }
          measureFabric(
              report, o, fabric, client, tree, keys, fabric.equals("tcp") ? redis : null, progress);
          loadShift(report, o, fabric, cluster.masterAddress(), tree, keys, progress);
        }
      }
    } finally {
      if (redis != null) {
        redis.close();
      }
      FileTrees.delete(root);
    }
    return report;
  }

  static InProcessCluster startCluster(Path root, Options o) {
    FerriteConfig cfg =
        BenchConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, "bench-tree")
            .set(FerriteConfig.DATA_DIR, root.resolve("data").toString())
            .set(FerriteConfig.SHM_DIR, root.resolve("shm").toString())
            .set(FerriteConfig.MASTER_PORT, "0")
            .set(FerriteConfig.SERVER_HOST, "127.0.0.1")
            .set(FerriteConfig.MASTER_HOST, "127.0.0.1")
            .set(FerriteConfig.REGION_SIZE, "1g")
            .set(FerriteConfig.BLOCK_SIZE, "1m")
            .set(FerriteConfig.CAPACITY_DRAM, "4g")
            .set(FerriteConfig.CAPACITY_DISK, "0")
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .set(FerriteConfig.METRICS_PORT, "-1")
            .set(TreeConfig.MEGANODE_SIZE, o.meganodeSize())
            .set(TreeConfig.NODE_SIZE, o.nodeSize())
            .build();
    return InProcessCluster.builder(cfg, CREDENTIALS)
        .masterFabrics(List.of("tcp"))
        .serverNames(i -> "bench")
        .start();
  }

  static FerriteClient connect(String masterAddress, String fabric) {
    return Ferrite.connect(
        masterAddress,
        ClientOptions.builder(CREDENTIALS)
            .fabric(fabric)
            .fabrics(BenchConfig.fabrics())
            .config(BenchConfig.environment())
            .build());
  }

  /** Puts every key, in a scattered (seeded) order, 32 B values. */
  static void load(Tree tree, byte[][] keys) {
    List<Integer> order = new ArrayList<>(keys.length);
    for (int i = 0; i < keys.length; i++) {
      order.add(i);
    }
    Collections.shuffle(order, new Random(42));
    byte[] value = new byte[32];
    for (int i : order) {
      put(tree, keys[i], value);
    }
  }

  /**
   * A put, again while it fails retryably: a put that finds its meganode full waits for the split,
   * which at 64 MiB can outlast the client's RPC deadline (seen: TIMEOUT after 5 s from 5 million
   * keys on); putting the same value again is harmless.
   */
  static void put(Tree tree, byte[] key, byte[] value) {
    for (int attempt = 0; ; attempt++) {
      try {
        tree.put(key, value);
        return;
      } catch (FerriteException e) {
        if (!e.retryable() || attempt >= 100) {
          throw e;
        }
      }
    }
  }

  static void loadRedis(RedisPeer redis, byte[][] keys) {
    RedisPeer.Conn c = redis.connect();
    byte[] set = "tree".getBytes(StandardCharsets.US_ASCII);
    byte[] zadd = "ZADD".getBytes(StandardCharsets.US_ASCII);
    byte[] zero = "0".getBytes(StandardCharsets.US_ASCII);
    for (int i = 0; i < keys.length; i += 1000) {
      int n = Math.min(1000, keys.length - i);
      for (int j = 0; j < n; j++) {
        c.command(zadd, set, zero, keys[i + j]);
      }
      c.flush();
      for (int j = 0; j < n; j++) {
        c.readReply();
      }
    }
  }

  /** The tree's shape; waits (up to 10 s) for the server's splitter to finish queued splits. */
  static void shape(BenchReport report, Tree tree) throws InterruptedException {
    long[] s = tree.stats();
    for (int i = 0; i < 100; i++) {
      Thread.sleep(100);
      long[] again = tree.stats();
      if (again[2] == s[2]) {
        break;
      }
      s = again;
    }
    report.add(BenchResult.of("tree.shape.meganodes", s[0], "count", Better.LOWER));
    report.add(BenchResult.of("tree.shape.levels", s[1], "count", Better.LOWER));
    report.add(BenchResult.of("tree.shape.splits", s[2], "count", Better.LOWER));
    report.add(
        BenchResult.of(
            "tree.shape.node-fill", s[4] == 0 ? 0 : 100.0 * s[3] / s[4], "%", Better.HIGHER));
  }

  private static void measureFabric(
      BenchReport report,
      Options o,
      String fabric,
      FerriteClient client,
      Tree tree,
      byte[][] keys,
      RedisPeer redis,
      Progress progress)
      throws Exception {
    // One-sided reads per client-side get, from the handles' counters, on one thread: node reads
    // (torn copies read again included) plus extent reads; with this handle's caches, warm, beside
    // a handle without caches (tree.cache.bytes 0).
    String prefix = "tree." + fabric + ".";
    progress.step(prefix + "reads per client-side get, without and with the caches");
    Tree uncached =
        new TreeClient(client, client.config().with(TreeConfig.CACHE_BYTES, "0")).open("bench");
    BenchResult without =
        BenchResult.of(
            prefix + "get-client-nocache.reads-per-get",
            readsPerGet(uncached, keys, 1000),
            "reads",
            Better.LOWER);
    report.add(without);
    report.add(
        BenchResult.against(
            prefix + "get-client.reads-per-get",
            readsPerGet(tree, keys, warmUp(tree, keys)),
            "reads",
            Better.LOWER,
            without));
    report.add(
        BenchResult.of(
            prefix + "cache.mib", tree.cache().bytes() / 1048576.0, "MiB", Better.LOWER));
    for (int threads : o.threads()) {
      for (String op : List.of("get", "scan100")) {
        BenchResult[] peer = new BenchResult[3];
        if (redis != null) {
          peer = redisOp(report, o, redis, keys, op, threads, progress);
        }
        BenchResult[] server = null;
        BenchResult[] better = null;
        List<Tree.Path> paths =
            op.equals("get")
                ? List.of(Tree.Path.SERVER, Tree.Path.CLIENT, Tree.Path.AUTO)
                : List.of(Tree.Path.SERVER, Tree.Path.CLIENT);
        for (Tree.Path path : paths) {
          String p = path.name().toLowerCase(Locale.ROOT);
          String name = prefix + op + "-" + p + ".t" + threads;
          progress.step(name);
          KvBench.Op treeOp =
              op.equals("get")
                  ? r -> tree.get(keys[r.nextInt(keys.length)], path)
                  : r -> tree.scan(keys[r.nextInt(keys.length)], null, 100, path);
          long[] choices = tree.autoChoices();
          KvBench.Result res = KvBench.drive(treeOp, threads, o.duration());
          // The selector beside the better fixed path of the same run; the fixed paths beside
          // the peer (redis) if any, else the client path beside the server path.
          BenchResult[] ref = path == Tree.Path.AUTO ? better : peer[0] != null ? peer : server;
          BenchResult[] mine = add(report, name, res, ref);
          if (path == Tree.Path.AUTO) {
            report.add(clientShare(name, choices, tree.autoChoices()));
          }
          if (path == Tree.Path.SERVER) {
            server = mine;
            better = mine;
          } else if (path == Tree.Path.CLIENT && mine[0].value() > better[0].value()) {
            better = mine;
          }
        }
      }
    }
  }

  /**
   * Gets every {@code keys.length / 100 000}-th key in key order (at least 1 000 gets),
   * client-side: each meganode's internal nodes are then in the handle's cache (a level-1 node
   * covers hundreds of keys) and its leaf meganodes' ranges. Returns 1000 (the warm-up of the
   * measurement itself).
   */
  static int warmUp(Tree tree, byte[][] keys) {
    int stride = Math.max(1, keys.length / 100_000);
    for (int i = 0; i < keys.length; i += stride) {
      tree.get(keys[i], Tree.Path.CLIENT);
    }
    return 1000;
  }

  /** One-sided reads (nodes and extents) per client-side get of 5 000 uniform keys. */
  static double readsPerGet(Tree tree, byte[][] keys, int warm) {
    Random r = new Random(7);
    for (int i = 0; i < warm; i++) {
      tree.get(keys[r.nextInt(keys.length)], Tree.Path.CLIENT); // the meganode handles
    }
    long before = tree.nodeReads() + tree.extentReads();
    int gets = 5000;
    for (int i = 0; i < gets; i++) {
      tree.get(keys[r.nextInt(keys.length)], Tree.Path.CLIENT);
    }
    return (tree.nodeReads() + tree.extentReads() - before) / (double) gets;
  }

  /** The phases of the load-shift experiment: the server idle, busy, idle again. */
  static final List<String> PHASES = List.of("idle", "busy", "idle-again");

  /** Background threads making the server busy: as many as its service threads (default 4). */
  static final int BACKGROUND = 4;

  /**
   * The load-shift experiment (Cell Figure 10): gets of uniform keys from the largest thread count,
   * by each fixed path and by the selector, in three phases; in the middle one the server's service
   * threads are kept busy by {@link #BACKGROUND} threads of another client sending server-side
   * scans of 1 000 pairs (CPU-heavy RPCs) back to back. Per phase, the selector's throughput beside
   * the better fixed path and beside the worse one, and the share of its meganode searches that
   * went client-side.
   */
  static void loadShift(
      BenchReport report,
      Options o,
      String fabric,
      String masterAddress,
      Tree tree,
      byte[][] keys,
      Progress progress)
      throws Exception {
    int threads = Collections.max(o.threads());
    String prefix = "tree." + fabric + ".shift.";
    for (String phase : PHASES) {
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failed = new AtomicReference<>();
      List<Thread> background = new ArrayList<>();
      FerriteClient loadClient = null;
      try {
        if (phase.equals("busy")) {
          loadClient = connect(masterAddress, fabric);
          Tree load = new TreeClient(loadClient).open("bench");
          for (int i = 0; i < BACKGROUND; i++) {
            Random r = new Random(100 + i);
            Thread t =
                new Thread(
                    () -> {
                      try {
                        while (!stop.get()) {
                          load.scan(keys[r.nextInt(keys.length)], null, 1000, Tree.Path.SERVER);
                        }
                      } catch (Throwable e) {
                        failed.compareAndSet(null, e);
                      }
                    },
                    "bench-tree-load-" + i);
            t.setDaemon(true);
            t.start();
            background.add(t);
          }
        }
        BenchResult[] results = new BenchResult[3];
        List<Tree.Path> paths = List.of(Tree.Path.SERVER, Tree.Path.CLIENT, Tree.Path.AUTO);
        for (int i = 0; i < paths.size(); i++) {
          Tree.Path path = paths.get(i);
          String name =
              prefix + phase + "." + path.name().toLowerCase(Locale.ROOT) + ".t" + threads;
          progress.step(name);
          long[] choices = tree.autoChoices();
          KvBench.Result res =
              KvBench.drive(
                  r -> tree.get(keys[r.nextInt(keys.length)], path), threads, o.duration());
          if (i < 2) {
            results[i] =
                i == 0
                    ? BenchResult.of(name + ".throughput", res.throughput(), "ops/s", Better.HIGHER)
                    : BenchResult.against(
                        name + ".throughput", res.throughput(), "ops/s", Better.HIGHER, results[0]);
            report.add(results[i]);
            continue;
          }
          BenchResult best = results[0].value() >= results[1].value() ? results[0] : results[1];
          BenchResult worse = best == results[0] ? results[1] : results[0];
          report.add(
              BenchResult.against(
                  name + ".throughput", res.throughput(), "ops/s", Better.HIGHER, best));
          report.add(
              BenchResult.against(
                  name + ".throughput-vs-worse", res.throughput(), "ops/s", Better.HIGHER, worse));
          report.add(clientShare(name, choices, tree.autoChoices()));
        }
      } finally {
        stop.set(true);
        for (Thread t : background) {
          t.join();
        }
        if (loadClient != null) {
          loadClient.close();
        }
      }
      if (failed.get() != null) {
        throw new IllegalStateException("the background load failed", failed.get());
      }
    }
  }

  /**
   * {@code name.client-share}: the share of the selector's meganode searches that went client-side
   * between two {@link Tree#autoChoices} (the warm-up of the drive included).
   */
  static BenchResult clientShare(String name, long[] before, long[] after) {
    long server = after[0] - before[0];
    long client = after[1] - before[1];
    return BenchResult.of(
        name + ".client-share",
        server + client == 0 ? 0 : 100.0 * client / (server + client),
        "%",
        Better.HIGHER);
  }

  /** ZSCORE (for get) or ZRANGEBYLEX [key + LIMIT 0 100 (for scan100) on one connection each. */
  private static BenchResult[] redisOp(
      BenchReport report,
      Options o,
      RedisPeer redis,
      byte[][] keys,
      String op,
      int threads,
      Progress progress)
      throws Exception {
    String name = "redis." + (op.equals("get") ? "zscore" : "zrangebylex100") + ".t" + threads;
    progress.step(name);
    byte[] set = "tree".getBytes(StandardCharsets.US_ASCII);
    byte[] zscore = "ZSCORE".getBytes(StandardCharsets.US_ASCII);
    byte[] zrange = "ZRANGEBYLEX".getBytes(StandardCharsets.US_ASCII);
    byte[] plus = "+".getBytes(StandardCharsets.US_ASCII);
    byte[] limit = "LIMIT".getBytes(StandardCharsets.US_ASCII);
    byte[] zero = "0".getBytes(StandardCharsets.US_ASCII);
    byte[] hundred = "100".getBytes(StandardCharsets.US_ASCII);
    ThreadLocal<RedisPeer.Conn> conns = ThreadLocal.withInitial(redis::connect);
    KvBench.Op redisOp =
        op.equals("get")
            ? r -> {
              RedisPeer.Conn c = conns.get();
              c.command(zscore, set, keys[r.nextInt(keys.length)]);
              c.flush();
              c.readReply();
            }
            : r -> {
              RedisPeer.Conn c = conns.get();
              byte[] k = keys[r.nextInt(keys.length)];
              byte[] from = new byte[k.length + 1];
              from[0] = '[';
              System.arraycopy(k, 0, from, 1, k.length);
              c.command(zrange, set, from, plus, limit, zero, hundred);
              c.flush();
              c.readArray();
            };
    return add(report, name, KvBench.drive(redisOp, threads, o.duration()), null);
  }

  /** Throughput, p50 and p99 of {@code res} as {@code name.*}, each beside {@code ref}'s. */
  private static BenchResult[] add(
      BenchReport report, String name, KvBench.Result res, BenchResult[] ref) {
    BenchResult[] out = new BenchResult[3];
    out[0] = result(name + ".throughput", res.throughput(), "ops/s", Better.HIGHER, ref, 0);
    List<LatencyRecorder.Statistic> stats =
        List.of(LatencyRecorder.Statistic.P50, LatencyRecorder.Statistic.P99);
    for (int i = 0; i < 2; i++) {
      LatencyRecorder.Statistic s = stats.get(i);
      out[i + 1] =
          result(
              name + "." + s.label(),
              res.latency().getValueAtPercentile(s.percentile()),
              LatencyRecorder.UNIT,
              Better.LOWER,
              ref,
              i + 1);
    }
    for (BenchResult b : out) {
      report.add(b);
    }
    return out;
  }

  private static BenchResult result(
      String name, double value, String unit, Better better, BenchResult[] ref, int i) {
    return ref == null
        ? BenchResult.of(name, value, unit, better)
        : BenchResult.against(name, value, unit, better, ref[i]);
  }
}
