package io.ferrite.bench.fabric;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.LatencyRecorder;
import io.ferrite.bench.Measure;
import io.ferrite.bench.Progress;
import io.ferrite.bench.Sizes;
import io.ferrite.bench.Throughput;
import io.ferrite.bench.Workload;
import io.ferrite.bench.ceiling.MemcpyCeiling;
import io.ferrite.bench.ceiling.SocketCeiling;
import io.ferrite.fabric.Batch;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * {@code ferrite bench fabric}: one-sided read latency, empty-RPC latency and 1 MiB read/write
 * bandwidth of each fabric, each beside the ceiling it is bounded by, measured in the same run.
 *
 * <p>For every fabric the suite starts an in-process server over a region file (under {@code
 * /dev/shm} when it exists), connects a client through the same fabric, and measures:
 *
 * <ul>
 *   <li>{@code <fabric>.read.<8B|1KiB|64KiB>.{p50,p99,p99.9}}: one blocking read at a time (ns);
 *   <li>{@code <fabric>.rpc.empty.{p50,p99,p99.9}}: an empty request to a service that answers an
 *       empty response (ns), run on one of the server's dispatch threads like any blocking
 *       operation;
 *   <li>{@code <fabric>.rpc.inline.{p50,p99,p99.9}}: the same, answered by a handler that declares
 *       itself non-blocking, on the thread that received the call (an I/O thread, or the shm ring
 *       poller);
 *   <li>both RPC latencies after at least {@link #RPC_WARMUP} of warm-up calls, also with {@code
 *       --quick}, so that they measure the steady state, not the first calls' cold path;
 *   <li>{@code <fabric>.read.1MiB.bandwidth} and {@code <fabric>.write.1MiB.bandwidth}: 1 MiB ops
 *       with {@link Options#depth()} in flight (MiB/s);
 *   <li>for network fabrics (tcp), small-read throughput, the per-op cost that decides how many
 *       gets a kv client can do: {@code <fabric>.read.<8B|64B>.t<1|16>.ops} (1 or 16 threads
 *       sharing the connection, each doing one blocking read at a time) and {@code
 *       <fabric>.read.64B.batch16.t<1|16>.ops} (each thread sending batches of 16 reads, one flush
 *       per batch, and waiting for all 16), in reads per second; and {@code
 *       <fabric>.rpc.empty.t16.ops}, empty calls served by the dispatch threads from 16 threads
 *       sharing the connection (one call at a time each), beside raw 8 B request/response ops of 16
 *       threads.
 * </ul>
 *
 * <p>References: shm and local (same host, same JVM) are compared with {@link MemcpyCeiling} of the
 * same size; tcp (and any other fabric) with {@link SocketCeiling}: latency with the 8 B → N B
 * ping-pong, bandwidth with the one-way stream, throughput with raw request/response operations of
 * the same size, threads and batching (each raw thread on a connection of its own). RPCs of every
 * fabric are compared with the 8 B ping-pong. The ceilings are in the report too, as {@code
 * ceiling.*} results with no reference.
 *
 * <p>Two 8 B ping-pongs, measured one after the other: {@code ceiling.socket.pingpong.8B}, whose
 * two threads block in {@code read} (on a VM a thread that slept may be woken by an interrupt to a
 * halted vCPU: ~5 µs or 35–80 µs on the 2-vCPU machine of docs/PERFORMANCE.md), and {@code
 * ceiling.socket.pingpong.poll.8B}, whose two threads never block: non-blocking reads in a loop,
 * {@link Thread#yield} after each that found nothing, as the tcp fabric's pollers ({@code
 * tcp.poll.spin.nanos}). A network fabric's empty and inline RPCs (without a {@link #peer}) are
 * reported against both: {@code <f>.rpc.{empty,inline}.p50} against the blocking one (the names of
 * earlier runs), {@code <f>.rpc.{empty,inline}.vs.poll.p50} (the same value) against the polling
 * one, the ceiling of an RPC whose threads poll.
 *
 * <p>{@code tcp-tls} is the tcp fabric with TLS 1.3 (where the tcp fast paths are off: every byte
 * through Netty's pipeline and the SSL engine). When {@code tcp} runs before it, every {@code
 * tcp-tls} result is compared with the same {@code tcp} result of this run, so its ratio is the
 * cost of TLS; otherwise with the socket ceilings, as tcp's are.
 */
