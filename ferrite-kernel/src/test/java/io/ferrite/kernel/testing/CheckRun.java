package io.ferrite.kernel.testing;

import io.ferrite.kernel.testing.SerializabilityChecker.Anomaly;
import io.ferrite.kernel.testing.SerializabilityChecker.Type;
import io.ferrite.kernel.testing.TxHistory.Kind;
import io.ferrite.kernel.testing.TxHistory.Op;
import io.ferrite.kernel.testing.TxHistory.Outcome;
import io.ferrite.kernel.testing.TxHistory.Txn;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.LongUnaryOperator;

/** One check: the history indexed by node (its position in the list). */
final class CheckRun {
  final List<Txn> txns;
  final LongUnaryOperator initial; // key -> the version it starts at
  final boolean[] included;
  final List<Anomaly> anomalies = new ArrayList<>();
  final Map<Type, Integer> counts = new EnumMap<>(Type.class);
  final List<KeyOrder> orders = new ArrayList<>();
  final long t0;
  DependencyGraph graph;

  CheckRun(List<Txn> txns, LongUnaryOperator initial) {
    this.txns = txns;
    this.initial = initial;
    this.included = new boolean[txns.size()];
    this.t0 = txns.stream().mapToLong(Txn::invoke).min().orElse(0);
  }

  void report(Type type, List<Integer> nodes, String why) {
    int n = counts.merge(type, 1, Integer::sum);
    if (n > SerializabilityChecker.REPORTED_PER_TYPE) {
      return;
    }
    List<Integer> ids = new ArrayList<>();
    StringBuilder sb = new StringBuilder(why);
    for (int node : new LinkedHashSet<>(nodes)) {
      ids.add(txns.get(node).id());
      sb.append(System.lineSeparator()).append("      ").append(describe(node));
    }
    anomalies.add(new Anomaly(type, ids, sb.toString()));
  }

  String describe(int node) {
    Txn t = txns.get(node);
    StringBuilder sb =
        new StringBuilder()
            .append('T')
            .append(t.id())
            .append(" client ")
            .append(t.client())
            .append(' ')
            .append(t.outcome().name().toLowerCase(Locale.ROOT))
            .append(" [")
            .append(t.invoke() - t0)
            .append(", ")
            .append(t.complete() == Long.MAX_VALUE ? "?" : Long.toString(t.complete() - t0))
            .append("] ns:");
    int shown = 0;
    for (Op op : t.ops()) {
      if (shown++ == 12) {
        sb.append(" ... ").append(t.ops().size() - 12).append(" more");
        break;
      }
      sb.append(' ').append(op);
    }
    return sb.toString();
  }

  String name(int node) {
    return "T" + txns.get(node).id();
  }

  // ---------------------------------------------------------------- inference

  void infer() {
    Map<Long, Boolean> listKeys = new HashMap<>();
    for (Txn t : txns) {
      for (Op op : t.ops()) {
        boolean list = op.kind() == Kind.APPEND || op.kind() == Kind.READ_LIST;
        Boolean before = listKeys.putIfAbsent(op.key(), list);
        if (before != null && before != list) {
          throw new IllegalArgumentException(
              "key " + op.key() + " used both with versions and as a list (expected: one form)");
        }
      }
    }
    VersionInference versions = new VersionInference(this);
    ListInference lists = new ListInference(this);
    versions.index();
    lists.index();
    // Committed transactions, then each UNKNOWN one whose write an included one read: it
    // committed, and its own reads count too.
    ArrayDeque<Integer> work = committed();
    while (!work.isEmpty()) {
      int n = work.poll();
      versions.visit(n, work);
      lists.visit(n, work);
    }
    versions.order();
    lists.order();
  }

  /** Marks {@code node} included; true when it was not yet (then its reads must be looked at). */
  boolean include(int node) {
    if (included[node]) {
      return false;
    }
    included[node] = true;
    return true;
  }

  /** Nodes that committed: where inclusion starts. */
  ArrayDeque<Integer> committed() {
    ArrayDeque<Integer> q = new ArrayDeque<>();
    for (int n = 0; n < txns.size(); n++) {
      if (txns.get(n).outcome() == Outcome.COMMITTED) {
        included[n] = true;
        q.add(n);
      }
    }
    return q;
  }

  // ---------------------------------------------------------------- graph

