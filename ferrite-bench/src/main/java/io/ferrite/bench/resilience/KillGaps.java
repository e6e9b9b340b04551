package io.ferrite.bench.resilience;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.Progress;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.MasterStub;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import io.ferrite.nodes.Nodes;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

/**
 * The gap in service after a SIGKILL, under load, on a cluster of child JVMs on loopback (a Raft
 * group of 3 masters, 3 memory servers): {@code kills} times the memory server holding the primary
 * of a 2-copy kv table's shard 0 is SIGKILLed while a writer puts to that shard, and {@code kills}
 * times the master leader is SIGKILLed while a writer puts KeyValue nodes (one master mutation
 * each). Each killed process is started again before the next kill. At the end every acknowledged
 * write is read back: a put whose value is gone or older counts as lost.
 *
 * <p>A gap is the time from the kill until a write that started after it completes. Results (p50
 * over the kills): {@code server-kill.kill-to-dead} (the master's heartbeat timeout at work),
 * {@code server-kill.dead-to-writes} beside it (target ≤ 1 s), {@code leader-kill.kill-to-leader}
 * (Raft's election) and {@code leader-kill.kill-to-writes} beside it (target ≤ 3 s), and {@code
 * lost-acknowledged-writes} (target 0).
 */
final class KillGaps {
  /** The master's heartbeat timeout here: the bench measures what follows the declaration. */
  static final String DEAD_TIMEOUT = "1s";

  private static final int KEYS = 256;
  private static final long POLL_NANOS = 5_000_000;

  private KillGaps() {}