public final class FabricBench {
  public static final String SUITE = "fabric";

  /** Sizes of the read latency measurements. */
  public static final int[] LATENCY_SIZES = {8, Sizes.KIB, 64 * Sizes.KIB};

  /** Size of the ops of the bandwidth measurements. */
  public static final int BANDWIDTH_SIZE = Sizes.MIB;

  /** Sizes of the small-read throughput measurements (network fabrics). */
  public static final int[] OPS_SIZES = {8, 64};

  /** Client threads of the throughput measurements. */
  public static final int[] OPS_THREADS = {1, 16};

  /** Reads per batch in the batched throughput measurement, and the size they read. */
  public static final int OPS_BATCH = 16;

  public static final int OPS_BATCH_SIZE = 64;

  /** The ping-pong with the smallest response is the reference of an empty RPC. */
  private static final int RPC_REFERENCE_SIZE = 8;

  /**
   * Suffix of an RPC latency's p50 against the polling ping-pong, e.g. tcp.rpc.empty.vs.poll.p50.
   */
  static final String VS_POLL = ".vs.poll";

  /** Largest window of the region the ops step through (see {@link Workload}). */
  private static final long MAX_WINDOW = 16L << 20;

  private static final Duration RPC_DEADLINE = Duration.ofSeconds(10);

  /**
   * Least warm-up of an RPC latency measurement, also with {@code --quick}: a call path's first
   * hundreds of calls run cold (JIT; the shm client judging the kind slow and blocking rather than
   * spinning; a parked ring poller and dispatch thread) and a short warm-up measured that state.
   */
  static final Duration RPC_WARMUP = Duration.ofMillis(250);

  /**
   * What to run.
   *
   * @param fabrics fabric names, in order ("shm", "tcp", "local")
   * @param iterations timed ops per latency measurement (a quarter as many, and at least a quarter
   *     of {@code duration}, warm up first)
   * @param duration length of each bandwidth measurement (a quarter as long warms up first)
   * @param depth 1 MiB ops in flight during bandwidth measurements
   * @param regionBytes size of the region each server serves
   * @param directory where region files and sockets go (a temporary directory is made inside)
   * @param progress where progress lines go; null for none
   * @param factory makes a fabric from its name
   */
  public record Options(
      List<String> fabrics,
      int iterations,
      Duration duration,
      int depth,
      long regionBytes,
      Path directory,
      PrintStream progress,
      Function<String, Fabric> factory) {
    public Options {
      fabrics = List.copyOf(fabrics);
      if (fabrics.isEmpty()) {
        throw new IllegalArgumentException("fabrics: [] (expected: at least one)");
      }
      if (depth < 1) {
        throw new IllegalArgumentException("depth: " + depth + " (expected: >= 1)");
      }
      if (regionBytes < BANDWIDTH_SIZE) {
        throw new IllegalArgumentException(
            "regionBytes: " + regionBytes + " (expected: >= " + BANDWIDTH_SIZE + ")");
      }
      Objects.requireNonNull(duration, "duration");
      Objects.requireNonNull(directory, "directory");
      Objects.requireNonNull(factory, "factory");
    }

    /**
     * shm, tcp and tcp with TLS, 20,000 timed ops per latency, 2 s per bandwidth, 4 in flight, 128
     * MiB.
     */
    public static Options defaults() {
      return new Options(
          List.of("shm", "tcp", Fabrics.TCP_TLS),
          20_000,
          Duration.ofSeconds(2),
          4,
          128L << 20,
          defaultDirectory(),
          System.err,
          Fabrics::create);
    }

    /** A smoke-test run of a few seconds: 300 ops per latency, 100 ms per bandwidth, 16 MiB. */
    public static Options quick() {
      return defaults()
          .withIterations(300)
          .withDuration(Duration.ofMillis(100))
          .withRegionBytes(16L << 20);
    }

    public Options withFabrics(List<String> f) {
      return new Options(f, iterations, duration, depth, regionBytes, directory, progress, factory);
    }

    public Options withIterations(int n) {
      return new Options(fabrics, n, duration, depth, regionBytes, directory, progress, factory);
    }

    public Options withDuration(Duration d) {
      return new Options(fabrics, iterations, d, depth, regionBytes, directory, progress, factory);
    }

    public Options withDepth(int d) {
      return new Options(
          fabrics, iterations, duration, d, regionBytes, directory, progress, factory);
    }

    public Options withRegionBytes(long b) {
      return new Options(fabrics, iterations, duration, depth, b, directory, progress, factory);
    }

    public Options withDirectory(Path d) {
      return new Options(fabrics, iterations, duration, depth, regionBytes, d, progress, factory);
    }

    public Options withProgress(PrintStream p) {
      return new Options(fabrics, iterations, duration, depth, regionBytes, directory, p, factory);
    }

    public Options withFactory(Function<String, Fabric> f) {
      return new Options(fabrics, iterations, duration, depth, regionBytes, directory, progress, f);
    }

    Measure.Plan plan() {
      return Measure.Plan.of(iterations, duration);
    }
  }

