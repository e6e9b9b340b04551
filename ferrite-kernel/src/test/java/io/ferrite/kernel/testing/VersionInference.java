package io.ferrite.kernel.testing;

import io.ferrite.kernel.testing.SerializabilityChecker.Type;
import io.ferrite.kernel.testing.TxHistory.Kind;
import io.ferrite.kernel.testing.TxHistory.Op;
import io.ferrite.kernel.testing.TxHistory.Outcome;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Reads and writes of versions: the version order is the numeric order of installed ones. */
final class VersionInference {
  final CheckRun run;
  // key -> version -> writes of it: {node, final ? 1 : 0}
  final Map<Long, Map<Long, List<int[]>>> writes = new HashMap<>();
  final Map<Long, List<long[]>> reads = new HashMap<>(); // key -> {reader, version}

  VersionInference(CheckRun run) {
    this.run = run;
  }

  void index() {
    for (int n = 0; n < run.txns.size(); n++) {
      List<Op> ops = run.txns.get(n).ops();
      Map<Long, Integer> last = new HashMap<>();
      for (int i = 0; i < ops.size(); i++) {
        if (ops.get(i).kind() == Kind.WRITE) {
          last.put(ops.get(i).key(), i);
        }
      }
      for (int i = 0; i < ops.size(); i++) {
        Op op = ops.get(i);
        if (op.kind() == Kind.WRITE) {
          int fin = last.get(op.key()) == i ? 1 : 0;
          writes
              .computeIfAbsent(op.key(), k -> new HashMap<>())
              .computeIfAbsent(op.value(), v -> new ArrayList<>())
              .add(new int[] {n, fin});
        }
      }
    }
  }

  void visit(int n, ArrayDeque<Integer> work) {
    Map<Long, Long> own = new HashMap<>(); // key -> this txn's latest write so far
    for (Op op : run.txns.get(n).ops()) {
      if (op.kind() == Kind.WRITE) {
        own.put(op.key(), op.value());
      } else if (op.kind() == Kind.READ) {
        Long mine = own.get(op.key());
        if (mine == null) {
          resolve(n, op, work);
        } else if (mine != op.value()) {
          run.report(
              Type.INTERNAL,
              List.of(n),
              run.name(n) + " wrote key " + op.key() + " v" + mine + " then read v" + op.value());
        }
      }
    }
  }

  void order() {
    for (Map.Entry<Long, List<long[]>> e : reads.entrySet()) {
      writes.computeIfAbsent(e.getKey(), k -> new HashMap<>());
    }
    for (Map.Entry<Long, Map<Long, List<int[]>>> e : writes.entrySet()) {
      orderKey(e.getKey(), e.getValue());
    }
  }

  /** Attributes one external read; includes an UNKNOWN writer it proves committed. */
  void resolve(int n, Op op, ArrayDeque<Integer> work) {
    long key = op.key();
    long v = op.value();
    if (v == run.initial.applyAsLong(key)) {
      reads.computeIfAbsent(key, k -> new ArrayList<>()).add(new long[] {n, v});
      return;
    }
    List<int[]> ws = writes.getOrDefault(key, Map.of()).getOrDefault(v, List.of());
    int best = -1;
    int intermediate = -1;
    int aborted = -1;
    boolean self = false;
    for (int[] w : ws) {
      Outcome o = run.txns.get(w[0]).outcome();
      if (o == Outcome.ABORTED) {
        aborted = w[0];
      } else if (w[0] == n) {
        self = true;
      } else if (w[1] == 0) {
        intermediate = w[0];
      } else if (best < 0 || o == Outcome.COMMITTED) {
        best = w[0];
      }
    }
    String what = run.name(n) + " read key " + key + " v" + v;
    if (best >= 0) {
      if (run.include(best)) {
        work.add(best);
      }
      reads.computeIfAbsent(key, k -> new ArrayList<>()).add(new long[] {n, v});
    } else if (self) {
      run.report(Type.INTERNAL, List.of(n), what + " before it wrote that version itself");
    } else if (intermediate >= 0) {
      run.report(
          Type.G1B,
          List.of(n, intermediate),
          what + ", which " + run.name(intermediate) + " overwrote in the same transaction");
    } else if (aborted >= 0) {
      run.report(Type.G1A, List.of(n, aborted), what + ", written by aborted " + run.name(aborted));
    } else {
      run.report(Type.UNWRITTEN_READ, List.of(n), what + ", which no transaction wrote");
    }
  }

  void orderKey(long key, Map<Long, List<int[]>> byVersion) {
    long initial = run.initial.applyAsLong(key);
    List<long[]> installed = new ArrayList<>(); // {version, node}
    for (Map.Entry<Long, List<int[]>> e : byVersion.entrySet()) {
      int first = -1;
      for (int[] w : e.getValue()) {
        if (w[1] == 0 || !run.included[w[0]]) {
          continue;
        }
        if (first >= 0) {
          run.report(
              Type.DUPLICATE_VERSION,
              List.of(first, w[0]),
              run.name(first)
                  + " and "
                  + run.name(w[0])
                  + " both installed key "
                  + key
                  + " v"
                  + e.getKey());
          continue;
        }
        first = w[0];
        if (e.getKey() <= initial) {
          run.report(
              Type.DUPLICATE_VERSION,
              List.of(first),
              run.name(first)
                  + " installed key "
                  + key
                  + " v"
                  + e.getKey()
                  + ", not after the initial v"
                  + initial);
        }
      }
      if (first >= 0) {
        installed.add(new long[] {e.getKey(), first});
      }
    }
    installed.sort((a, b) -> Long.compare(a[0], b[0]));
    KeyOrder o = new KeyOrder(key);
    o.writers = new int[installed.size()];
    o.labels = new long[installed.size()];
    for (int p = 0; p < installed.size(); p++) {
      o.labels[p] = installed.get(p)[0];
      o.writers[p] = (int) installed.get(p)[1];
    }
    for (long[] r : reads.getOrDefault(key, List.of())) {
      int p = r[1] == initial ? -1 : Arrays.binarySearch(o.labels, r[1]);
      if (p < -1) {
        // resolve() attributed the read to an included final writer: its version is installed.
        throw new IllegalStateException("checker bug: key " + key + " v" + r[1] + " not installed");
      }
      o.reads.add(new long[] {r[0], p});
    }
    run.orders.add(o);
  }
}
