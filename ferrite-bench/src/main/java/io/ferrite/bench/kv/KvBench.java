package io.ferrite.bench.kv;

import io.ferrite.bench.BenchConfig;
import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.LatencyRecorder;
import io.ferrite.bench.Progress;
import io.ferrite.bench.Sizes;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.extent.Extents;
import io.ferrite.kernel.local.InProcessCluster;
import io.ferrite.kv.HopscotchLayout;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.ShardLayout;
import io.ferrite.kv.TableOptions;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import org.HdrHistogram.Histogram;

/**
 * {@code ferrite bench kv}: the kv face's table quality and operation speed, for each table layout
 * (Pilaf's cuckoo table, FaRM's hopscotch table), each beside the fabric ops it is made of,
 * measured in the same run against a master and one memory server started in this process (serving
 * tcp and shm; the client picks the fabric).
 *
 * <ul>
 *   <li><b>Table quality</b> (Pilaf Figure 6, FaRM §3.6): a one-shard table of each layout filled
 *       to 50, 75 and 90% with 16 B keys and 32 B values; random present keys are looked up and the
 *       fabric's own counters give {@code kv.<layout>.occ<N>.reads-per-lookup.mean}; the client's
 *       lookup counts give {@code probes-per-lookup.{mean,max}} (table reads: Pilaf entries,
 *       hopscotch neighbourhoods and overflow blocks). References: the ideal reads (Pilaf 2: one
 *       entry, one extent; hopscotch 1: the neighbourhood, the pair inline) and 1 probe.
 *   <li><b>Operations</b>: {@code
 *       kv.<layout>.<fabric>.<op>.<value>.t<threads>.{throughput,p50,p99}} for op = get
 *       (one-sided), get-rpc (the same get served by the server: Pilaf-VO), put, mix95 (95% get, 5%
 *       put), 16 B zipfian keys, 32 B and 1 KiB values, 1 and 16 threads sharing one client. Each
 *       beside {@code ceiling.kv.<...>}: the same threads running the raw fabric ops the operation
 *       is made of — for a get of an out-of-line pair (Pilaf always), one read of the extent's size
 *       (what a get whose extent hint holds reads); for a hopscotch get of an inline pair, a read
 *       of a random neighbourhood; for a put or get-rpc, an RPC to the kv service of the same
 *       request size that does nothing; for mix95, the same mix of those.
 *   <li><b>Against Redis</b> ({@code --vs redis}, see {@link RedisVersus}).
 * </ul>
 */
public final class KvBench {
  public static final String SUITE = "kv";
  static final int KEY_BYTES = 16;
  static final int[] VALUE_SIZES = {32, Sizes.KIB};
  static final double[] OCCUPANCIES = {0.50, 0.75, 0.90};
  static final String[] OPS = {"get", "get-rpc", "put", "mix95"};
  static final Credentials CREDENTIALS =
      new Credentials(
          "bench-kv", "ferrite-bench-kv-secret-0123456789".getBytes(StandardCharsets.UTF_8));