  private FabricBench() {}

  /** {@code /dev/shm} where it exists (DRAM-tier regions live there), else the temp directory. */
  public static Path defaultDirectory() {
    Path shm = Path.of("/dev/shm");
    return Files.isDirectory(shm) && Files.isWritable(shm)
        ? shm
        : Path.of(System.getProperty("java.io.tmpdir"));
  }

  /**
   * The fabric whose results of this run {@code fabric}'s are compared with, or null for the
   * ceilings: tcp for tcp-tls when tcp ran first.
   */
  static String peer(String fabric, List<String> fabrics) {
    int tcp = fabrics.indexOf("tcp");
    return fabric.equals(Fabrics.TCP_TLS) && tcp >= 0 && tcp < fabrics.indexOf(fabric)
        ? "tcp"
        : null;
  }

  /** True for fabrics whose data path is a memory copy in this host (compared with memcpy). */
  static boolean sameHost(String fabric) {
    return fabric.equals("shm") || fabric.equals("local");
  }

  /** Every result name a run with {@code fabrics} produces, in report order. */
  public static List<String> expectedNames(List<String> fabrics) {
    List<String> names = new ArrayList<>();
    List<String> stats = new ArrayList<>();
    for (LatencyRecorder.Statistic s : LatencyRecorder.Statistic.values()) {
      stats.add(s.label());
    }
    for (int size : LATENCY_SIZES) {
      stats.forEach(s -> names.add(MemcpyCeiling.name(size) + "." + s));
    }
    names.add(MemcpyCeiling.name(BANDWIDTH_SIZE) + ".bandwidth");
    stats.forEach(s -> names.add(SocketCeiling.pingPongPoll(RPC_REFERENCE_SIZE) + "." + s));
    for (int size : LATENCY_SIZES) {
      stats.forEach(s -> names.add(SocketCeiling.pingPong(size) + "." + s));
    }
    names.add(SocketCeiling.requestResponse(BANDWIDTH_SIZE));
    names.add(SocketCeiling.streamOneBuffer(BANDWIDTH_SIZE));
    names.add(SocketCeiling.stream(BANDWIDTH_SIZE));
    boolean network = fabrics.stream().anyMatch(f -> !sameHost(f));
    if (network) {
      for (int[] o : opsShapes()) {
        names.add(SocketCeiling.ops(o[0], o[1], o[2]));
      }
    }
    for (String f : fabrics) {
      for (int size : LATENCY_SIZES) {
        stats.forEach(s -> names.add(f + ".read." + Sizes.label(size) + "." + s));
      }
      boolean vsPoll = !sameHost(f) && peer(f, fabrics) == null;
      stats.forEach(s -> names.add(f + ".rpc.empty." + s));
      if (vsPoll) {
        names.add(f + ".rpc.empty" + VS_POLL + ".p50");
      }
      stats.forEach(s -> names.add(f + ".rpc.inline." + s));
      if (vsPoll) {
        names.add(f + ".rpc.inline" + VS_POLL + ".p50");
      }
      names.add(f + ".read." + Sizes.label(BANDWIDTH_SIZE) + ".bandwidth");
      names.add(f + ".write." + Sizes.label(BANDWIDTH_SIZE) + ".bandwidth");
      if (!sameHost(f)) {
        for (int[] o : opsShapes()) {
          names.add(opsName(f, o[0], o[1], o[2]));
        }
        names.add(rpcOpsName(f));
      }
    }
    return names;
  }

