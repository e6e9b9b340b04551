package io.ferrite.kernel.testing;

import io.ferrite.kernel.testing.TxHistory.Kind;
import io.ferrite.kernel.testing.TxHistory.Op;
import io.ferrite.kernel.testing.TxHistory.Outcome;
import io.ferrite.kernel.testing.TxHistory.Txn;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Checks a {@link TxHistory} for (strict) serializability with Adya's direct serialization graph
 * (Adya, "Weak consistency", MIT PhD thesis 1999, §3-4), as Elle does for list-append (Kingsbury
 * and Alvaro, VLDB 2020).
 *
 * <p><b>The graph.</b> A node per transaction that committed, or whose outcome is UNKNOWN but whose
 * write somebody read (then it committed; an UNKNOWN transaction nobody observed is dropped: it may
 * not have committed, and keeping it could only add edges). Edges, per key, over the key's version
 * order:
 *
 * <ul>
 *   <li>ww: the writer of a version to the writer of the next one;
 *   <li>wr: the writer of a version to each transaction that read it;
 *   <li>rw (anti-dependency): a reader of a version to the writer of the next one;
 *   <li>rt (strict only): T1 to T2 when T1 completed before T2 was invoked (by the history's
 *       clock). Encoded with O(n) edges, not O(n²): a chain of barrier nodes, one per completion in
 *       time order, T → its barrier → the next barrier ... → each transaction invoked after it.
 * </ul>
 *
 * In list-append keys the order is the longest list read; appends nobody read come after every
 * element read, in an order nobody knows: they get ww from the last element read and rw from its
 * readers, never ww among themselves (Elle infers the same, and this is why a read that misses a
 * committed append is caught as a stale read).
 *
 * <p><b>Cycles.</b> The history is (strictly) serializable exactly when the graph is acyclic and no
 * read saw a version that cannot be part of a serial history. Tarjan's strongly connected
 * components are computed four times over growing edge sets, and in each component a concrete
 * shortest cycle is found breadth-first through an edge of the newly added type; that cycle names
 * the anomaly:
 *
 * <ul>
 *   <li>{@link Type#G0} write cycle (ww only); {@link Type#G1C} circular information flow (ww, wr);
 *   <li>{@link Type#G_SINGLE} one rw edge (a lost update, read skew); {@link Type#G2} two or more
 *       (write skew) - a cycle with exactly one rw edge is searched first;
 *   <li>{@link Type#REALTIME} a cycle only real time closes: serializable but not strictly (a stale
 *       read).
 * </ul>
 *
 * Found without cycles: {@link Type#G1A} aborted read, {@link Type#G1B} intermediate read, {@link
 * Type#UNWRITTEN_READ} a version or element nobody wrote, {@link Type#DUPLICATE_VERSION}, {@link
 * Type#DUPLICATE_ELEMENT} (appended twice, or twice in one list), {@link Type#INCOMPATIBLE_ORDER}
 * (a list read that is not a prefix of the longest one), {@link Type#INTERNAL} (a transaction did
 * not see its own earlier write).
 *
 * <p><b>Cost.</b> O((T + O) log) for T transactions and O operations to infer versions, O(T + E)
 * per component pass; a cycle search is a breadth-first search of one component, tried at most
 * {@link #SINGLE_TRIES} times per component to find a one-rw cycle before calling it G2. An
 * accepted history of 100 k transactions is checked in well under a second (see
 * SerializabilityCheckerTest#hundredThousandTransactions, which prints the time).
 *
 * <p><b>Limits.</b> Versions are unique per key among committed writes (FaRM's version + 1 makes an
 * aborted write's version collide with a later commit's: a read is then attributed to the committed
 * writer, so an aborted read is only caught when the versions differ). The real-time order trusts
 * the clocks the history was stamped with.
 */
public final class SerializabilityChecker {
  /** An anomaly's kind, weakest isolation it violates first. */
  public enum Type {
    G0("write cycle"),
    G1A("aborted read"),
    G1B("intermediate read"),
    G1C("circular information flow: a ww/wr cycle"),
    G_SINGLE("a cycle with one anti-dependency: lost update or read skew"),
    G2("a cycle with two or more anti-dependencies: write skew"),
    REALTIME("a cycle closed by real time: a stale read, serializable but not strictly"),
    UNWRITTEN_READ("read a version or element that no transaction wrote"),
    DUPLICATE_VERSION("two transactions installed the same version"),
    DUPLICATE_ELEMENT("an element appended twice, or twice in one list"),
    INCOMPATIBLE_ORDER("a list read that is not a prefix of another read of the same key"),
    INTERNAL("a transaction did not see its own earlier write");

    private final String meaning;

    Type(String meaning) {
      this.meaning = meaning;
    }

    public String meaning() {
      return meaning;
    }
  }

  /** One anomaly: its kind, the transactions involved (a cycle's, in order) and how. */
  public record Anomaly(Type type, List<Integer> txns, String explanation) {
    @Override
    public String toString() {
      return type + " (" + type.meaning() + "): " + explanation;
    }
  }

  /** What the checker found; {@link #toString()} is meant for a failing test's message. */
  public record Result(boolean strict, int transactions, int checked, List<Anomaly> anomalies) {
    public boolean valid() {
      return anomalies.isEmpty();
    }

    public Set<Type> types() {
      Set<Type> out = EnumSet.noneOf(Type.class);
      anomalies.forEach(a -> out.add(a.type()));
      return out;
    }

    @Override
    public String toString() {
      String what = strict ? "strictly serializable" : "serializable";
      StringBuilder sb = new StringBuilder();
      sb.append(valid() ? what : "not " + what)
          .append(": ")
          .append(transactions)
          .append(" transactions, ")
          .append(checked)
          .append(" in the graph");
      if (!valid()) {
        sb.append(", anomalies ").append(types());
      }
      for (Anomaly a : anomalies) {
        sb.append(System.lineSeparator()).append("  ").append(a);
      }
      return sb.toString();
    }
  }

  /** Cycles reported per anomaly type (all are counted in the message's first lines). */
  static final int REPORTED_PER_TYPE = 8;

  /** rw edges of one component tried for a cycle with no other rw edge before calling it G2. */
  static final int SINGLE_TRIES = 64;

  private SerializabilityChecker() {}

  /** Checks strict serializability: serializable, in an order that respects real time. */
  public static Result checkStrict(TxHistory history) {
    return check(history.transactions(), history.initialVersion(), true);
  }

  /** Checks serializability only (no real-time edges). */
  public static Result checkSerializable(TxHistory history) {
    return check(history.transactions(), history.initialVersion(), false);
  }

  /** Fails with the anomalies found, readable, unless the history is strictly serializable. */
  public static Result assertStrictlySerializable(TxHistory history) {
    Result r = checkStrict(history);
    if (!r.valid()) {
      throw new AssertionError(r.toString());
    }
    return r;
  }

  /** Checks {@code txns} (ids unique, any order), every key starting at version {@code initial}. */
  public static Result check(List<Txn> txns, long initial, boolean strict) {
    Run run = new Run(txns, initial);
    run.infer();
    run.graph(strict);
    run.cycles(strict);
    int checked = 0;
    for (boolean b : run.included) {
      checked += b ? 1 : 0;
    }
    return new Result(strict, txns.size(), checked, List.copyOf(run.anomalies));
  }

  /** A key's inferred version order, its readers, and the unordered appends after it. */
  private static final class Order {
    final long key;
    // writers[p]: the node that wrote the key's p-th version (-1: aborted or nobody: no edges).
    int[] writers = new int[0];
    long[] labels = new long[0];
    int[] tail = new int[0];
    final List<long[]> reads = new ArrayList<>(); // {reader node, position; -1 = initial}

    Order(long key) {
      this.key = key;
    }
  }

  /** One check: the history indexed by node (its position in the list). */
  private static final class Run {
    final List<Txn> txns;
    final long initial;
    final boolean[] included;
    final List<Anomaly> anomalies = new ArrayList<>();
    final Map<Type, Integer> counts = new HashMap<>();
    final List<Order> orders = new ArrayList<>();
    final long t0;
    DependencyGraph graph;

    Run(List<Txn> txns, long initial) {
      this.txns = txns;
      this.initial = initial;
      this.included = new boolean[txns.size()];
      this.t0 = txns.stream().mapToLong(Txn::invoke).min().orElse(0);
    }

    void report(Type type, List<Integer> nodes, String why) {
      int n = counts.merge(type, 1, Integer::sum);
      if (n > REPORTED_PER_TYPE) {
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
      VersionForm versions = new VersionForm(this);
      ListForm lists = new ListForm(this);
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
      for (Order o : orders) {
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

    void edges(Order o) {
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
        level(DependencyGraph.ALL, DependencyGraph.RT, Type.REALTIME);
      }
    }

    /**
     * For each component over {@code mask} holding an edge of type {@code through}, reports the
     * shortest cycle through one such edge.
     */
    void level(int mask, int through, Type type) {
      int[][] cs = graph.components(mask);
      int[] comp = cs[0];
      boolean[] done = new boolean[cs[1].length];
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
        if (tries[c]++ >= SINGLE_TRIES) {
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

  // ------------------------------------------------------------------ the two forms

  /** Reads and writes of versions: the version order is the numeric order of installed ones. */
  private static final class VersionForm {
    final Run run;
    // key -> version -> writes of it: {node, final ? 1 : 0}
    final Map<Long, Map<Long, List<int[]>>> writes = new HashMap<>();
    final Map<Long, List<long[]>> reads = new HashMap<>(); // key -> {reader, version}

    VersionForm(Run run) {
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
      if (v == run.initial) {
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
        run.report(
            Type.G1A, List.of(n, aborted), what + ", written by aborted " + run.name(aborted));
      } else {
        run.report(Type.UNWRITTEN_READ, List.of(n), what + ", which no transaction wrote");
      }
    }

    void orderKey(long key, Map<Long, List<int[]>> byVersion) {
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
          if (e.getKey() <= run.initial) {
            run.report(
                Type.DUPLICATE_VERSION,
                List.of(first),
                run.name(first)
                    + " installed key "
                    + key
                    + " v"
                    + e.getKey()
                    + ", not after the initial v"
                    + run.initial);
          }
        }
        if (first >= 0) {
          installed.add(new long[] {e.getKey(), first});
        }
      }
      installed.sort((a, b) -> Long.compare(a[0], b[0]));
      Order o = new Order(key);
      o.writers = new int[installed.size()];
      o.labels = new long[installed.size()];
      for (int p = 0; p < installed.size(); p++) {
        o.labels[p] = installed.get(p)[0];
        o.writers[p] = (int) installed.get(p)[1];
      }
      for (long[] r : reads.getOrDefault(key, List.of())) {
        int p = r[1] == run.initial ? -1 : Arrays.binarySearch(o.labels, r[1]);
        o.reads.add(new long[] {r[0], p});
      }
      run.orders.add(o);
    }
  }

  /** Appends and list reads: versions are list prefixes, ordered by the longest list read. */
  private static final class ListForm {
    final Run run;
    // key -> element -> appends of it: {node, final ? 1 : 0}
    final Map<Long, Map<Long, List<int[]>>> appends = new HashMap<>();
    // key -> external reads: {reader node, elements...}
    final Map<Long, List<long[]>> reads = new HashMap<>();

    ListForm(Run run) {
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
                "element "
                    + e.getKey()
                    + " appended "
                    + live.size()
                    + " times to key "
                    + k.getKey());
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
      String what = run.name(n) + " read key " + key + " = " + Arrays.toString(list);
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
      Order o = new Order(key);
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
          run.report(
              Type.INCOMPATIBLE_ORDER,
              List.of((int) r[0], (int) longest[0]),
              run.name((int) r[0])
                  + " read key "
                  + key
                  + " = "
                  + Arrays.toString(Arrays.copyOfRange(r, 1, r.length))
                  + ", "
                  + run.name((int) longest[0])
                  + " read "
                  + Arrays.toString(o.labels));
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

    boolean isFinal(Map<Long, List<int[]>> byElement, long e, int node) {
      for (int[] w : byElement.getOrDefault(e, List.of())) {
        if (w[0] == node) {
          return w[1] == 1;
        }
      }
      return true;
    }
  }
}
