package io.ferrite.fabric;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * Per-endpoint counts of operations, bytes and failures by {@link OpKind}. Thread-safe; updated on
 * the hot path with {@link LongAdder}s so that concurrent threads do not contend on one cache line.
 *
 * <p>Bytes count payload only: for a read, the bytes returned; for a write, the bytes written; for
 * an RPC, request plus response body; atomics count 8.
 */
public final class Counters {
  private final LongAdder[] ops = newAdders();
  private final LongAdder[] bytes = newAdders();
  private final LongAdder[] errors = newAdders();

  private static LongAdder[] newAdders() {
    LongAdder[] a = new LongAdder[OpKind.values().length];
    for (int i = 0; i < a.length; i++) {
      a[i] = new LongAdder();
    }
    return a;
  }

  /** Records one completed operation of {@code kind} that moved {@code byteCount} bytes. */
  public void record(OpKind kind, long byteCount) {
    ops[kind.ordinal()].increment();
    bytes[kind.ordinal()].add(byteCount);
  }

  /** Records one failed operation of {@code kind}. */
  public void recordError(OpKind kind) {
    errors[kind.ordinal()].increment();
  }

  public long ops(OpKind kind) {
    return ops[kind.ordinal()].sum();
  }

  public long bytes(OpKind kind) {
    return bytes[kind.ordinal()].sum();
  }

  public long errors(OpKind kind) {
    return errors[kind.ordinal()].sum();
  }

  /** A point-in-time copy, for reports and for "ops per lookup" deltas. */
  public Snapshot snapshot() {
    Map<OpKind, long[]> m = new EnumMap<>(OpKind.class);
    for (OpKind k : OpKind.values()) {
      m.put(k, new long[] {ops(k), bytes(k), errors(k)});
    }
    return new Snapshot(m);
  }

  /** Immutable counts at one instant. */
  public static final class Snapshot {
    private final Map<OpKind, long[]> values;

    Snapshot(Map<OpKind, long[]> values) {
      this.values = values;
    }

    public long ops(OpKind kind) {
      return values.get(kind)[0];
    }

    public long bytes(OpKind kind) {
      return values.get(kind)[1];
    }

    public long errors(OpKind kind) {
      return values.get(kind)[2];
    }

    /** This snapshot minus an earlier one. */
    public Snapshot minus(Snapshot earlier) {
      Map<OpKind, long[]> m = new EnumMap<>(OpKind.class);
      for (OpKind k : OpKind.values()) {
        long[] a = values.get(k);
        long[] b = earlier.values.get(k);
        m.put(k, new long[] {a[0] - b[0], a[1] - b[1], a[2] - b[2]});
      }
      return new Snapshot(m);
    }

    @Override
    public String toString() {
      StringBuilder sb = new StringBuilder();
      for (OpKind k : OpKind.values()) {
        long[] v = values.get(k);
        if (v[0] != 0 || v[2] != 0) {
          if (sb.length() > 0) {
            sb.append(", ");
          }
          sb.append(k.name().toLowerCase(java.util.Locale.ROOT))
              .append('=')
              .append(v[0])
              .append(" ops/")
              .append(v[1])
              .append(" B");
          if (v[2] != 0) {
            sb.append('/').append(v[2]).append(" err");
          }
        }
      }
      return sb.length() == 0 ? "no ops" : sb.toString();
    }
  }
}
