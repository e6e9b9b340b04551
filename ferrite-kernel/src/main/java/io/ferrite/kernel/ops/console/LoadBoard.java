package io.ferrite.kernel.ops.console;

import io.ferrite.fabric.OpKind;
import io.ferrite.kernel.proto.Json;
import io.ferrite.kernel.proto.ServerLoad;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The console's live rates: the latest {@link ServerLoad} each memory server reported in a
 * heartbeat, and a ring of the last {@link #SAMPLES} per-second samples, each the difference of the
 * totals between two {@link #sample} calls (one a second, from the console's thread).
 *
 * <p>The master sees none of the one-sided operations (they go to the servers): the servers'
 * heartbeats carry their fabric counters, every {@code heartbeat.interval}, so a sample reflects
 * the totals as of the last heartbeat of each server; rates jitter by up to one heartbeat but their
 * sum over time is exact. A server whose totals went down restarted: its totals count from zero.
 *
 * <p>Thread-safety: {@link #report} runs on the master's RPC threads (a concurrent map); {@link
 * #sample} on one thread; {@link #json} on the HTTP threads. The ring is guarded by {@code this}.
 */
public final class LoadBoard {
  /** Seconds of history kept (and charted). */
  public static final int SAMPLES = 120;

  private static final OpKind[] KINDS = OpKind.values();

  private final ConcurrentHashMap<Integer, ServerLoad> latest = new ConcurrentHashMap<>();
  private final Supplier<ServerLoad> master;
  private final Supplier<RpcLatency> masterLatency;
  private final LongSupplier clockNanos;
  private final LongSupplier wallMillis;

  // Sampler-thread state: the totals the previous sample saw.
  private final Map<Integer, ServerLoad> previous = new TreeMap<>();
  private ServerLoad previousMaster;
  private RpcLatency previousMasterLatency = RpcLatency.NONE;
  private long previousNanos;

  private final ArrayDeque<Sample> ring = new ArrayDeque<>(SAMPLES);

  /**
   * @param master the master's own endpoints' totals (its RPCs)
   * @param masterLatency the master's RPC latency timers
   */
  public LoadBoard(
      Supplier<ServerLoad> master,
      Supplier<RpcLatency> masterLatency,
      LongSupplier clockNanos,
      LongSupplier wallMillis) {
    this.master = master;
    this.masterLatency = masterLatency;
    this.clockNanos = clockNanos;
    this.wallMillis = wallMillis;
  }

  /** A heartbeat of {@code serverId} carried {@code load}. */
  public void report(int serverId, ServerLoad load) {
    latest.put(serverId, load);
  }

  /**
   * One second's sample: what every server, and the master, served since the previous call. The
   * first call only sets the baseline.
   */
  public void sample() {
    long now = clockNanos.getAsLong();
    ServerLoad m = master.get();
    RpcLatency ml = masterLatency.get();
    Map<Integer, ServerLoad> current = new TreeMap<>(latest);
    if (previousMaster == null) {
      previous.putAll(current);
      previousMaster = m;
      previousMasterLatency = ml;
      previousNanos = now;
      return;
    }
    double seconds = Math.max(1e-3, (now - previousNanos) / 1e9);
    long[] ops = new long[KINDS.length];
    long[] bytes = new long[KINDS.length];
    Map<Integer, Long> perServer = new TreeMap<>();
    long latCount = 0;
    long latNanos = 0;
    double p50Weighted = 0;
    long p50Count = 0;
    long p99 = -1;
    for (Map.Entry<Integer, ServerLoad> e : current.entrySet()) {
      ServerLoad cur = e.getValue();
      ServerLoad prev = previous.get(e.getKey());
      boolean restarted = prev != null && wentDown(prev, cur);
      long serverOps = 0;
      for (OpKind k : KINDS) {
        long dOps = prev == null || restarted ? cur.ops(k) : cur.ops(k) - prev.ops(k);
        long dBytes = prev == null || restarted ? cur.bytes(k) : cur.bytes(k) - prev.bytes(k);
        ops[k.ordinal()] += Math.max(0, dOps);
        bytes[k.ordinal()] += Math.max(0, dBytes);
        serverOps += Math.max(0, dOps);
      }
      perServer.put(e.getKey(), serverOps);
      long dCount = prev == null || restarted ? cur.rpcCount() : cur.rpcCount() - prev.rpcCount();
      long dNanos =
          prev == null || restarted
              ? cur.rpcTotalNanos()
              : cur.rpcTotalNanos() - prev.rpcTotalNanos();
      if (dCount > 0) {
        latCount += dCount;
        latNanos += dNanos;
        if (cur.rpcP50Nanos() >= 0) {
          p50Weighted += (double) cur.rpcP50Nanos() * dCount;
          p50Count += dCount;
        }
        p99 = Math.max(p99, cur.rpcP99Nanos());
      }
    }
    long masterRpcs = Math.max(0, m.ops(OpKind.RPC) - previousMaster.ops(OpKind.RPC));
    long mCount = ml.count() - previousMasterLatency.count();
    long mNanos = ml.totalNanos() - previousMasterLatency.totalNanos();
    Sample s =
        new Sample(
            wallMillis.getAsLong(),
            seconds,
            ops,
            bytes,
            perServer,
            masterRpcs,
            new Latency(
                latCount > 0 ? latNanos / latCount : -1,
                p50Count > 0 ? Math.round(p50Weighted / p50Count) : -1,
                p99),
            new Latency(
                mCount > 0 ? mNanos / mCount : -1,
                mCount > 0 ? ml.p50Nanos() : -1,
                mCount > 0 ? ml.p99Nanos() : -1));
    synchronized (this) {
      if (ring.size() == SAMPLES) {
        ring.removeFirst();
      }
      ring.addLast(s);
    }
    previous.clear();
    previous.putAll(current);
    previousMaster = m;
    previousMasterLatency = ml;
    previousNanos = now;
  }

  /** Whether any total is below the previous one: the server restarted, counting from zero. */
  private static boolean wentDown(ServerLoad prev, ServerLoad cur) {
    for (OpKind k : KINDS) {
      if (cur.ops(k) < prev.ops(k)) {
        return true;
      }
    }
    return cur.rpcCount() < prev.rpcCount();
  }

  /** The samples kept, oldest first. */
  public synchronized List<Sample> samples() {
    return new ArrayList<>(ring);
  }

  /** RPC latency over one sample's second, in nanoseconds; -1 where unknown. */
  public record Latency(long meanNanos, long p50Nanos, long p99Nanos) {}

  /**
   * What was served in one interval of {@code seconds}: operations and bytes by {@link OpKind} (all
   * servers), operations per server, the master's RPCs, and RPC latency of the servers and of the
   * master.
   */
  public record Sample(
      long epochMillis,
      double seconds,
      long[] ops,
      long[] bytes,
      Map<Integer, Long> serverOps,
      long masterRpcs,
      Latency servers,
      Latency master) {

    /** Operations of {@code kind} per second over the interval. */
    public double opsPerSecond(OpKind kind) {
      return ops[kind.ordinal()] / seconds;
    }

    Map<String, Object> toMap() {
      Map<String, Object> o = new LinkedHashMap<>();
      Map<String, Object> b = new LinkedHashMap<>();
      long byteSum = 0;
      for (OpKind k : KINDS) {
        o.put(kindName(k), ops[k.ordinal()] / seconds);
        b.put(kindName(k), bytes[k.ordinal()] / seconds);
        byteSum += bytes[k.ordinal()];
      }
      Map<String, Object> srv = new LinkedHashMap<>();
      serverOps.forEach((id, n) -> srv.put(String.valueOf(id), n / seconds));
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("t", epochMillis);
      m.put("seconds", seconds);
      m.put("ops", o);
      m.put("bytes", b);
      m.put("bytesTotal", byteSum / seconds);
      m.put("servers", srv);
      m.put("masterRpcs", masterRpcs / seconds);
      m.put("latency", Map.of("servers", latency(servers), "master", latency(master)));
      return m;
    }

    private static Map<String, Object> latency(Latency l) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("mean", l.meanNanos() < 0 ? null : l.meanNanos() / 1e3);
      m.put("p50", l.p50Nanos() < 0 ? null : l.p50Nanos() / 1e3);
      m.put("p99", l.p99Nanos() < 0 ? null : l.p99Nanos() / 1e3);
      return m;
    }
  }

  /** The fabric's kind name as the metrics tag it ({@code read}, {@code compare_and_swap}, ...). */
  static String kindName(OpKind k) {
    return k.name().toLowerCase(Locale.ROOT);
  }

  /**
   * {@code /api/rates}: {@code {"interval":1000,"kinds":[...],"samples":[{t, seconds, ops{kind: per
   * s}, bytes{kind: per s}, bytesTotal, servers{id: ops per s}, masterRpcs, latency{servers,
   * master: {mean, p50, p99 in microseconds or null}}}]}}.
   */
  public String json() {
    List<Object> kinds = new ArrayList<>();
    for (OpKind k : KINDS) {
      kinds.add(kindName(k));
    }
    List<Object> samples = new ArrayList<>();
    for (Sample s : samples()) {
      samples.add(s.toMap());
    }
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("interval", 1000);
    m.put("kinds", kinds);
    m.put("samples", samples);
    return Json.write(m);
  }
}
