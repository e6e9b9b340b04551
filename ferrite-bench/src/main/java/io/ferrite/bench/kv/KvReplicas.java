package io.ferrite.bench.kv;

import io.ferrite.bench.BenchConfig;
import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.LatencyRecorder;
import io.ferrite.bench.Progress;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FileTrees;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.local.InProcessCluster;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Replicated kv shards (docs/KV.md "Replication"), in one run on one in-process cluster of four
 * memory servers:
 *
 * <ul>
 *   <li>{@code kv.replicas.<fabric>.r<n>.put.t1.{throughput,p50,p99}}: blocking 32 B puts of one
 *       thread to a table with {@code n} = 1, 2, 3 copies of each shard; r2 and r3 each beside r1
 *       of the same fabric as its peer (the target: r2's p50 ≤ 1.5 × r1's);
 *   <li>{@code kv.replicas.<fabric>.r<n>.get.t1.{throughput,p50,p99}}: one-sided gets of one thread
 *       of the same table after its puts, beside r1's (over shm a replicated shard's get also
 *       checks the lease word: its cost);
 *   <li>{@code kv.replicas.failover.*}: one thread puts to a 2-copy table; the server holding shard
 *       0's primary is closed (its heartbeats stop); {@code kill-to-dead} is the time until the
 *       master declares it DEAD (its heartbeat timeout, set to 1 s here), {@code dead-to-first-put}
 *       the time from then until the first put of a key of that shard completes (the issue's
 *       target: ≤ 1 s), beside kill-to-dead as its peer.
 * </ul>
 */
final class KvReplicas {
  /** The suite's credentials: {@link KvBench#connect} presents them. */
  private static final Credentials CREDENTIALS = KvBench.CREDENTIALS;

  private KvReplicas() {}

  /**
   * Adds {@code res}'s throughput, p50 and p99 as {@code name.*}: on their own if {@code peer} is
   * null (returned, the peer of the later ones), else each beside the peer's same figure.
   */
  private static BenchResult[] add(
      BenchReport report, String name, KvBench.Result res, BenchResult[] peer) {
    BenchResult[] now = {
      BenchResult.of(name + ".throughput", res.throughput(), "ops/s", Better.HIGHER),
      BenchResult.of(
          name + ".p50",
          res.latency().getValueAtPercentile(50),
          LatencyRecorder.UNIT,
          Better.LOWER),
      BenchResult.of(
          name + ".p99", res.latency().getValueAtPercentile(99), LatencyRecorder.UNIT, Better.LOWER)
    };
    if (peer == null) {
      for (BenchResult b : now) {
        report.add(b);
      }
      return now;
    }
    for (int i = 0; i < now.length; i++) {
      report.add(
          BenchResult.against(
              now[i].name(), now[i].value(), now[i].unit(), now[i].better(), peer[i]));
    }
    return peer;
  }

