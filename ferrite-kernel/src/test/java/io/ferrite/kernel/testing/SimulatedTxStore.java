package io.ferrite.kernel.testing;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A small in-memory transactional store for testing {@link SerializabilityChecker} on concurrent
 * histories: correct (strict two-phase locking) or deliberately weaker (snapshot isolation; a
 * serializable store that serves read-only transactions from an old snapshot). It records what its
 * clients saw in a {@link TxHistory}, in either form.
 *
 * <p>Every key holds a version (unique in the whole store: one counter, so an aborted transaction's
 * versions are never reused) and a list (for the list-append form); every key starts at version 0
 * and the empty list. A transaction's writes are buffered and applied at commit, and it reads its
 * own writes.
 */
final class SimulatedTxStore {
  enum Mode {
    /** Strict two-phase locking, keys locked in order: strictly serializable. */
    TWO_PHASE_LOCKING,
    /** Reads from the snapshot of its start, first committer wins: write skew happens. */
    SNAPSHOT_ISOLATION,
    /** One global lock, but read-only transactions may read an old snapshot: not strict. */
    STALE_READS
  }

  enum Form {
    VERSIONS,
    LISTS
  }

  /** A planned transaction: steps in order, each a key and whether it writes. */
  record Step(int key, boolean write) {}

  /** What the client decides at the end (the store may still abort a commit). */
  enum Ending {
    COMMIT,
    ABORT,
    /** Applied, but the client never learns it. */
    UNKNOWN_APPLIED,
    /** Not applied, and the client never learns that either. */
    UNKNOWN_LOST
  }

  /** One committed state of a key. */
  private record State(long commitTs, long version, List<Long> list) {}

  /** How far back a stale read-only transaction reads, in commits. */
  static final int STALE_LAG = 30;

  final Mode mode;
  final Form form;
  final TxHistory history = new TxHistory();
  private final List<List<State>> states = new ArrayList<>();
  private final ReentrantLock[] locks;
  private final Object commitLock = new Object();
  private long ts; // guarded by commitLock (2PL does not use it)
  private final AtomicLong versions = new AtomicLong();
  private final AtomicLong elements = new AtomicLong();

  /** Transactions the store itself aborted (first committer wins). */
  final AtomicLong conflicts = new AtomicLong();

  SimulatedTxStore(Mode mode, Form form, int keys) {
    this.mode = mode;
    this.form = form;
    this.locks = new ReentrantLock[keys];
    for (int k = 0; k < keys; k++) {
      List<State> s = new ArrayList<>();
      s.add(new State(0, 0, List.of()));
      states.add(s);
      locks[k] = new ReentrantLock();
    }
  }

  int keys() {
    return locks.length;
  }

  /** A random plan of 1 to 4 steps, about 40 % writes. */
  List<Step> randomPlan(Random r) {
    List<Step> plan = new ArrayList<>();
    int n = 1 + r.nextInt(4);
    for (int i = 0; i < n; i++) {
      plan.add(new Step(r.nextInt(keys()), r.nextInt(10) < 4));
    }
    return plan;
  }

  /** A random ending: mostly commits, a few aborts and unknown outcomes. */
  static Ending randomEnding(Random r) {
    int roll = r.nextInt(100);
    return roll < 5
        ? Ending.ABORT
        : roll < 8 ? Ending.UNKNOWN_LOST : roll < 11 ? Ending.UNKNOWN_APPLIED : Ending.COMMIT;
  }

