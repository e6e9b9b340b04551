package io.ferrite.kernel.ops;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.List;

/**
 * The meters of one process (a master, a memory server, or a client that opted in), in one
 * Micrometer registry that renders the Prometheus text format. Every meter carries the tag {@code
 * process} ({@code master}, {@code server}, {@code client}) and, for a memory server, its {@code
 * server} name, so the series of several processes scraped into one Prometheus stay apart.
 *
 * <p>Names follow Prometheus conventions once rendered: Micrometer's {@code ferrite.fabric.ops}
 * counter is exposed as {@code ferrite_fabric_ops_total}, a timer {@code ferrite.rpc.latency} as
 * {@code ferrite_rpc_latency_seconds_*}. Meters are registered once, at start, by the component
 * that owns the numbers; most are function counters and gauges over counts the component keeps
 * anyway (a {@link java.util.concurrent.atomic.LongAdder}), so the hot path pays nothing extra for
 * being observable.
 */
public final class Metrics {
  private final PrometheusMeterRegistry registry =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

  /** Objects meters read from that nothing else keeps (Micrometer holds them weakly). */
  private final List<Object> held = new java.util.concurrent.CopyOnWriteArrayList<>();

  /** A registry whose meters all carry {@code tags} (e.g. {@code process=master}). */
  public Metrics(List<Tag> tags) {
    registry.config().commonTags(tags);
  }

  /**
   * A registry that keeps nothing (its meters do nothing): for a component started without a
   * process's {@link Metrics}, e.g. an extension in a unit test.
   */
  public static MeterRegistry none() {
    return NONE;
  }

  private static final MeterRegistry NONE =
      new io.micrometer.core.instrument.composite.CompositeMeterRegistry();

  /** Where components register their meters. */
  public MeterRegistry registry() {
    return registry;
  }

  /**
   * Keeps {@code o} reachable as long as this registry: for the object of a function counter or
   * gauge that nothing else references (Micrometer holds those weakly, and reads NaN once gone).
   */
  public <T> T hold(T o) {
    held.add(o);
    return o;
  }

  /** Every meter in the Prometheus text exposition format (version 0.0.4). */
  public String scrape() {
    return registry.scrape();
  }

  /** Stops the registry's meters; scrapes after this render nothing. */
  public void close() {
    registry.close();
  }
}
