package io.ferrite.kernel.ops;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

/**
 * A face's operation meters in one process: {@code ferrite.face.ops} (counter) and, for the
 * operations a face times, {@code ferrite.face.latency} (timer, p50 and p99 published), tags {@code
 * face} (kv, nodes, memory) and {@code op}. Faces make their {@link Op}s once, at start (server
 * services from {@link io.ferrite.kernel.server.ServiceContext#metrics}, master extensions from
 * {@link io.ferrite.kernel.master.MasterContext#metrics}, clients from {@link
 * io.ferrite.kernel.client.ClientOptions#metrics}), and keep them in fields: counting then costs
 * one {@link java.util.concurrent.atomic.DoubleAdder} add, timing one {@link System#nanoTime} and,
 * for one call in 16, a histogram record ({@link SampledTimer}).
 */
public final class FaceMeters {
  private final MeterRegistry registry;
  private final String face;

  private FaceMeters(MeterRegistry registry, String face) {
    this.registry = registry;
    this.face = face;
  }

  /** The meters of {@code face} in {@code registry}; null: meters that do nothing. */
  public static FaceMeters of(MeterRegistry registry, String face) {
    return new FaceMeters(registry == null ? Metrics.none() : registry, face);
  }

  /** A counted operation. */
  public Op op(String op) {
    return new Op(counter(op), null);
  }

  /** A counted and timed operation. */
  public Op timed(String op) {
    Timer t =
        Timer.builder("ferrite.face.latency")
            .description(
                "Latency of a face operation where it is served or issued (one call in 16)")
            .tag("face", face)
            .tag("op", op)
            .publishPercentiles(0.5, 0.99)
            .register(registry);
    return new Op(counter(op), new SampledTimer(t));
  }

  private Counter counter(String op) {
    return Counter.builder("ferrite.face.ops")
        .description("Face operations (kv gets and puts, nodes lookups and creates, ...)")
        .tag("face", face)
        .tag("op", op)
        .register(registry);
  }

  /**
   * Counters for the opcodes of a service named in {@code names} (opcode to op name), looked up by
   * opcode in an array: for a handler that counts every request it serves. Opcodes not named are
   * not counted.
   */
  public ByOpcode byOpcode(java.util.Map<Integer, String> names) {
    int max = 0;
    for (int k : names.keySet()) {
      if (k < 0 || k > 1023) {
        throw new IllegalArgumentException("opcode: " + k + " (expected: 0 to 1023)");
      }
      max = Math.max(max, k);
    }
    Op[] ops = new Op[max + 1];
    names.forEach((k, v) -> ops[k] = op(v));
    return new ByOpcode(ops);
  }

  /** See {@link #byOpcode}. Thread-safe. */
  public static final class ByOpcode {
    private final Op[] ops;

    private ByOpcode(Op[] ops) {
      this.ops = ops;
    }

    /** Counts one request of {@code opcode}, if it is one of the named. */
    public void count(int opcode) {
      if (opcode >= 0 && opcode < ops.length && ops[opcode] != null) {
        ops[opcode].count();
      }
    }
  }

  /** One operation's meters. Thread-safe. */
  public static final class Op {
    private final Counter count;
    private final SampledTimer latency;

    private Op(Counter count, SampledTimer latency) {
      this.count = count;
      this.latency = latency;
    }

    /** Counts one operation. */
    public void count() {
      count.increment();
    }

    /** Counts {@code n} operations (a batch). */
    public void count(long n) {
      count.increment(n);
    }

    /**
     * Starts an operation: a value for {@link #done}, the clock's if this call's latency is sampled
     * ({@link SampledTimer}), else 0.
     */
    public long start() {
      return latency == null ? 0 : latency.start();
    }

    /** Counts one operation {@link #start} began and, if it was sampled, records its latency. */
    public void done(long start) {
      count.increment();
      if (latency != null) {
        latency.stop(start);
      }
    }
  }
}
