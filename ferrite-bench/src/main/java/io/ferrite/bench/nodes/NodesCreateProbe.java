package io.ferrite.bench.nodes;

import io.ferrite.bench.BenchConfig;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricTuning;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.shm.ShmFabric;
import io.ferrite.fabric.tcp.TcpFabric;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.Master;
import io.ferrite.nodes.Nodes;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Where the 16 threads' File creates of {@code bench nodes} ({@code
 * tcp.fsync.file.create.close.threads.16}, {@link NodesMetadataBench}) go: the same cluster (master
 * with its journal fsynced, two servers, tcp), the same 16 threads creating and closing empty
 * Files, once per given {@code tcp.poll.spin.nanos}; prints the rate beside 5 / fsync p50, the
 * journal's fsyncs and records per fsync, and the CPU time per create of each group of threads (the
 * callers, the tcp server loops, the master's dispatch threads, the journal thread, the client
 * loops). Not a suite: no report.
 *
 * <pre>
 * java -cp "ferrite-cli/target/lib/*" io.ferrite.bench.nodes.NodesCreateProbe 3 0 50000
 * </pre>
 *
 * Arguments: {@code SECONDS SPIN_NANOS...}; {@code -Dferrite.probe.snapshotEvery=N} sets the
 * master's {@code journal.snapshot.every} (default 10000, as the bench's); {@code
 * -Dferrite.probe.prefill=N} creates N Files (16 threads) before each measurement.
 */
public final class NodesCreateProbe {
  private static final int THREADS = 16;