  static void measure(BenchReport report, KvBench.Options o, Progress progress) throws Exception {
    Path root = Files.createTempDirectory(o.directory(), "ferrite-bench-kv-replicas-");
    // The shm sockets' paths must stay under sockaddr_un's 107 bytes, wherever --dir points.
    Path shm = Files.createTempDirectory(Path.of("/dev/shm"), "fbkr-");
    List<AutoCloseable> open = new ArrayList<>();
    try {
      FerriteConfig cfg =
          BenchConfig.builder()
              .set(FerriteConfig.CLUSTER_ID, "bench-kv")
              .set(FerriteConfig.DATA_DIR, root.resolve("data").toString())
              .set(FerriteConfig.SHM_DIR, shm.toString())
              .set(FerriteConfig.MASTER_PORT, "0")
              .set(FerriteConfig.SERVER_HOST, "127.0.0.1")
              .set(FerriteConfig.MASTER_HOST, "127.0.0.1")
              .set(FerriteConfig.REGION_SIZE, "64m")
              .set(FerriteConfig.BLOCK_SIZE, "1m")
              .set(FerriteConfig.CAPACITY_DRAM, "512m")
              .set(FerriteConfig.CAPACITY_DISK, "0")
              .set(FerriteConfig.JOURNAL_FSYNC, "false")
              .set(FerriteConfig.DEAD_TIMEOUT, "1s")
              .set(FerriteConfig.METRICS_PORT, "-1")
              .build();
      InProcessCluster cluster =
          InProcessCluster.builder(cfg, CREDENTIALS)
              .masterFabrics(List.of("tcp"))
              .servers(4)
              .serverNames(i -> "replica-" + i)
              .start();
      open.add(cluster);
      String address = cluster.masterAddress();
      FerriteClient admin = KvBench.connect(address, "tcp");
      open.add(admin);
      byte[][] keys = new byte[o.keys()][];
      for (int i = 0; i < keys.length; i++) {
        keys[i] = KvBench.key(i);
      }
      byte[] value = new byte[32];
      for (String fabric : o.fabrics()) {
        FerriteClient c = KvBench.connect(address, fabric);
        open.add(c);
        BenchResult[] r1 = null;
        BenchResult[] r1Get = null;
        for (int replicas = 1; replicas <= 3; replicas++) {
          String table = "replicas-" + fabric + "-" + replicas;
          new KvClient(admin)
              .createTable(
                  table,
                  KvBench.tableOptions(TableOptions.Layout.HOPSCOTCH, o.keys(), 32, false)
                      .withReplicas(replicas));
          KvTable t = new KvClient(c).table(table);
          String name = "kv.replicas." + fabric + ".r" + replicas + ".put.t1";
          progress.step(name);
          KvBench.Result res =
              KvBench.drive(r -> t.put(keys[r.nextInt(keys.length)], value), 1, o.duration());
          r1 = add(report, name, res, r1);
          // One-sided gets of the same table: a replicated shard's gets over shm also check the
          // server's lease word (docs/KV.md "Leases"); r1's are the unfenced peer.
          name = "kv.replicas." + fabric + ".r" + replicas + ".get.t1";
          progress.step(name);
          res = KvBench.drive(r -> t.get(keys[r.nextInt(keys.length)]), 1, o.duration());
          r1Get = add(report, name, res, r1Get);
        }
      }
      failover(report, cluster, admin, keys, value, progress);
      progress.step("done");
    } finally {
      for (int i = open.size() - 1; i >= 0; i--) {
        try {
          open.get(i).close();
        } catch (Exception e) {
          progress.step("closing: " + e);
        }
      }
      FileTrees.delete(root);
      FileTrees.delete(shm);
    }
  }

  private static void failover(
      BenchReport report,
      InProcessCluster cluster,
      FerriteClient admin,
      byte[][] keys,
      byte[] value,
      Progress progress)
      throws Exception {
    progress.step("kv.replicas.failover: closing the server of shard 0's primary under puts");
    KvTable t =
        new KvClient(admin)
            .createTable(
                "replicas-failover",
                KvBench.tableOptions(TableOptions.Layout.HOPSCOTCH, keys.length, 32, false)
                    .withReplicas(2));
    int victim = t.serverOf(0);
    List<byte[]> shard0 = new ArrayList<>();
    for (byte[] k : keys) {
      if (t.shardOf(k) == 0) {
        shard0.add(k);
      }
    }
    AtomicLong lastPutNanos = new AtomicLong();
    AtomicLong firstAfterDead = new AtomicLong();
    AtomicLong deadAt = new AtomicLong();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread writer =
        new Thread(
            () -> {
              try {
                for (int i = 0; firstAfterDead.get() == 0; i++) {
                  t.put(shard0.get(i % shard0.size()), value);
                  long now = System.nanoTime();
                  lastPutNanos.set(now);
                  long dead = deadAt.get();
                  if (dead != 0) {
                    firstAfterDead.compareAndSet(0, now);
                  }
                }
              } catch (Throwable e) {
                failure.set(e);
              }
            },
            "bench-kv-failover-writer");
    writer.start();
    while (lastPutNanos.get() == 0 && failure.get() == null) {
      Thread.sleep(1);
    }
    Thread.sleep(200);
    MemoryServer dead = null;
    for (MemoryServer s : cluster.servers()) {
      if (s.serverId() == victim) {
        dead = s;
      }
    }
    long killed = System.nanoTime();
    dead.close();
    // The master's view, polled every 100 us: when it declared the server DEAD.
    while (deadAt.get() == 0 && failure.get() == null) {
      boolean isDead =
          cluster.master().state().members().stream()
              .anyMatch(m -> m.serverId() == victim && m.state() == ServerState.DEAD);
      if (isDead) {
        deadAt.set(System.nanoTime());
      } else {
        Thread.sleep(0, 100_000);
      }
    }
    writer.join(60_000);
    if (failure.get() != null) {
      throw new IllegalStateException("the failover writer failed", failure.get());
    }
    BenchResult toDead =
        report.add(
            BenchResult.of(
                "kv.replicas.failover.kill-to-dead",
                (deadAt.get() - killed) / 1e6,
                "ms",
                Better.LOWER));
    report.add(
        BenchResult.against(
            "kv.replicas.failover.dead-to-first-put",
            Math.max(0, firstAfterDead.get() - deadAt.get()) / 1e6,
            "ms",
            Better.LOWER,
            toDead));
  }
}
