package io.ferrite.kernel.testing;

import io.ferrite.kernel.testing.SerializabilityChecker.Type;
import io.ferrite.kernel.testing.TxHistory.Kind;
import io.ferrite.kernel.testing.TxHistory.Op;
import io.ferrite.kernel.testing.TxHistory.Outcome;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Appends and list reads: versions are list prefixes, ordered by the longest list read. */
final class ListInference {
  final CheckRun run;
  // key -> element -> appends of it: {node, final ? 1 : 0}
  final Map<Long, Map<Long, List<int[]>>> appends = new HashMap<>();
  // key -> node -> its appends to the key, in program order
  final Map<Long, Map<Integer, List<Long>>> byTxn = new HashMap<>();
  // key -> external reads: {reader node, elements...}
  final Map<Long, List<long[]>> reads = new HashMap<>();

  ListInference(CheckRun run) {
    this.run = run;
  }

  void index() {
    for (int n = 0; n < run.txns.size(); n++) {
      List<Op> ops = run.txns.get(n).ops();
      Map<Long, Integer> last = new HashMap<>();
      for (int i = 0; i < ops.size(); i++) {
        if (ops.get(i).kind() == Kind.APPEND) {
          last.put(ops.get(i).key(), i);
        }
      }
      for (int i = 0; i < ops.size(); i++) {
        Op op = ops.get(i);
        if (op.kind() == Kind.APPEND) {
          int fin = last.get(op.key()) == i ? 1 : 0;
          appends
              .computeIfAbsent(op.key(), k -> new HashMap<>())
              .computeIfAbsent(op.value(), v -> new ArrayList<>())
              .add(new int[] {n, fin});
          byTxn
              .computeIfAbsent(op.key(), k -> new HashMap<>())
              .computeIfAbsent(n, x -> new ArrayList<>())
              .add(op.value());
        }
      }
    }
    for (Map.Entry<Long, Map<Long, List<int[]>>> k : appends.entrySet()) {
      for (Map.Entry<Long, List<int[]>> e : k.getValue().entrySet()) {
        List<Integer> live = new ArrayList<>();
        for (int[] w : e.getValue()) {
          if (run.txns.get(w[0]).outcome() != Outcome.ABORTED) {
            live.add(w[0]);
          }
        }
        if (live.size() > 1) {
          run.report(
              Type.DUPLICATE_ELEMENT,
              live,
              "element " + e.getKey() + " appended " + live.size() + " times to key " + k.getKey());
        }
      }
    }
  }

  void visit(int n, ArrayDeque<Integer> work) {
    Map<Long, List<Long>> own = new HashMap<>();
    for (Op op : run.txns.get(n).ops()) {
      if (op.kind() == Kind.APPEND) {
        own.computeIfAbsent(op.key(), k -> new ArrayList<>()).add(op.value());
      } else if (op.kind() == Kind.READ_LIST) {
        read(n, op, own.getOrDefault(op.key(), List.of()), work);
      }
    }
  }

  void order() {
    Set<Long> keys = new HashSet<>(appends.keySet());
    keys.addAll(reads.keySet());
    for (long key : keys) {
      orderKey(key);
    }
  }

  void read(int n, Op op, List<Long> own, ArrayDeque<Integer> work) {
    long key = op.key();
    long[] list = op.list();
    String what = run.name(n) + " read key " + key + " = " + TxHistory.abbreviated(list);
    int ext = list.length - own.size();
    boolean ok = ext >= 0;
    for (int i = 0; ok && i < own.size(); i++) {
      ok = list[ext + i] == own.get(i);
    }
    if (!ok) {
      run.report(
          Type.INTERNAL, List.of(n), what + " after appending " + own + " (expected at its end)");
      return;
    }
    Set<Long> seen = new HashSet<>();
    Map<Long, List<int[]>> byElement = appends.getOrDefault(key, Map.of());
    for (int i = 0; i < ext; i++) {
      long e = list[i];
      if (!seen.add(e)) {
        run.report(Type.DUPLICATE_ELEMENT, List.of(n), what + ": " + e + " twice");
        return;
      }
      int best = -1;
      int aborted = -1;
      boolean self = false;
      for (int[] w : byElement.getOrDefault(e, List.of())) {
        Outcome o = run.txns.get(w[0]).outcome();
        if (o == Outcome.ABORTED) {
          aborted = w[0];
        } else if (w[0] == n) {
          self = true;
        } else if (best < 0 || o == Outcome.COMMITTED) {
          best = w[0];
        }
      }
      if (best >= 0) {
        if (run.include(best)) {
          work.add(best);
        }
      } else if (self) {
        run.report(Type.INTERNAL, List.of(n), what + ": " + e + " before it appended it");
        return;
      } else if (aborted >= 0) {
        run.report(
            Type.G1A, List.of(n, aborted), what + ": " + e + " by aborted " + run.name(aborted));
        return;
      } else {
        run.report(Type.UNWRITTEN_READ, List.of(n), what + ": nobody appended " + e);
        return;
      }
    }
    long[] r = new long[ext + 1];
    r[0] = n;
    System.arraycopy(list, 0, r, 1, ext);
    reads.computeIfAbsent(key, k -> new ArrayList<>()).add(r);
  }

