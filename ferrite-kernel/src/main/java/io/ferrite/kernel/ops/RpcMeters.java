package io.ferrite.kernel.ops;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.nio.ByteBuffer;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntFunction;

/**
 * An {@link RpcHandler} that counts and times every call the handler it wraps serves: {@code
 * ferrite.rpc.requests} (tags {@code service}, {@code opcode}, {@code outcome}: {@code ok} or the
 * {@link io.ferrite.fabric.ErrorCode} name) and {@code ferrite.rpc.latency} (tags {@code service},
 * {@code opcode}; p50 and p99 published), from the handler's call to its answer's completion (for
 * the master, after the journal fsync the answer waits for).
 *
 * <p><b>Cost.</b> Per call: two {@link System#nanoTime} reads, one array load (the meters of a
 * (service, opcode) pair are made on its first call and kept in a slot indexed by the two ints, no
 * tag list built per call), a {@link Counter#increment} (a {@link java.util.concurrent.atomic
 * .DoubleAdder}) and, for one call in 16, a {@link Timer#record} ({@link SampledTimer}: recording
 * every call cost a shm kv put a third of its throughput), plus a completion stage when the answer
 * is not ready at once. A call {@link #handleInline} declines is counted once, where {@link
 * #handle} serves it.
 */
public final class RpcMeters implements RpcHandler {
  /** Services and opcodes below this index the slot array; others go to a map (none today). */
  private static final int DIRECT = 64;

  private final RpcHandler inner;
  private final MeterRegistry registry;
  private final IntFunction<String> serviceNames;
  private final AtomicReferenceArray<Op> direct = new AtomicReferenceArray<>(DIRECT * DIRECT);
  private final ConcurrentHashMap<Long, Op> other = new ConcurrentHashMap<>();

  private RpcMeters(RpcHandler inner, MeterRegistry registry, IntFunction<String> serviceNames) {
    this.inner = inner;
    this.registry = registry;
    this.serviceNames = serviceNames;
  }

  /**
   * {@code inner}, counted and timed in {@code registry}; {@code serviceNames} names a service id
   * for the {@code service} tag (e.g. 1 {@code master}, 24 {@code nodes}); null falls back to the
   * number.
   */
  public static RpcHandler wrap(
      RpcHandler inner, MeterRegistry registry, IntFunction<String> serviceNames) {
    return new RpcMeters(inner, registry, serviceNames);
  }

  @Override
  public CompletableFuture<ByteBuffer> handle(
      RpcContext ctx, int service, int opcode, ByteBuffer request) {
    Op op = op(service, opcode);
    long start = op.latency.start();
    CompletableFuture<ByteBuffer> f;
    try {
      f = inner.handle(ctx, service, opcode, request);
    } catch (RuntimeException e) {
      op.done(start, e);
      throw e;
    }
    return observe(f, op, start);
  }

  @Override
  public CompletableFuture<ByteBuffer> handleInline(
      RpcContext ctx, int service, int opcode, ByteBuffer request) {
    // A call declined here is timed where handle() serves it: it takes its sampling turn only
    // once answered here (peek, then advance), or an opcode always declined would never be timed.
    Op op = op(service, opcode);
    long start = op.latency.peek();
    CompletableFuture<ByteBuffer> f;
    try {
      f = inner.handleInline(ctx, service, opcode, request);
    } catch (RuntimeException e) {
      op.latency.advance();
      op.done(start, e);
      throw e;
    }
    if (f == null) {
      return null;
    }
    op.latency.advance();
    return observe(f, op, start);
  }

  private static CompletableFuture<ByteBuffer> observe(
      CompletableFuture<ByteBuffer> f, Op op, long start) {
    if (f == null) {
      return null;
    }
    if (f.isDone()) {
      // The usual inline answer: no stage allocated.
      Throwable failure = null;
      if (f.isCompletedExceptionally()) {
        failure = f.handle((v, e) -> e).join();
      }
      op.done(start, failure);
      return f;
    }
    // A side stage: the caller gets f itself, so the answer is untouched, and a failure inside
    // done() stays in the side stage.
    f.whenComplete((v, e) -> op.done(start, e));
    return f;
  }

  private Op op(int service, int opcode) {
    if (service >= 0 && service < DIRECT && opcode >= 0 && opcode < DIRECT) {
      int i = service * DIRECT + opcode;
      Op o = direct.get(i);
      if (o == null) {
        direct.compareAndSet(i, null, new Op(service, opcode));
        o = direct.get(i);
      }
      return o;
    }
    long key = ((long) service << 32) | (opcode & 0xFFFF_FFFFL);
    return other.computeIfAbsent(key, k -> new Op(service, opcode));
  }

  /** The meters of one (service, opcode). Micrometer returns the same meter for the same id. */
  private final class Op {
    private final String service;
    private final String opcode;
    private final Counter ok;
    private final SampledTimer latency;

    /** Error outcomes by code name, made on first occurrence (rare). */
    private final ConcurrentHashMap<String, Counter> errors = new ConcurrentHashMap<>();

    Op(int service, int opcode) {
      String name = serviceNames.apply(service);
      this.service = name != null ? name : Integer.toString(service);
      this.opcode = Integer.toString(opcode);
      this.ok = requests("ok");
      this.latency =
          new SampledTimer(
              Timer.builder("ferrite.rpc.latency")
                  .description("Time from an RPC's arrival to its answer (one call in 16)")
                  .tag("service", this.service)
                  .tag("opcode", this.opcode)
                  .publishPercentiles(0.5, 0.99)
                  .register(registry));
    }

    private Counter requests(String outcome) {
      return Counter.builder("ferrite.rpc.requests")
          .description("RPCs served, by outcome (ok or the error code)")
          .tag("service", service)
          .tag("opcode", opcode)
          .tag("outcome", outcome)
          .register(registry);
    }

    void done(long start, Throwable failure) {
      latency.stop(start);
      if (failure == null) {
        ok.increment();
      } else {
        errors.computeIfAbsent(outcome(failure), this::requests).increment();
      }
    }
  }

  private static String outcome(Throwable t) {
    Throwable c = t;
    while (c instanceof CompletionException && c.getCause() != null) {
      c = c.getCause();
    }
    if (c instanceof FerriteException fe) {
      return fe.code().name().toLowerCase(Locale.ROOT);
    }
    return "internal";
  }
}
