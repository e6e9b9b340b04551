package io.ferrite.bench.nodes;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.LatencyRecorder;
import io.ferrite.bench.Measure;
import io.ferrite.bench.Progress;
import io.ferrite.bench.ceiling.SocketCeiling;
import io.ferrite.fabric.Counters;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.OpKind;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.Master;
import io.ferrite.nodes.Nodes;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The nodes metadata plane over tcp as issue #19 states its targets, on a cluster of its own whose
 * master fsyncs its journal (the suite's main cluster does not, as Crail keeps no log):
 *
 * <ul>
 *   <li>{@code ceiling.fsync.{p50,p99,p99.9}}: a 4 KiB append to a file in the master's data
 *       directory and its {@code force}: what one journal commit costs the disk;
 *   <li>{@code tcp.fsync.file.create.close.p50}: a user's {@code create} then {@code close} of an
 *       empty File (CREATE, then PUBLISH with close: two journaled mutations), one thread, beside
 *       {@code ceiling.nodes.create.close.p50} = 3 x {@code ceiling.socket.pingpong.8B.p50} + 1 x
 *       {@code ceiling.fsync.p50};
 *   <li>{@code tcp.fsync.file.create.close.threads.16}: creates+closes per second of 16 threads
 *       sharing one client, beside {@code ceiling.fsync.group5} = 5 / {@code ceiling.fsync.p50}
 *       (five creates per fsync: group commit at work);
 *   <li>{@code tcp.lookup.uncached.{p50,...}}: a lookup that asks the master, beside the raw
 *       ping-pong, and its p50 again as {@code tcp.lookup.uncached.vs.poll.p50} beside {@code
 *       ceiling.socket.pingpong.poll.8B.p50}, the ping-pong whose threads never block (the tcp
 *       fabric's callers and server loops poll before they sleep); {@code
 *       tcp.lookup.cached.threads.1}, lookups of a path the client has seen (a leased lookup),
 *       beside {@code tcp.lookup.uncached.threads.1}; with {@code tcp.lookup.cached.rpcs}, the
 *       master connection's RPC count over the cached run (the WATCH renewals only, one per third
 *       of a lease);
 *   <li>{@code fresh.tcp.*}: the same single-thread operations from a fresh JVM ({@link
 *       NodesClientProbe}) connecting to this cluster, with its first create and first lookup.
 * </ul>
 */
final class NodesMetadataBench {
  private NodesMetadataBench() {}

  static final String FSYNC = "ceiling.fsync";
  static final String CREATE_CEILING = "ceiling.nodes.create.close.p50";
  static final String GROUP_CEILING = "ceiling.fsync.group5";

  static void run(
      BenchReport report,
      Measure.Plan plan,
      NodesBench.Options o,
      Path shmRoot,
      Fabric tcp,
      Fabric shm,
      Progress progress)
      throws Exception {
    Path dataDir = Files.createTempDirectory("fbn-fsync-");
    try {
      FerriteConfig cfg =
          io.ferrite.bench.BenchConfig.builder()
              .set(FerriteConfig.CLUSTER_ID, "bnf")
              .set(FerriteConfig.DATA_DIR, dataDir.toString())
              .set(FerriteConfig.SHM_DIR, shmRoot.toString())
              .set(FerriteConfig.MASTER_HOST, "127.0.0.1")
              .set(FerriteConfig.MASTER_PORT, "0")
              .set(FerriteConfig.SERVER_HOST, "127.0.0.1")
              .set(FerriteConfig.CAPACITY_DRAM, Long.toString(64L << 20))
              .set(FerriteConfig.JOURNAL_FSYNC, "true")
              .build();
      Credentials creds =
          new Credentials(
              "bench-nodes-fsync",
              "bench-nodes-fsync-secret-0123456789".getBytes(StandardCharsets.UTF_8));
      List<AutoCloseable> running = new ArrayList<>();
      try {
        Master master = NodesBench.startCluster(cfg, creds, tcp, shm, "f", running);
        fsyncCeiling(report, plan, dataDir, progress);
        String address = master.addresses().get("tcp");
        try (FerriteClient client =
            Ferrite.connect(
                address,
                ClientOptions.builder(creds)
                    .fabric("tcp")
                    .fabrics(io.ferrite.bench.fabric.Fabrics::create)
                    .config(io.ferrite.bench.BenchConfig.environment())
                    .clientName("bench-meta")
                    .build())) {
          inProcess(report, plan, o, client, progress);
        }
        fresh(report, plan, o, address, creds, progress);
      } finally {
        for (int i = running.size() - 1; i >= 0; i--) {
          running.get(i).close();
        }
      }
      masterGroup(report, o, shmRoot, dataDir, progress);
    } finally {
      FileTrees.delete(dataDir);
    }
  }