  /** The throughput measurements as {size, batch, threads}, in report order. */
  private static List<int[]> opsShapes() {
    List<int[]> shapes = new ArrayList<>();
    for (int size : OPS_SIZES) {
      for (int threads : OPS_THREADS) {
        shapes.add(new int[] {size, 1, threads});
      }
    }
    for (int threads : OPS_THREADS) {
      shapes.add(new int[] {OPS_BATCH_SIZE, OPS_BATCH, threads});
    }
    return shapes;
  }

  /** Client threads of the RPC throughput measurement (network fabrics). */
  public static final int RPC_OPS_THREADS = 16;

  /** E.g. {@code tcp.rpc.empty.t16.ops}. */
  static String rpcOpsName(String fabric) {
    return fabric + ".rpc.empty.t" + RPC_OPS_THREADS + ".ops";
  }

  /** E.g. {@code tcp.read.64B.t16.ops}, {@code tcp.read.64B.batch16.t1.ops}. */
  static String opsName(String fabric, int size, int batch, int threads) {
    return fabric
        + ".read."
        + Sizes.label(size)
        + (batch > 1 ? ".batch" + batch : "")
        + ".t"
        + threads
        + ".ops";
  }

  /** Measures the ceilings, then every fabric of {@code options}; frees everything it made. */
  public static BenchReport run(Options options) throws Exception {
    BenchReport report = new BenchReport(SUITE);
    Progress progress = new Progress("bench " + SUITE, options.progress());
    Measure.Plan plan = options.plan();
    Workload workload = new Workload(Math.min(options.regionBytes(), MAX_WINDOW));

    MemcpyCeiling.measure(report, plan, workload, LATENCY_SIZES, BANDWIDTH_SIZE, progress);
    try (SocketCeiling socket = SocketCeiling.start()) {
      // Right before the blocking ping-pong of the same size, so that both see the same minute.
      socket.measurePollPingPong(report, plan, RPC_REFERENCE_SIZE, progress);
      socket.measure(
          report, plan, workload, options.depth(), LATENCY_SIZES, BANDWIDTH_SIZE, progress);
      if (options.fabrics().stream().anyMatch(f -> !sameHost(f))) {
        for (int[] o : opsShapes()) {
          socket.measureOps(report, plan, o[0], o[1], o[2], progress);
        }
      }
    }
    for (String name : options.fabrics()) {
      progress.step(name + ": starting server and connecting");
      try (BenchEndpoint endpoint =
          BenchEndpoint.open(
              options.factory().apply(name),
              options.directory(),
              options.regionBytes(),
              workload.window())) {
        measureFabric(
            report,
            options,
            plan,
            workload,
            endpoint,
            name,
            peer(name, options.fabrics()),
            progress);
      }
    }
    progress.step("done");
    return report;
  }