  /**
   * Runs {@code plan} for {@code client}; {@code between}, if not null, runs after the reads and
   * writes and before the commit (a rendezvous that forces transactions to overlap).
   */
  void run(int client, List<Step> plan, Ending ending, Random r, Runnable between) {
    TxHistory.Tx tx = history.begin(client);
    switch (mode) {
      case TWO_PHASE_LOCKING:
        TreeSet<Integer> keys = new TreeSet<>();
        plan.forEach(s -> keys.add(s.key()));
        for (int k : keys) { // in key order: no deadlock
          locks[k].lock();
        }
        try {
          execute(tx, plan, Long.MAX_VALUE, ending, r, between, false);
        } finally {
          for (int k : keys.descendingSet()) {
            locks[k].unlock();
          }
        }
        break;
      case SNAPSHOT_ISOLATION:
        long snapshot;
        synchronized (commitLock) {
          snapshot = ts;
        }
        execute(tx, plan, snapshot, ending, r, between, true);
        break;
      default:
        synchronized (commitLock) {
          boolean readOnly = plan.stream().noneMatch(Step::write);
          long at = readOnly && ts > STALE_LAG && r.nextBoolean() ? ts - STALE_LAG : Long.MAX_VALUE;
          execute(tx, plan, at, ending, r, between, false);
        }
    }
  }

  private void execute(
      TxHistory.Tx tx,
      List<Step> plan,
      long snapshot,
      Ending ending,
      Random r,
      Runnable between,
      boolean firstCommitterWins) {
    Map<Integer, Long> ownVersion = new HashMap<>();
    Map<Integer, List<Long>> ownAppends = new HashMap<>();
    Set<Integer> written = new LinkedHashSet<>();
    for (Step s : plan) {
      if (r.nextInt(4) == 0) {
        Thread.yield(); // widen the windows between steps: more interleavings, same semantics
      }
      int k = s.key();
      if (s.write()) {
        written.add(k);
        if (form == Form.VERSIONS) {
          long v = versions.incrementAndGet();
          ownVersion.put(k, v);
          tx.write(k, v);
        } else {
          long e = elements.incrementAndGet();
          ownAppends.computeIfAbsent(k, x -> new ArrayList<>()).add(e);
          tx.append(k, e);
        }
      } else if (form == Form.VERSIONS) {
        Long own = ownVersion.get(k);
        tx.read(k, own != null ? own : visible(k, snapshot).version());
      } else {
        List<Long> seen = new ArrayList<>(visible(k, snapshot).list());
        seen.addAll(ownAppends.getOrDefault(k, List.of()));
        tx.readList(k, seen.stream().mapToLong(Long::longValue).toArray());
      }
    }
    if (between != null) {
      between.run();
    }
    boolean apply = ending == Ending.COMMIT || ending == Ending.UNKNOWN_APPLIED;
    boolean committed = false;
    if (apply) {
      synchronized (commitLock) {
        boolean conflict = false;
        if (firstCommitterWins) {
          for (Step s : plan) {
            conflict |= s.write() && latest(s.key()).commitTs() > snapshot;
          }
        }
        if (conflict) {
          conflicts.incrementAndGet();
        } else {
          ts++;
          for (int k : written) {
            install(k, ownVersion.get(k), ownAppends.get(k));
          }
          committed = true;
        }
      }
    }
    if (ending == Ending.UNKNOWN_APPLIED || ending == Ending.UNKNOWN_LOST) {
      tx.unknown();
    } else if (committed) {
      tx.commit();
    } else {
      tx.abort();
    }
  }

  /** Installs a transaction's final write of {@code k}: its last version, or all its appends. */
  private void install(int k, Long version, List<Long> appends) {
    List<Long> list = latest(k).list();
    if (form == Form.LISTS) {
      List<Long> l = new ArrayList<>(list);
      l.addAll(appends);
      list = List.copyOf(l);
    }
    long v = form == Form.VERSIONS ? version : versions.incrementAndGet();
    states.get(k).add(new State(ts, v, list));
  }

  private State latest(int k) {
    List<State> s = states.get(k);
    return s.get(s.size() - 1);
  }

  /** The last state of {@code k} committed at or before {@code snapshot}. */
  private State visible(int k, long snapshot) {
    List<State> s = states.get(k);
    if (mode != Mode.TWO_PHASE_LOCKING) {
      synchronized (commitLock) {
        return find(s, snapshot);
      }
    }
    return find(s, snapshot);
  }

  private static State find(List<State> s, long snapshot) {
    for (int i = s.size() - 1; i > 0; i--) {
      if (s.get(i).commitTs() <= snapshot) {
        return s.get(i);
      }
    }
    return s.get(0);
  }
}
