package io.ferrite.bench.kv;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.LatencyRecorder;
import io.ferrite.bench.Progress;
import io.ferrite.bench.Sizes;
import io.ferrite.kv.KvTable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** The {@code --vs redis} part of {@link KvBench}: the same harness against redis-server. */
final class RedisVersus {
  static final int BATCH = 16;
  private static final byte[] GET = "GET".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] SET = "SET".getBytes(StandardCharsets.US_ASCII);

  private RedisVersus() {}

  static void measure(
      BenchReport report,
      KvBench.Options o,
      RedisPeer redis,
      KvTable ferriteTcp,
      int size,
      Progress progress)
      throws Exception {
    byte[][] keys = new byte[o.keys()][];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = KvBench.key(i);
    }
    byte[] value = new byte[size];
    progress.step("redis: loading " + keys.length + " keys with " + Sizes.label(size) + " values");
    RedisPeer.Conn loader = redis.connect();
    for (int i = 0; i < keys.length; i++) {
      loader.command(SET, keys[i], value);
      if (i % 256 == 255 || i == keys.length - 1) {
        loader.flush();
        for (int k = i - (i % 256); k <= i; k++) {
          loader.readReply();
        }
      }
    }
    Zipfian zipf = new Zipfian(o.keys());
    String v = Sizes.label(size);
    for (int threads : o.threads()) {
      String suffix = v + ".t" + threads;
      ThreadLocal<RedisPeer.Conn> conn = ThreadLocal.withInitial(redis::connect);
      progress.step("redis.get." + suffix);
      KvBench.Result get =
          KvBench.drive(
              r -> {
                RedisPeer.Conn c = conn.get();
                c.command(GET, keys[zipf.next(r)]);
                c.flush();
                c.readReply();
              },
              threads,
              o.duration());
      progress.step("redis.set." + suffix);
      KvBench.Result set =
          KvBench.drive(
              r -> {
                RedisPeer.Conn c = conn.get();
                c.command(SET, keys[zipf.next(r)], value);
                c.flush();
                c.readReply();
              },
              threads,
              o.duration());
      progress.step("redis.get16." + suffix + " (pipelined)");
      KvBench.Result get16 =
          KvBench.drive(
              r -> {
                RedisPeer.Conn c = conn.get();
                for (int k = 0; k < BATCH; k++) {
                  c.command(GET, keys[zipf.next(r)]);
                }
                c.flush();
                for (int k = 0; k < BATCH; k++) {
                  c.readReply();
                }
              },
              threads,
              o.duration());
      progress.step("kv.tcp.multiget16." + suffix);
      KvBench.Result multi =
          KvBench.drive(
              r -> {
                List<byte[]> batch = new ArrayList<>(BATCH);
                for (int k = 0; k < BATCH; k++) {
                  batch.add(keys[zipf.next(r)]);
                }
                ferriteTcp.multiGet(batch);
              },
              threads,
              o.duration());
      versus(report, "get." + suffix, "kv.tcp.get." + suffix, get, 1);
      versus(report, "set." + suffix, "kv.tcp.put." + suffix, set, 1);
      add(report, "redis.get16." + suffix, get16, BATCH);
      add(report, "kv.tcp.multiget16." + suffix, multi, BATCH);
      ratio(
          report,
          "vs-redis.tcp.multiget16." + suffix,
          "kv.tcp.multiget16." + suffix,
          "redis.get16." + suffix);
    }
  }

  /** Adds {@code redis.<what>} and Ferrite's already measured result as a ratio against it. */
  private static void versus(
      BenchReport report, String what, String ferrite, KvBench.Result redis, int perOp) {
    add(report, "redis." + what, redis, perOp);
    ratio(report, "vs-redis.tcp." + what, ferrite, "redis." + what);
  }

  private static void add(BenchReport report, String name, KvBench.Result r, int perOp) {
    report.add(
        BenchResult.of(name + ".throughput", r.throughput() * perOp, "ops/s", Better.HIGHER));
    for (LatencyRecorder.Statistic s :
        List.of(LatencyRecorder.Statistic.P50, LatencyRecorder.Statistic.P99)) {
      report.add(
          BenchResult.of(
              name + "." + s.label(),
              r.latency().getValueAtPercentile(s.percentile()),
              LatencyRecorder.UNIT,
              Better.LOWER));
    }
  }

  private static void ratio(BenchReport report, String name, String ferrite, String redis) {
    for (String stat : List.of("throughput", "p50", "p99")) {
      BenchResult f = report.require(ferrite + "." + stat);
      report.add(
          BenchResult.against(
              name + "." + stat,
              f.value(),
              f.unit(),
              f.better(),
              report.require(redis + "." + stat)));
    }
  }
}