  void graph(boolean strict) {
    int n = txns.size();
    List<Integer> timed = new ArrayList<>();
    if (strict) {
      for (int i = 0; i < n; i++) {
        // Only a committed transaction has a known completion: an UNKNOWN one may have
        // committed any time later, so nothing follows it in real time.
        if (included[i] && txns.get(i).outcome() == Outcome.COMMITTED) {
          timed.add(i);
        }
      }
      timed.sort((a, b) -> Long.compare(txns.get(a).complete(), txns.get(b).complete()));
    }
    int m = timed.size();
    graph = new DependencyGraph(n + m);
    for (KeyOrder o : orders) {
      edges(o);
    }
    if (strict && m > 0) {
      // Barrier b (node n + b) stands for "after the b-th completion": T_b -> b -> b+1 -> ...,
      // and b -> every T invoked strictly after completion b, from the latest such b only.
      long[] completes = new long[m];
      for (int b = 0; b < m; b++) {
        int t = timed.get(b);
        completes[b] = txns.get(t).complete();
        graph.edge(t, n + b, DependencyGraph.RT, 0);
        if (b + 1 < m) {
          graph.edge(n + b, n + b + 1, DependencyGraph.RT, 0);
        }
      }
      for (int i = 0; i < n; i++) {
        if (!included[i]) {
          continue;
        }
        int b = lastBefore(completes, txns.get(i).invoke());
        if (b >= 0) {
          graph.edge(n + b, i, DependencyGraph.RT, 0);
        }
      }
    }
    graph.freeze();
  }

  /** The largest b with completes[b] < t, or -1. */
  static int lastBefore(long[] completes, long t) {
    int lo = 0;
    int hi = completes.length; // first index with completes >= t
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (completes[mid] < t) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo - 1;
  }

  void edges(KeyOrder o) {
    int len = o.writers.length;
    // next[p]: the first real writer at a position > p (index p + 1 in the array; p = -1 is
    // the initial version), so a gap (an aborted or unknown writer) does not break the chain.
    int[] next = new int[len + 1];
    int after = -1;
    for (int p = len - 1; p >= -1; p--) {
      next[p + 1] = after;
      if (p >= 0 && o.writers[p] >= 0) {
        after = o.writers[p];
      }
    }
    int prev = -1;
    for (int p = 0; p < len; p++) {
      int w = o.writers[p];
      if (w < 0) {
        continue;
      }
      if (prev >= 0) {
        graph.edge(prev, w, DependencyGraph.WW, o.key);
      }
      prev = w;
    }
    if (prev >= 0) {
      for (int t : o.tail) {
        graph.edge(prev, t, DependencyGraph.WW, o.key);
      }
    }
    for (long[] read : o.reads) {
      int r = (int) read[0];
      int p = (int) read[1];
      if (p >= 0 && o.writers[p] >= 0) {
        graph.edge(o.writers[p], r, DependencyGraph.WR, o.key);
      }
      int nx = next[p + 1];
      if (nx >= 0) {
        graph.edge(r, nx, DependencyGraph.RW, o.key);
      } else {
        for (int t : o.tail) {
          graph.edge(r, t, DependencyGraph.RW, o.key);
        }
      }
    }
  }

  // ---------------------------------------------------------------- cycles

  void cycles(boolean strict) {
    int ww = DependencyGraph.WW;
    int wwr = ww | DependencyGraph.WR;
    int wwrw = wwr | DependencyGraph.RW;
    level(ww, ww, Type.G0);
    level(wwr, DependencyGraph.WR, Type.G1C);
    antiDependencyLevel(wwrw);
    if (strict) {
      realTimeLevel();
    }
  }

  /**
   * Cycles real time closes. First the plainest: an edge u -> v (v must come after u) where v
   * completed before u was invoked, as when u read a version v had already overwritten (a stale
   * read); then, in components without one, the shortest cycle through any real-time edge.
   */
  void realTimeLevel() {
    int n = txns.size();
    int[][] cs = graph.components(DependencyGraph.ALL);
    int[] comp = cs[0];
    boolean[] done = new boolean[cs[1].length];
    for (int e = 0; e < graph.edgeCount(); e++) {
      int u = graph.src(e);
      int v = graph.dst(e);
      if (graph.type(e) == DependencyGraph.RT || u >= n || v >= n || done[comp[u]]) {
        continue;
      }
      Txn tv = txns.get(v);
      if (comp[v] == comp[u]
          && tv.outcome() == Outcome.COMMITTED
          && tv.complete() < txns.get(u).invoke()) {
        int c = comp[u];
        done[c] = true;
        List<Integer> cycle = new ArrayList<>();
        cycle.add(e);
        cycle.addAll(graph.path(v, u, DependencyGraph.RT, comp, c));
        reportCycle(Type.REALTIME, cycle);
      }
    }
    level(DependencyGraph.ALL, DependencyGraph.RT, Type.REALTIME, cs, done);
  }

