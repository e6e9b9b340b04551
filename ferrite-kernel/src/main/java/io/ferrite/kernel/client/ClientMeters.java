package io.ferrite.kernel.client;

import io.ferrite.fabric.Counters;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.OpKind;
import io.ferrite.kernel.ops.FabricMeters;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * A client's {@code ferrite.fabric.*} counters (when {@link ClientOptions#metrics} is given): per
 * fabric, the sum over its live connections plus what the connections closed since had counted.
 * Connections come and go (reconnects, shm upgrades); one that is found closed at a scrape moves
 * its counts into the closed totals, once. The data path pays nothing: the fabric counts anyway.
 */
final class ClientMeters {
  private final MeterRegistry registry;
  private final Map<FabricConnection, String> live = new ConcurrentHashMap<>();
  private final Map<String, Totals> byFabric = new ConcurrentHashMap<>();

  ClientMeters(MeterRegistry registry) {
    this.registry = registry;
  }

  /** Counts {@code c}, a connection over {@code fabric}, from now on. */
  FabricConnection opened(String fabric, FabricConnection c) {
    byFabric.computeIfAbsent(
        fabric,
        f -> {
          Totals t = new Totals(f);
          // The registry holds t weakly: byFabric keeps it for as long as the client lives.
          FabricMeters.bind(registry, f, t);
          return t;
        });
    live.put(c, fabric);
    return c;
  }

  /** Moves the counts of connections that have closed into their fabric's totals. */
  private void sweep() {
    for (Map.Entry<FabricConnection, String> e : live.entrySet()) {
      FabricConnection c = e.getKey();
      if (!c.isOpen() && live.remove(c) != null) {
        byFabric.get(e.getValue()).retire(c.counters());
      }
    }
  }

  private final class Totals implements FabricMeters.Source {
    private final String fabric;
    private final LongAdder[][] closed = new LongAdder[3][OpKind.values().length];

    Totals(String fabric) {
      this.fabric = fabric;
      for (LongAdder[] row : closed) {
        for (int i = 0; i < row.length; i++) {
          row[i] = new LongAdder();
        }
      }
    }

    void retire(Counters c) {
      for (OpKind k : OpKind.values()) {
        closed[0][k.ordinal()].add(c.ops(k));
        closed[1][k.ordinal()].add(c.bytes(k));
        closed[2][k.ordinal()].add(c.errors(k));
      }
    }

    private long sum(int what, OpKind k) {
      sweep();
      long n = closed[what][k.ordinal()].sum();
      for (Map.Entry<FabricConnection, String> e : live.entrySet()) {
        if (e.getValue().equals(fabric)) {
          Counters c = e.getKey().counters();
          n += what == 0 ? c.ops(k) : what == 1 ? c.bytes(k) : c.errors(k);
        }
      }
      return n;
    }

    @Override
    public long ops(OpKind kind) {
      return sum(0, kind);
    }

    @Override
    public long bytes(OpKind kind) {
      return sum(1, kind);
    }

    @Override
    public long errors(OpKind kind) {
      return sum(2, kind);
    }
  }
}
