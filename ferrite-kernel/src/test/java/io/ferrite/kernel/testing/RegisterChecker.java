package io.ferrite.kernel.testing;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * A linearizability checker for one register (one key): Wing and Gong's search with Lowe's
 * memoisation of (linearized set, state) pairs, the "WGL" algorithm. Operations are writes (a put
 * of a unique value, or a delete = a write of {@link #ABSENT}) and reads of an observed value.
 *
 * <p>The project's one checker: the kv tests (one JVM) and the multi-process Jepsen-style run
 * (ferrite-cli) use it. An operation whose outcome is unknown (its caller saw a failure: it may or
 * may not have taken effect) is a write whose response time is the end of the history ({@link
 * Long#MAX_VALUE}): it may linearize anywhere after its call, or never matter.
 */
public final class RegisterChecker {
  public static final long ABSENT = -1;

  /** One completed operation, with its invocation and response times. */
  public record Op(int id, long call, long ret, boolean write, long value) {}

  private static final class Entry {
    final Op op;
    final boolean isCall;
    Entry match;
    Entry prev;
    Entry next;

    Entry(Op op, boolean isCall) {
      this.op = op;
      this.isCall = isCall;
    }
  }

  private record Config(BitSet linearized, long state) {}

  private RegisterChecker() {}

  /** Whether {@code history} (ids 0..n-1) is linearizable from {@code initial}. */
  public static boolean check(List<Op> history, long initial) {
    List<Entry> events = new ArrayList<>();
    for (Op op : history) {
      Entry c = new Entry(op, true);
      Entry r = new Entry(op, false);
      c.match = r;
      events.add(c);
      events.add(r);
    }
    // By time; at equal times, calls first (the operations overlap: the lenient reading).
    events.sort(
        Comparator.comparingLong((Entry e) -> e.isCall ? e.op.call() : e.op.ret())
            .thenComparing(e -> e.isCall ? 0 : 1));
    Entry head = new Entry(null, true);
    Entry last = head;
    for (Entry e : events) {
      last.next = e;
      e.prev = last;
      last = e;
    }
    BitSet linearized = new BitSet(history.size());
    Set<Config> cache = new HashSet<>();
    Deque<Object[]> stack = new ArrayDeque<>();
    long state = initial;
    Entry entry = head.next;
    while (head.next != null) {
      if (entry.isCall) {
        Op op = entry.op;
        boolean ok = op.write() || op.value() == state;
        long next = op.write() ? op.value() : state;
        BitSet lin = null;
        if (ok) {
          lin = (BitSet) linearized.clone();
          lin.set(op.id());
        }
        if (ok && cache.add(new Config(lin, next))) {
          stack.push(new Object[] {entry, state});
          state = next;
          linearized.set(op.id());
          lift(entry);
          entry = head.next;
        } else {
          entry = entry.next;
        }
      } else {
        if (stack.isEmpty()) {
          return false;
        }
        Object[] top = stack.pop();
        Entry e = (Entry) top[0];
        state = (Long) top[1];
        linearized.clear(e.op.id());
        unlift(e);
        entry = e.next;
      }
    }
    return true;
  }

  private static void lift(Entry e) {
    e.prev.next = e.next;
    if (e.next != null) {
      e.next.prev = e.prev;
    }
    Entry m = e.match;
    m.prev.next = m.next;
    if (m.next != null) {
      m.next.prev = m.prev;
    }
  }

  private static void unlift(Entry e) {
    Entry m = e.match;
    m.prev.next = m;
    if (m.next != null) {
      m.next.prev = m;
    }
    e.prev.next = e;
    if (e.next != null) {
      e.next.prev = e;
    }
  }

  /**
   * {@code history} without the writes of unknown outcome (response {@link Long#MAX_VALUE}) whose
   * value no read returned, ids renumbered 0..n-1 in order. It is linearizable exactly when {@code
   * history} is: such a write may always go last (its interval never ends, and no read needs it),
   * and where it went anywhere else no read saw it, so dropping it invalidates no read. Each open
   * write left in doubles the states the search may visit, so a long faulty run needs this. Values
   * are unique per write (as the callers make them).
   */
  public static List<Op> pruned(List<Op> history) {
    Set<Long> read = new HashSet<>();
    for (Op op : history) {
      if (!op.write()) {
        read.add(op.value());
      }
    }
    List<Op> out = new ArrayList<>();
    for (Op op : history) {
      if (op.write() && op.ret() == Long.MAX_VALUE && !read.contains(op.value())) {
        continue;
      }
      out.add(new Op(out.size(), op.call(), op.ret(), op.write(), op.value()));
    }
    return out;
  }

  public static String describe(List<Op> history) {
    StringBuilder sb = new StringBuilder();
    long t0 = history.stream().mapToLong(Op::call).min().orElse(0);
    for (Op op : history) {
      sb.append(
          String.format(
              java.util.Locale.ROOT,
              "%n  #%d [%d, %d] %s %s",
              op.id(),
              op.call() - t0,
              op.ret() - t0,
              op.write() ? "write" : "read",
              op.value() == ABSENT ? "absent" : Objects.toString(op.value())));
    }
    return sb.toString();
  }
}
