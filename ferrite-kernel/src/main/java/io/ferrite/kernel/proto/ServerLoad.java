package io.ferrite.kernel.proto;

import io.ferrite.fabric.Counters;
import io.ferrite.fabric.OpKind;
import java.util.Arrays;

/**
 * What a memory server served since it started, as it tells the master in each heartbeat: its
 * endpoints' fabric {@link Counters} totals (operations and payload bytes by {@link OpKind}; {@code
 * RPC} counts the RPCs it served) and its RPC latency timer ({@code ferrite.rpc.latency}: count,
 * total time, and the p50/p99 it publishes; -1 where the server has no such timer). Totals, not
 * rates: a lost heartbeat loses no operations, and the master turns two totals into a rate.
 *
 * <p>The optional block after HEARTBEAT's {@code serverId i32} (an older server sends none; an
 * older master refuses it with INVALID_ARGUMENT, after which the server sends none):
 *
 * <pre>
 * load = kinds u8 | kinds x (ops i64 | bytes i64)           (in OpKind order; extra kinds skipped)
 *        | rpcCount i64 | rpcTotalNanos i64 | rpcP50Nanos i64 | rpcP99Nanos i64
 * </pre>
 *
 * @param ops operations by {@link OpKind#ordinal()}
 * @param bytes payload bytes by {@link OpKind#ordinal()}
 */
public record ServerLoad(
    long[] ops,
    long[] bytes,
    long rpcCount,
    long rpcTotalNanos,
    long rpcP50Nanos,
    long rpcP99Nanos) {

  private static final int KINDS = OpKind.values().length;

  public ServerLoad {
    ops = Arrays.copyOf(ops, KINDS);
    bytes = Arrays.copyOf(bytes, KINDS);
  }

  /**
   * The totals of every endpoint's {@code counters} (one per fabric the server serves) and the
   * given latency figures (-1 for a percentile the server does not have).
   */
  public static ServerLoad of(
      Iterable<Counters> counters,
      long rpcCount,
      long rpcTotalNanos,
      long p50Nanos,
      long p99Nanos) {
    long[] o = new long[KINDS];
    long[] b = new long[KINDS];
    for (Counters c : counters) {
      for (OpKind k : OpKind.values()) {
        o[k.ordinal()] += c.ops(k);
        b[k.ordinal()] += c.bytes(k);
      }
    }
    return new ServerLoad(o, b, rpcCount, rpcTotalNanos, p50Nanos, p99Nanos);
  }

  public long ops(OpKind kind) {
    return ops[kind.ordinal()];
  }

  public long bytes(OpKind kind) {
    return bytes[kind.ordinal()];
  }

  /** Appends the block to a HEARTBEAT request. */
  public void write(Wire.Writer w) {
    w.u8(KINDS);
    for (int k = 0; k < KINDS; k++) {
      w.i64(ops[k]).i64(bytes[k]);
    }
    w.i64(rpcCount).i64(rpcTotalNanos).i64(rpcP50Nanos).i64(rpcP99Nanos);
  }

  /** Reads the block {@link #write} wrote. */
  public static ServerLoad read(Wire.Reader r) {
    int kinds = r.u8("kinds");
    long[] o = new long[KINDS];
    long[] b = new long[KINDS];
    for (int k = 0; k < kinds; k++) {
      long ops = r.i64("ops");
      long bytes = r.i64("bytes");
      if (k < KINDS) {
        o[k] = ops;
        b[k] = bytes;
      }
    }
    return new ServerLoad(
        o,
        b,
        r.i64("rpcCount"),
        r.i64("rpcTotalNanos"),
        r.i64("rpcP50Nanos"),
        r.i64("rpcP99Nanos"));
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ServerLoad l
        && Arrays.equals(ops, l.ops)
        && Arrays.equals(bytes, l.bytes)
        && rpcCount == l.rpcCount
        && rpcTotalNanos == l.rpcTotalNanos
        && rpcP50Nanos == l.rpcP50Nanos
        && rpcP99Nanos == l.rpcP99Nanos;
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(ops) * 31 + Arrays.hashCode(bytes) + Long.hashCode(rpcCount);
  }

  @Override
  public String toString() {
    return "ServerLoad[ops="
        + Arrays.toString(ops)
        + ", bytes="
        + Arrays.toString(bytes)
        + ", rpc="
        + rpcCount
        + "/"
        + rpcTotalNanos
        + " ns, p50="
        + rpcP50Nanos
        + ", p99="
        + rpcP99Nanos
        + "]";
  }
}