  private static void measureFabric(
      BenchReport report,
      Options options,
      Measure.Plan plan,
      Workload workload,
      BenchEndpoint endpoint,
      String f,
      String peer,
      Progress progress)
      throws Exception {
    FabricConnection conn = endpoint.connection();
    RegionRef ref = endpoint.ref();
    boolean sameHost = sameHost(f);

    for (int size : LATENCY_SIZES) {
      String prefix = f + ".read." + Sizes.label(size);
      progress.step(prefix + " latency");
      ByteBuffer dst = ByteBuffer.allocateDirect(size);
      LatencyRecorder rec =
          Measure.latency(plan, i -> conn.readSync(ref, workload.offset(i, size), dst));
      Measure.addLatency(
          report,
          prefix,
          rec,
          peer != null
              ? peer + ".read." + Sizes.label(size)
              : sameHost ? MemcpyCeiling.name(size) : SocketCeiling.pingPong(size));
    }

    String rpc = f + ".rpc.empty";
    progress.step(rpc + " latency");
    ByteBuffer empty = ByteBuffer.allocate(0);
    Measure.Plan rpcPlan =
        plan.warmup().compareTo(RPC_WARMUP) >= 0
            ? plan
            : new Measure.Plan(
                plan.warmupIterations(), plan.iterations(), RPC_WARMUP, plan.duration());
    LatencyRecorder rpcRec =
        Measure.latency(
            rpcPlan,
            i -> conn.callSync(BenchEndpoint.SERVICE, BenchEndpoint.OP_EMPTY, empty, RPC_DEADLINE));
    Measure.addLatency(
        report,
        rpc,
        rpcRec,
        peer != null ? peer + ".rpc.empty" : SocketCeiling.pingPong(RPC_REFERENCE_SIZE));
    addVsPoll(report, rpc, rpcRec, !sameHost && peer == null);
    String inline = f + ".rpc.inline";
    progress.step(inline + " latency");
    LatencyRecorder inlineRec =
        Measure.latency(
            rpcPlan,
            i ->
                conn.callSync(BenchEndpoint.SERVICE, BenchEndpoint.OP_INLINE, empty, RPC_DEADLINE));
    Measure.addLatency(
        report,
        inline,
        inlineRec,
        peer != null ? peer + ".rpc.inline" : SocketCeiling.pingPong(RPC_REFERENCE_SIZE));
    addVsPoll(report, inline, inlineRec, !sameHost && peer == null);

    String label = Sizes.label(BANDWIDTH_SIZE);
    BenchResult bandwidthRef =
        report.require(
            sameHost
                ? MemcpyCeiling.name(BANDWIDTH_SIZE) + ".bandwidth"
                : SocketCeiling.stream(BANDWIDTH_SIZE));
    int depth = options.depth();
    progress.step(f + ".read." + label + " bandwidth (" + depth + " in flight)");
    double read =
        Measure.bandwidth(
            plan,
            pipelined(depth, (buf, i) -> conn.read(ref, workload.offset(i, BANDWIDTH_SIZE), buf)));
    report.add(
        BenchResult.against(
            f + ".read." + label + ".bandwidth",
            read,
            Sizes.BANDWIDTH_UNIT,
            Better.HIGHER,
            peer != null ? report.require(peer + ".read." + label + ".bandwidth") : bandwidthRef));

    progress.step(f + ".write." + label + " bandwidth (" + depth + " in flight)");
    double write =
        Measure.bandwidth(
            plan,
            pipelined(depth, (buf, i) -> conn.write(ref, workload.offset(i, BANDWIDTH_SIZE), buf)));
    report.add(
        BenchResult.against(
            f + ".write." + label + ".bandwidth",
            write,
            Sizes.BANDWIDTH_UNIT,
            Better.HIGHER,
            peer != null ? report.require(peer + ".write." + label + ".bandwidth") : bandwidthRef));
    if (!sameHost) {
      for (int[] o : opsShapes()) {
        int size = o[0];
        int batch = o[1];
        int threads = o[2];
        String name = opsName(f, size, batch, threads);
        progress.step(name);
        double ops =
            Throughput.opsPerSecond(
                plan, threads, t -> readSteps(conn, ref, workload, size, batch, t), "ops");
        report.add(
            BenchResult.against(
                name,
                ops,
                SocketCeiling.OPS_UNIT,
                Better.HIGHER,
                report.require(
                    peer != null
                        ? opsName(peer, size, batch, threads)
                        : SocketCeiling.ops(size, batch, threads))));
      }
    }

    if (!sameHost) {
      // Empty calls served by the dispatch threads, 16 callers sharing the connection (each one
      // call at a time), beside raw 8 B request/response ops with as many threads.
      String name = rpcOpsName(f);
      progress.step(name);
      double ops =
          Throughput.opsPerSecond(
              plan,
              RPC_OPS_THREADS,
              t ->
                  i -> {
                    conn.callSync(
                        BenchEndpoint.SERVICE, BenchEndpoint.OP_EMPTY, empty, RPC_DEADLINE);
                    return 1;
                  },
              "rpc");
      report.add(
          BenchResult.against(
              name,
              ops,
              SocketCeiling.OPS_UNIT,
              Better.HIGHER,
              report.require(
                  peer != null
                      ? rpcOpsName(peer)
                      : SocketCeiling.ops(RPC_REFERENCE_SIZE, 1, RPC_OPS_THREADS))));
    }

    // Counts, not times: a sanity check that the ops went where they should (a shm server's CPU
    // serves no one-sided op at all).
    progress.step(f + " client counted: " + conn.counters().snapshot());
    progress.step(f + " server counted: " + endpoint.serverCounters().snapshot());
  }