  private NodesCreateProbe() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: NodesCreateProbe SECONDS SPIN_NANOS...");
      System.exit(2);
    }
    Duration d = Duration.ofSeconds(Long.parseLong(args[0]));
    for (int a = 1; a < args.length; a++) {
      run(d, Long.parseLong(args[a]));
    }
  }

  private static void run(Duration d, long spin) throws Exception {
    Path shmRoot = Files.createTempDirectory(Path.of(NodesBench.shmBase()), "fbn-probe-");
    Path dataDir = Files.createTempDirectory("fbn-probe-data-");
    FabricTuning tuning = BenchConfig.environment().fabricTuning().withTcpPollSpin(spin);
    try (Fabric tcp = new TcpFabric(null, tuning);
        Fabric shm = new ShmFabric(tuning)) {
      FerriteConfig cfg =
          BenchConfig.builder()
              .set(FerriteConfig.CLUSTER_ID, "bnp")
              .set(FerriteConfig.DATA_DIR, dataDir.toString())
              .set(FerriteConfig.SHM_DIR, shmRoot.toString())
              .set(FerriteConfig.MASTER_HOST, "127.0.0.1")
              .set(FerriteConfig.MASTER_PORT, "0")
              .set(FerriteConfig.SERVER_HOST, "127.0.0.1")
              .set(FerriteConfig.CAPACITY_DRAM, Long.toString(64L << 20))
              .set(FerriteConfig.JOURNAL_FSYNC, "true")
              .set(FerriteConfig.TCP_POLL_SPIN, Long.toString(spin))
              .set(
                  FerriteConfig.SNAPSHOT_EVERY,
                  System.getProperty("ferrite.probe.snapshotEvery", "10000"))
              .build();
      Credentials creds =
          new Credentials(
              "bench-nodes-probe",
              "bench-nodes-probe-secret-0123456789".getBytes(StandardCharsets.UTF_8));
      List<AutoCloseable> running = new ArrayList<>();
      try {
        Master master = NodesBench.startCluster(cfg, creds, tcp, shm, "p", running);
        double fsync = fsyncP50(dataDir);
        try (FerriteClient client =
            Ferrite.connect(
                master.addresses().get("tcp"),
                ClientOptions.builder(creds)
                    .fabric("tcp")
                    .fabrics(n -> n.equals("tcp") ? tcp : shm)
                    .config(cfg)
                    .clientName("probe")
                    .build())) {
          Nodes nodes = new Nodes(client);
          nodes.mkdir("/p");
          AtomicLong seq = new AtomicLong();
          Runnable create = () -> nodes.create("/p/c" + seq.incrementAndGet()).close();
          // A state of PREFILL Files first, as the bench's 1-thread latency run leaves one (its
          // creates are in the same directory tree) before the 16 threads measure.
          long prefill = Long.getLong("ferrite.probe.prefill", 0);
          while (seq.get() < prefill) {
            NodesBench.rate(THREADS, Duration.ofMillis(500), create);
          }
          NodesBench.rate(THREADS, d.dividedBy(4), create); // warm-up
          Master.JournalStats j0 = master.journalStats();
          Map<String, Long> cpu0 = cpuByGroup();
          long n0 = seq.get();
          double rate = NodesBench.rate(THREADS, d, create);
          long n = seq.get() - n0;
          Map<String, Long> cpu1 = cpuByGroup();
          Master.JournalStats j1 = master.journalStats();
          long fsyncs = j1.fsyncs() - j0.fsyncs();
          long records = j1.recordsFsynced() - j0.recordsFsynced();
          StringBuilder cpu = new StringBuilder();
          for (Map.Entry<String, Long> e : cpu1.entrySet()) {
            double per = (e.getValue() - cpu0.getOrDefault(e.getKey(), 0L)) / 1e3 / n;
            cpu.append(String.format(Locale.ROOT, " %s %.1f", e.getKey(), per));
          }
          System.out.printf(
              Locale.ROOT,
              "spin %d ns: %d threads %.0f creates/s beside 5 / fsync p50 (%.0f us) = %.0f/s:"
                  + " %.3f | fsyncs %d (%.0f/s), records per fsync %.1f, largest batch %d"
                  + " | CPU us per create (warm-up included):%s%n",
              spin,
              THREADS,
              rate,
              fsync / 1e3,
              5 / (fsync / 1e9),
              rate / (5 / (fsync / 1e9)),
              fsyncs,
              fsyncs / (d.toNanos() * 1.25 / 1e9),
              fsyncs == 0 ? 0.0 : records / (double) fsyncs,
              j1.largestBatch(),
              cpu);
        }
      } finally {
        for (int i = running.size() - 1; i >= 0; i--) {
          running.get(i).close();
        }
      }
    } finally {
      FileTrees.delete(dataDir);
      FileTrees.delete(shmRoot);
    }
  }

  /** p50 of 200 fsyncs of a 4 KiB append in the journal's directory (as {@code ceiling.fsync}). */
  private static double fsyncP50(Path dir) throws Exception {
    Path file = dir.resolve("fsync-probe");
    ByteBuffer page = ByteBuffer.allocateDirect(4096);
    long[] t = new long[200];
    try (FileChannel ch =
        FileChannel.open(
            file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
      for (int i = 0; i < t.length; i++) {
        long t0 = System.nanoTime();
        ch.write(page.clear());
        ch.force(false);
        t[i] = System.nanoTime() - t0;
      }
    }
    Files.deleteIfExists(file);
    Arrays.sort(t);
    return t[t.length / 2];
  }

  /** CPU time (ns) of this process's threads by group, from their names. */
  private static Map<String, Long> cpuByGroup() {
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    Map<String, Long> out = new TreeMap<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      String n = t.getName();
      String group =
          n.startsWith("ferrite-tcp-server")
              ? "server-loops"
              : n.startsWith("ferrite-tcp-client")
                  ? "client-loops"
                  : n.startsWith("ferrite-svc")
                      ? "dispatch"
                      : n.startsWith("ferrite-master-journal")
                          ? "journal"
                          : n.startsWith("bench-nodes-") ? "callers" : "other";
      long ns = mx.getThreadCpuTime(t.getId());
      if (ns >= 0) {
        out.merge(group, ns, Long::sum);
      }
    }
    return out;
  }
}