  /**
   * What to run.
   *
   * @param fabrics client fabrics, in order ("shm", "tcp")
   * @param layouts table layouts, in order
   * @param threads client thread counts
   * @param ops operations, in order (of {@link #OPS})
   * @param inlineValues hopscotch tables of the operations keep every pair inline (inline bytes =
   *     key + value size; one read per get at any value size) instead of the default 56 bytes
   * @param duration length of each throughput measurement (a quarter as long warms up first)
   * @param keys keys loaded for the operation measurements
   * @param qualitySlots slots of the one-shard table of the quality measurement
   * @param qualityLookups lookups per occupancy
   * @param directory where the server's data and shm directories go (temporary, deleted)
   * @param progress progress lines; null for none
   */
  public record Options(
      List<String> fabrics,
      List<TableOptions.Layout> layouts,
      List<Integer> threads,
      List<String> ops,
      boolean inlineValues,
      Duration duration,
      int keys,
      int qualitySlots,
      int qualityLookups,
      Path directory,
      PrintStream progress) {
    public Options {
      fabrics = List.copyOf(fabrics);
      layouts = List.copyOf(layouts);
      threads = List.copyOf(threads);
      ops = List.copyOf(ops);
      if (layouts.isEmpty()) {
        throw new IllegalArgumentException("layouts: none (expected: pilaf, hopscotch or both)");
      }
      for (String op : ops) {
        if (!List.of(OPS).contains(op)) {
          throw new IllegalArgumentException(
              "op: " + op + " (expected: one of " + String.join(", ", OPS) + ")");
        }
      }
      Objects.requireNonNull(duration, "duration");
      Objects.requireNonNull(directory, "directory");
      if (keys < 1 || qualitySlots < 16 || qualityLookups < 1) {
        throw new IllegalArgumentException(
            "keys: " + keys + ", qualitySlots: " + qualitySlots + " (expected: >= 1, >= 16)");
      }
    }

    public static Options defaults() {
      return new Options(
          List.of("shm", "tcp"),
          List.of(TableOptions.Layout.PILAF, TableOptions.Layout.HOPSCOTCH),
          List.of(1, 16),
          List.of(OPS),
          false,
          Duration.ofSeconds(1),
          20_000,
          1 << 16,
          20_000,
          Path.of("/dev/shm").toFile().isDirectory()
              ? Path.of("/dev/shm")
              : Path.of(System.getProperty("java.io.tmpdir")),
          System.err);
    }

    public static Options quick() {
      return defaults()
          .withDuration(Duration.ofMillis(150))
          .withKeys(2000)
          .withQuality(1 << 12, 2000);
    }

    public Options withFabrics(List<String> f) {
      return new Options(
          f,
          layouts,
          threads,
          ops,
          inlineValues,
          duration,
          keys,
          qualitySlots,
          qualityLookups,
          directory,
          progress);
    }

    public Options withLayouts(List<TableOptions.Layout> l) {
      return new Options(
          fabrics,
          l,
          threads,
          ops,
          inlineValues,
          duration,
          keys,
          qualitySlots,
          qualityLookups,
          directory,
          progress);
    }

    public Options withThreads(List<Integer> t) {
      return new Options(
          fabrics,
          layouts,
          t,
          ops,
          inlineValues,
          duration,
          keys,
          qualitySlots,
          qualityLookups,
          directory,
          progress);
    }

    public Options withOps(List<String> l) {
      return new Options(
          fabrics,
          layouts,
          threads,
          l,
          inlineValues,
          duration,
          keys,
          qualitySlots,
          qualityLookups,
          directory,
          progress);
    }

    public Options withInlineValues(boolean b) {
      return new Options(
          fabrics,
          layouts,
          threads,
          ops,
          b,
          duration,
          keys,
          qualitySlots,
          qualityLookups,
          directory,
          progress);
    }

    public Options withDuration(Duration d) {
      return new Options(
          fabrics,
          layouts,
          threads,
          ops,
          inlineValues,
          d,
          keys,
          qualitySlots,
          qualityLookups,
          directory,
          progress);
    }

    public Options withKeys(int n) {
      return new Options(
          fabrics,
          layouts,
          threads,
          ops,
          inlineValues,
          duration,
          n,
          qualitySlots,
          qualityLookups,
          directory,
          progress);
    }

    public Options withQuality(int slots, int lookups) {
      return new Options(
          fabrics,
          layouts,
          threads,
          ops,
          inlineValues,
          duration,
          keys,
          slots,
          lookups,
          directory,
          progress);
    }

    public Options withDirectory(Path d) {
      return new Options(
          fabrics,
          layouts,
          threads,
          ops,
          inlineValues,
          duration,
          keys,
          qualitySlots,
          qualityLookups,
          d,
          progress);
    }

    public Options withProgress(PrintStream p) {
      return new Options(
          fabrics,
          layouts,
          threads,
          ops,
          inlineValues,
          duration,
          keys,
          qualitySlots,
          qualityLookups,
          directory,
          p);
    }
  }

  private KvBench() {}

  static byte[] key(int i) {
    return String.format(Locale.ROOT, "k%015d", i).getBytes(StandardCharsets.US_ASCII);
  }

  /** Starts a master and a memory server (tcp + shm), runs every measurement, stops them. */
  public static BenchReport run(Options o) throws Exception {
    return run(o, false);
  }

