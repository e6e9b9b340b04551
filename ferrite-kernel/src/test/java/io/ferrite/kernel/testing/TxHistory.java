package io.ferrite.kernel.testing;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The transactions a test ran, for {@link SerializabilityChecker}. Many client threads fill one
 * history at once: {@link #begin} is thread-safe and each {@link Tx} it returns belongs to the
 * thread that runs that transaction (not thread-safe itself, like the transaction context it
 * shadows).
 *
 * <p>Two forms, chosen per key (one key uses one form):
 *
 * <ul>
 *   <li><b>Versions</b>: {@link Tx#read(long, long)} records the version of an object a transaction
 *       saw, {@link Tx#write(long, long)} the version its commit installed. Versions are the
 *       store's per-object 64-bit versions (FaRM §3.4): their numeric order is the key's version
 *       order, and every key starts at {@link #initialVersion()} (no transaction wrote it; {@link
 *       #initialVersion(long, long)} sets it per key). A transaction that writes a key twice
 *       installs only its last write; an earlier version of it is <i>intermediate</i> and nobody
 *       else may read it.
 *   <li><b>List-append</b>, as in Elle (Kingsbury and Alvaro, VLDB 2020): {@link Tx#append} adds a
 *       unique element to the list at a key and {@link Tx#readList} records the whole list read.
 *       The versions are inferred: a key's version after an append is the list up to that element,
 *       and the longest list read orders them.
 * </ul>
 *
 * <p>Outcomes: {@link Outcome#COMMITTED}, {@link Outcome#ABORTED}, and {@link Outcome#UNKNOWN} when
 * the client could not learn it (a crash, a lost reply): such a transaction may or may not have
 * committed. A transaction begun but never ended when the history is read is UNKNOWN too (its
 * client died). Times are {@link System#nanoTime()} of one JVM unless given explicitly; a
 * multi-process test must give times from one clock.
 */
public final class TxHistory {
  /** What a transaction's client learnt of its end. */
  public enum Outcome {
    COMMITTED,
    ABORTED,
    /** The client could not learn it: it may have committed. */
    UNKNOWN
  }

  /** The kind of an {@link Op}. */
  public enum Kind {
    READ,
    WRITE,
    APPEND,
    READ_LIST
  }

  /**
   * One operation in a transaction, in program order. {@code value} is the version (READ, WRITE) or
   * the element (APPEND); {@code list} is the list read (READ_LIST), otherwise empty.
   */
  public record Op(Kind kind, long key, long value, long[] list) {
    /** Saw {@code version} of {@code key} (for {@link TxHistory#record}). */
    public static Op read(long key, long version) {
      return new Op(Kind.READ, key, version, NO_LIST);
    }

    /** Installed {@code version} of {@code key}. */
    public static Op write(long key, long version) {
      return new Op(Kind.WRITE, key, version, NO_LIST);
    }

    /** Appended {@code element} to the list at {@code key}. */
    public static Op append(long key, long element) {
      return new Op(Kind.APPEND, key, element, NO_LIST);
    }

    /** Read {@code list} at {@code key}. */
    public static Op readList(long key, long... list) {
      return new Op(Kind.READ_LIST, key, 0, list.clone());
    }

    @Override
    public String toString() {
      switch (kind) {
        case READ:
          return "r(" + key + ")=v" + value;
        case WRITE:
          return "w(" + key + ")=v" + value;
        case APPEND:
          return "append(" + key + "," + value + ")";
        default:
          return "r(" + key + ")=" + abbreviated(list);
      }
    }
  }

  /**
   * A finished (or, at snapshot time, unfinished) transaction. {@code complete} is {@link
   * Long#MAX_VALUE} when it never completed (an UNKNOWN outcome without a reply).
   */
  public record Txn(int id, int client, long invoke, long complete, Outcome outcome, List<Op> ops) {
    @Override
    public String toString() {
      StringBuilder sb =
          new StringBuilder()
              .append('T')
              .append(id)
              .append("(client ")
              .append(client)
              .append(' ')
              .append(outcome.name().toLowerCase(Locale.ROOT))
              .append(" [")
              .append(invoke)
              .append(", ")
              .append(complete == Long.MAX_VALUE ? "?" : Long.toString(complete))
              .append("]");
      int shown = 0;
      for (Op op : ops) {
        if (shown++ == 8) {
          sb.append(" ... ").append(ops.size() - 8).append(" more");
          break;
        }
        sb.append(' ').append(op);
      }
      return sb.append(')').toString();
    }
  }

  private static final long[] NO_LIST = new long[0];

  /** Lists longer than this print only their last elements (the ones that tell). */
  private static final int SHOWN = 8;

  /** {@code list} as "[1, 2, 3]", or "[..12 more, 13, ..., 20]" when long. */
  static String abbreviated(long[] list) {
    if (list.length <= SHOWN) {
      return Arrays.toString(list);
    }
    StringBuilder sb = new StringBuilder("[..").append(list.length - SHOWN).append(" more");
    for (int i = list.length - SHOWN; i < list.length; i++) {
      sb.append(", ").append(list[i]);
    }
    return sb.append(']').toString();
  }

  private final long initialVersion;
  private final Map<Long, Long> initialVersions = new ConcurrentHashMap<>();
  private final Map<Object, Long> keys = new ConcurrentHashMap<>();
  private final AtomicLong nextKey = new AtomicLong();
  private final AtomicInteger nextId = new AtomicInteger();
  private final ConcurrentLinkedQueue<Txn> finished = new ConcurrentLinkedQueue<>();
  private final Map<Integer, Tx> open = new ConcurrentHashMap<>();

  /** A history whose keys all start at version 0. */
  public TxHistory() {
    this(0);
  }

  /** A history whose keys all start at {@code initialVersion}. */
  public TxHistory(long initialVersion) {
    this.initialVersion = initialVersion;
  }

  /** The version every key has before any transaction wrote it, unless set per key. */
  public long initialVersion() {
    return initialVersion;
  }

  /**
   * Sets the version {@code key} has before any transaction of the history wrote it (an object made
   * by a setup the history does not record, say). Set it before checking.
   */
  public void initialVersion(long key, long version) {
    initialVersions.put(key, version);
  }

  /**
   * A key number for any key object (a fat pointer, an account name), the same for equal objects
   * throughout this history: 0, 1, 2 ... in order of first use. Thread-safe.
   */
  public long key(Object name) {
    // The function runs once per new key; the counter, not keys.size(), keeps two new keys
    // numbered at once apart.
    return keys.computeIfAbsent(name, n -> nextKey.getAndIncrement());
  }

  /** The version {@code key} starts at. */
  public long initialVersion(long key) {
    return initialVersions.getOrDefault(key, initialVersion);
  }

  /** Begins a transaction of {@code client} now. */
  public Tx begin(int client) {
    return begin(client, System.nanoTime());
  }

  /** Begins a transaction of {@code client} invoked at {@code invokeNanos}. */
  public Tx begin(int client, long invokeNanos) {
    Tx tx = new Tx(nextId.getAndIncrement(), client, invokeNanos);
    open.put(tx.id, tx);
    return tx;
  }

  /**
   * Adds a transaction that ran elsewhere (another JVM's log, say), with a fresh id; its times must
   * be on this history's clock. An UNKNOWN outcome's completion is ignored, as in {@link Tx#end}.
   */
  public Txn record(int client, long invoke, long complete, Outcome outcome, List<Op> ops) {
    if (outcome != Outcome.UNKNOWN && complete < invoke) {
      throw new IllegalArgumentException(
          "complete: " + complete + " (expected: >= invoke " + invoke + ")");
    }
    Txn t =
        new Txn(
            nextId.getAndIncrement(),
            client,
            invoke,
            outcome == Outcome.UNKNOWN ? Long.MAX_VALUE : complete,
            outcome,
            List.copyOf(ops));
    finished.add(t);
    return t;
  }

  /**
   * Every transaction so far, by id; those not ended yet as UNKNOWN with no completion. Safe while
   * others still add (a snapshot of what ended before the call; an open transaction's ops are read
   * racily, so take it after the clients stopped when that matters).
   */
  public List<Txn> transactions() {
    // Open ones first, then the ended: one that ends in between is then seen ended (it is added
    // to `finished` before it leaves `open`), never missed.
    Map<Integer, Txn> byId = new HashMap<>();
    for (Tx tx : open.values()) {
      if (!tx.ended) {
        byId.put(tx.id, tx.snapshot(Long.MAX_VALUE, Outcome.UNKNOWN));
      }
    }
    for (Txn t : finished) {
      byId.put(t.id(), t);
    }
    List<Txn> all = new ArrayList<>(byId.values());
    all.sort(Comparator.comparingInt(Txn::id));
    return Collections.unmodifiableList(all);
  }

  /** One running transaction: confined to its client's thread. */
  public final class Tx {
    private final int id;
    private final int client;
    private final long invoke;
    private final List<Op> ops = new ArrayList<>();
    private volatile boolean ended;

    private Tx(int id, int client, long invoke) {
      this.id = id;
      this.client = client;
      this.invoke = invoke;
    }

    public int id() {
      return id;
    }

    /** Saw {@code version} of {@code key}. */
    public Tx read(long key, long version) {
      return add(Op.read(key, version));
    }

    /** Wrote {@code key}; its commit installs (installed) {@code version}. */
    public Tx write(long key, long version) {
      return add(Op.write(key, version));
    }

    /**
     * Appended {@code element} (unique per key in the whole history) to the list at {@code key}.
     */
    public Tx append(long key, long element) {
      return add(Op.append(key, element));
    }

    /** Read the list at {@code key}: {@code list}, oldest element first. */
    public Tx readList(long key, long... list) {
      return add(Op.readList(key, list));
    }

    private Tx add(Op op) {
      if (ended) {
        throw new IllegalStateException("T" + id + " already ended");
      }
      synchronized (ops) {
        ops.add(op);
      }
      return this;
    }

    public void commit() {
      end(System.nanoTime(), Outcome.COMMITTED);
    }

    public void abort() {
      end(System.nanoTime(), Outcome.ABORTED);
    }

    /** The client saw a failure and cannot tell whether the transaction committed. */
    public void unknown() {
      end(Long.MAX_VALUE, Outcome.UNKNOWN);
    }

    /**
     * Ends it at {@code completeNanos} with {@code outcome}. An UNKNOWN outcome may still carry the
     * time the client gave up, but the checker ignores it: a commit may land after it.
     */
    public void end(long completeNanos, Outcome outcome) {
      if (ended) {
        throw new IllegalStateException("T" + id + " already ended");
      }
      if (completeNanos < invoke) {
        throw new IllegalArgumentException(
            "complete: " + completeNanos + " (expected: >= invoke " + invoke + ")");
      }
      long complete = outcome == Outcome.UNKNOWN ? Long.MAX_VALUE : completeNanos;
      finished.add(snapshot(complete, outcome));
      this.ended = true;
      open.remove(id);
    }

    private Txn snapshot(long complete, Outcome outcome) {
      synchronized (ops) {
        return new Txn(id, client, invoke, complete, outcome, List.copyOf(ops));
      }
    }
  }
}