  static void measure(BenchReport report, Path dir, int kills, Progress progress) throws Exception {
    List<String> sets =
        List.of("server.dead.timeout=" + DEAD_TIMEOUT, "journal.fsync=true", "block.size=1m");
    try (ProcessCluster cluster = new ProcessCluster(dir, "bench-resilience", 3, sets)) {
      try {
        run(report, cluster, kills, progress);
      } catch (Exception | AssertionError e) {
        // The cluster's directory goes with the bench: keep its processes' log for a post-mortem.
        Path kept = java.nio.file.Files.createTempFile("ferrite-bench-resilience-failure-", ".log");
        java.nio.file.Files.copy(
            cluster.log(), kept, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        progress.step("failed: " + e + (e.getCause() != null ? ", caused by " + e.getCause() : ""));
        progress.step("the processes' log is kept in " + kept);
        throw new IllegalStateException(
            e.getMessage() + "\nthe processes' log: " + kept + "\n" + cluster.tail(40), e);
      }
    }
  }

  private static void run(BenchReport report, ProcessCluster cluster, int kills, Progress progress)
      throws Exception {
    progress.step("resilience: starting 3 masters and 3 memory servers (child JVMs)");
    for (int id = 1; id <= cluster.masters(); id++) {
      cluster.startMaster(id);
    }
    List<String> servers = List.of("s1", "s2", "s3");
    for (String s : servers) {
      cluster.startServer(s, "256m");
    }
    FerriteClient client = cluster.client("bench-resilience", Duration.ofSeconds(60));
    await("3 ALIVE servers", () -> alive(client) == 3, Duration.ofSeconds(60));

    KvTable table =
        new KvClient(client)
            .createTable(
                "resilience",
                TableOptions.DEFAULTS
                    .withShards(3)
                    .withDurability(TableOptions.Durability.ALWAYS)
                    .withReplicas(2));
    byte[][] keys = shardKeys(table, 0);
    Nodes nodes = new Nodes(client);
    nodes.createTable("/resilience", false); // KeyValue nodes live in a Table

    Writer kv =
        new Writer(
            "kv",
            seq -> {
              byte[] key = keys[(int) (seq % keys.length)];
              table.put(key, value(seq));
            });
    Writer meta = new Writer("nodes", seq -> nodes.put(path(seq), value(seq)));
    kv.start();
    meta.start();
    try {
      long[] toDead = new long[kills];
      long[] deadToWrites = new long[kills];
      for (int k = 0; k < kills; k++) {
        int victimId = table.serverOf(0);
        String victim = nameOf(client, victimId);
        progress.step("resilience: SIGKILL of memory server " + victim + " (" + (k + 1) + ")");
        kv.awaitProgress();
        long killed = System.nanoTime();
        cluster.kill(victim);
        long dead = awaitNanos(() -> stateOf(client, victimId) == ServerState.DEAD);
        long back = kv.firstStartedAfter(killed);
        toDead[k] = dead - killed;
        deadToWrites[k] = Math.max(0, back - dead);
        cluster.startServer(victim, "256m");
        await(
            "server " + victim + " ALIVE again", () -> alive(client) == 3, Duration.ofSeconds(60));
        await(
            "shard 0 with 2 copies again",
            () -> new KvClient(client).table("resilience").info().copies(0) == 2,
            Duration.ofSeconds(60));
      }
      long[] toLeader = new long[kills];
      long[] toWrites = new long[kills];
      for (int k = 0; k < kills; k++) {
        Leader before = leader(cluster);
        progress.step(
            "resilience: SIGKILL of the master leader m" + before.id + " (" + (k + 1) + ")");
        meta.awaitProgress();
        long killed = System.nanoTime();
        cluster.kill("m" + before.id);
        long elected =
            awaitNanos(
                () -> {
                  Leader now = leaderOrNull(cluster, before.id);
                  return now != null && now.term > before.term;
                });
        long back = meta.firstStartedAfter(killed);
        toLeader[k] = elected - killed;
        toWrites[k] = back - killed;
        cluster.startMaster(before.id);
        await(
            "master m" + before.id + " back as a follower",
            () -> role(cluster, before.id).equals("follower"),
            Duration.ofSeconds(60));
      }
      kv.stop();
      meta.stop();
      progress.step("resilience: reading back every acknowledged write");
      long lost = lostKv(kv, table, keys) + lostNodes(meta, nodes);
      BenchResult dead =
          report.add(
              BenchResult.of(
                  "resilience.server-kill.kill-to-dead.p50", p50(toDead), "ms", Better.LOWER));
      report.add(
          BenchResult.against(
              "resilience.server-kill.dead-to-writes.p50",
              p50(deadToWrites),
              "ms",
              Better.LOWER,
              dead));
      BenchResult leader =
          report.add(
              BenchResult.of(
                  "resilience.leader-kill.kill-to-leader.p50", p50(toLeader), "ms", Better.LOWER));
      report.add(
          BenchResult.against(
              "resilience.leader-kill.kill-to-writes.p50",
              p50(toWrites),
              "ms",
              Better.LOWER,
              leader));
      report.add(BenchResult.of("resilience.kills", kills, "kills per kind", Better.HIGHER));
      report.add(
          BenchResult.of(
              "resilience.acknowledged-writes",
              kv.acked() + meta.acked(),
              "writes",
              Better.HIGHER));
      report.add(
          BenchResult.of("resilience.lost-acknowledged-writes", lost, "writes", Better.LOWER));
    } finally {
      kv.stop();
      meta.stop();
    }
  }

  // ------------------------------------------------------------------ writers

  @FunctionalInterface
  interface Write {
    void run(long seq) throws Exception;
  }

  /**
   * One thread writing sequence numbers 1, 2, 3...: remembers when each write started and ended,
   * which were acknowledged and which failed (outcome unknown: it may or may not have happened).
   */
  static final class Writer {
    private final String name;
    private final Write write;
    private final Thread thread;
    private volatile boolean stop;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private volatile Throwable lastFailure;
    private final AtomicLong failures = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();

    /** seq -> [start, end] nanos of each acknowledged write. */
    private final Map<Long, long[]> acked = new ConcurrentHashMap<>();

    Writer(String name, Write write) {
      this.name = name;
      this.write = write;
      this.thread = new Thread(this::loop, "bench-resilience-" + name);
    }

    void start() {
      thread.start();
    }

    private void loop() {
      for (long seq = 1; !stop; seq++) {
        long start = System.nanoTime();
        try {
          write.run(seq);
          acked.put(seq, new long[] {start, System.nanoTime()});
          completed.incrementAndGet();
        } catch (Exception e) {
          // Outcome unknown (the writer's client waits out failovers itself, so this is rare):
          // not counted as acknowledged; the next write goes on.
          failure.compareAndSet(null, e);
          lastFailure = e;
          failures.incrementAndGet();
        }
      }
    }

    /** Returns once this writer acknowledged a write after the call (it is writing). */
    void awaitProgress() throws InterruptedException {
      long now = completed.get();
      long until = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (completed.get() < now + 3) {
        if (System.nanoTime() > until) {
          throw new IllegalStateException(name + " writer makes no progress", failure.get());
        }
        Thread.sleep(1);
      }
    }

    /** When the first write started at or after {@code nanos} was acknowledged. */
    long firstStartedAfter(long nanos) throws InterruptedException {
      long until = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (System.nanoTime() < until) {
        long best = Long.MAX_VALUE;
        for (long[] w : acked.values()) {
          if (w[0] >= nanos && w[1] < best) {
            best = w[1];
          }
        }
        if (best != Long.MAX_VALUE) {
          return best;
        }
        Thread.sleep(1);
      }
      throw new IllegalStateException(
          name
              + " writes did not succeed again within 60 s of the kill ("
              + failures.get()
              + " failed; the first: "
              + failure.get()
              + "; the last: "
              + lastFailure
              + ")",
          lastFailure);
    }

    long acked() {
      return acked.size();
    }

    void stop() throws InterruptedException {
      stop = true;
      thread.join(120_000);
    }
  }

  // ------------------------------------------------------------------ checks

  /**
   * kv: each key's value must be the newest acknowledged sequence written to it, or a newer one
   * whose write failed (it may have happened).
   */
  private static long lostKv(Writer w, KvTable table, byte[][] keys) {
    long[] newestAcked = new long[keys.length];
    for (long seq : w.acked.keySet()) {
      int i = (int) (seq % keys.length);
      newestAcked[i] = Math.max(newestAcked[i], seq);
    }
    long lost = 0;
    for (int i = 0; i < keys.length; i++) {
      if (newestAcked[i] == 0) {
        continue;
      }
      byte[] v = table.get(keys[i]);
      if (v == null || ByteBuffer.wrap(v).getLong() < newestAcked[i]) {
        lost++;
      }
    }
    return lost;
  }

  /** nodes: every acknowledged KeyValue node exists with its bytes. */
  private static long lostNodes(Writer w, Nodes nodes) {
    long lost = 0;
    for (long seq : w.acked.keySet()) {
      byte[] v;
      try {
        v = nodes.getBytes(path(seq));
      } catch (RuntimeException e) {
        v = null;
      }
      if (!Arrays.equals(v, value(seq))) {
        lost++;
      }
    }
    return lost;
  }

  // ------------------------------------------------------------------ cluster views

  private record Leader(int id, long term) {}

  /** The leader, as the masters other than {@code except} report it; null if none does yet. */
  private static Leader leaderOrNull(ProcessCluster cluster, int except) {
    for (int id = 1; id <= cluster.masters(); id++) {
      if (id == except || !cluster.alive("m" + id)) {
        continue;
      }
      try {
        MasterStub.MasterInfo info = info(cluster, id);
        if (info.roleName().equals("leader")) {
          return new Leader(id, info.term());
        }
      } catch (RuntimeException e) {
        // Starting, or just lost its leader: ask the next.
      }
    }
    return null;
  }

  private static Leader leader(ProcessCluster cluster) throws InterruptedException {
    long until = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (System.nanoTime() < until) {
      Leader l = leaderOrNull(cluster, 0);
      if (l != null) {
        return l;
      }
      Thread.sleep(20);
    }
    throw new IllegalStateException("no master leader within 60 s");
  }

  private static String role(ProcessCluster cluster, int id) {
    try {
      return info(cluster, id).roleName();
    } catch (RuntimeException e) {
      return "unreachable";
    }
  }

  private static MasterStub.MasterInfo info(ProcessCluster cluster, int id) {
    return cluster.probe(id).masterStub().masterInfo();
  }

  private static int alive(FerriteClient c) {
    int n = 0;
    for (MemberInfo m : c.members()) {
      n += m.state() == ServerState.ALIVE ? 1 : 0;
    }
    return n;
  }

  private static ServerState stateOf(FerriteClient c, int serverId) {
    for (MemberInfo m : c.members()) {
      if (m.serverId() == serverId) {
        return m.state();
      }
    }
    return ServerState.UNKNOWN;
  }

  private static String nameOf(FerriteClient c, int serverId) {
    for (MemberInfo m : c.members()) {
      if (m.serverId() == serverId) {
        return m.name();
      }
    }
    throw new IllegalStateException("no member " + serverId);
  }

  private static byte[][] shardKeys(KvTable t, int shard) {
    List<byte[]> out = new ArrayList<>();
    for (int i = 0; out.size() < KEYS; i++) {
      byte[] k = ("k" + i).getBytes(StandardCharsets.UTF_8);
      if (t.shardOf(k) == shard) {
        out.add(k);
      }
    }
    return out.toArray(new byte[0][]);
  }

  private static byte[] value(long seq) {
    return ByteBuffer.allocate(32).putLong(seq).array();
  }

  private static String path(long seq) {
    return "/resilience/w" + seq;
  }

  private static long awaitNanos(BooleanSupplier condition) throws InterruptedException {
    long until = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > until) {
        throw new IllegalStateException("waited 60 s");
      }
      Thread.sleep(0, (int) Math.min(999_999, POLL_NANOS));
    }
    return System.nanoTime();
  }

  private static void await(String what, BooleanSupplier condition, Duration limit)
      throws InterruptedException {
    long until = System.nanoTime() + limit.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > until) {
        throw new IllegalStateException("waited " + limit.toSeconds() + " s for " + what);
      }
      Thread.sleep(20);
    }
  }

  private static double p50(long[] nanos) {
    long[] s = nanos.clone();
    Arrays.sort(s);
    return s[(s.length - 1) / 2] / 1e6;
  }
}