  static final String GROUP_CREATES = "tcp.fsync.group3.file.create.close.threads.16";

  /**
   * {@value #GROUP_CREATES}: the same 16 threads' creates+closes against a master group of 3 on
   * loopback (Raft on Apache Ratis, each master's log fsynced, a mutation acknowledged once 2 of 3
   * have it), beside the single master's {@code tcp.fsync.file.create.close.threads.16} of this run
   * (issue #20's target: a ratio of at least 0.8).
   */
  private static void masterGroup(
      BenchReport report, NodesBench.Options o, Path shmRoot, Path dataDir, Progress progress)
      throws Exception {
    progress.step(GROUP_CREATES);
    int base = freeBase();
    FerriteConfig cfg =
        io.ferrite.bench.BenchConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, "bng")
            .set(FerriteConfig.DATA_DIR, dataDir.resolve("group").toString())
            .set(FerriteConfig.SHM_DIR, shmRoot.toString())
            .set(FerriteConfig.MASTER_HOST, "127.0.0.1")
            .set(FerriteConfig.MASTER_PORT, Integer.toString(base))
            .set(FerriteConfig.SERVER_HOST, "127.0.0.1")
            .set(FerriteConfig.CAPACITY_DRAM, Long.toString(64L << 20))
            .set(FerriteConfig.JOURNAL_FSYNC, "true")
            .build();
    Credentials creds =
        new Credentials(
            "bench-nodes-group",
            "bench-nodes-group-secret-0123456789".getBytes(StandardCharsets.UTF_8));
    try (io.ferrite.kernel.local.InProcessCluster cluster =
            io.ferrite.kernel.local.InProcessCluster.builder(cfg, creds)
                .fabrics(io.ferrite.bench.fabric.Fabrics::create, List.of("tcp", "shm"))
                .servers(1)
                .masters(3)
                .start();
        FerriteClient client =
            Ferrite.connect(
                cluster.uri(),
                ClientOptions.builder(creds)
                    .fabric("tcp")
                    .fabrics(io.ferrite.bench.fabric.Fabrics::create)
                    .config(io.ferrite.bench.BenchConfig.environment())
                    .clientName("bench-group")
                    .build())) {
      Nodes nodes = new Nodes(client);
      nodes.mkdir("/g");
      AtomicLong seq = new AtomicLong();
      double many =
          NodesBench.rate(
              16, o.duration(), () -> nodes.create("/g/c" + seq.incrementAndGet()).close());
      report.add(
          BenchResult.against(
              GROUP_CREATES,
              many,
              NodesBench.OPS,
              Better.HIGHER,
              report.require("tcp.fsync.file.create.close.threads.16")));
    }
  }

  /** A base port p with p..p+2 and p+100..p+102 free now (a master group's on loopback). */
  private static int freeBase() throws IOException {
    java.util.Random r = new java.util.Random();
    for (int attempt = 0; attempt < 100; attempt++) {
      int p = 20_000 + r.nextInt(20_000);
      List<java.net.ServerSocket> held = new ArrayList<>();
      try {
        for (int i = 0; i < 3; i++) {
          held.add(new java.net.ServerSocket(p + i, 50, java.net.InetAddress.getLoopbackAddress()));
          held.add(
              new java.net.ServerSocket(
                  p + 100 + i, 50, java.net.InetAddress.getLoopbackAddress()));
        }
        return p;
      } catch (IOException taken) {
        // try another
      } finally {
        for (java.net.ServerSocket s : held) {
          s.close();
        }
      }
    }
    throw new IOException("no 6 free loopback ports for a master group");
  }

  /** fsync of a 4 KiB append in the master's data directory (the journal's disk). */
  private static void fsyncCeiling(
      BenchReport report, Measure.Plan plan, Path dataDir, Progress progress) throws Exception {
    progress.step(FSYNC);
    Path file = dataDir.resolve("fsync-probe");
    ByteBuffer page = ByteBuffer.allocateDirect(4096);
    try (FileChannel ch =
        FileChannel.open(
            file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
      Measure.Plan p =
          new Measure.Plan(20, Math.min(plan.iterations(), 500), plan.warmup(), plan.duration());
      Measure.addLatency(
          report,
          FSYNC,
          Measure.latency(
              p,
              i -> {
                ch.write(page.clear());
                ch.force(false);
              }),
          null);
    }
    Files.deleteIfExists(file);
    double fsync = report.require(FSYNC + ".p50").value();
    double pingpong = report.require(SocketCeiling.pingPong(8) + ".p50").value();
    report.add(
        BenchResult.of(CREATE_CEILING, 3 * pingpong + fsync, LatencyRecorder.UNIT, Better.LOWER));
    report.add(BenchResult.of(GROUP_CEILING, 5 / (fsync / 1e9), NodesBench.OPS, Better.HIGHER));
  }

  private static void inProcess(
      BenchReport report,
      Measure.Plan plan,
      NodesBench.Options o,
      FerriteClient client,
      Progress progress)
      throws Exception {
    Nodes nodes = new Nodes(client);
    String root = "/meta";
    nodes.mkdir(root);
    progress.step("tcp.fsync.file.create.close");
    LatencyRecorder create = Measure.latency(plan, i -> nodes.create(root + "/c" + i).close());
    report.add(
        BenchResult.against(
            "tcp.fsync.file.create.close.p50",
            create.value(LatencyRecorder.Statistic.P50),
            LatencyRecorder.UNIT,
            Better.LOWER,
            report.require(CREATE_CEILING)));
    report.add(
        BenchResult.of(
            "tcp.fsync.file.create.close.p99",
            create.value(LatencyRecorder.Statistic.P99),
            LatencyRecorder.UNIT,
            Better.LOWER));
    progress.step("tcp.fsync.file.create.close.threads.16");
    nodes.mkdir(root + "/m");
    AtomicLong seq = new AtomicLong();
    double many =
        NodesBench.rate(
            16, o.duration(), () -> nodes.create(root + "/m/c" + seq.incrementAndGet()).close());
    report.add(
        BenchResult.against(
            "tcp.fsync.file.create.close.threads.16",
            many,
            NodesBench.OPS,
            Better.HIGHER,
            report.require(GROUP_CEILING)));

    String path = root + "/c1";
    progress.step("tcp.lookup.uncached");
    LatencyRecorder lookups = Measure.latency(plan, i -> nodes.lookupAtMaster(path));
    Measure.addLatency(report, "tcp.lookup.uncached", lookups, SocketCeiling.pingPong(8));
    vsPoll(report, "tcp.lookup.uncached", lookups.value(LatencyRecorder.Statistic.P50));
    double uncached = NodesBench.rate(1, o.duration(), () -> nodes.lookupAtMaster(path));
    BenchResult ref =
        report.add(
            BenchResult.of(
                "tcp.lookup.uncached.threads.1", uncached, NodesBench.OPS, Better.HIGHER));
    progress.step("tcp.lookup.cached");
    nodes.lookup(path);
    nodes.lookup(path);
    Counters rpc = client.masterStub().connection().counters();
    long rpcs0 = rpc.ops(OpKind.RPC);
    long hits0 = nodes.cacheCounters().hits();
    double cached = NodesBench.rate(1, o.duration(), () -> nodes.lookup(path));
    long rpcs = rpc.ops(OpKind.RPC) - rpcs0;
    long hits = nodes.cacheCounters().hits() - hits0;
    report.add(
        BenchResult.against(
            "tcp.lookup.cached.threads.1", cached, NodesBench.OPS, Better.HIGHER, ref));
    report.add(BenchResult.of("tcp.lookup.cached.rpcs", rpcs, "rpc", Better.LOWER));
    report.add(BenchResult.of("tcp.lookup.cached.hits", hits, "hit", Better.HIGHER));
    nodes.remove(root, true);
  }

  /** The single-thread operations from a fresh JVM: {@link NodesClientProbe}. */
  private static void fresh(
      BenchReport report,
      Measure.Plan plan,
      NodesBench.Options o,
      String address,
      Credentials creds,
      Progress progress)
      throws Exception {
    progress.step("fresh.tcp (a new client JVM)");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder pb =
        new ProcessBuilder(
            java,
            "-cp",
            System.getProperty("java.class.path"),
            NodesClientProbe.class.getName(),
            address,
            creds.clusterId(),
            "/fresh",
            Integer.toString(plan.iterations()),
            Long.toString(o.duration().toMillis()));
    pb.environment().put(NodesClientProbe.SECRET_ENV, HexFormat.of().formatHex(creds.secret()));
    pb.redirectError(ProcessBuilder.Redirect.INHERIT);
    try (FerriteClient client =
        Ferrite.connect(
            address,
            ClientOptions.builder(creds)
                .fabric("tcp")
                .fabrics(io.ferrite.bench.fabric.Fabrics::create)
                .build())) {
      Nodes setup = new Nodes(client);
      setup.mkdir("/fresh");
      Process p = pb.start();
      Map<String, Double> got = new HashMap<>();
      p.getOutputStream().close();
      try (BufferedReader r =
          new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          String[] f = line.trim().split(" ");
          if (f.length == 3) {
            got.put(f[0], Double.parseDouble(f[1]));
          }
        }
      } finally {
        // Stopped whatever happened here: a probe never outlives the bench.
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
          p.destroyForcibly().waitFor();
        }
      }
      if (p.exitValue() != 0) {
        throw new IOException("the fresh client process failed with exit code " + p.exitValue());
      }
      String ns = LatencyRecorder.UNIT;
      report.add(
          BenchResult.of("fresh.tcp.connect.time", need(got, "connect.time"), ns, Better.LOWER));
      report.add(
          BenchResult.against(
              "fresh.tcp.file.create.close.first",
              need(got, "file.create.close.first"),
              ns,
              Better.LOWER,
              report.require("tcp.fsync.file.create.close.p50")));
      report.add(
          BenchResult.against(
              "fresh.tcp.file.create.close.p50",
              need(got, "file.create.close.p50"),
              ns,
              Better.LOWER,
              report.require(CREATE_CEILING)));
      report.add(
          BenchResult.against(
              "fresh.tcp.lookup.first",
              need(got, "lookup.first"),
              ns,
              Better.LOWER,
              report.require("tcp.lookup.uncached.p50")));
      report.add(
          BenchResult.against(
              "fresh.tcp.lookup.uncached.p50",
              need(got, "lookup.uncached.p50"),
              ns,
              Better.LOWER,
              report.require(SocketCeiling.pingPong(8) + ".p50")));
      vsPoll(report, "fresh.tcp.lookup.uncached", need(got, "lookup.uncached.p50"));
      BenchResult unc =
          report.add(
              BenchResult.of(
                  "fresh.tcp.lookup.uncached.threads.1",
                  need(got, "lookup.uncached.threads.1"),
                  NodesBench.OPS,
                  Better.HIGHER));
      report.add(
          BenchResult.against(
              "fresh.tcp.lookup.cached.threads.1",
              need(got, "lookup.cached.threads.1"),
              NodesBench.OPS,
              Better.HIGHER,
              unc));
      report.add(
          BenchResult.of(
              "fresh.tcp.lookup.cached.rpcs",
              need(got, "lookup.cached.rpcs"),
              "rpc",
              Better.LOWER));
      setup.remove("/fresh", true);
    }
  }

  /**
   * {@code <prefix>.vs.poll.p50}: a p50 beside the ping-pong whose threads poll ({@code
   * ceiling.socket.pingpong.poll.8B.p50}), when the run measured it.
   */
  private static void vsPoll(BenchReport report, String prefix, double p50) {
    BenchResult poll = report.get(SocketCeiling.pingPongPoll(8) + ".p50");
    if (poll != null) {
      report.add(
          BenchResult.against(
              prefix + ".vs.poll.p50", p50, LatencyRecorder.UNIT, Better.LOWER, poll));
    }
  }

  private static double need(Map<String, Double> got, String name) throws IOException {
    Double v = got.get(name);
    if (v == null) {
      throw new IOException("the fresh client process did not report " + name + ": " + got);
    }
    return v;
  }
}
