package io.ferrite.bench.nodes;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.Progress;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FileTrees;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.local.InProcessCluster;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.master.PlacementDirectory;
import io.ferrite.kernel.proto.PlacementProtocol;
import io.ferrite.nodes.Nodes;
import io.ferrite.nodes.master.NodesMaster;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Metadata ops/s with 1 and 2 master groups (issue #20, docs/RESILIENCE.md "Master groups"), in one
 * run on one cluster of two groups, each master fsyncing its own journal: 16 threads sharing a
 * client, each creating and closing empty Files (two journaled mutations each) in a top-level
 * directory of its own, all over tcp:
 *
 * <ul>
 *   <li>{@code groups.1.fsync.file.create.close.threads.16}: a client whose URI names group 0 only,
 *       so every name is group 0's (measured before and after the next, the better kept);
 *   <li>{@code groups.2.fsync.file.create.close.threads.16}: a client naming both groups, the
 *       threads' directories placed half in each (names picked so, as a cluster's many names spread
 *       by the placement hash), against the first: the ratio is what the second group adds.
 * </ul>
 *
 * Both masters fsync the same disk here, so the second group adds at most what the disk's fsyncs
 * allow (group commit already shares one fsync among concurrent creates of one group).
 */
public final class NodesGroupsBench {
  private NodesGroupsBench() {}

  static final int THREADS = 16;

  static void run(
      BenchReport report, NodesBench.Options o, Path shmRoot, Fabric tcp, Fabric shm, Progress p)
      throws Exception {
    run(report, o.duration(), shmRoot, tcp, shm, p);
  }

  /**
   * As in {@code bench nodes}, for another suite ({@code bench resilience}: "metadata ops/s with 1
   * and 2 master groups"), with fabrics of its own, closed after.
   */
  public static void run(BenchReport report, java.time.Duration duration, Path shmRoot, Progress p)
      throws Exception {
    try (Fabric shm = io.ferrite.bench.fabric.Fabrics.create("shm");
        Fabric tcp = io.ferrite.bench.fabric.Fabrics.create("tcp")) {
      run(report, duration, shmRoot, tcp, shm, p);
    }
  }

  private static void run(
      BenchReport report,
      java.time.Duration duration,
      Path shmRoot,
      Fabric tcp,
      Fabric shm,
      Progress p)
      throws Exception {
    Path dataDir = Files.createTempDirectory("fbn-groups-");
    try {
      FerriteConfig cfg =
          io.ferrite.bench.BenchConfig.builder()
              .set(FerriteConfig.CLUSTER_ID, "bng")
              .set(FerriteConfig.DATA_DIR, dataDir.toString())
              .set(FerriteConfig.SHM_DIR, shmRoot.toString())
              .set(FerriteConfig.MASTER_HOST, "127.0.0.1")
              .set(FerriteConfig.MASTER_PORT, "0")
              .set(FerriteConfig.SERVER_HOST, "127.0.0.1")
              .set(FerriteConfig.CAPACITY_DRAM, Long.toString(128L << 20))
              .set(FerriteConfig.JOURNAL_FSYNC, "true")
              .build();
      Credentials creds =
          new Credentials(
              "bench-nodes-groups",
              "bench-nodes-groups-secret-0123456789".getBytes(StandardCharsets.UTF_8));
      try (InProcessCluster cluster =
          InProcessCluster.builder(cfg, creds)
              .fabrics(List.of(tcp, shm))
              .masterFabrics(List.of("tcp"))
              .extensions(
                  () ->
                      List.<MasterExtension>of(
                          new NodesMaster(Duration.ofMillis(100)), new PlacementDirectory()))
              .groups(2)
              .servers(1)
              .serverNames(i -> "g" + i)
              .start()) {
        String both = cluster.masterAddress();
        String first = cluster.master(0).addresses().get("tcp");
        p.step("groups.1.fsync.file.create.close.threads.16");
        // One group before and after two, the better kept: the JIT warms up over the first run,
        // which would otherwise flatter the second.
        double one = creates(first, creds, duration, 1);
        p.step("groups.2.fsync.file.create.close.threads.16");
        double two = creates(both, creds, duration, 2);
        p.step("groups.1.fsync.file.create.close.threads.16 (again)");
        one = Math.max(one, creates(first, creds, duration, 1));
        BenchResult ref =
            report.add(
                BenchResult.of(
                    "groups.1.fsync.file.create.close.threads.16",
                    one,
                    NodesBench.OPS,
                    Better.HIGHER));
        report.add(
            BenchResult.against(
                "groups.2.fsync.file.create.close.threads.16",
                two,
                NodesBench.OPS,
                Better.HIGHER,
                ref));
      }
    } finally {
      FileTrees.delete(dataDir);
    }
  }

  /**
   * Creates+closes per second of {@link #THREADS} threads sharing a client of {@code address}, each
   * in a top-level directory of its own, spread evenly over {@code groups} groups.
   */
  private static double creates(String address, Credentials creds, Duration d, int groups)
      throws Exception {
    try (FerriteClient client =
        Ferrite.connect(
            address,
            ClientOptions.builder(creds)
                .fabric("tcp")
                .fabrics(io.ferrite.bench.fabric.Fabrics::create)
                .clientName("bench-groups-" + groups)
                .build())) {
      Nodes nodes = new Nodes(client);
      List<String> dirs = new ArrayList<>();
      String run = Long.toHexString(System.nanoTime());
      for (int i = 0; dirs.size() < THREADS; i++) {
        String name = "g" + groups + "-" + run + "-t" + i;
        String key = PlacementProtocol.key(PlacementProtocol.NODES, name);
        if (PlacementProtocol.choose(key, groups) == dirs.size() % groups) {
          dirs.add("/" + name);
          nodes.mkdir("/" + name);
        }
      }
      AtomicInteger nextThread = new AtomicInteger();
      ThreadLocal<String> dir =
          ThreadLocal.withInitial(() -> dirs.get(nextThread.getAndIncrement() % THREADS));
      AtomicLong seq = new AtomicLong();
      double rate =
          NodesBench.rate(
              THREADS, d, () -> nodes.create(dir.get() + "/c" + seq.incrementAndGet()).close());
      for (String dd : dirs) {
        nodes.remove(dd, true);
      }
      return rate;
    }
  }
}
