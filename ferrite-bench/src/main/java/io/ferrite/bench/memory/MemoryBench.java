package io.ferrite.bench.memory;

import io.ferrite.bench.BenchConfig;
import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.LatencyRecorder;
import io.ferrite.bench.Measure;
import io.ferrite.bench.Progress;
import io.ferrite.bench.Sizes;
import io.ferrite.bench.Workload;
import io.ferrite.bench.ceiling.MemcpyCeiling;
import io.ferrite.bench.ceiling.SocketCeiling;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.Futures;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.local.InProcessCluster;
import io.ferrite.kernel.master.Master;
import io.ferrite.memory.Mapping;
import io.ferrite.memory.MemoryFlags;
import io.ferrite.memory.Namespace;
import io.ferrite.memory.RAddress;
import io.ferrite.memory.RStore;
import io.ferrite.memory.master.MemoryMaster;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * {@code ferrite bench memory}: the memory face (RStore) on a local cluster started in this process
 * (a master with the memory face and {@link Options#servers()} memory servers on tcp and shm, 1 MiB
 * blocks = chunks, allocations striped over the servers).
 *
 * <p>Control path (RStore Figure 3), one client over the fabric {@code auto} picks (shm on this
 * host), for each size from 64 MiB doubling to {@link Options#maxBytes()}:
 *
 * <ul>
 *   <li>{@code memory.{reserve,alloc,map}.<size>.cold} (ms): a fresh namespace; reserve takes fresh
 *       blocks from the servers and commits their pages (zeroes them); map opens the mapping's
 *       staging buffer. Reserve and map are compared with {@code ceiling.allocate.<size>}:
 *       allocating and zeroing the same amount of memory in this JVM (RStore's "Linux mmap" line);
 *       alloc with one RPC to the master ({@code ceiling.master.rpc}).
 *   <li>{@code memory.{reserve,alloc,map}.<size>.cached} (ms): after unmap, free and release, the
 *       same cycle again, served by the master's cache of ready blocks and the client's cache of
 *       staging buffers (§IV-B). Compared with the cold figure, so the ratio is the speed-up.
 * </ul>
 *
 * <p>Data path, for each fabric (shm, tcp) through a 64 MiB mapping striped over every server: read
 * and write latency of 8 B and 1 KiB (ns; beside memcpy for shm, the raw loopback ping-pong for
 * tcp), and bandwidth of 1 MiB ops ({@link Options#depth()} in flight) and of whole 64 MiB reads
 * and writes (each split into 64 chunk ops issued in parallel), beside memcpy of the same size
 * (shm) or the raw loopback stream (tcp); over tcp the 64 MiB read is repeated as {@code
 * memory.tcp.read.64MiB.bandwidth.samework} beside {@code ceiling.socket.stream.64MiB.bandwidth},
 * the same stream received front to back into a 64 MiB buffer.
 */
public final class MemoryBench {
  public static final String SUITE = "memory";
  static final int[] LATENCY_SIZES = {8, Sizes.KIB};
  static final int MIB_OP = Sizes.MIB;
  static final int DATA_BYTES = 64 * Sizes.MIB;
  static final long FIRST_SIZE = 64L << 20;
  private static final String MS = "ms";

  /**
   * Suffix of the tcp 64 MiB read repeated beside {@code ceiling.socket.stream.64MiB.bandwidth}, a
   * raw stream that fills a 64 MiB destination as the op does (the 1 MiB stream ceiling fills 4
   * cache-resident buffers).
   */
  public static final String SAME_WORK = ".samework";

  /**
   * What to run.
   *
   * @param fabrics data-path fabrics (shm, tcp)
   * @param iterations timed ops per latency measurement
   * @param duration length of each bandwidth measurement
   * @param depth 1 MiB ops in flight in the 1 MiB bandwidth measurements
   * @param maxBytes largest control-path size (64 MiB doubling up to it)
   * @param servers memory servers in the local cluster
   * @param directory where the cluster's files go (a temporary directory inside, deleted)
   * @param progress progress lines; null for none
   */
  public record Options(
      List<String> fabrics,
      int iterations,
      Duration duration,
      int depth,
      long maxBytes,
      int servers,
      Path directory,
      PrintStream progress) {
    public Options {
      fabrics = List.copyOf(fabrics);
      for (String f : fabrics) {
        if (!f.equals("shm") && !f.equals("tcp")) {
          throw new IllegalArgumentException("fabric: " + f + " (expected: shm or tcp)");
        }
      }
      if (maxBytes < FIRST_SIZE) {
        throw new IllegalArgumentException(
            "max size: " + maxBytes + " (expected: >= " + FIRST_SIZE + ")");
      }
      if (servers < 1 || servers > 16 || depth < 1 || iterations < 1) {
        throw new IllegalArgumentException(
            "servers: "
                + servers
                + ", depth: "
                + depth
                + ", iterations: "
                + iterations
                + " (expected: 1 to 16, >= 1, >= 1)");
      }
    }

    /** shm and tcp, 20,000 ops per latency, 2 s per bandwidth, 4 in flight, up to 1 GiB. */
    public static Options defaults() {
      return new Options(
          List.of("shm", "tcp"),
          20_000,
          Duration.ofSeconds(2),
          4,
          1L << 30,
          2,
          Path.of("/dev/shm"),
          System.err);
    }

    /** A smoke test: 300 ops, 100 ms, 64 MiB only. */
    public static Options quick() {
      return defaults().with(300, Duration.ofMillis(100), FIRST_SIZE);
    }

    public Options with(int iterations, Duration duration, long maxBytes) {
      return new Options(
          fabrics, iterations, duration, depth, maxBytes, servers, directory, progress);
    }

    public Options withFabrics(List<String> f) {
      return new Options(f, iterations, duration, depth, maxBytes, servers, directory, progress);
    }

    public Options withShape(int depth, int servers, Path directory) {
      return new Options(
          fabrics, iterations, duration, depth, maxBytes, servers, directory, progress);
    }

    public Options withProgress(PrintStream p) {
      return new Options(fabrics, iterations, duration, depth, maxBytes, servers, directory, p);
    }

    List<Long> sizes() {
      List<Long> out = new ArrayList<>();
      for (long s = FIRST_SIZE; s <= maxBytes; s *= 2) {
        out.add(s);
      }
      return out;
    }
  }

  private MemoryBench() {}

  public static BenchReport run(Options o) throws Exception {
    BenchReport report = new BenchReport(SUITE);
    Progress progress = new Progress("bench " + SUITE, o.progress());
    Measure.Plan plan = Measure.Plan.of(o.iterations(), o.duration());

    MemcpyCeiling.measure(report, plan, new Workload(16L << 20), LATENCY_SIZES, MIB_OP, progress);
    MemcpyCeiling.measure(report, plan, new Workload(DATA_BYTES), new int[0], DATA_BYTES, progress);
    try (SocketCeiling socket = SocketCeiling.start()) {
      socket.measure(report, plan, LATENCY_SIZES, MIB_OP, progress);
      if (o.fabrics().contains("tcp")) {
        // The same work as a whole 64 MiB read: the stream received into a 64 MiB destination.
        socket.measureFill(report, plan, new Workload(16L << 20), MIB_OP, DATA_BYTES, progress);
      }
    }
    try (Cluster cluster = Cluster.start(o, progress)) {
      controlPath(report, o, cluster, progress);
      for (String f : o.fabrics()) {
        dataPath(report, o, plan, cluster, f, progress);
      }
    }
    progress.step("done");
    return report;
  }

  // ---------------------------------------------------------------- control path

  private static double ms(long nanos) {
    return nanos / 1e6;
  }

  private static void controlPath(BenchReport report, Options o, Cluster cluster, Progress p)
      throws Exception {
    RStore store = new RStore(cluster.client("auto"), 2 * o.maxBytes());
    // The reference of alloc: one RPC to the master's memory service (STAT), median of 200.
    Namespace probe = store.createNamespace("bench-probe");
    LatencyRecorder rpc = new LatencyRecorder();
    for (int i = 0; i < 400; i++) {
      long t0 = System.nanoTime();
      probe.stat();
      if (i >= 200) {
        rpc.record(System.nanoTime() - t0);
      }
    }
    store.deleteNamespace("bench-probe");
    BenchResult rpcRef =
        report.add(
            BenchResult.of(
                "ceiling.master.rpc.p50",
                rpc.value(LatencyRecorder.Statistic.values()[0]) / 1e6,
                MS,
                Better.LOWER));
    // Warm the code paths (JIT, class loading) with small cycles: "cold" below means cold memory,
    // not a cold JVM. The warm-up namespace keeps its one block, so nothing of it is cached.
    p.step("control path: warming up the code paths with 1 MiB cycles");
    Namespace warmup = store.createNamespace("bench-warmup");
    for (int i = 0; i < 50; i++) {
      cycle(warmup, Sizes.MIB);
      if (i < 49) {
        warmup.release(Sizes.MIB);
      }
    }
    for (long size : o.sizes()) {
      String s = Sizes.label(size);
      p.step("control path " + s + ": local allocation ceiling");
      long t0 = System.nanoTime();
      ByteBuffer local = ByteBuffer.allocateDirect((int) Math.min(size, Integer.MAX_VALUE - 8));
      long allocNanos = System.nanoTime() - t0;
      p.step("allocated and zeroed " + Sizes.label(local.capacity()) + " here");
      BenchResult allocRef =
          report.add(BenchResult.of("ceiling.allocate." + s, ms(allocNanos), MS, Better.LOWER));

      p.step("control path " + s + ": cold reserve, alloc, map");
      Namespace ns = store.createNamespace("bench-" + s);
      long[] cold = cycle(ns, size);
      BenchResult reserveCold =
          report.add(
              BenchResult.against(
                  "memory.reserve." + s + ".cold", ms(cold[0]), MS, Better.LOWER, allocRef));
      BenchResult allocCold =
          report.add(
              BenchResult.against(
                  "memory.alloc." + s + ".cold", ms(cold[1]), MS, Better.LOWER, rpcRef));
      BenchResult mapCold =
          report.add(
              BenchResult.against(
                  "memory.map." + s + ".cold", ms(cold[2]), MS, Better.LOWER, allocRef));
      ns.release(size);
      p.step("control path " + s + ": cached reserve, alloc, map");
      long[] warm = cycle(ns, size);
      report.add(
          BenchResult.against(
              "memory.reserve." + s + ".cached", ms(warm[0]), MS, Better.LOWER, reserveCold));
      report.add(
          BenchResult.against(
              "memory.alloc." + s + ".cached", ms(warm[1]), MS, Better.LOWER, allocCold));
      report.add(
          BenchResult.against(
              "memory.map." + s + ".cached", ms(warm[2]), MS, Better.LOWER, mapCold));
      // The namespace keeps its reserve, so the next size's cold reserve gets fresh memory.
    }
  }

  /** reserve, alloc, map, then unmap and free; returns the three times in ns. */
  private static long[] cycle(Namespace ns, long size) {
    long t0 = System.nanoTime();
    ns.reserve(size);
    long t1 = System.nanoTime();
    RAddress ra = ns.alloc(size, MemoryFlags.ALLOC_DEFAULT);
    long t2 = System.nanoTime();
    int flags = size > Integer.MAX_VALUE - 8 ? MemoryFlags.MAP_NO_BUFFER : MemoryFlags.MAP_DEFAULT;
    Mapping m = ra.map(flags);
    long t3 = System.nanoTime();
    m.unmap();
    ns.free(ra);
    return new long[] {t1 - t0, t2 - t1, t3 - t2};
  }

  // ---------------------------------------------------------------- data path

  private static void dataPath(
      BenchReport report, Options o, Measure.Plan plan, Cluster cluster, String f, Progress p)
      throws Exception {
    p.step(
        f + ": mapping " + Sizes.label(DATA_BYTES) + " striped over " + o.servers() + " servers");
    RStore store = new RStore(cluster.client(f));
    Namespace ns = store.createNamespace("bench-data-" + f);
    ns.reserve(DATA_BYTES);
    RAddress ra = ns.alloc(DATA_BYTES, 0);
    Mapping m = ra.map(MemoryFlags.MAP_NO_BUFFER);
    boolean shm = f.equals("shm");
    Workload workload = new Workload(16L << 20);
    for (String op : List.of("read", "write")) {
      boolean write = op.equals("write");
      for (int size : LATENCY_SIZES) {
        String name = "memory." + f + "." + op + "." + Sizes.label(size);
        p.step(name + " latency");
        ByteBuffer buf = ByteBuffer.allocateDirect(size);
        LatencyRecorder rec =
            Measure.latency(
                plan,
                i -> {
                  long off = workload.offset(i, size);
                  if (write) {
                    m.writeSync(off, buf);
                  } else {
                    m.readSync(off, buf);
                  }
                });
        Measure.addLatency(
            report, name, rec, shm ? MemcpyCeiling.name(size) : SocketCeiling.pingPong(size));
      }
    }
    for (String op : List.of("read", "write")) {
      boolean write = op.equals("write");
      String name = "memory." + f + "." + op + "." + Sizes.label(MIB_OP) + ".bandwidth";
      p.step(name + " (" + o.depth() + " in flight)");
      double mibs = Measure.bandwidth(plan, pipelined(o.depth(), m, write, workload));
      report.add(
          BenchResult.against(
              name,
              mibs,
              Sizes.BANDWIDTH_UNIT,
              Better.HIGHER,
              report.require(
                  shm ? MemcpyCeiling.name(MIB_OP) + ".bandwidth" : SocketCeiling.stream(MIB_OP))));
    }
    ByteBuffer whole = ByteBuffer.allocateDirect(DATA_BYTES);
    for (String op : List.of("read", "write")) {
      boolean write = op.equals("write");
      String name = "memory." + f + "." + op + "." + Sizes.label(DATA_BYTES) + ".bandwidth";
      p.step(name);
      double mibs =
          Measure.bandwidth(
              plan,
              deadline -> {
                long bytes = 0;
                do {
                  if (write) {
                    m.writeSync(0, whole);
                  } else {
                    m.readSync(0, whole);
                  }
                  bytes += DATA_BYTES;
                } while (System.nanoTime() < deadline);
                return bytes;
              });
      report.add(
          BenchResult.against(
              name,
              mibs,
              Sizes.BANDWIDTH_UNIT,
              Better.HIGHER,
              report.require(
                  shm
                      ? MemcpyCeiling.name(DATA_BYTES) + ".bandwidth"
                      : SocketCeiling.stream(MIB_OP))));
      if (!shm && !write) {
        report.add(
            BenchResult.against(
                name + SAME_WORK,
                mibs,
                Sizes.BANDWIDTH_UNIT,
                Better.HIGHER,
                report.require(SocketCeiling.stream(DATA_BYTES))));
      }
    }
    m.unmap();
    ns.free(ra);
    store.deleteNamespace(ns.name());
  }

  private static Measure.Transfer pipelined(int depth, Mapping m, boolean write, Workload w) {
    ByteBuffer[] buffers = new ByteBuffer[depth];
    for (int s = 0; s < depth; s++) {
      buffers[s] = ByteBuffer.allocateDirect(MIB_OP);
    }
    return deadline -> {
      CompletableFuture<?>[] inflight = new CompletableFuture<?>[depth];
      long i = 0;
      for (int s = 0; s < depth; s++) {
        long off = w.offset(i++, MIB_OP);
        inflight[s] = write ? m.write(off, buffers[s]) : m.read(off, buffers[s]);
      }
      long bytes = 0;
      int s = 0;
      while (System.nanoTime() < deadline) {
        Futures.join(inflight[s]);
        bytes += MIB_OP;
        long off = w.offset(i++, MIB_OP);
        inflight[s] = write ? m.write(off, buffers[s]) : m.read(off, buffers[s]);
        s = (s + 1) % depth;
      }
      for (int k = 0; k < depth; k++) {
        Futures.join(inflight[(s + k) % depth]);
        bytes += MIB_OP;
      }
      return bytes;
    };
  }

  // ---------------------------------------------------------------- the local cluster

  /** A master with the memory face and memory servers on tcp and shm, in this process. */
  static final class Cluster implements AutoCloseable {
    final Path dir;
    final Credentials credentials;
    final List<AutoCloseable> running = new ArrayList<>();
    Master master;

    private Cluster(Path dir) {
      this.dir = dir;
      byte[] secret = new byte[32];
      new SecureRandom().nextBytes(secret);
      this.credentials = new Credentials("bm", secret);
    }

    static Cluster start(Options o, Progress p) throws IOException {
      Path base = Files.isDirectory(o.directory()) ? o.directory() : Path.of("/tmp");
      Cluster c = new Cluster(Files.createTempDirectory(base, "fbm"));
      try {
        long total = DATA_BYTES;
        for (long s : o.sizes()) {
          total += s;
        }
        long perServer = ((total / o.servers()) + (128L << 20)) & -(64L << 20);
        p.step(
            "local cluster: master + "
                + o.servers()
                + " memory servers (tcp, shm), "
                + Sizes.label(perServer)
                + " dram each, 1 MiB blocks, in "
                + c.dir);
        FerriteConfig cfg =
            BenchConfig.builder()
                .set(FerriteConfig.CLUSTER_ID, "bm")
                .set(FerriteConfig.DATA_DIR, c.dir.resolve("d").toString())
                .set(FerriteConfig.SHM_DIR, c.dir.resolve("s").toString())
                .set(FerriteConfig.MASTER_HOST, "127.0.0.1")
                .set(FerriteConfig.MASTER_PORT, "0")
                .set(FerriteConfig.SERVER_HOST, "127.0.0.1")
                .set(FerriteConfig.REGION_SIZE, "64m")
                .set(FerriteConfig.BLOCK_SIZE, "1m")
                .set(FerriteConfig.CAPACITY_DRAM, Long.toString(perServer))
                .set(FerriteConfig.CAPACITY_DISK, "0")
                .set(FerriteConfig.JOURNAL_FSYNC, "false")
                .build();
        InProcessCluster cluster =
            InProcessCluster.builder(cfg, c.credentials)
                .masterFabrics(List.of("tcp"))
                .extensions(List.of(new MemoryMaster(Integer.MAX_VALUE)))
                .servers(o.servers())
                .serverNames(i -> "m" + (i - 1))
                .start();
        c.running.add(cluster);
        c.master = cluster.master();
        return c;
      } catch (RuntimeException e) {
        c.close();
        throw e;
      }
    }

    FerriteClient client(String fabric) {
      FerriteClient client =
          Ferrite.connect(
              master.addresses().get("tcp"),
              ClientOptions.builder(credentials)
                  .fabric(fabric)
                  .fabrics(BenchConfig.fabrics())
                  .config(BenchConfig.environment())
                  .build());
      running.add(client);
      return client;
    }

    @Override
    public void close() throws IOException {
      for (int i = running.size() - 1; i >= 0; i--) {
        try {
          running.get(i).close();
        } catch (Exception e) {
          // Keep closing the rest.
        }
      }
      FileTrees.delete(dir);
    }
  }
}
