package io.ferrite.kernel.ops;

import io.ferrite.fabric.Counters;
import io.ferrite.fabric.OpKind;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Locale;
import java.util.function.ToDoubleFunction;

/**
 * Exposes fabric {@link Counters} as {@code ferrite.fabric.ops}, {@code ferrite.fabric.bytes} and
 * {@code ferrite.fabric.errors} (tags {@code fabric}, {@code kind}). Function counters: the values
 * are read from the {@link java.util.concurrent.atomic.LongAdder}s the fabric keeps anyway, at
 * scrape time, so the data path pays nothing for them.
 */
public final class FabricMeters {
  private FabricMeters() {}

  /** Where the counts come from: an endpoint's {@link Counters}, or a client's sum of them. */
  public interface Source {
    long ops(OpKind kind);

    long bytes(OpKind kind);

    long errors(OpKind kind);

    /** An endpoint's or a connection's counters. */
    static Source of(Counters c) {
      return new Source() {
        @Override
        public long ops(OpKind kind) {
          return c.ops(kind);
        }

        @Override
        public long bytes(OpKind kind) {
          return c.bytes(kind);
        }

        @Override
        public long errors(OpKind kind) {
          return c.errors(kind);
        }
      };
    }
  }

  /** The {@code kind} tag of an op kind: read, write, cas, faa, rpc. */
  public static String kind(OpKind k) {
    return switch (k) {
      case COMPARE_AND_SWAP -> "cas";
      case FETCH_AND_ADD -> "faa";
      default -> k.name().toLowerCase(Locale.ROOT);
    };
  }

  /**
   * Registers the three counters per op kind of {@code fabric} over {@code source}, which {@code
   * metrics} keeps reachable (Micrometer holds a function counter's object weakly, and a source is
   * usually a small adapter nothing else keeps).
   */
  public static void bind(Metrics metrics, String fabric, Source source) {
    bind(metrics.registry(), fabric, metrics.hold(source));
  }

  /**
   * As {@link #bind(Metrics, String, Source)} in any registry (a client's); the caller keeps {@code
   * source} reachable.
   */
  public static void bind(MeterRegistry registry, String fabric, Source source) {
    for (OpKind k : OpKind.values()) {
      counter(
          registry, "ferrite.fabric.ops", "Fabric operations", fabric, k, source, s -> s.ops(k));
      counter(
          registry,
          "ferrite.fabric.bytes",
          "Payload bytes moved by fabric operations",
          fabric,
          k,
          source,
          s -> s.bytes(k));
      counter(
          registry,
          "ferrite.fabric.errors",
          "Fabric operations that failed",
          fabric,
          k,
          source,
          s -> s.errors(k));
    }
  }

  /** Binds an endpoint's or connection's counters: {@code bind(registry, fabric, of(counters))}. */
  public static void bind(Metrics metrics, String fabric, Counters counters) {
    bind(metrics, fabric, Source.of(counters));
  }

  private static void counter(
      MeterRegistry registry,
      String name,
      String help,
      String fabric,
      OpKind k,
      Source source,
      ToDoubleFunction<Source> f) {
    FunctionCounter.builder(name, source, f)
        .description(help)
        .tag("fabric", fabric)
        .tag("kind", kind(k))
        .register(registry);
  }
}
