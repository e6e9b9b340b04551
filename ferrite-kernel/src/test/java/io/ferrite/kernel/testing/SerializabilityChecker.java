package io.ferrite.kernel.testing;

import io.ferrite.kernel.testing.TxHistory.Txn;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongUnaryOperator;

/**
 * Checks a {@link TxHistory} for (strict) serializability with Adya's direct serialization graph
 * (Adya, "Weak consistency", MIT PhD thesis 1999, §3-4), as Elle does for list-append (Kingsbury
 * and Alvaro, VLDB 2020). The project's transaction checker, beside {@link RegisterChecker} (one
 * register, linearizability); other modules get both from ferrite-kernel's test-jar.
 *
 * <pre>{@code
 * TxHistory history = new TxHistory();              // every key starts at version 0
 * // on each client thread, per transaction:
 * TxHistory.Tx tx = history.begin(clientId);         // invoked now (System.nanoTime)
 * tx.read(key, versionSeen);                         // or tx.readList(key, elements...)
 * tx.write(key, versionInstalled);                   // or tx.append(key, uniqueElement)
 * tx.commit();                                       // or abort(), or unknown() on a lost reply
 * // after the clients stopped:
 * SerializabilityChecker.assertStrictlySerializable(history);
 * }</pre>
 *
 * A failure's message names each anomaly, its cycle edge by edge ({@code T4 -rw(key 1)-> T9 -rw(key
 * 2)-> T4}) and the transactions with their times and operations; {@link #checkSerializable} leaves
 * real time out, to tell "stale" from "not serializable at all".
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
 * <p><b>Cycles.</b> With versions, the order of each key is known, and the history is (strictly)
 * serializable exactly when the graph is acyclic and no read saw a version that cannot be part of a
 * serial history (Adya's PL-3 theorem; real-time edges added for strictness). With lists, the order
 * among appends nobody read is unknown and left out, so there an accepted history means "no anomaly
 * the reads can prove", as in Elle. Tarjan's strongly connected components are computed four times
 * over growing edge sets, and in each component a concrete shortest cycle is found breadth-first
 * through an edge of the newly added type; that cycle names the anomaly:
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
 * {@link #SINGLE_TRIES} times per component to find a one-rw cycle before calling it G2. A history
 * of 100 k transactions (two reads and two writes each, 1 000 keys) is checked in 0.4 to 0.6 s on
 * the shared 2-core machine when quiet, up to 2.8 s at a load average of 17
 * (SerializabilityCheckerTest#hundredThousandTransactions prints it); 100 k lost updates, one
 * component per key, the worst case tried: 0.2 s quiet, up to 2.9 s loaded.
 *
 * <p><b>Limits.</b> Versions must be unique per key among committed writes. FaRM's version + 1
 * makes an aborted or lost write's version collide with a later commit's: a read of it is then
 * attributed to the committed writer (so an aborted read is caught only when versions differ), and
 * when two UNKNOWN transactions claim one version and nobody committed it, the first is taken,
 * which may be the wrong one. Crash tests are safer in the list-append form (elements are unique by
 * construction). The real-time order trusts the clock the history was stamped with: histories from
 * several JVMs need one clock ({@link TxHistory#begin(int, long)} and {@link TxHistory.Tx#end} take
 * explicit times).
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

  /**
   * What the checker found; {@link #toString()} is meant for a failing test's message. {@code
   * checked} transactions were in the graph (committed, or UNKNOWN and observed); {@code found}
   * counts every anomaly of each type, of which {@code anomalies} lists the first few.
   */
  public record Result(
      boolean strict,
      int transactions,
      int checked,
      Map<Type, Integer> found,
      List<Anomaly> anomalies) {
    public boolean valid() {
      return anomalies.isEmpty();
    }

    public Set<Type> types() {
      Set<Type> out = EnumSet.noneOf(Type.class);
      anomalies.forEach(a -> out.add(a.type()));
      return out;
    }

    /** The first line of {@link #toString()}: the verdict and the counts. */
    public String summary() {
      return toString().lines().findFirst().orElse("");
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
        sb.append(", found ").append(found);
      }
      for (Anomaly a : anomalies) {
        sb.append(System.lineSeparator()).append("  ").append(a);
      }
      return sb.toString();
    }
  }

  /** Anomalies listed per type (all are counted in {@link Result#found}). */
  static final int REPORTED_PER_TYPE = 8;

  /** rw edges of one component tried for a cycle with no other rw edge before calling it G2. */
  static final int SINGLE_TRIES = 64;

  private SerializabilityChecker() {}

  /** Checks strict serializability: serializable, in an order that respects real time. */
  public static Result checkStrict(TxHistory history) {
    return check(history.transactions(), history::initialVersion, true);
  }

  /** Checks serializability only (no real-time edges). */
  public static Result checkSerializable(TxHistory history) {
    return check(history.transactions(), history::initialVersion, false);
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
    return check(txns, key -> initial, strict);
  }

  /** Checks {@code txns} (ids unique, any order), key k starting at version {@code initial(k)}. */
  public static Result check(List<Txn> txns, LongUnaryOperator initial, boolean strict) {
    CheckRun run = new CheckRun(txns, initial);
    run.infer();
    run.graph(strict);
    run.cycles(strict);
    int checked = 0;
    for (boolean b : run.included) {
      checked += b ? 1 : 0;
    }
    return new Result(
        strict, txns.size(), checked, new EnumMap<>(run.counts), List.copyOf(run.anomalies));
  }
}
