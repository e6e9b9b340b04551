package io.ferrite.kernel.master;

import io.ferrite.kernel.ops.Metrics;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.ServerState;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.Locale;

/**
 * The master's own meters, all read at scrape time from what the master keeps anyway: the journal's
 * group commit ({@code ferrite.log.records} and {@code ferrite.log.fsyncs}, {@code log=journal}),
 * open sessions ({@code ferrite.sessions}), memory servers by state ({@code ferrite.servers}) and
 * the cluster's capacity per storage class ({@code ferrite.capacity.bytes}, {@code use=total|used},
 * summed over the ALIVE servers as {@code ferrite status} reports them; {@code use=service} with
 * tag {@code face} for each face's service regions, such as kv shards).
 *
 * <p><b>Cost.</b> The cluster gauges read one {@link MasterState#status} (it takes the metadata
 * lock, which mutations hold across their journal write) per scrape, not one per gauge: the status
 * is kept for {@link #STATUS_MAX_AGE_NANOS} and shared by every gauge of a scrape.
 */
final class MasterMeters {
  /** How long one status serves the gauges: one scrape's worth. */
  static final long STATUS_MAX_AGE_NANOS = 200_000_000L;

  private final MasterState state;
  private ClusterStatus status;
  private long statusAt;

  private MasterMeters(MasterState state) {
    this.state = state;
  }

  static void register(
      Metrics metrics,
      MasterState state,
      Journal journal,
      List<String> classes,
      List<String> faces) {
    MeterRegistry r = metrics.registry();
    MasterMeters m = metrics.hold(new MasterMeters(state));
    io.ferrite.kernel.ops.LogMeters.register(
        r, "journal", journal, j -> j.stats().recordsWritten(), j -> j.stats().fsyncs());
    Gauge.builder("ferrite.sessions", m, x -> x.status().sessions())
        .description("Open client sessions")
        .register(r);
    for (ServerState s : ServerState.values()) {
      Gauge.builder("ferrite.servers", m, x -> x.servers(s))
          .description("Memory servers known to the master, by state")
          .tag("state", s.name().toLowerCase(Locale.ROOT))
          .register(r);
    }
    for (String cls : classes) {
      capacity(r, m, cls, "total", 0);
      capacity(r, m, cls, "used", 1);
    }
    // The face of a service region is the name of the memory-server service that made it, which
    // is the name of its face's master extension (kv); a face without service regions reads 0.
    for (String cls : classes) {
      for (String face : faces) {
        Gauge.builder("ferrite.capacity.bytes", m, x -> x.serviceBytes(cls, face))
            .description(
                "Capacity per storage class (total) and what is in use (blocks and services)")
            .tag("class", cls)
            .tag("use", "service")
            .tag("face", face)
            .register(r);
      }
    }
  }

  private static void capacity(MeterRegistry r, MasterMeters m, String cls, String use, int i) {
    Gauge.builder(
            "ferrite.capacity.bytes",
            m,
            x -> {
              long[] t = x.status().totals(ServerState.ALIVE).get(cls);
              return t == null ? 0 : t[i];
            })
        .description("Capacity per storage class (total) and what is in use (blocks and services)")
        .tag("class", cls)
        .tag("use", use)
        .register(r);
  }

  /** The bytes of {@code face}'s service regions in {@code cls} over the ALIVE servers. */
  private double serviceBytes(String cls, String face) {
    long n = 0;
    for (ClusterStatus.Member mb : status().members()) {
      if (mb.info().state() != ServerState.ALIVE) {
        continue;
      }
      for (ClusterStatus.ClassUsage u : mb.usage()) {
        if (u.storageClass().equals(cls)) {
          n += u.serviceBytes().getOrDefault(face, 0L);
        }
      }
    }
    return n;
  }

  private double servers(ServerState s) {
    int n = 0;
    for (ClusterStatus.Member mb : status().members()) {
      if (mb.info().state() == s) {
        n++;
      }
    }
    return n;
  }

  private synchronized ClusterStatus status() {
    long now = System.nanoTime();
    if (status == null || now - statusAt > STATUS_MAX_AGE_NANOS) {
      status = state.status(false); // the gauges read no face's lost counts
      statusAt = now;
    }
    return status;
  }
}