  /**
   * For each component over {@code mask} holding an edge of type {@code through}, reports the
   * shortest cycle through one such edge.
   */
  void level(int mask, int through, Type type) {
    int[][] cs = graph.components(mask);
    level(mask, through, type, cs, new boolean[cs[1].length]);
  }

  void level(int mask, int through, Type type, int[][] cs, boolean[] done) {
    int[] comp = cs[0];
    for (int e = 0; e < graph.edgeCount(); e++) {
      int c = comp[graph.src(e)];
      if (graph.type(e) != through || done[c] || comp[graph.dst(e)] != c) {
        continue;
      }
      done[c] = true;
      List<Integer> back = graph.path(graph.dst(e), graph.src(e), mask, comp, c);
      List<Integer> cycle = new ArrayList<>();
      cycle.add(e);
      cycle.addAll(back);
      reportCycle(type, cycle);
    }
  }

  /** G-single when a cycle with exactly one rw edge exists in a component, else G2. */
  void antiDependencyLevel(int mask) {
    int[][] cs = graph.components(mask);
    int[] comp = cs[0];
    int[] tries = new int[cs[1].length];
    int[] first = new int[cs[1].length];
    Arrays.fill(first, -1);
    boolean[] done = new boolean[cs[1].length];
    int noRw = mask & ~DependencyGraph.RW;
    for (int e = 0; e < graph.edgeCount(); e++) {
      int c = comp[graph.src(e)];
      if (graph.type(e) != DependencyGraph.RW || done[c] || comp[graph.dst(e)] != c) {
        continue;
      }
      if (first[c] < 0) {
        first[c] = e;
      }
      if (tries[c]++ >= SerializabilityChecker.SINGLE_TRIES) {
        continue;
      }
      List<Integer> back = graph.path(graph.dst(e), graph.src(e), noRw, comp, c);
      if (back != null) {
        done[c] = true;
        List<Integer> cycle = new ArrayList<>();
        cycle.add(e);
        cycle.addAll(back);
        reportCycle(Type.G_SINGLE, cycle);
      }
    }
    for (int c = 0; c < first.length; c++) {
      if (first[c] >= 0 && !done[c]) {
        int e = first[c];
        List<Integer> cycle = new ArrayList<>();
        cycle.add(e);
        cycle.addAll(graph.path(graph.dst(e), graph.src(e), mask, comp, c));
        reportCycle(Type.G2, cycle);
      }
    }
  }

  void reportCycle(Type type, List<Integer> path) {
    int n = txns.size();
    // Start at a transaction, not a barrier.
    int from = 0;
    while (graph.src(path.get(from)) >= n) {
      from++;
    }
    List<Integer> cycle = new ArrayList<>(path.subList(from, path.size()));
    cycle.addAll(path.subList(0, from));
    List<Integer> nodes = new ArrayList<>();
    StringBuilder sb = new StringBuilder();
    int rw = 0;
    boolean inBarrier = false;
    for (int e : cycle) {
      int s = graph.src(e);
      int d = graph.dst(e);
      int t = graph.type(e);
      rw += t == DependencyGraph.RW ? 1 : 0;
      if (s < n) {
        if (sb.length() == 0) {
          sb.append(name(s));
        }
        nodes.add(s);
      }
      if (d >= n) { // into a barrier: print once, on the way out
        inBarrier = true;
        continue;
      }
      if (inBarrier || t == DependencyGraph.RT) {
        sb.append(" -rt-> ");
      } else {
        sb.append(" -").append(DependencyGraph.name(t)).append("(key ");
        sb.append(graph.key(e)).append(")-> ");
      }
      inBarrier = false;
      sb.append(name(d));
    }
    if (sb.length() == 0) {
      return; // a cycle of barriers only cannot exist (their chain only goes forward)
    }
    sb.append("  [").append(rw).append(" rw edge").append(rw == 1 ? "" : "s").append(']');
    report(type, nodes, sb.toString());
  }
}