  /**
   * As {@link #run(Options)}; with {@code vsRedis}, also starts a {@code redis-server} on 127.0.0.1
   * and drives it with the same threads, keys, values and distribution: {@code
   * redis.{get,set}.<value>.t<n>} one command at a time and {@code redis.get16.<value>.t<n>}
   * pipelined batches of 16 GETs, beside which {@code vs-redis.tcp.*} gives Ferrite's tcp get, put
   * and 16-key multiGet as ratios (> 1: Ferrite is faster).
   */
  /**
   * Only the scrape-cost case ({@link ScrapeCost}): the get throughput of each fabric and thread
   * count without and with a scrape of every process's {@code /metrics} every {@code every}.
   */
  public static BenchReport runScrapeCost(Options o, Duration every) throws Exception {
    BenchReport report = new BenchReport(SUITE);
    ScrapeCost.measure(report, o, every, new Progress("bench " + SUITE, o.progress()));
    return report;
  }

  /**
   * Only the replication case ({@link KvReplicas}): put throughput and latency with 1, 2 and 3
   * copies per shard on each fabric, and the time from a server declared DEAD to the first put of a
   * shard whose primary it held.
   */
  public static BenchReport runReplicas(Options o) throws Exception {
    BenchReport report = new BenchReport(SUITE);
    KvReplicas.measure(report, o, new Progress("bench " + SUITE, o.progress()));
    return report;
  }

  public static BenchReport run(Options o, boolean vsRedis) throws Exception {
    BenchReport report = new BenchReport(SUITE);
    Progress progress = new Progress("bench " + SUITE, o.progress());
    Path root = Files.createTempDirectory(o.directory(), "ferrite-bench-kv-");
    List<AutoCloseable> open = new ArrayList<>();
    Path disk = null;
    try {
      RedisPeer redis = null;
      RedisPeer redisAof = null;
      // The kv log of the always tables and Redis's append-only file on one disk file system (the
      // bench root is usually tmpfs, where an fsync costs nothing).
      if (vsRedis) {
        disk =
            Files.createTempDirectory(
                Path.of(System.getProperty("java.io.tmpdir")), "ferrite-bench-kv-disk-");
        progress.step(
            "starting redis-server on 127.0.0.1, and one with appendfsync always in " + disk);
        redis = RedisPeer.start(root);
        open.add(redis);
        Path aofDir = Files.createDirectories(disk.resolve("redis"));
        redisAof = RedisPeer.start(aofDir, true);
        open.add(redisAof);
      }
      String address =
          startCluster(root, disk == null ? root.resolve("data") : disk.resolve("data"), open);
      // The per-thread clients of --vs redis share one tcp fabric (one set of I/O threads), as the
      // threads of one client do; each has its own connection, as each Redis thread has.
      Fabric perThreadTcp = BenchConfig.fabrics().open("tcp");
      open.add(perThreadTcp);
      Fabric sharedTcp = unclosable(perThreadTcp);
      java.util.Map<String, FerriteClient> clients = new java.util.LinkedHashMap<>();
      for (String f : o.fabrics()) {
        FerriteClient c = connect(address, f);
        open.add(c);
        clients.put(f, c);
      }
      FerriteClient first = clients.values().iterator().next();
      for (TableOptions.Layout layout : o.layouts()) {
        TableQuality.measure(report, o, new KvClient(first), layout, progress);
      }
      for (TableOptions.Layout layout : o.layouts()) {
        // Results of tables with every pair inline say so: kv.hopscotch-inline.*, the same
        // layout with the non-default inline size a user would give a table of 1 KiB values.
        String ln =
            layoutName(layout)
                + (o.inlineValues() && layout == TableOptions.Layout.HOPSCOTCH ? "-inline" : "");
        for (int size : VALUE_SIZES) {
          String table = "bench-" + ln + "-" + Sizes.label(size);
          TableOptions to = tableOptions(layout, o.keys(), size, o.inlineValues());
          KvTable t = new KvClient(first).createTable(table, to);
          progress.step(
              "loading " + o.keys() + " keys with " + Sizes.label(size) + " values (" + ln + ")");
          byte[] value = new byte[size];
          for (int i = 0; i < o.keys(); i++) {
            t.put(key(i), value);
          }
          for (var e : clients.entrySet()) {
            KvTable ft = new KvClient(e.getValue()).table(table);
            for (int threads : o.threads()) {
              for (String op : o.ops()) {
                measure(report, o, ln, e.getKey(), e.getValue(), ft, op, size, threads, progress);
              }
            }
          }
          if (redis != null && clients.containsKey("tcp")) {
            String alwaysTable = table + "-always";
            KvTable at =
                new KvClient(first)
                    .createTable(alwaysTable, to.withDurability(TableOptions.Durability.ALWAYS));
            progress.step("loading " + o.keys() + " keys into " + alwaysTable + " (multiPut)");
            for (int i = 0; i < o.keys(); i += 256) {
              List<byte[]> ks = new ArrayList<>();
              List<byte[]> vs = new ArrayList<>();
              for (int k = i; k < Math.min(o.keys(), i + 256); k++) {
                ks.add(key(k));
                vs.add(value);
              }
              at.multiPut(ks, vs);
            }
            RedisVersus.measure(
                report,
                o,
                redis,
                redisAof,
                alwaysTable,
                () ->
                    Ferrite.connect(
                        address,
                        ClientOptions.builder(CREDENTIALS)
                            .config(BenchConfig.environment())
                            .fabric("tcp")
                            .fabrics(n -> sharedTcp)
                            .build()),
                ln,
                table,
                size,
                progress);
          }
        }
      }
      progress.step("done");
      return report;
    } finally {
      for (int i = open.size() - 1; i >= 0; i--) {
        try {
          open.get(i).close();
        } catch (Exception e) {
          progress.step("closing: " + e);
        }
      }
      FileTrees.delete(root);
      if (disk != null) {
        FileTrees.delete(disk);
      }
    }
  }