  /** The appender (included, not aborted) of {@code e}, or -1. */
  int appender(Map<Long, List<int[]>> byElement, long e) {
    int best = -1;
    for (int[] w : byElement.getOrDefault(e, List.of())) {
      if (run.included[w[0]] && (best < 0 || run.txns.get(w[0]).outcome() == Outcome.COMMITTED)) {
        best = w[0];
      }
    }
    return best;
  }

  void orderKey(long key) {
    Map<Long, List<int[]>> byElement = appends.getOrDefault(key, Map.of());
    List<long[]> rs = reads.getOrDefault(key, List.of());
    long[] longest = new long[] {-1};
    for (long[] r : rs) {
      if (r.length > longest.length) {
        longest = r;
      }
    }
    KeyOrder o = new KeyOrder(key);
    int len = longest.length - 1;
    o.writers = new int[len];
    o.labels = Arrays.copyOfRange(longest, 1, longest.length);
    Map<Long, Integer> position = new HashMap<>();
    for (int p = 0; p < len; p++) {
      position.put(o.labels[p], p);
      o.writers[p] = appender(byElement, o.labels[p]);
    }
    for (long[] r : rs) {
      boolean prefix = true;
      for (int i = 1; prefix && i < r.length; i++) {
        prefix = r[i] == longest[i];
      }
      if (!prefix) {
        int at = 1;
        while (r[at] == longest[at]) {
          at++;
        }
        run.report(
            Type.INCOMPATIBLE_ORDER,
            List.of((int) r[0], (int) longest[0]),
            run.name((int) r[0])
                + " read key "
                + key
                + " with "
                + r[at]
                + " at index "
                + (at - 1)
                + ", "
                + run.name((int) longest[0])
                + " with "
                + longest[at]);
        continue;
      }
      int p = r.length - 2; // the position of its last element; -1 for the empty list
      int reader = (int) r[0];
      if (p >= 0) {
        int w = o.writers[p];
        if (w >= 0 && w != reader && !isFinal(byElement, r[r.length - 1], w)) {
          run.report(
              Type.G1B,
              List.of(reader, w),
              run.name(reader)
                  + " read key "
                  + key
                  + " up to "
                  + r[r.length - 1]
                  + ", which "
                  + run.name(w)
                  + " followed with another append");
        }
      }
      o.reads.add(new long[] {reader, p});
    }
    atomicAppends(key, position, (int) longest[0]);
    Set<Integer> tail = new LinkedHashSet<>();
    for (Map.Entry<Long, List<int[]>> e : byElement.entrySet()) {
      if (position.containsKey(e.getKey())) {
        continue;
      }
      for (int[] w : e.getValue()) {
        if (run.included[w[0]]) {
          tail.add(w[0]);
        }
      }
    }
    o.tail = tail.stream().mapToInt(Integer::intValue).toArray();
    run.orders.add(o);
  }

  /**
   * A transaction's appends to one key are atomic: in the order they appear all or none from its
   * first on, in its program order. (Another's element between two of them is a ww cycle, G0.)
   */
  void atomicAppends(long key, Map<Long, Integer> position, int longestReader) {
    for (Map.Entry<Integer, List<Long>> t : byTxn.getOrDefault(key, Map.of()).entrySet()) {
      List<Long> mine = t.getValue();
      if (mine.size() < 2 || !run.included[t.getKey()]) {
        continue;
      }
      List<String> at = new ArrayList<>();
      boolean gap = false;
      boolean broken = false;
      int last = -1;
      for (long e : mine) {
        Integer p = position.get(e);
        at.add(p == null ? "-" : p.toString());
        broken |= p != null && (gap || p < last);
        gap |= p == null;
        last = p == null ? last : p;
      }
      if (broken) {
        run.report(
            Type.INCOMPATIBLE_ORDER,
            List.of(t.getKey(), longestReader),
            run.name(t.getKey())
                + " appended "
                + mine
                + " to key "
                + key
                + ", at positions "
                + at
                + " of what "
                + run.name(longestReader)
                + " read (- for absent)");
      }
    }
  }

  boolean isFinal(Map<Long, List<int[]>> byElement, long e, int node) {
    for (int[] w : byElement.getOrDefault(e, List.of())) {
      if (w[0] == node) {
        return w[1] == 1;
      }
    }
    return true;
  }
}
