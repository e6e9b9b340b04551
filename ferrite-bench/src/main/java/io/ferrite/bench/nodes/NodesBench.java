package io.ferrite.bench.nodes;

import io.ferrite.bench.BenchConfig;
import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.Measure;
import io.ferrite.bench.Progress;
import io.ferrite.bench.Sizes;
import io.ferrite.bench.Workload;
import io.ferrite.bench.ceiling.MemcpyCeiling;
import io.ferrite.bench.ceiling.SocketCeiling;
import io.ferrite.bench.fabric.Fabrics;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.Futures;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.local.InProcessCluster;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.nodes.NodeReader;
import io.ferrite.nodes.NodeWriter;
import io.ferrite.nodes.Nodes;
import io.ferrite.nodes.master.NodesMaster;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code ferrite bench nodes}: the paper's Figures 5 and 7 on this machine. An in-process cluster
 * (master with the nodes extension and two memory servers, all serving shm and tcp) and, per
 * fabric, a client of {@code ferrite://} (the master's tcp address) whose data ops go over that
 * fabric, and whose master RPCs do too (the shm client moves to the master's shm endpoint, being on
 * its host), that measures:
 *
 * <ul>
 *   <li>{@code <f>.kv.{put,get}.<size>}: KeyValue put and get latency (ns) for 4 B, 4 KiB, 64 KiB
 *       and 1 MiB, beside the fabric op each is made of: a 4 B value lives in the master's
 *       metadata, so its reference is one master RPC ({@code <f>.rpc.master}, a session renewal
 *       through the service executor, for a put; {@code <f>.rpc.master.inline}, an RPC the master
 *       answers on the thread that received it, as it answers a lookup, for a get); larger values
 *       are one-sided writes / reads of the same size ({@code <f>.write|read.<size>}) plus RPCs;
 *   <li>{@code <f>.file.{write,read}.<buf>.bandwidth}: a File written with an OutputStream and read
 *       with an InputStream through an application buffer of 1 KiB, 64 KiB, 1 MiB, beside memcpy
 *       (shm) or a raw loopback stream (tcp); the 1 MiB read is repeated as {@code
 *       <f>.file.read.1MiB.bandwidth.samework} beside a ceiling doing the same application-visible
 *       work: over tcp {@code ceiling.socket.stream.1MiB.heap.bandwidth}, a raw stream into one 1
 *       MiB {@code byte[]} (the stream ceiling fills direct buffers, which an {@code InputStream}
 *       reader's array is not); over shm {@code ceiling.memcpy.stream.1MiB.heap.bandwidth}, the
 *       file's size copied from memory into one 1 MiB {@code byte[]} (the 1 MiB memcpy ceiling
 *       copies from a 16 MiB window the last-level cache holds);
 *   <li>{@code <f>.lookup.threads.<n>}: lookups that ask the master (not a client's cache) per
 *       second with 1, 4, 16 threads, beside the same threads doing the cheapest master RPC ({@code
 *       <f>.rpc.master.threads.<n>});
 *   <li>{@code <f>.create.{table,bag}}: creates per second of a 4 B KeyValue in a non-enumerable
 *       Table and of an empty File in a Bag (create + close), one thread, beside one thread's
 *       master RPCs per second;
 *   <li>{@code nodes.list.<n>.entries}: a container of 100 000 children listed, entries per second,
 *       beside one thread's lookups per second;
 *   <li>over tcp, the metadata plane with the journal fsynced, leased lookups and a fresh client
 *       process: {@link NodesMetadataBench}; and metadata ops/s with 1 and 2 master groups: {@link
 *       NodesGroupsBench};
 *   <li>replicated Files, write with 1-3 copies and a read right after a server's stop: {@link
 *       FileReplicasBench}.
 * </ul>
 */
public final class NodesBench {
  public static final String SUITE = "nodes";
  public static final int[] KV_SIZES = {4, 4 * Sizes.KIB, 64 * Sizes.KIB, Sizes.MIB};
  public static final int[] BUFFER_SIZES = {Sizes.KIB, 64 * Sizes.KIB, Sizes.MIB};
  public static final int[] THREADS = {1, 4, 16};
  static final int[] PINGPONG_SIZES = {8, 4, 4 * Sizes.KIB, 64 * Sizes.KIB, Sizes.MIB};
  static final String OPS = "ops/s";

  /**
   * Suffix of a figure repeated beside the ceiling that does the same application-visible work
   * (here: a raw stream into a 1 MiB {@code byte[]}), next to the original's stream ceiling.
   */
  public static final String SAME_WORK = ".samework";

  /**
   * What to run.
   *
   * @param fabrics "shm", "tcp"
   * @param iterations timed ops per latency (1 MiB values: a tenth)
   * @param duration length of each rate measurement
   * @param fileBytes the File size of the bandwidth runs (shrunk to what fits, and said so)
   * @param fsync whether the master fsyncs its journal per record (off: Crail keeps no log)
   * @param listChildren children of the container whose listing is timed (0: skip)
   */
  public record Options(
      List<String> fabrics,
      int iterations,
      Duration duration,
      long fileBytes,
      boolean fsync,
      int listChildren,
      PrintStream progress) {
    public static Options defaults() {
      return new Options(
          List.of("shm", "tcp"),
          5_000,
          Duration.ofSeconds(2),
          1L << 30,
          false,
          100_000,
          System.err);
    }

    public static Options quick() {
      return new Options(
          List.of("shm", "tcp"), 200, Duration.ofMillis(200), 64L << 20, false, 2_000, System.err);
    }
  }

  private NodesBench() {}

  public static BenchReport run(Options o) throws Exception {
    BenchReport report = new BenchReport(SUITE);
    Progress progress =
        o.progress() == null ? Progress.silent() : new Progress(SUITE, o.progress());
    Measure.Plan plan = Measure.Plan.of(o.iterations(), o.duration());
    Path shmRoot = Files.createTempDirectory(Path.of(shmBase()), "fbn-");
    Path dataDir = Files.createTempDirectory("fbn-data-");
    long fileBytes = fitFile(o.fileBytes(), shmRoot, o.progress());
    report.add(BenchResult.of("file.size", fileBytes / (double) Sizes.MIB, "MiB", Better.HIGHER));
    try {
      MemcpyCeiling.measure(report, plan, new Workload(16L << 20), KV_SIZES, Sizes.MIB, progress);
      if (o.fabrics().contains("shm")) {
        // The same work as a shm File read through a 1 MiB application array: the file's size,
        // from memory, copied front to back into one 1 MiB byte[].
        MemcpyCeiling.measureStreamHeap(report, plan, fileBytes, Sizes.MIB, progress);
      }
      try (SocketCeiling sockets = SocketCeiling.start()) {
        if (o.fabrics().contains("tcp")) {
          // The 8 B ping-pong whose two threads never block (they poll, yielding, as the tcp
          // fabric's pollers do): the second reference of the uncached lookup
          // (NodesMetadataBench), measured right before the blocking one.
          sockets.measurePollPingPong(report, plan, 8, progress);
        }
        // 8 B: the raw ping-pong the metadata RPCs are measured against.
        sockets.measure(report, plan, PINGPONG_SIZES, Sizes.MIB, progress);
        if (o.fabrics().contains("tcp")) {
          // The same work as a File read through a 1 MiB application array: a raw stream into
          // one 1 MiB byte[] (a socket cannot fill the heap without a copy through native memory).
          sockets.measureHeap(report, plan, new Workload(16L << 20), Sizes.MIB, progress);
        }
      }
      // Two servers share the file plus room for the KeyValue runs.
      long perServer =
          Math.max(256L << 20, (fileBytes / 2 + (192L << 20)) / (64L << 20) * (64L << 20));
      FerriteConfig cfg =
          BenchConfig.builder()
              .set(FerriteConfig.CLUSTER_ID, "bn")
              .set(FerriteConfig.DATA_DIR, dataDir.toString())
              .set(FerriteConfig.SHM_DIR, shmRoot.toString())
              .set(FerriteConfig.MASTER_HOST, "127.0.0.1")
              .set(FerriteConfig.MASTER_PORT, "0")
              .set(FerriteConfig.SERVER_HOST, "127.0.0.1")
              .set(FerriteConfig.CAPACITY_DRAM, Long.toString(perServer))
              .set(FerriteConfig.JOURNAL_FSYNC, Boolean.toString(o.fsync()))
              .build();
      Credentials creds =
          new Credentials(
              "bench-nodes", "bench-nodes-secret-0123456789".getBytes(StandardCharsets.UTF_8));
      List<AutoCloseable> running = new ArrayList<>();
      List<Fabric> fabrics = new ArrayList<>();
      try {
        Fabric shm = Fabrics.create("shm");
        Fabric tcp = Fabrics.create("tcp");
        fabrics.add(shm);
        fabrics.add(tcp);
        Master master = startCluster(cfg, creds, tcp, shm, "b", running);
        for (String f : o.fabrics()) {
          ClientOptions co =
              ClientOptions.builder(creds)
                  .fabric(f)
                  .fabrics(Fabrics::create)
                  .config(cfg)
                  .clientName("bench-" + f)
                  .build();
          // The master is found over tcp, as ferrite://host:port does; the shm client then moves
          // to the master's shm endpoint (same host); data over fabric f.
          try (FerriteClient client = Ferrite.connect(master.addresses().get("tcp"), co)) {
            runFabric(report, plan, o, f, client, fileBytes, progress);
          }
        }
        if (o.fabrics().contains("tcp")) {
          NodesMetadataBench.run(report, plan, o, shmRoot, tcp, shm, progress);
          NodesGroupsBench.run(report, o, shmRoot, tcp, shm, progress);
        }
        // Replicated Files (three servers of their own): a quarter of the file, at most 256 MiB.
        FileReplicasBench.run(
            report, o.fabrics(), Math.min(256L << 20, fileBytes / 4), shmRoot, progress);
      } finally {
        for (int i = running.size() - 1; i >= 0; i--) {
          running.get(i).close();
        }
        for (Fabric f : fabrics) {
          f.close();
        }
      }
    } finally {
      FileTrees.delete(shmRoot);
      FileTrees.delete(dataDir);
    }
    return report;
  }

  static String shmBase() {
    return Files.isDirectory(Path.of("/dev/shm"))
        ? "/dev/shm"
        : System.getProperty("java.io.tmpdir");
  }

  /** The largest power-of-two MiB file not above {@code want} that fits twice over in shm space. */
  private static long fitFile(long want, Path dir, PrintStream progress) throws IOException {
    FileStore store = Files.getFileStore(dir);
    long usable = store.getUsableSpace() - (512L << 20);
    long size = want;
    while (size > (16L << 20) && size + (512L << 20) > usable) {
      size /= 2;
    }
    if (size < want && progress != null) {
      progress.printf(
          java.util.Locale.ROOT,
          "nodes: only %d MiB free in %s: File bandwidth uses a %d MiB file, not %d MiB%n",
          usable >> 20,
          dir,
          size >> 20,
          want >> 20);
    }
    return size;
  }

  /**
   * Starts, over both fabrics, a master with the nodes extension (100 ms reclaim grace) and two
   * memory servers named {@code prefix1} and {@code prefix2}, adds them to {@code running} (the
   * caller closes them) and waits until both are ALIVE.
   */
  static Master startCluster(
      FerriteConfig cfg,
      Credentials creds,
      Fabric tcp,
      Fabric shm,
      String prefix,
      List<AutoCloseable> running)
      throws Exception {
    InProcessCluster cluster =
        InProcessCluster.builder(cfg, creds)
            .fabrics(List.of(tcp, shm))
            .masterFabrics(List.of("tcp", "shm"))
            .extensions(List.of(new NodesMaster(Duration.ofMillis(100))))
            .servers(2)
            .serverNames(i -> prefix + i)
            .start();
    running.add(cluster);
    Master master = cluster.master();
    awaitServers(master, 2);
    return master;
  }

  private static void awaitServers(Master master, int n) throws InterruptedException {
    for (int i = 0; i < 500; i++) {
      long alive =
          master.state().members().stream().filter(m -> m.state().name().equals("ALIVE")).count();
      long withRegions = master.state().regions(-1).size();
      if (alive >= n && withRegions > 0) {
        return;
      }
      Thread.sleep(10);
    }
    throw new IllegalStateException("memory servers did not register");
  }

  private static void runFabric(
      BenchReport report,
      Measure.Plan plan,
      Options o,
      String f,
      FerriteClient client,
      long fileBytes,
      Progress progress)
      throws Exception {
    Nodes nodes = new Nodes(client);
    String root = "/bench-" + f;
    nodes.mkdir(root);
    long sid = client.sessionId();
    var stub = client.masterStub();

    progress.step(f + ".rpc.master");
    Measure.addLatency(
        report,
        f + ".rpc.master",
        Measure.latency(plan, i -> Futures.join(stub.renewSession(sid))),
        null);
    // The cheapest master RPC the master answers inline (no service-executor hop), as it answers
    // a lookup: the reference of a 4 B get.
    progress.step(f + ".rpc.master.inline");
    Measure.addLatency(
        report, f + ".rpc.master.inline", Measure.latency(plan, i -> stub.masterInfo()), null);

    // The fabric ops the KeyValue sizes are made of.
    BlockRef block = client.allocate(1).get(0);
    for (int size : KV_SIZES) {
      ByteBuffer buf = ByteBuffer.allocateDirect(size);
      Measure.Plan p = size >= Sizes.MIB ? smaller(plan) : plan;
      progress.step(f + ".read/write." + Sizes.label(size));
      Measure.addLatency(
          report,
          f + ".read." + Sizes.label(size),
          Measure.latency(p, i -> client.readSync(block, 0, buf.clear())),
          null);
      Measure.addLatency(
          report,
          f + ".write." + Sizes.label(size),
          Measure.latency(p, i -> client.writeSync(block, 0, buf.clear())),
          null);
    }
    client.free(List.of(block));

    nodes.createTable(root + "/kv", true);
    for (int size : KV_SIZES) {
      String key = root + "/kv/k" + Sizes.label(size);
      byte[] value = new byte[size];
      ByteBuffer v = ByteBuffer.wrap(value);
      Measure.Plan p = size >= Sizes.MIB ? smaller(plan) : plan;
      String ref = size <= 1024 ? f + ".rpc.master" : null;
      String getRef = size <= 1024 ? f + ".rpc.master.inline" : null;
      progress.step(f + ".kv.put." + Sizes.label(size));
      Measure.addLatency(
          report,
          f + ".kv.put." + Sizes.label(size),
          Measure.latency(p, i -> nodes.put(key, v.clear())),
          ref != null ? ref : f + ".write." + Sizes.label(size));
      progress.step(f + ".kv.get." + Sizes.label(size));
      Measure.addLatency(
          report,
          f + ".kv.get." + Sizes.label(size),
          Measure.latency(p, i -> nodes.get(key)),
          getRef != null ? getRef : f + ".read." + Sizes.label(size));
    }
    Thread.sleep(300); // let replaced values' blocks be reclaimed before the file runs

    String ceiling =
        f.equals("tcp")
            ? SocketCeiling.stream(Sizes.MIB)
            : MemcpyCeiling.name(Sizes.MIB) + ".bandwidth";
    for (int buf : BUFFER_SIZES) {
      String path = root + "/file-" + Sizes.label(buf);
      byte[] b = new byte[buf];
      progress.step(f + ".file.write." + Sizes.label(buf) + " (" + (fileBytes >> 20) + " MiB)");
      long t0 = System.nanoTime();
      NodeWriter w = nodes.create(path);
      try (OutputStream out = w.outputStream()) {
        for (long done = 0; done < fileBytes; done += buf) {
          out.write(b, 0, buf);
        }
      }
      double wr = Sizes.mibPerSecond(fileBytes, System.nanoTime() - t0);
      report.add(
          BenchResult.against(
              f + ".file.write." + Sizes.label(buf) + ".bandwidth",
              wr,
              Sizes.BANDWIDTH_UNIT,
              Better.HIGHER,
              report.require(ceiling)));
      progress.step(f + ".file.read." + Sizes.label(buf));
      t0 = System.nanoTime();
      NodeReader r = nodes.open(path);
      long got = 0;
      try (InputStream in = r.inputStream()) {
        int n;
        while ((n = in.read(b, 0, buf)) > 0) {
          got += n;
        }
      }
      double rd = Sizes.mibPerSecond(got, System.nanoTime() - t0);
      if (got != fileBytes) {
        throw new IllegalStateException("read " + got + " of " + fileBytes + " B");
      }
      report.add(
          BenchResult.against(
              f + ".file.read." + Sizes.label(buf) + ".bandwidth",
              rd,
              Sizes.BANDWIDTH_UNIT,
              Better.HIGHER,
              report.require(ceiling)));
      if (buf == Sizes.MIB) {
        report.add(
            BenchResult.against(
                f + ".file.read." + Sizes.label(buf) + ".bandwidth" + SAME_WORK,
                rd,
                Sizes.BANDWIDTH_UNIT,
                Better.HIGHER,
                report.require(
                    f.equals("tcp")
                        ? SocketCeiling.streamHeap(Sizes.MIB)
                        : MemcpyCeiling.streamHeap(Sizes.MIB))));
      }
      nodes.remove(path, false);
      Thread.sleep(250); // blocks back to the free list (grace period)
    }

    String key = root + "/kv/k4B";
    for (int threads : THREADS) {
      progress.step(f + ".lookup.threads." + threads);
      double rpc = rate(threads, o.duration(), () -> Futures.join(stub.renewSession(sid)));
      BenchResult ref =
          report.add(BenchResult.of(f + ".rpc.master.threads." + threads, rpc, OPS, Better.HIGHER));
      // Lookups that ask the master (leased lookups: NodesMetadataBench).
      double lookups = rate(threads, o.duration(), () -> nodes.lookupAtMaster(key));
      report.add(
          BenchResult.against(f + ".lookup.threads." + threads, lookups, OPS, Better.HIGHER, ref));
    }

    BenchResult one = report.require(f + ".rpc.master.threads.1");
    nodes.createTable(root + "/t", false);
    AtomicLong seq = new AtomicLong();
    byte[] tiny = new byte[4];
    progress.step(f + ".create.table");
    double t = rate(1, o.duration(), () -> nodes.put(root + "/t/k" + seq.incrementAndGet(), tiny));
    report.add(BenchResult.against(f + ".create.table", t, OPS, Better.HIGHER, one));
    nodes.createBag(root + "/bag");
    progress.step(f + ".create.bag");
    double bag =
        rate(1, o.duration(), () -> nodes.create(root + "/bag/f" + seq.incrementAndGet()).close());
    report.add(BenchResult.against(f + ".create.bag", bag, OPS, Better.HIGHER, one));
    if (f.equals(o.fabrics().get(0)) && o.listChildren() > 0) {
      listing(report, o, f, nodes, root, progress);
    }
    nodes.remove(root, true);
  }

  /**
   * Enumeration of a container with {@code listChildren} children (Crail: 100 000 files in a bag,
   * §4.1): entries listed per second, beside lookups per second of one thread (what a client
   * without enumeration would do per entry). Listing is master RPCs over tcp for every fabric, so
   * it runs once.
   */
  private static void listing(
      BenchReport report, Options o, String f, Nodes nodes, String root, Progress progress)
      throws Exception {
    int n = o.listChildren();
    String table = root + "/many";
    nodes.createTable(table, true);
    progress.step("nodes.list: creating " + n + " children");
    java.util.List<java.util.concurrent.CompletableFuture<?>> window = new ArrayList<>();
    ByteBuffer empty = ByteBuffer.allocate(0);
    for (int i = 0; i < n; i++) {
      window.add(
          nodes.putAsync(
              table + "/k" + i, empty.duplicate(), io.ferrite.nodes.CreateOptions.DEFAULT));
      if (window.size() >= 64) {
        for (var w : window) {
          w.join();
        }
        window.clear();
      }
    }
    for (var w : window) {
      w.join();
    }
    progress.step("nodes.list." + n);
    // The best of 10 listings: the first ones pay for the JIT compiling the page decode (every
    // other row here is measured after a warm-up; three listings were not enough to get past it:
    // 0.85-4.7 ms between runs).
    long best = Long.MAX_VALUE;
    for (int rep = 0; rep < 10; rep++) {
      long t0 = System.nanoTime();
      long count = 0;
      for (var c : nodes.list(table)) {
        count += c.path().isEmpty() ? 0 : 1;
      }
      best = Math.min(best, System.nanoTime() - t0);
      if (count != n) {
        throw new IllegalStateException("listed " + count + " of " + n);
      }
    }
    report.add(
        BenchResult.against(
            "nodes.list." + n + ".entries",
            n / (best / 1e9),
            OPS,
            Better.HIGHER,
            report.require(f + ".lookup.threads.1")));
    report.add(BenchResult.of("nodes.list." + n + ".time", best / 1e6, "ms", Better.LOWER));
  }

  private static Measure.Plan smaller(Measure.Plan p) {
    return new Measure.Plan(
        Math.max(5, p.warmupIterations() / 10),
        Math.max(20, p.iterations() / 10),
        p.warmup(),
        p.duration());
  }

  /** Operations per second of {@code threads} threads running {@code op} for {@code d}. */
  static double rate(int threads, Duration d, Runnable op) throws InterruptedException {
    // Warm up for a quarter of the time, then count.
    runFor(threads, d.dividedBy(4), op);
    long t0 = System.nanoTime();
    long n = runFor(threads, d, op);
    return n / ((System.nanoTime() - t0) / 1e9);
  }

  private static long runFor(int threads, Duration d, Runnable op) throws InterruptedException {
    AtomicLong count = new AtomicLong();
    long deadline = System.nanoTime() + d.toNanos();
    List<Thread> ts = new ArrayList<>();
    List<RuntimeException> failures = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      Thread th =
          new Thread(
              () -> {
                long mine = 0;
                try {
                  while (System.nanoTime() < deadline) {
                    op.run();
                    mine++;
                  }
                } catch (RuntimeException e) {
                  synchronized (failures) {
                    failures.add(e);
                  }
                }
                count.addAndGet(mine);
              },
              "bench-nodes-" + i);
      ts.add(th);
      th.start();
    }
    for (Thread th : ts) {
      th.join();
    }
    if (!failures.isEmpty()) {
      throw failures.get(0);
    }
    return count.get();
  }
}