  /**
   * {@code <prefix>.vs.poll.p50}: {@code rec}'s p50 beside the polling ping-pong's, when {@code
   * yes} (a network fabric compared with the socket ceilings).
   */
  private static void addVsPoll(
      BenchReport report, String prefix, LatencyRecorder rec, boolean yes) {
    if (yes) {
      report.add(
          BenchResult.against(
              prefix + VS_POLL + ".p50",
              rec.value(LatencyRecorder.Statistic.P50),
              LatencyRecorder.UNIT,
              Better.LOWER,
              report.require(SocketCeiling.pingPongPoll(RPC_REFERENCE_SIZE) + ".p50")));
    }
  }

  /**
   * Thread {@code t}'s step of a throughput measurement: one blocking read of {@code size} bytes,
   * or a batch of {@code batch} reads flushed together and awaited together. Threads start at
   * different offsets of the window.
   */
  private static Throughput.Step readSteps(
      FabricConnection conn, RegionRef ref, Workload workload, int size, int batch, int t) {
    ByteBuffer[] dst = new ByteBuffer[batch];
    for (int k = 0; k < batch; k++) {
      dst[k] = ByteBuffer.allocateDirect(size);
    }
    long base = t * 7919L;
    if (batch == 1) {
      return i -> {
        conn.readSync(ref, workload.offset(base + i, size), dst[0]);
        return 1;
      };
    }
    return i -> {
      Batch b = conn.batch();
      for (int k = 0; k < batch; k++) {
        b.read(ref, workload.offset(base + i * batch + k, size), dst[k]);
      }
      Futures.join(b.flush());
      return batch;
    };
  }

  /** Issues one op of {@link #BANDWIDTH_SIZE} bytes on {@code buffer}. */
  @FunctionalInterface
  private interface Issue {
    CompletableFuture<?> issue(ByteBuffer buffer, long i);
  }

  /**
   * Keeps {@code depth} ops in flight, each with its own buffer, until the deadline; then waits for
   * the ones still in flight. Returns the bytes moved. Ops complete in FIFO order on one
   * connection, so waiting for the oldest first costs nothing.
   */
  private static Measure.Transfer pipelined(int depth, Issue op) {
    ByteBuffer[] buffers = new ByteBuffer[depth];
    for (int s = 0; s < depth; s++) {
      buffers[s] = ByteBuffer.allocateDirect(BANDWIDTH_SIZE);
    }
    return deadline -> {
      CompletableFuture<?>[] inflight = new CompletableFuture<?>[depth];
      long i = 0;
      for (int s = 0; s < depth; s++) {
        inflight[s] = op.issue(buffers[s], i++);
      }
      long bytes = 0;
      int s = 0;
      while (System.nanoTime() < deadline) {
        Futures.join(inflight[s]);
        bytes += BANDWIDTH_SIZE;
        inflight[s] = op.issue(buffers[s], i++);
        s = (s + 1) % depth;
      }
      for (int k = 0; k < depth; k++) {
        Futures.join(inflight[(s + k) % depth]);
        bytes += BANDWIDTH_SIZE;
      }
      return bytes;
    };
  }
}
