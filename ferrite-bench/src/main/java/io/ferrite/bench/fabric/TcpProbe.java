package io.ferrite.bench.fabric;

import io.ferrite.bench.IoThreadCpu;
import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.tcp.TcpFabric;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Where a tcp op's CPU goes: runs one workload over the tcp fabric in this process (a 2 s warm-up
 * round, then a measured round) and prints ops/s beside the CPU time per op of each group of
 * threads: the callers, the client's I/O threads, the server's I/O threads. CPU per op moves much
 * less than throughput when other work shares the machine, so A/B comparisons of the fabric's code
 * use it. Not a suite: no ceiling, no report.
 *
 * <pre>
 * java -cp "ferrite-cli/target/lib/*" io.ferrite.bench.fabric.TcpProbe read 3 4
 * java -cp "ferrite-cli/target/lib/*" io.ferrite.bench.fabric.TcpProbe read 3 1 67108864
 * java -cp "ferrite-cli/target/lib/*" io.ferrite.bench.fabric.TcpProbe write 3 4
 * java -cp "ferrite-cli/target/lib/*" io.ferrite.bench.fabric.TcpProbe small 3 16 64 1
 * </pre>
 *
 * Arguments: {@code read|write SECONDS DEPTH [SIZE]} keeps DEPTH ops of SIZE bytes (1 MiB) in
 * flight from one thread; {@code small SECONDS BATCH SIZE THREADS} has THREADS threads each doing
 * one blocking read of SIZE bytes at a time (BATCH 1) or batches of BATCH reads per flush.
 */
public final class TcpProbe {
  private static final long WINDOW = 16L << 20;
  private static final AtomicLong CALLER_CPU = new AtomicLong();

  private TcpProbe() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 3) {
      System.err.println(
          "usage: TcpProbe read|write SECONDS DEPTH [SIZE] | small SECONDS BATCH SIZE THREADS");
      System.exit(2);
    }
    String mode = args[0];
    int seconds = Integer.parseInt(args[1]);
    int depthOrBatch = Integer.parseInt(args[2]);
    int size = args.length > 3 ? Integer.parseInt(args[3]) : 1 << 20;
    int threads = args.length > 4 ? Integer.parseInt(args[4]) : 1;
    Path dir = Files.createTempDirectory(FabricBench.defaultDirectory(), "ferrite-probe-");
    Credentials credentials = new Credentials("probe", new byte[32]);
    long regionBytes = Math.max(128L << 20, 2L * size);
    MappedRegion region = MappedRegion.create(dir.resolve("region"), 1, regionBytes, 42L);
    long window = Math.max(WINDOW, size);
    // Every byte the ops touch is written first: a read of a hole would be a read of the zero page.
    for (int i = 0; i < window; i += 8) {
      region.buffer().putLong(i, i);
    }
    RegionTable table = new RegionTable();
    table.register(region);
    try (TcpFabric fabric = new TcpFabric();
        FabricServer server =
            fabric.serve(ServerSpec.loopback(1, credentials, table, BenchEndpoint.handler(), dir));
        FabricConnection conn = fabric.connect(server.address(), ConnectOptions.of(credentials))) {
      RegionRef ref = table.ref(1, 1);
      for (int round = 0; round < 2; round++) {
        long nanos = (round == 0 ? 2L : seconds) * 1_000_000_000L;
        Map<String, Long> before = IoThreadCpu.byGroup();
        CALLER_CPU.set(0);
        long t0 = System.nanoTime();
        long ops =
            mode.equals("small")
                ? small(conn, ref, depthOrBatch, size, threads, t0 + nanos, window)
                : bulk(conn, ref, mode.equals("read"), depthOrBatch, size, t0 + nanos, window);
        double sec = (System.nanoTime() - t0) / 1e9;
        Map<String, Long> after = IoThreadCpu.byGroup();
        after.put("callers", CALLER_CPU.get());
        StringBuilder cpu = new StringBuilder();
        for (Map.Entry<String, Long> e : after.entrySet()) {
          long d = e.getValue() - before.getOrDefault(e.getKey(), 0L);
          cpu.append(
              String.format(
                  Locale.ROOT,
                  " %s %.0f%% %.2fus/op",
                  e.getKey(),
                  100 * d / 1e9 / sec,
                  d / 1e3 / Math.max(1, ops)));
        }
        System.out.printf(
            Locale.ROOT,
            "%s round %d: %.0f ops/s, %.0f MiB/s |%s%n",
            mode,
            round,
            ops / sec,
            ops * (double) size / sec / (1 << 20),
            cpu);
      }
    } finally {
      region.closeAndDelete();
      Files.deleteIfExists(dir);
    }
  }

  private static long bulk(
      FabricConnection conn,
      RegionRef ref,
      boolean read,
      int depth,
      int size,
      long deadline,
      long window) {
    long cpu0 = ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
    ByteBuffer[] buffers = new ByteBuffer[depth];
    List<CompletableFuture<Void>> inflight = new ArrayList<>();
    long i = 0;
    for (int k = 0; k < depth; k++) {
      buffers[k] = ByteBuffer.allocateDirect(size);
      inflight.add(issue(conn, ref, read, buffers[k], (i++ * size) % window));
    }
    long ops = 0;
    int k = 0;
    while (System.nanoTime() < deadline) {
      Futures.join(inflight.get(k));
      ops++;
      inflight.set(k, issue(conn, ref, read, buffers[k], (i++ * size) % window));
      k = (k + 1) % depth;
    }
    for (CompletableFuture<Void> f : inflight) {
      Futures.join(f);
      ops++;
    }
    CALLER_CPU.addAndGet(ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() - cpu0);
    return ops;
  }

  private static CompletableFuture<Void> issue(
      FabricConnection conn, RegionRef ref, boolean read, ByteBuffer b, long offset) {
    return read ? conn.read(ref, offset, b) : conn.write(ref, offset, b);
  }

  private static long small(
      FabricConnection conn,
      RegionRef ref,
      int batch,
      int size,
      int threads,
      long deadline,
      long window)
      throws InterruptedException {
    AtomicLong total = new AtomicLong();
    NamedThreadFactory tf = new NamedThreadFactory("probe", true);
    List<Thread> ts = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      long first = t * 1_000_003L;
      ts.add(
          tf.newThread(
              () -> {
                ThreadMXBean mx = ManagementFactory.getThreadMXBean();
                long cpu0 = mx.getCurrentThreadCpuTime();
                ByteBuffer[] dst = new ByteBuffer[batch];
                for (int k = 0; k < batch; k++) {
                  dst[k] = ByteBuffer.allocateDirect(size);
                }
                long ops = 0;
                long i = first;
                while (System.nanoTime() < deadline) {
                  if (batch == 1) {
                    conn.readSync(ref, (i++ * 64) % window, dst[0]);
                    ops++;
                  } else {
                    Batch b = conn.batch();
                    for (int k = 0; k < batch; k++) {
                      b.read(ref, (i++ * 64) % window, dst[k]);
                    }
                    Futures.join(b.flush());
                    ops += batch;
                  }
                }
                total.addAndGet(ops);
                CALLER_CPU.addAndGet(mx.getCurrentThreadCpuTime() - cpu0);
              }));
    }
    for (Thread t : ts) {
      t.start();
    }
    for (Thread t : ts) {
      t.join();
    }
    return total.get();
  }
}
