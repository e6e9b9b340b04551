package io.ferrite.bench.nodes;

import io.ferrite.bench.BenchConfig;
import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.Progress;
import io.ferrite.bench.Sizes;
import io.ferrite.bench.fabric.Fabrics;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FileTrees;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.local.InProcessCluster;
import io.ferrite.kernel.master.Master;
import io.ferrite.nodes.CreateOptions;
import io.ferrite.nodes.NodeWriter;
import io.ferrite.nodes.Nodes;
import io.ferrite.nodes.master.NodesMaster;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Replicated File blocks (issue #20), on a cluster of its own: a master with the nodes extension
 * and three memory servers, all serving shm and tcp. Per fabric:
 *
 * <ul>
 *   <li>{@code <f>.file.write.replicas.<n>.bandwidth}: a File written with a 1 MiB application
 *       buffer through its OutputStream with {@code replicas} 1, 2, 3 (every chunk written to every
 *       copy before it counts), beside {@code <f>.file.write.replicas.1.bandwidth} measured in the
 *       same run: the ratio is what the copies cost;
 *   <li>{@code <f>.file.read.afterdeath.bandwidth}: a replicas-2 File read whole right after one
 *       server holding a copy of every other block was stopped cleanly (it says goodbye, so the
 *       master declares it DEAD at once: each read of its copies fails on the closed server and
 *       falls back to the other copy; re-replication may run meanwhile), beside {@code
 *       <f>.file.read.replicas.2.bandwidth}, the same file read just before the stop.
 * </ul>
 *
 * Reused by {@code bench resilience}.
 */
public final class FileReplicasBench {
  private FileReplicasBench() {}

  /**
   * Runs this part alone and prints its table: {@code FileReplicasBench [fileMiB [fabrics]]}
   * (default 64 MiB, shm,tcp), e.g. for a quick look without the whole nodes suite.
   */
  public static void main(String[] args) throws Exception {
    long mib = args.length > 0 ? Long.parseLong(args[0]) : 64;
    List<String> fabrics = args.length > 1 ? List.of(args[1].split(",")) : List.of("shm", "tcp");
    BenchReport report = new BenchReport(NodesBench.SUITE);
    Path shmRoot = Files.createTempDirectory(Path.of("/dev/shm"), "fbr-");
    try {
      run(
          report,
          fabrics,
          mib << 20,
          shmRoot,
          new Progress(
              NodesBench.SUITE, new java.io.PrintStream(System.err, true, StandardCharsets.UTF_8)));
    } finally {
      FileTrees.delete(shmRoot);
    }
    report.printTable(new java.io.PrintStream(System.out, true, StandardCharsets.UTF_8));
  }

  /** Runs on {@code fabrics} with files of {@code fileBytes} (the read files are half that). */
  public static void run(
      BenchReport report, List<String> fabrics, long fileBytes, Path shmRoot, Progress progress)
      throws Exception {
    Path dataDir = Files.createTempDirectory("fbr-data-");
    // Each server holds one copy of a replicas-3 file (removed before the next), then a third of
    // the read files' copies: 1.5 files and some room.
    long perServer = (fileBytes * 3 / 2 + (64L << 20)) / (64L << 20) * (64L << 20);
    FerriteConfig cfg =
        BenchConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, "br")
            .set(FerriteConfig.DATA_DIR, dataDir.toString())
            .set(FerriteConfig.SHM_DIR, shmRoot.toString())
            .set(FerriteConfig.MASTER_HOST, "127.0.0.1")
            .set(FerriteConfig.MASTER_PORT, "0")
            .set(FerriteConfig.SERVER_HOST, "127.0.0.1")
            .set(FerriteConfig.CAPACITY_DRAM, Long.toString(perServer))
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .build();
    Credentials creds =
        new Credentials(
            "bench-replicas", "bench-replicas-secret-0123456789".getBytes(StandardCharsets.UTF_8));
    List<Fabric> opened = new ArrayList<>();
    Fabric tcp = Fabrics.create("tcp");
    Fabric shm = Fabrics.create("shm");
    opened.add(tcp);
    opened.add(shm);
    try (InProcessCluster cluster =
        InProcessCluster.builder(cfg, creds)
            .fabrics(List.of(tcp, shm))
            .masterFabrics(List.of("tcp", "shm"))
            .extensions(List.of(new NodesMaster(Duration.ofMillis(100))))
            .servers(3)
            .serverNames(i -> "r" + i)
            .start()) {
      Master master = cluster.master();
      awaitAlive(master, 3);
      Map<String, FerriteClient> clients = new LinkedHashMap<>();
      try {
        for (String f : fabrics) {
          clients.put(
              f,
              Ferrite.connect(
                  master.addresses().get("tcp"),
                  ClientOptions.builder(creds)
                      .fabric(f)
                      .fabrics(Fabrics::create)
                      .config(cfg)
                      .clientName("bench-replicas-" + f)
                      .build()));
        }
        byte[] buf = new byte[Sizes.MIB];
        for (Map.Entry<String, FerriteClient> e : clients.entrySet()) {
          String f = e.getKey();
          Nodes nodes = new Nodes(e.getValue());
          // Warm-up (JIT, connections, first mappings), not counted: else replicas 1, measured
          // first, pays it and the ratios flatter the copies.
          write(nodes, "/warm-" + f, 2, fileBytes, buf);
          nodes.remove("/warm-" + f, false);
          Thread.sleep(250);
          BenchResult one = null;
          for (int r = 1; r <= 3; r++) {
            String name = f + ".file.write.replicas." + r + ".bandwidth";
            progress.step(name + " (" + (fileBytes >> 20) + " MiB)");
            String path = "/w-" + f + "-" + r;
            long t0 = System.nanoTime();
            write(nodes, path, r, fileBytes, buf);
            double mibs = Sizes.mibPerSecond(fileBytes, System.nanoTime() - t0);
            BenchResult res =
                one == null
                    ? BenchResult.of(name, mibs, Sizes.BANDWIDTH_UNIT, Better.HIGHER)
                    : BenchResult.against(name, mibs, Sizes.BANDWIDTH_UNIT, Better.HIGHER, one);
            report.add(res);
            if (r == 1) {
              one = res;
            }
            nodes.remove(path, false);
            Thread.sleep(250); // the grace period: blocks back to the free list
          }
        }
        // Read files, one per fabric, then a server's stop, then the same reads.
        long readBytes = Math.max(Sizes.MIB, fileBytes / 2);
        Map<String, BenchResult> before = new LinkedHashMap<>();
        for (Map.Entry<String, FerriteClient> e : clients.entrySet()) {
          String f = e.getKey();
          Nodes nodes = new Nodes(e.getValue());
          write(nodes, "/r-" + f, 2, readBytes, buf);
          progress.step(f + ".file.read.replicas.2.bandwidth");
          double mibs = read(nodes, "/r-" + f, readBytes, buf);
          before.put(
              f,
              report.add(
                  BenchResult.of(
                      f + ".file.read.replicas.2.bandwidth",
                      mibs,
                      Sizes.BANDWIDTH_UNIT,
                      Better.HIGHER)));
        }
        cluster.servers().get(0).close(); // copies of two thirds of the blocks' pairs go with it
        for (Map.Entry<String, FerriteClient> e : clients.entrySet()) {
          String f = e.getKey();
          Nodes nodes = new Nodes(e.getValue());
          progress.step(f + ".file.read.afterdeath.bandwidth");
          double mibs = read(nodes, "/r-" + f, readBytes, buf);
          report.add(
              BenchResult.against(
                  f + ".file.read.afterdeath.bandwidth",
                  mibs,
                  Sizes.BANDWIDTH_UNIT,
                  Better.HIGHER,
                  before.get(f)));
        }
      } finally {
        for (FerriteClient c : clients.values()) {
          c.close();
        }
      }
    } finally {
      for (Fabric f : opened) {
        f.close();
      }
      FileTrees.delete(dataDir);
    }
  }

  private static void write(Nodes nodes, String path, int replicas, long bytes, byte[] buf)
      throws Exception {
    NodeWriter w = nodes.create(path, CreateOptions.replicated(replicas));
    try (OutputStream out = w.outputStream()) {
      for (long done = 0; done < bytes; done += buf.length) {
        out.write(buf, 0, (int) Math.min(buf.length, bytes - done));
      }
    }
  }

  /** Reads {@code path} whole through a stream; MiB/s. */
  private static double read(Nodes nodes, String path, long bytes, byte[] buf) throws Exception {
    long t0 = System.nanoTime();
    long got = 0;
    try (InputStream in = nodes.open(path).inputStream()) {
      int n;
      while ((n = in.read(buf, 0, buf.length)) > 0) {
        got += n;
      }
    }
    if (got != bytes) {
      throw new IllegalStateException("read " + got + " of " + bytes + " B of " + path);
    }
    return Sizes.mibPerSecond(got, System.nanoTime() - t0);
  }

  private static void awaitAlive(Master master, int n) throws InterruptedException {
    for (int i = 0; i < 500; i++) {
      long alive =
          master.state().members().stream().filter(m -> m.state().name().equals("ALIVE")).count();
      if (alive >= n && master.state().regions(-1).size() >= n) {
        return;
      }
      Thread.sleep(10);
    }
    throw new IllegalStateException("memory servers did not register");
  }
}
