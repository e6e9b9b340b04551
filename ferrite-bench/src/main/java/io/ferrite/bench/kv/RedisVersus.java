package io.ferrite.bench.kv;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.LatencyRecorder;
import io.ferrite.bench.Progress;
import io.ferrite.bench.Sizes;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Supplier;

/**
 * The {@code --vs redis} part of {@link KvBench}: Ferrite's tcp gets, puts, 16-key multiGets and
 * 16-pair multiPuts against redis-server's GET, SET and pipelined batches of 16 GETs and of 16
 * SETs; and puts and multiPuts of a table with durability {@code always} against a second
 * redis-server with {@code appendfsync always} whose append-only file is on the file system of the
 * kv log (both fsync before they answer: {@code put-always}, {@code multiput16-always} beside
 * {@code set-always}, {@code set16-always}). Like with like: the same threads, the same 16 B keys
 * and values, the same zipfian draws, and one connection per thread on both sides (each Ferrite
 * thread has its own {@link FerriteClient}, so its own tcp connection to the memory server, all on
 * one shared tcp fabric). Each pair is measured interleaved ({@link Interleaved}: the same threads
 * alternate between Ferrite and Redis every 50 ms), so both see the same machine even when the load
 * swings within seconds.
 */
final class RedisVersus {
  static final int BATCH = 16;
  private static final byte[] GET = "GET".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] SET = "SET".getBytes(StandardCharsets.US_ASCII);

  private RedisVersus() {}

  static void measure(
      BenchReport report,
      KvBench.Options o,
      RedisPeer redis,
      RedisPeer redisAof,
      String alwaysTable,
      Supplier<FerriteClient> tcpClients,
      String layout,
      String table,
      int size,
      Progress progress)
      throws Exception {
    byte[][] keys = new byte[o.keys()][];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = KvBench.key(i);
    }
    byte[] value = new byte[size];
    progress.step("redis: loading " + keys.length + " keys with " + Sizes.label(size) + " values");
    load(redis, keys, value);
    load(redisAof, keys, value);
    Zipfian zipf = new Zipfian(o.keys());
    String v = Sizes.label(size);
    for (int threads : o.threads()) {
      String suffix = v + ".t" + threads;
      List<FerriteClient> opened = Collections.synchronizedList(new ArrayList<>());
      List<KvTable> handles = Collections.synchronizedList(new ArrayList<>());
      try {
        // One connection per benchmark thread on both sides, made during the warm-up.
        ThreadLocal<FerriteClient> client =
            ThreadLocal.withInitial(
                () -> {
                  FerriteClient c = tcpClients.get();
                  opened.add(c);
                  return c;
                });
        ThreadLocal<KvTable> ferrite =
            ThreadLocal.withInitial(
                () -> {
                  KvTable t = new KvClient(client.get()).table(table);
                  handles.add(t);
                  return t;
                });
        ThreadLocal<KvTable> ferriteAlways =
            ThreadLocal.withInitial(() -> new KvClient(client.get()).table(alwaysTable));
        ThreadLocal<RedisPeer.Conn> conn = ThreadLocal.withInitial(redis::connect);
        ThreadLocal<RedisPeer.Conn> connAof = ThreadLocal.withInitial(redisAof::connect);
        String f = "ferrite." + layout + ".";
        progress.step(f + "get." + suffix + " | redis.get." + suffix);
        KvBench.Result[] gets =
            Interleaved.drive(
                r -> ferrite.get().get(keys[zipf.next(r)]),
                r -> {
                  RedisPeer.Conn c = conn.get();
                  c.command(GET, keys[zipf.next(r)]);
                  c.flush();
                  c.readReply();
                },
                threads,
                o.duration());
        double getHints = hintHits(handles);
        KvBench.Result fget = gets[0];
        KvBench.Result get = gets[1];
        progress.step(f + "put." + suffix + " | redis.set." + suffix);
        KvBench.Result[] puts =
            Interleaved.drive(
                r -> ferrite.get().put(keys[zipf.next(r)], value),
                r -> {
                  RedisPeer.Conn c = conn.get();
                  c.command(SET, keys[zipf.next(r)], value);
                  c.flush();
                  c.readReply();
                },
                threads,
                o.duration());
        hintHits(handles);
        KvBench.Result fput = puts[0];
        KvBench.Result set = puts[1];
        progress.step(f + "multiget16." + suffix + " | redis.get16." + suffix + " (pipelined)");
        KvBench.Result[] multis =
            Interleaved.drive(
                r -> {
                  List<byte[]> batch = new ArrayList<>(BATCH);
                  for (int k = 0; k < BATCH; k++) {
                    batch.add(keys[zipf.next(r)]);
                  }
                  ferrite.get().multiGet(batch);
                },
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
        double multiHints = hintHits(handles);
        KvBench.Result fmulti = multis[0];
        KvBench.Result get16 = multis[1];
        pair(report, layout, "get", suffix, fget, "get", get, 1);
        pair(report, layout, "put", suffix, fput, "set", set, 1);
        pair(report, layout, "multiget16", suffix, fmulti, "get16", get16, BATCH);
        progress.step(f + "multiput16." + suffix + " | redis.set16." + suffix + " (pipelined)");
        KvBench.Result[] mputs =
            Interleaved.drive(
                r -> multiPut(ferrite.get(), keys, zipf, r, value),
                r -> set16(conn.get(), keys, zipf, r, value),
                threads,
                o.duration());
        pair(report, layout, "multiput16", suffix, mputs[0], "set16", mputs[1], BATCH);
        progress.step(f + "put-always." + suffix + " | redis.set-always." + suffix);
        KvBench.Result[] aputs =
            Interleaved.drive(
                r -> ferriteAlways.get().put(keys[zipf.next(r)], value),
                r -> {
                  RedisPeer.Conn c = connAof.get();
                  c.command(SET, keys[zipf.next(r)], value);
                  c.flush();
                  c.readReply();
                },
                threads,
                o.duration());
        pair(report, layout, "put-always", suffix, aputs[0], "set-always", aputs[1], 1);
        progress.step(
            f + "multiput16-always." + suffix + " | redis.set16-always." + suffix + " (pipelined)");
        KvBench.Result[] amputs =
            Interleaved.drive(
                r -> multiPut(ferriteAlways.get(), keys, zipf, r, value),
                r -> set16(connAof.get(), keys, zipf, r, value),
                threads,
                o.duration());
        pair(
            report,
            layout,
            "multiput16-always",
            suffix,
            amputs[0],
            "set16-always",
            amputs[1],
            BATCH);
        hints(report, f + "get." + suffix, getHints);
        hints(report, f + "multiget16." + suffix, multiHints);
      } finally {
        for (FerriteClient c : opened) {
          c.close();
        }
      }
    }
  }

  private static void load(RedisPeer redis, byte[][] keys, byte[] value) {
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
  }

  /** One multiPut of {@link #BATCH} zipfian keys (one MULTI_PUT per server). */
  private static void multiPut(
      KvTable t, byte[][] keys, Zipfian zipf, java.util.Random r, byte[] value) {
    List<byte[]> ks = new ArrayList<>(BATCH);
    List<byte[]> vs = new ArrayList<>(BATCH);
    for (int k = 0; k < BATCH; k++) {
      ks.add(keys[zipf.next(r)]);
      vs.add(value);
    }
    t.multiPut(ks, vs);
  }

  /** {@link #BATCH} SETs of zipfian keys, pipelined: one flush, then the replies. */
  private static void set16(
      RedisPeer.Conn c, byte[][] keys, Zipfian zipf, java.util.Random r, byte[] value) {
    for (int k = 0; k < BATCH; k++) {
      c.command(SET, keys[zipf.next(r)], value);
    }
    c.flush();
    for (int k = 0; k < BATCH; k++) {
      c.readReply();
    }
  }

  /**
   * Adds {@code ferrite.<layout>.<op>.<suffix>}, {@code redis.vs-<layout>.<redisOp>.<suffix>}
   * (Redis measured right after it) and their ratio {@code vs-redis.<layout>.<op>.<suffix>} (> 1:
   * Ferrite is faster). Batches count keys per second.
   */
  private static void pair(
      BenchReport report,
      String layout,
      String op,
      String suffix,
      KvBench.Result ferrite,
      String redisOp,
      KvBench.Result redis,
      int perOp) {
    String f = "ferrite." + layout + "." + op + "." + suffix;
    String r = "redis.vs-" + layout + "." + redisOp + "." + suffix;
    add(report, f, ferrite, perOp);
    add(report, r, redis, perOp);
    for (String stat : List.of("throughput", "p50", "p99")) {
      BenchResult fr = report.require(f + "." + stat);
      report.add(
          BenchResult.against(
              "vs-redis." + layout + "." + op + "." + suffix + "." + stat,
              fr.value(),
              fr.unit(),
              fr.better(),
              report.require(r + "." + stat)));
    }
  }

  /**
   * The fraction of the lookups of {@code handles} since the last call (warm-up included) that an
   * extent hint answered in the table read's round trip; zeroes their counts.
   */
  private static double hintHits(List<KvTable> handles) {
    long lookups = 0;
    long hits = 0;
    synchronized (handles) {
      for (KvTable t : handles) {
        lookups += t.lookupStats().lookups();
        hits += t.lookupStats().hintHits();
        t.lookupStats().reset();
      }
    }
    return lookups == 0 ? 0 : (double) hits / lookups;
  }

  private static void hints(BenchReport report, String name, double fraction) {
    report.add(BenchResult.of(name + ".hinted", fraction, "of lookups", Better.HIGHER));
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
}
