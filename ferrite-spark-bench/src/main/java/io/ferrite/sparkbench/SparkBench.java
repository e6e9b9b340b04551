package io.ferrite.sparkbench;

import io.ferrite.bench.BenchConfig;
import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.Progress;
import io.ferrite.bench.Sizes;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FileTrees;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.local.InProcessCluster;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * {@code ferrite bench spark} (issue #16): in Spark's {@code local-cluster} mode (executor JVMs of
 * their own), a TeraSort-like {@code sortByKey} and a {@code groupByKey} of {@code --size} bytes of
 * 100-byte records, on Ferrite's shuffle (over shm: the memory servers are on this host) and on
 * Spark's built-in sort shuffle, alternating {@code --reps} times; and a {@code --broadcast}-byte
 * value read by every task, {@link io.ferrite.spark.FerriteBroadcast} against {@code sc.broadcast}.
 * Per job: its time, and from Spark's task metrics the shuffle write time and fetch wait (the
 * read's blocking time), summed over tasks; medians of the repetitions, each Ferrite figure beside
 * the built-in's (ratio &gt; 1: Ferrite better). Every job verifies its output (record count and
 * checksum equal to the input's, and the sort's order); a wrong answer fails the run.
 *
 * <p>One SparkContext per repetition and shuffle (Spark's shuffle manager is fixed per context):
 * built-in, then Ferrite, then built-in... each waits for its executors and runs a small untimed
 * sort (class loading, JIT, Ferrite's client connecting) before the first timed job. The Ferrite
 * cluster (a master and two memory servers, in this JVM, their DRAM in {@code /dev/shm}) is started
 * here unless {@code --cluster} names one. Everything this run makes (Spark's local dirs under
 * {@code java.io.tmpdir}, the cluster and its shm files) is removed at the end, also on failure and
 * on Ctrl-C (a shutdown hook).
 *
 * <p>This is the main of a child JVM with a class path of its own (Spark must not share the CLI's):
 * {@code SPARK_HOME} must be set, to a directory this run fills ({@link SparkHome}).
 */
public final class SparkBench {
  /** What Spark's launcher passes on Java 17 (JavaModuleOptions); the manifest has the same. */
  public static final List<String> ADD_OPENS =
      List.of(
          "java.base/java.lang",
          "java.base/java.lang.invoke",
          "java.base/java.lang.reflect",
          "java.base/java.io",
          "java.base/java.net",
          "java.base/java.nio",
          "java.base/java.util",
          "java.base/java.util.concurrent",
          "java.base/java.util.concurrent.atomic",
          "java.base/jdk.internal.ref",
          "java.base/sun.nio.ch",
          "java.base/sun.nio.cs",
          "java.base/sun.security.action",
          "java.base/sun.util.calendar");

  private static final String CLUSTER_ID = "bench-spark";

  private SparkBench() {}

  /**
   * What to run.
   *
   * @param sizeBytes bytes of records per shuffle job (100 B each)
   * @param reps repetitions per shuffle, alternating
   * @param executors executor JVMs (one core each)
   * @param executorMemoryMiB each executor's heap
   * @param broadcastBytes the broadcast value's size (0: no broadcast)
   * @param cluster an existing cluster's URI (its secret found as {@code spark.ferrite.*} finds it:
   *     environment, cluster file), or null to start one in this JVM
   * @param seed the records' and the value's seed
   */
  public record Options(
      long sizeBytes,
      int reps,
      int executors,
      int executorMemoryMiB,
      long broadcastBytes,
      String cluster,
      long seed) {
    public Options {
      if (sizeBytes < 1 << 20) {
        throw new IllegalArgumentException("--size: " + sizeBytes + " (expected: >= 1 MiB)");
      }
      if (reps < 1 || reps > 20) {
        throw new IllegalArgumentException("--reps: " + reps + " (expected: 1 to 20)");
      }
      if (executors < 1 || executors > 16) {
        throw new IllegalArgumentException("--executors: " + executors + " (expected: 1 to 16)");
      }
      if (executorMemoryMiB < 256) {
        throw new IllegalArgumentException(
            "--executor-memory: " + executorMemoryMiB + " MiB (expected: >= 256 MiB)");
      }
      if (broadcastBytes < 0 || broadcastBytes > (1L << 30)) {
        throw new IllegalArgumentException(
            "--broadcast: " + broadcastBytes + " (expected: 0 to 1 GiB)");
      }
    }

    /** The run: 2 GiB, 3 repetitions, 2 executors of 3 GiB, a 256 MiB broadcast. */
    public static Options defaults() {
      return new Options(2L << 30, 3, 2, 3072, 256L << 20, null, 1);
    }

    /** A few seconds' smoke run. */
    public static Options quick() {
      return new Options(16L << 20, 1, 2, 768, 8L << 20, null, 1);
    }

    /** Map and reduce partitions: 64 MiB of records each, at least 2 per executor. */
    int partitions() {
      return (int) Math.max(2L * executors, Math.min(4096, sizeBytes >> 26));
    }

    /** Tasks that read the broadcast: 4 per executor. */
    int broadcastTasks() {
      return 4 * executors;
    }
  }

  public static void main(String[] args) throws Exception {
    // Ferrite's servers log their start at INFO (System.Logger, i.e. java.util.logging here):
    // this program's own progress lines are what a reader wants.
    java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
    Options d = Options.defaults();
    long size = -1;
    int reps = -1;
    int executors = -1;
    int memory = -1;
    long broadcast = -1;
    String cluster = null;
    long seed = d.seed();
    Path json = null;
    boolean quick = false;
    boolean quiet = false;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      switch (a) {
        case "--quick" -> quick = true;
        case "--quiet" -> quiet = true;
        case "--size" -> size = bytes(a, args[++i]);
        case "--reps" -> reps = Integer.parseInt(args[++i]);
        case "--executors" -> executors = Integer.parseInt(args[++i]);
        case "--executor-memory" -> memory = (int) (bytes(a, args[++i]) >> 20);
        case "--broadcast" -> broadcast = bytes(a, args[++i]);
        case "--cluster" -> cluster = args[++i];
        case "--seed" -> seed = Long.parseLong(args[++i]);
        case "--json" -> json = Path.of(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + a);
      }
    }
    Options base = quick ? Options.quick() : d;
    Options o =
        new Options(
            size >= 0 ? size : base.sizeBytes(),
            reps >= 0 ? reps : base.reps(),
            executors >= 0 ? executors : base.executors(),
            memory >= 0 ? memory : base.executorMemoryMiB(),
            broadcast >= 0 ? broadcast : base.broadcastBytes(),
            cluster,
            seed);
    BenchReport report = run(o, quiet ? null : System.err);
    // With --json (how the CLI runs it) the report goes to the file: the CLI prints it.
    if (json != null) {
      report.writeJson(json);
    } else {
      report.printTable(System.out);
    }
  }

  /** {@code 256m}, {@code 2g}, {@code 65536}: bytes. */
  static long bytes(String option, String v) {
    String s = v.trim().toLowerCase(Locale.ROOT);
    long unit = 1;
    char last = s.isEmpty() ? ' ' : s.charAt(s.length() - 1);
    if (last == 'b') {
      s = s.substring(0, s.length() - 1);
      last = s.isEmpty() ? ' ' : s.charAt(s.length() - 1);
    }
    if (last == 'k' || last == 'm' || last == 'g') {
      unit = last == 'k' ? 1L << 10 : last == 'm' ? 1L << 20 : 1L << 30;
      s = s.substring(0, s.length() - 1);
    }
    try {
      return Long.parseLong(s) * unit;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(option + ": " + v + " (expected: bytes, e.g. 256m, 2g)");
    }
  }

  /** Runs the jobs and returns the report; {@code progress} (may be null) gets progress lines. */
  public static BenchReport run(Options o, PrintStream progressOut) throws Exception {
    Progress progress = new Progress("spark", progressOut);
    Path work = Files.createTempDirectory("ferrite-spark-bench-");
    Path shm = Path.of("/dev/shm").resolve(work.getFileName().toString());
    InProcessCluster[] cluster = {null};
    Thread hook = new Thread(() -> cleanUp(cluster, work, shm), "spark-bench-cleanup");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      return run(o, progress, work, shm, cluster);
    } finally {
      cleanUp(cluster, work, shm);
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // The hook runs (or ran) anyway.
      }
    }
  }

  private static synchronized void cleanUp(InProcessCluster[] cluster, Path work, Path shm) {
    if (cluster[0] != null) {
      cluster[0].close();
      cluster[0] = null;
    }
    for (Path p : List.of(work, shm)) {
      try {
        FileTrees.delete(p);
      } catch (IOException e) {
        System.err.println("could not remove " + p + ": " + e);
      }
    }
  }

  private static BenchReport run(
      Options o, Progress progress, Path work, Path shm, InProcessCluster[] cluster)
      throws Exception {
    String classDirs = SparkHome.prepare();
    int parts = o.partitions();
    long records = o.sizeBytes() / SparkJobs.RECORD;
    long perMap = Math.max(1, records / parts);
    SparkJobs.Input sortInput = new SparkJobs.Input(o.seed(), parts, perMap, 0);
    SparkJobs.Input groupInput =
        new SparkJobs.Input(
            o.seed() + 1, parts, perMap, Math.max(1, perMap * parts / SparkJobs.PER_GROUP));
    // Ferrite holds one shuffle at a time (each job's is removed after it) plus the broadcast:
    // serialized records are about 1.1 x their 100 bytes; 1.5 x with room for the index and
    // partly filled blocks, split over two servers, in 64 MiB regions.
    long perServer =
        roundUp((long) (o.sizeBytes() * 1.5) / 2 + o.broadcastBytes() + (128L << 20), 64L << 20);
    String ferriteKeys;
    Path secretFile = null;
    if (o.cluster() == null) {
      Secrets.createPrivateDirectories(shm);
      byte[] secret = Secrets.readOrCreate(work.resolve("secret"));
      secretFile = Secrets.writeClientSecret(work.resolve("secret"), secret);
      cluster[0] = startCluster(work, shm, new Credentials(CLUSTER_ID, secret), perServer);
      ferriteKeys = cluster[0].uri();
    } else {
      ferriteKeys = o.cluster();
    }
    progress.step(
        String.format(
            Locale.ROOT,
            "%s of %d-byte records (%d records), %d map and %d reduce partitions, %d rep(s);"
                + " local-cluster[%d,1,%d]: %d executor JVM(s) of 1 core and %d MiB heap;"
                + " Ferrite: %s",
            Sizes.label(o.sizeBytes()),
            SparkJobs.RECORD,
            perMap * parts,
            parts,
            parts,
            o.reps(),
            o.executors(),
            o.executorMemoryMiB(),
            o.executors(),
            o.executorMemoryMiB(),
            o.cluster() == null
                ? "2 memory servers in this JVM, " + Sizes.label(perServer) + " of DRAM each (shm)"
                : o.cluster()));

    List<SparkJobs.Timing> sortBuiltIn = new ArrayList<>();
    List<SparkJobs.Timing> sortFerrite = new ArrayList<>();
    List<SparkJobs.Timing> groupBuiltIn = new ArrayList<>();
    List<SparkJobs.Timing> groupFerrite = new ArrayList<>();
    List<Long> bcastBuiltIn = new ArrayList<>();
    List<Long> bcastFerrite = new ArrayList<>();
    SparkJobs.Summary sortExpected = null;
    SparkJobs.Summary groupExpected = null;
    long[] groupsBuiltIn = {-1};
    long[] groupsFerrite = {-1};
    byte[] value =
        o.broadcastBytes() > 0
            ? SparkJobs.broadcastValue(o.seed(), (int) o.broadcastBytes())
            : null;
    long crc = value == null ? 0 : SparkJobs.crc(value);
    for (int rep = 1; rep <= o.reps(); rep++) {
      for (boolean ferrite : new boolean[] {false, true}) {
        String side = ferrite ? "ferrite" : "builtin";
        SparkConf conf = base(o, work, classDirs);
        if (ferrite) {
          conf.set("spark.shuffle.manager", "io.ferrite.spark.FerriteShuffleManager")
              .set("spark.ferrite.cluster", ferriteKeys)
              .set("spark.ferrite.fabric", "auto");
          if (secretFile != null) {
            conf.set("spark.ferrite.cluster.id", CLUSTER_ID)
                .set("spark.ferrite.secret.file", secretFile.toString())
                .set("spark.ferrite.cluster.file", work.resolve("no-cluster-file").toString());
          }
        }
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
          awaitExecutors(sc, o.executors());
          SparkJobs.Metrics metrics = new SparkJobs.Metrics();
          sc.sc().addSparkListener(metrics);
          // Untimed, in every context alike: the executors' first shuffle (class loading, JIT,
          // Ferrite's client connecting) is not part of the first timed job.
          SparkJobs.Input warm = new SparkJobs.Input(o.seed() + 2, 2 * o.executors(), 5000, 0);
          SparkJobs.sort(sc, metrics, warm, 2 * o.executors(), SparkJobs.inputSummary(sc, warm));
          if (sortExpected == null) {
            progress.step("input checksums (untimed)");
            sortExpected = SparkJobs.inputSummary(sc, sortInput);
            groupExpected = SparkJobs.inputSummary(sc, groupInput);
          }
          SparkJobs.Timing s = SparkJobs.sort(sc, metrics, sortInput, parts, sortExpected);
          (ferrite ? sortFerrite : sortBuiltIn).add(s);
          step(progress, "sortByKey", side, rep, o.reps(), s);
          long[] groups = ferrite ? groupsFerrite : groupsBuiltIn;
          SparkJobs.Timing g =
              SparkJobs.group(sc, metrics, groupInput, parts, groupExpected, groups);
          (ferrite ? groupFerrite : groupBuiltIn).add(g);
          step(progress, "groupByKey", side, rep, o.reps(), g);
          if (value != null) {
            long[] ns =
                ferrite
                    ? SparkJobs.ferriteBroadcast(sc, value, crc, o.broadcastTasks())
                    : SparkJobs.sparkBroadcast(sc, value, crc, o.broadcastTasks());
            (ferrite ? bcastFerrite : bcastBuiltIn).add(ns[0]);
            progress.step(
                String.format(
                    Locale.ROOT,
                    "broadcast %s rep %d/%d: %.2f s (created in %.2f s; %d tasks read %s)",
                    side,
                    rep,
                    o.reps(),
                    ns[0] / 1e9,
                    ns[1] / 1e9,
                    o.broadcastTasks(),
                    Sizes.label(o.broadcastBytes())));
          }
        }
      }
    }
    if (groupsBuiltIn[0] != groupsFerrite[0]) {
      throw new IllegalStateException(
          "groupByKey made "
              + groupsFerrite[0]
              + " groups on Ferrite's shuffle and "
              + groupsBuiltIn[0]
              + " on Spark's");
    }

    BenchReport report = new BenchReport("spark");
    String size = "." + Sizes.label(o.sizeBytes());
    for (String job : List.of("sortByKey", "groupByKey")) {
      List<SparkJobs.Timing> b = job.equals("sortByKey") ? sortBuiltIn : groupBuiltIn;
      List<SparkJobs.Timing> f = job.equals("sortByKey") ? sortFerrite : groupFerrite;
      add(report, job + size + ".job", b, f, t -> t.jobNanos() / 1e6);
      add(report, job + size + ".shuffleWrite", b, f, t -> t.shuffleWriteNanos() / 1e6);
      add(report, job + size + ".fetchWait", b, f, t -> (double) t.fetchWaitMillis());
    }
    if (value != null) {
      String name = "broadcast." + Sizes.label(o.broadcastBytes()) + ".x" + o.broadcastTasks();
      BenchResult peer =
          report.add(
              BenchResult.of(
                  "builtin." + name, median(bcastBuiltIn, t -> t / 1e6), "ms", Better.LOWER));
      report.add(
          BenchResult.against(
              "ferrite." + name, median(bcastFerrite, t -> t / 1e6), "ms", Better.LOWER, peer));
    }
    return report;
  }

  private static void add(
      BenchReport report,
      String name,
      List<SparkJobs.Timing> builtIn,
      List<SparkJobs.Timing> ferrite,
      ToDoubleFunction<SparkJobs.Timing> f) {
    BenchResult peer =
        report.add(BenchResult.of("builtin." + name, median(builtIn, f), "ms", Better.LOWER));
    report.add(
        BenchResult.against("ferrite." + name, median(ferrite, f), "ms", Better.LOWER, peer));
  }

  private static <T> double median(List<T> runs, ToDoubleFunction<T> f) {
    double[] v = runs.stream().mapToDouble(f).sorted().toArray();
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }

  private static void step(
      Progress progress, String job, String side, int rep, int reps, SparkJobs.Timing t) {
    progress.step(
        String.format(
            Locale.ROOT,
            "%s %s rep %d/%d: %.2f s (shuffle write %.2f s, fetch wait %.2f s, summed over tasks)",
            job,
            side,
            rep,
            reps,
            t.jobNanos() / 1e9,
            t.shuffleWriteNanos() / 1e9,
            t.fetchWaitMillis() / 1e3));
  }

  private static SparkConf base(Options o, Path work, String classDirs) {
    SparkConf conf =
        new SparkConf()
            .setMaster("local-cluster[" + o.executors() + ",1," + o.executorMemoryMiB() + "]")
            .setAppName("ferrite-bench-spark")
            .set("spark.ui.enabled", "false")
            .set("spark.driver.host", "127.0.0.1")
            .set("spark.executor.memory", o.executorMemoryMiB() + "m")
            .set("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
            // Built-in shuffle files and spills on local disk, removed with the run's directory.
            .set("spark.local.dir", work.resolve("spark-local").toString())
            // The jobs clean their shuffles themselves (untimed); no GC-driven cleanup between.
            .set("spark.cleaner.periodicGC.interval", "1h");
    if (!classDirs.isEmpty()) {
      conf.set("spark.executor.extraClassPath", classDirs);
    }
    return conf;
  }

  /** local-cluster's executors register after the context is up: wait, so jobs run on all. */
  private static void awaitExecutors(JavaSparkContext sc, int executors)
      throws InterruptedException {
    long deadline = System.nanoTime() + 120_000_000_000L;
    // getExecutorInfos lists the driver too.
    while (sc.sc().statusTracker().getExecutorInfos().length < executors + 1) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            executors + " executor(s) did not register in 120 s (see Spark's log above)");
      }
      Thread.sleep(50);
    }
  }

  private static InProcessCluster startCluster(
      Path work, Path shm, Credentials credentials, long perServer) {
    FerriteConfig cfg =
        BenchConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, CLUSTER_ID)
            .set(FerriteConfig.DATA_DIR, work.resolve("data").toString())
            .set(FerriteConfig.SHM_DIR, shm.toString())
            .set(FerriteConfig.MASTER_PORT, "0")
            .set(FerriteConfig.SERVER_HOST, "127.0.0.1")
            .set(FerriteConfig.MASTER_HOST, "127.0.0.1")
            .set(FerriteConfig.REGION_SIZE, "64m")
            .set(FerriteConfig.BLOCK_SIZE, "1m")
            .set(FerriteConfig.CAPACITY_DRAM, (perServer >> 20) + "m")
            .set(FerriteConfig.CAPACITY_DISK, "0")
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .set(FerriteConfig.METRICS_PORT, "-1")
            // A loaded 2-core machine must not see servers or sessions expire.
            .set(FerriteConfig.HEARTBEAT_INTERVAL, "100ms")
            .set(FerriteConfig.DEAD_TIMEOUT, "10s")
            .set(FerriteConfig.SESSION_LEASE, "20s")
            .build();
    return InProcessCluster.builder(cfg, credentials)
        .servers(2)
        .serverNames(i -> "spark-bench-" + i)
        .start();
  }

  private static long roundUp(long v, long unit) {
    return (v + unit - 1) / unit * unit;
  }
}