  /**
   * Starts the benchmark's master and one memory server (tcp + shm) under {@code root}; adds both
   * and their fabrics to {@code open} (close in reverse order). Returns the master's tcp address.
   */
  static String startCluster(Path root, List<AutoCloseable> open) {
    return startCluster(root, root.resolve("data"), open);
  }

  /** As above, with the servers' data (the kv log) in {@code dataDir}. */
  static String startCluster(Path root, Path dataDir, List<AutoCloseable> open) {
    InProcessCluster cluster = startCluster(root, dataDir, false);
    open.add(cluster);
    return cluster.masterAddress();
  }

  /**
   * The bench cluster: a master (tcp) and one memory server; {@code metrics}: the master and the
   * server serve {@code /metrics} on loopback, any port ({@link ScrapeCost} scrapes them). The
   * caller closes it.
   */
  static InProcessCluster startCluster(Path root, Path dataDir, boolean metrics) {
    FerriteConfig cfg =
        BenchConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, "bench-kv")
            .set(FerriteConfig.DATA_DIR, dataDir.toString())
            .set(FerriteConfig.SHM_DIR, root.resolve("shm").toString())
            .set(FerriteConfig.MASTER_PORT, "0")
            .set(FerriteConfig.SERVER_HOST, "127.0.0.1")
            .set(FerriteConfig.MASTER_HOST, "127.0.0.1")
            // The tables' shard regions count against capacity.dram (with the block pool, whose
            // empty 1 GiB regions they take over): room for the largest runs' tables.
            .set(FerriteConfig.REGION_SIZE, "1g")
            .set(FerriteConfig.BLOCK_SIZE, "1m")
            .set(FerriteConfig.CAPACITY_DRAM, "4g")
            .set(FerriteConfig.CAPACITY_DISK, "0")
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .set(FerriteConfig.METRICS_PORT, metrics ? "0" : "-1")
            .build();
    return InProcessCluster.builder(cfg, CREDENTIALS)
        .masterFabrics(List.of("tcp"))
        .serverNames(i -> "bench")
        .start();
  }

  /**
   * The options of the operations' tables: 4 shards sized for {@code keys}, extents for {@code
   * keys} pairs of {@code size}-byte values, keys ≤ 64 B and values ≤ 4 KiB; {@code inline}: every
   * pair inline.
   */
  static TableOptions tableOptions(TableOptions.Layout layout, int keys, int size, boolean inline) {
    TableOptions to =
        TableOptions.DEFAULTS
            .withLayout(layout)
            .withShards(4)
            .withSlotsPerShard(Math.max(1024, keys))
            .withExtents(
                Math.max(1 << 20, (int) Math.min(1 << 28, (long) keys * 2 * (size + 64) / 4)), 16)
            .withLimits(64, 4096);
    return inline
        ? to.withInlineBytes(Math.max(TableOptions.DEFAULT_INLINE, KEY_BYTES + size))
        : to;
  }

  /** A client of the benchmark's cluster over {@code fabric}; the caller closes it. */
  static FerriteClient connect(String masterAddress, String fabric) {
    return Ferrite.connect(
        masterAddress,
        ClientOptions.builder(CREDENTIALS)
            .fabric(fabric)
            .fabrics(BenchConfig.fabrics())
            .config(BenchConfig.environment())
            .build());
  }

  /** {@code f} for clients that close what they open: closing it does nothing. */
  private static Fabric unclosable(Fabric f) {
    return new Fabric() {
      @Override
      public String name() {
        return f.name();
      }

      @Override
      public io.ferrite.fabric.FabricServer serve(io.ferrite.fabric.ServerSpec spec) {
        return f.serve(spec);
      }

      @Override
      public FabricConnection connect(String address, io.ferrite.fabric.ConnectOptions options) {
        return f.connect(address, options);
      }

      @Override
      public void close() {}
    };
  }

  static String layoutName(TableOptions.Layout l) {
    return l.name().toLowerCase(Locale.ROOT);
  }

  // ------------------------------------------------------------------ operations

  /** One operation of a worker; {@code r} is the worker's own. */
  @FunctionalInterface
  public interface Op {
    void run(Random r);
  }

  private static void measure(
      BenchReport report,
      Options o,
      String layout,
      String fabric,
      FerriteClient client,
      KvTable t,
      String op,
      int size,
      int threads,
      Progress progress)
      throws Exception {
    String suffix = op + "." + Sizes.label(size) + ".t" + threads;
    Zipfian zipf = new Zipfian(o.keys());
    // Keys are made before the clock starts: formatting one costs as much as a shm get.
    byte[][] keys = new byte[o.keys()][];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = key(i);
    }
    byte[] value = new byte[size];
    Op kvOp =
        switch (op) {
          case "get" -> r -> t.get(keys[zipf.next(r)]);
          case "get-rpc" -> r -> t.getViaRpc(keys[zipf.next(r)]);
          case "put" -> r -> t.put(keys[zipf.next(r)], value);
          default ->
              r -> {
                byte[] k = keys[zipf.next(r)];
                if (r.nextInt(100) < 95) {
                  t.get(k);
                } else {
                  t.put(k, value);
                }
              };
        };
    Op read = rawGet(client, t, size, zipf);
    byte[] putPadding = new byte[KEY_BYTES + size + 40];
    byte[] getPadding = new byte[KEY_BYTES + 20];
    Op ceilingOp =
        switch (op) {
          case "get" -> read;
          case "get-rpc" -> r -> t.ping(r.nextInt(4), getPadding);
          case "put" -> r -> t.ping(r.nextInt(4), putPadding);
          default ->
              r -> {
                if (r.nextInt(100) < 95) {
                  read.run(r);
                } else {
                  t.ping(r.nextInt(4), putPadding);
                }
              };
        };
    String cname = "ceiling.kv." + layout + "." + fabric + "." + suffix;
    String name = "kv." + layout + "." + fabric + "." + suffix;
    progress.step(cname);
    Result ceiling = drive(ceilingOp, threads, o.duration());
    progress.step(name);
    Result kv = drive(kvOp, threads, o.duration());
    BenchResult ct =
        report.add(
            BenchResult.of(cname + ".throughput", ceiling.throughput, "ops/s", Better.HIGHER));
    report.add(
        BenchResult.against(name + ".throughput", kv.throughput, "ops/s", Better.HIGHER, ct));
    for (LatencyRecorder.Statistic s :
        List.of(LatencyRecorder.Statistic.P50, LatencyRecorder.Statistic.P99)) {
      BenchResult cl =
          report.add(
              BenchResult.of(
                  cname + "." + s.label(),
                  ceiling.latency.getValueAtPercentile(s.percentile()),
                  LatencyRecorder.UNIT,
                  Better.LOWER));
      report.add(
          BenchResult.against(
              name + "." + s.label(),
              kv.latency.getValueAtPercentile(s.percentile()),
              LatencyRecorder.UNIT,
              Better.LOWER,
              cl));
    }
  }

  /**
   * The fabric ops a get is made of, raw, on the same connection, with no verification. A key's
   * get, once the handle has seen the key, reads the extent its hint names alone (docs/KV.md
   * "Extent hints"): so, for an out-of-line pair (Pilaf always; hopscotch when the pair does not
   * fit inline), one read of the extent's size (16 B header, 16 B key, the value) from the shard's
   * first extent region; for an inline hopscotch pair, one read of a random neighbourhood (two
   * buckets). The first get of a key, and one whose hint is stale, pays the table's reads too: the
   * ratio counts that against Ferrite.
   */
  private static Op rawGet(FerriteClient client, KvTable t, int size, Zipfian zipf) {
    int shards = t.info().options().shards();
    ShardLayout[] ls = new ShardLayout[shards];
    for (int i = 0; i < shards; i++) {
      ls[i] = t.layout(i);
    }
    FabricConnection c = client.connection(t.serverOf(0));
    TableOptions to = t.info().options();
    int extent = Extents.HEADER + KEY_BYTES + size;
    boolean inline =
        to.layout() == TableOptions.Layout.HOPSCOTCH && KEY_BYTES + size <= to.inlineBytes();
    if (!inline) {
      return r -> {
        // The same key choice as the kv op, so both pay for the zipfian draw.
        zipf.next(r);
        ShardLayout l = ls[r.nextInt(shards)];
        // readSync, as the get reads (over tcp: on a lane, the caller reading its own answer).
        c.readSync(l.extents().get(0), 0, ByteBuffer.wrap(new byte[extent]));
      };
    }
    int bucketBytes = HopscotchLayout.bucketBytes(HopscotchLayout.slotBytes(to.inlineBytes()));
    // One neighbourhood buffer per thread, as the kv get has (it allocates only the value).
    ThreadLocal<byte[]> buffers = ThreadLocal.withInitial(() -> new byte[2 * bucketBytes]);
    return r -> {
      zipf.next(r);
      ShardLayout l = ls[r.nextInt(shards)];
      int bucket = r.nextInt(l.slots() / HopscotchLayout.BUCKET_SLOTS);
      long offset = HopscotchLayout.bucketOffset(bucket, bucketBytes);
      c.readSync(l.entries(), offset, ByteBuffer.wrap(buffers.get()));
    };
  }

  /** Operations per second and the latency of each, in ns. */
  public record Result(double throughput, Histogram latency) {}

  /** Runs {@code op} on {@code threads} threads: a quarter of {@code d} warm-up, then {@code d}. */
  public static Result drive(Op op, int threads, Duration d) throws Exception {
    NamedThreadFactory tf = new NamedThreadFactory("bench-kv", true);
    Histogram[] hs = new Histogram[threads];
    long[] counts = new long[threads];
    AtomicReference<Throwable> failure = new AtomicReference<>();
    long start = System.nanoTime();
    long measureFrom = start + d.toNanos() / 4;
    long end = measureFrom + d.toNanos();
    List<Thread> ts = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      int w = i;
      hs[w] = new Histogram(3);
      ts.add(
          tf.newThread(
              () -> {
                Random r = new Random(1000 + w);
                try {
                  long now = System.nanoTime();
                  while (now < end) {
                    op.run(r);
                    long after = System.nanoTime();
                    if (now >= measureFrom) {
                      hs[w].recordValue(Math.max(0, after - now));
                      counts[w]++;
                    }
                    now = after;
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              }));
    }
    for (Thread t : ts) {
      t.start();
    }
    for (Thread t : ts) {
      t.join();
    }
    if (failure.get() != null) {
      throw new IllegalStateException("a benchmark thread failed", failure.get());
    }
    Histogram all = new Histogram(3);
    long total = 0;
    for (int i = 0; i < threads; i++) {
      all.add(hs[i]);
      total += counts[i];
    }
    return new Result(total / (d.toNanos() / 1e9), all);
  }
}
