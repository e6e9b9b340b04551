package io.ferrite.kv.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.extent.ExtentAllocator;
import io.ferrite.kv.KvProtocol;
import io.ferrite.kv.ShardLayout;
import io.ferrite.kv.ShardStats;
import io.ferrite.kv.TableOptions;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.LongFunction;
import java.util.function.Supplier;

/**
 * The server half of one shard of a kv table, whatever its {@link TableOptions.Layout}: a hash
 * table in regions that clients read one-sided, written only here, by the server's CPU, under the
 * shard's lock (the object's monitor).
 *
 * <h2>Contract (every layout; checked by {@code KvTableContractTest} through a cluster)</h2>
 *
 * <ul>
 *   <li>Every write is linearizable and visible to every one-sided get that starts after it returns
 *       (a full fence before the answer).
 *   <li>A one-sided reader never misses a key that is present while keys move inside the table, and
 *       never accepts a copy that a racing write tore: what it reads verifies (checksums, versions,
 *       incarnations) or it retries.
 *   <li>Anything clients cache changes only after the layout epoch moved (a new extent region) or
 *       after the old location was poisoned (a resize marks every entry or bucket of the old array
 *       {@code MOVED} before any write lands in the new one): a client with a stale layout fetches
 *       it again, it never reads a wrong answer.
 *   <li>A write that fails (NO_SPACE, TOO_LARGE) changes nothing; no key is ever lost.
 *   <li>Only writes that changed the shard are told to the {@link WriteLog}, under the lock, in the
 *       order they were applied; replaying them into an empty shard rebuilds the same contents.
 * </ul>
 */
abstract class KvShard {
  /** Where a durable shard records its applied writes (called under the shard's lock). */
  interface WriteLog {
    /** A put of {@code key}: the value from {@code value}'s position to its limit (unchanged). */
    void put(byte[] key, ByteBuffer value);

    void delete(byte[] key);

    void resize(int slots);

    WriteLog NONE =
        new WriteLog() {
          @Override
          public void put(byte[] key, ByteBuffer value) {}

          @Override
          public void delete(byte[] key) {}

          @Override
          public void resize(int slots) {}
        };
  }

  final long tableId;
  final int shard;
  final TableOptions options;
  final Function<MappedRegion, RegionRef> refOf;
  final LongFunction<MappedRegion> newTableRegion;
  final ExtentAllocator alloc;

  /** Write sequences of a replicated table's shard (null for one copy): see {@link ReplicaSeqs}. */
  final ReplicaSeqs seqs;

  WriteLog log = WriteLog.NONE;

  /**
   * Gives a region the shard no longer uses back to the server (the kernel's {@code freeRegion}):
   * called under the lock, only once every client that may still read the region reads poison there
   * (docs/KV.md "Freeing regions").
   */
  Consumer<MappedRegion> freeRegion = r -> {};

  /** Set once {@link #freeRegions()} gave every region back: nothing may touch them any more. */
  boolean regionsFreed;

  /** The table as the shard was opened with (its log's OPEN_SHARD record); set by the service. */
  io.ferrite.kv.TableInfo table;

  long epoch = 1;
  long puts;
  long fullErrors;
  long moves;

  // Re-sharding (see KvService and docs/KV.md "Moving shards"), guarded by the shard's lock.
  /** The token of the freeze in force, or 0. */
  long frozenToken;

  /** When the freeze lapses unless EXPORT renews it ({@link System#nanoTime}). */
  long frozenUntilNanos;

  /** The pairs as they were when the freeze began, in EXPORT order. */
  List<byte[][]> frozenPairs;

  /** The server the shard moved to once it is retired, else -1. */
  int retiredTo = -1;

  // Ordered writes (KvWrites).
  /**
   * Held by whoever applies writes (a drainer, or a receiving thread with tryLock), and by every
   * operation that may hold the shard's monitor long (resize, freeze, export, retire, release,
   * drop, import): a thread holding the gate meets the monitor held only by microsecond work.
   */
  final java.util.concurrent.locks.ReentrantLock gate =
      new java.util.concurrent.locks.ReentrantLock();

  /**
   * Whether the gate's holder is a receiving thread applying a write inline (microsecond work): a
   * receiving thread that finds the gate taken by one waits for it briefly instead of queueing its
   * write for a writer thread ({@link KvWrites}). Written by the holder only.
   */
  volatile boolean inlineHolder;

  /** Writes that arrived and wait their turn, in arrival order (KvWrites). */
  final java.util.concurrent.ConcurrentLinkedQueue<KvWrites.Part> queued =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  /** How many writes {@link #queued} holds (its size() walks the list). */
  final java.util.concurrent.atomic.AtomicInteger queuedCount =
      new java.util.concurrent.atomic.AtomicInteger();

  /** Whether a writer thread is draining {@link #queued}. */
  final java.util.concurrent.atomic.AtomicBoolean draining =
      new java.util.concurrent.atomic.AtomicBoolean();

  /** Tokens of moves cancelled here: a late FREEZE or RETIRE of theirs is refused. */
  final java.util.Set<Long> cancelled = new java.util.HashSet<>();

  KvShard(
      long tableId,
      int shard,
      TableOptions options,
      LongFunction<MappedRegion> newTableRegion,
      Supplier<MappedRegion> newExtentRegion,
      Function<MappedRegion, RegionRef> refOf) {
    this.tableId = tableId;
    this.shard = shard;
    this.options = options;
    this.refOf = refOf;
    this.newTableRegion = newTableRegion;
    this.alloc =
        new ExtentAllocator(newExtentRegion.get(), options.maxExtentRegions(), newExtentRegion);
    this.seqs = options.replicas() > 1 ? new ReplicaSeqs() : null;
  }

  /**
   * Applies a write the primary applied with sequence {@code seq} (this is a backup, or a backup
   * just promoted that still gets the writes its old primary acknowledged): only if {@code seq} is
   * newer than the key's, so every copy ends with the primary's value whatever order the writes
   * arrive in. Under the shard's lock. Returns the status, {@code NOT_APPLIED} for an older write.
   */
  final int replicate(long seq, boolean delete, byte[] key, ByteBuffer value) {
    if (seqs == null) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "kv shard " + tableId + "/" + shard + " has one copy: it takes no replicated writes");
    }
    if (!seqs.newer(key, seq)) {
      return KvProtocol.NOT_APPLIED;
    }
    int status = delete ? delete(key) : put(KvProtocol.MODE_PUT, key, value, EMPTY);
    seqs.record(key, seq); // after the write: one that failed (NO_SPACE) leaves the key's seq
    return status;
  }

  /**
   * The placement version a write of a replicated shard must carry (set by a repair's first {@link
   * #copyPairs}): older writes answer MOVED, so their clients fetch the table and ship to the copy
   * being filled too. Under the shard's lock.
   */
  long minVersion;

  /**
   * For a repair of a replicated shard (docs/KV.md "Replication"): raises the write fence to {@code
   * version}, then copies every pair whose (XXH3 of the key, key) comes after ({@code afterHash},
   * {@code afterKey}) as {key, value, seq (1 if unknown: replayed from a log), hash}. Writes
   * applied after the fence are shipped to the new copy by their clients, and a copy applies only
   * newer sequences, so pairs copied late never undo them. Under the gate.
   */
  final synchronized List<Object[]> copyPairs(long version, long afterHash, byte[] afterKey) {
    checkNotRetired();
    if (seqs == null) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "kv shard " + tableId + "/" + shard + " has one copy: nothing to repair");
    }
    minVersion = Math.max(minVersion, version);
    List<Object[]> out = new ArrayList<>();
    forEachPair(
        (k, v) -> {
          long h = io.ferrite.kv.KeyHash.of(k);
          int c = Long.compareUnsigned(h, afterHash);
          if (c > 0 || (c == 0 && java.util.Arrays.compare(k, afterKey) > 0)) {
            out.add(new Object[] {k.clone(), v.clone(), Math.max(1, seqs.seqOf(k)), h});
          }
        });
    return out;
  }

  private static final byte[] EMPTY = new byte[0];

  /** Whether {@code status} of a put or delete means the shard changed (a copy must follow). */
  static boolean changed(int status) {
    return status == KvProtocol.CREATED
        || status == KvProtocol.REPLACED
        || status == KvProtocol.DELETED;
  }

  /** A new, empty shard of {@code options.layout()}. */
  static KvShard create(
      long tableId,
      int shard,
      TableOptions options,
      LongFunction<MappedRegion> newTableRegion,
      Supplier<MappedRegion> newExtentRegion,
      Function<MappedRegion, RegionRef> refOf) {
    return options.layout() == TableOptions.Layout.PILAF
        ? new PilafShard(tableId, shard, options, newTableRegion, newExtentRegion, refOf)
        : new HopscotchShard(tableId, shard, options, newTableRegion, newExtentRegion, refOf);
  }

  /** Sets where applied writes are recorded. */
  final synchronized void onWrite(WriteLog l) {
    this.log = l;
  }

  /** Sets how regions the shard stops using are given back. */
  final synchronized void onFree(Consumer<MappedRegion> f) {
    this.freeRegion = f;
  }

  /** The region of the current table array (buckets or entries). */
  abstract MappedRegion tableRegion();

  /** Frees {@code r} through {@link #freeRegion}; a failure is logged, never thrown. */
  final void free(MappedRegion r) {
    try {
      freeRegion.accept(r);
    } catch (RuntimeException e) {
      System.getLogger(KvShard.class.getName())
          .log(System.Logger.Level.WARNING, "shard " + shard + ": cannot free " + r, e);
    }
  }

  /**
   * Gives every region back (the table array and the extent regions) for a shard this server will
   * never serve again: dropped, or retired and committed elsewhere. The caller made sure clients
   * that still read it read poison (retired) or nothing of value (dropped). Idempotent.
   */
  final synchronized void freeRegions() {
    if (regionsFreed) {
      return;
    }
    regionsFreed = true;
    frozenPairs = null;
    free(tableRegion());
    for (MappedRegion r : alloc.regions()) {
      free(r);
    }
    // Drop every reference to the regions: the JVM unmaps a released region only once nothing
    // refers to it, and a retired shard stays in the map as a tombstone.
    alloc.regions().clear();
    forgetTable();
  }

  /**
   * Drops the reference to the table array once its region was freed (only {@link #stats}, {@link
   * #slots} and the move-state checks are called on a shard after {@link #freeRegions}).
   */
  abstract void forgetTable();

  /**
   * For a dropped shard: poisons the array as a retire does (unless it is retired already), so a
   * shm reader that still maps it reads {@code MOVED}, fetches the layout and learns the table is
   * gone, then frees every region. Idempotent.
   */
  final synchronized void drop() {
    if (regionsFreed) {
      return;
    }
    if (retiredTo < 0) {
      poisonForRetire();
    }
    freeRegions();
  }

  /** The regions the shard holds and their bytes (0 once freed). */
  final synchronized long[] regionUsage() {
    if (regionsFreed) {
      return new long[] {0, 0};
    }
    long bytes = tableRegion().length();
    for (MappedRegion r : alloc.regions()) {
      bytes += r.length();
    }
    return new long[] {1 + alloc.regions().size(), bytes};
  }

  final TableOptions options() {
    return options;
  }

  final long tableId() {
    return tableId;
  }

  final int shard() {
    return shard;
  }

  /** What a client caches to read the shard: its regions and the layout epoch. */
  abstract ShardLayout layout();

  abstract ShardStats stats();

  /**
   * Puts by {@code mode}; returns a {@link KvProtocol} status. The value is {@code value}'s bytes
   * from its position to its limit, read where they are (a view of the request: the write path
   * copies them once, into the table's extent or slot), never kept; position and limit are left as
   * they are.
   */
  abstract int put(int mode, byte[] key, ByteBuffer value, byte[] expected);

  /** {@link #put(int, byte[], ByteBuffer, byte[])} of a value in an array. */
  final int put(int mode, byte[] key, byte[] value, byte[] expected) {
    return put(mode, key, ByteBuffer.wrap(value), expected);
  }

  /** Deletes {@code key}; returns DELETED or MISSING. */
  abstract int delete(byte[] key);

  /** The RPC baseline get (Pilaf-VO): the value, or null. */
  abstract byte[] get(byte[] key);

  /**
   * Grows the table array to {@code slots} slots (no-op when it has at least that many): builds the
   * new array in a new region, poisons the old one and bumps the epoch, all under the lock, so that
   * writes wait and one-sided readers either read the old array (unchanged since the lock was
   * taken) or see {@code MOVED} and fetch the layout again. The old array's region is then freed
   * ({@link #freeRegion}): a racing reader over tcp gets {@code NO_SUCH_REGION}, one over shm reads
   * its own mapping of the (unlinked, never truncated) file, which holds the poison; both fetch the
   * layout again.
   *
   * @throws FerriteException NO_SPACE if the keys do not fit (the shard is left as it was)
   */
  abstract void resize(int slots);

  /** The current number of table slots. */
  abstract int slots();

  /** Hands every pair to {@code f} (key, value), under the lock. */
  abstract void forEachPair(BiConsumer<byte[], byte[]> f);

  /**
   * Poisons the table array for good (every bucket or entry {@code MOVED}, the header's epoch
   * marked {@link #RETIRED_EPOCH}), leaving the extents and chains as they are: a one-sided reader
   * that copied a bucket or entry before the poison still reads a consistent pair, one that copies
   * it after fetches the layout and hears {@code MOVED}.
   */
  abstract void poisonForRetire();

  /** The high bit of a retired shard's header epoch: it never equals a cached epoch. */
  static final long RETIRED_EPOCH = Long.MIN_VALUE;

  // ------------------------------------------------------------------ moving (under the lock)

  /**
   * Throws unless a write may apply now: MOVED once retired, BUSY (retryable) while frozen. A
   * freeze whose lease lapsed (its mover died or stalled) is lifted here, so no shard stays frozen.
   */
  final synchronized void checkWritable() {
    checkNotRetired();
    checkLeased();
    if (frozenToken != 0) {
      if (System.nanoTime() - frozenUntilNanos < 0) {
        throw new FerriteException(
            ErrorCode.BUSY,
            "shard " + shard + " of table " + Long.toHexString(tableId) + " is moving; retry");
      }
      frozenToken = 0;
      frozenPairs = null;
    }
  }

  /**
   * The server's lease from the master, for a replicated shard (null: none). While it is not valid
   * the shard serves nothing (its regions' one-sided ops neither: they hang on the same lease), so
   * a primary that was paused or cut off long enough to be deposed never answers with old data
   * (docs/KV.md "Leases"). Set once, before the shard is reachable.
   */
  volatile io.ferrite.fabric.MappedRegion.Lease lease;

  /**
   * The read side of the placement fence ({@link #minVersion}, raised by a repair's first page on
   * the primary and by OPEN_COPY on the copy it fills): a LAYOUT or GET of a replicated shard from
   * a client whose placement is older answers MOVED, and the client fetches the table. On the
   * filled copy this is what keeps a client that still takes the copy's server for the primary (it
   * died, came back and got a new copy since) from reading it. A reader refetches once per repair.
   */
  final synchronized void checkReadFence(long clientVersion) {
    if (seqs != null && clientVersion < minVersion) {
      throw new FerriteException(
          ErrorCode.MOVED,
          "the copies of kv shard "
              + tableId
              + "/"
              + shard
              + " changed (placement version "
              + clientVersion
              + " < "
              + minVersion
              + "): fetch the table");
    }
  }

  /** OPEN_COPY: raises the fence of the copy a repair fills to the repair's placement version. */
  final synchronized void raiseFence(long version) {
    minVersion = Math.max(minVersion, version);
  }

  /** Throws UNAVAILABLE (retryable: the client asks the master) unless the lease is valid. */
  final void checkLeased() {
    io.ferrite.fabric.MappedRegion.Lease l = lease;
    if (l != null && !l.valid()) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE,
          "shard "
              + shard
              + " of table "
              + Long.toHexString(tableId)
              + " is not served here now: "
              + l
              + " (it may have been declared DEAD and the shard's backup promoted); ask the"
              + " master");
    }
  }

  final synchronized void checkNotRetired() {
    if (regionsFreed && retiredTo < 0) {
      throw new FerriteException(
          ErrorCode.NOT_FOUND,
          "shard " + shard + " of table " + Long.toHexString(tableId) + " was dropped here");
    }
    if (retiredTo >= 0) {
      throw new FerriteException(
          ErrorCode.MOVED,
          "shard "
              + shard
              + " of table "
              + Long.toHexString(tableId)
              + " moved to server "
              + retiredTo
              + "; fetch the table from the master");
    }
  }

  /**
   * Freezes writes for {@code leaseNanos} under {@code token} and takes the snapshot EXPORT pages
   * through; answers the number of pairs. Freezing again with the same token renews the lease.
   */
  final synchronized int freeze(long token, long leaseNanos) {
    checkNotRetired();
    if (cancelled.contains(token)) {
      throw new FerriteException(
          ErrorCode.SESSION_EXPIRED, "the move of shard " + shard + " was cancelled");
    }
    if (frozenToken != 0 && frozenToken != token && System.nanoTime() - frozenUntilNanos < 0) {
      throw new FerriteException(
          ErrorCode.CONFLICT, "shard " + shard + " is already being moved by another mover");
    }
    if (frozenToken != token) {
      List<byte[][]> pairs = new ArrayList<>();
      forEachPair((k, v) -> pairs.add(new byte[][] {k, v}));
      frozenPairs = pairs;
      frozenToken = token;
    }
    this.leaseNanos = leaseNanos;
    frozenUntilNanos = System.nanoTime() + leaseNanos;
    return frozenPairs.size();
  }

  /** Throws SESSION_EXPIRED unless the freeze of {@code token} is in force; renews it. */
  final synchronized void checkFrozen(long token, long leaseNanos) {
    checkNotRetired();
    if (frozenToken != token || System.nanoTime() - frozenUntilNanos >= 0) {
      if (frozenToken == token) {
        frozenToken = 0;
        frozenPairs = null;
      }
      throw new FerriteException(
          ErrorCode.SESSION_EXPIRED,
          "the freeze of shard " + shard + " lapsed or was lifted; the move is abandoned");
    }
    frozenUntilNanos = System.nanoTime() + leaseNanos;
  }

  /**
   * Decides the fate of move {@code token} here, atomically: true if the shard is already retired
   * (the move must complete), else the move is cancelled for good (its freeze lifted, a late FREEZE
   * or RETIRE of it refused) and false.
   */
  final synchronized boolean cancel(long token) {
    if (retiredTo >= 0) {
      return true;
    }
    cancelled.add(token);
    if (frozenToken == token) {
      frozenToken = 0;
      frozenPairs = null;
    }
    return false;
  }

  /** Retires the shard for good: poisoned for readers, MOVED for writers. */
  final synchronized void retire(int to) {
    if (retiredTo < 0) {
      poisonForRetire();
      if (lease instanceof KvLease l && !regionsFreed) {
        // Its lease word says 0 from now on: a same-host reader that maps the array refuses what
        // it reads there even before it meets the poison (docs/KV.md "Leases").
        l.withdraw(tableRegion());
      }
    }
    retiredTo = to;
    frozenToken = 0;
    frozenPairs = null; // the heap copy is not needed any more (a resolver pages the shard itself)
  }

  /**
   * The pairs EXPORT pages through: the freeze's snapshot ({@code token}'s freeze must be in force;
   * renewed), or, once retired, what the retired shard still holds (a move the master has not
   * committed yet is completed from it).
   */
  final synchronized List<byte[][]> exportPairs(long token, long leaseNanos) {
    if (regionsFreed) {
      throw new FerriteException(
          ErrorCode.MOVED,
          "shard "
              + shard
              + " moved to server "
              + retiredTo
              + " and its move was committed: nothing left to export here");
    }
    if (retiredTo >= 0) {
      if (frozenPairs == null) {
        List<byte[][]> pairs = new ArrayList<>();
        forEachPair((k, v) -> pairs.add(new byte[][] {k, v}));
        frozenPairs = pairs;
      }
      return frozenPairs;
    }
    checkFrozen(token, leaseNanos);
    return frozenPairs;
  }

  /** How long each FREEZE or EXPORT keeps the freeze in force. */
  long leaseNanos = 10_000_000_000L;

  final synchronized long frozenLeaseNanos() {
    return leaseNanos;
  }

  /** As SHARDS lists it: {@link #moveState()}, or 3 once retired and its regions freed. */
  final synchronized int listState() {
    return retiredTo >= 0 && regionsFreed ? 3 : moveState();
  }

  /** 0 serving, 1 frozen, 2 retired. */
  final synchronized int moveState() {
    return retiredTo >= 0
        ? 2
        : frozenToken != 0 && System.nanoTime() - frozenUntilNanos < 0 ? 1 : 0;
  }

  void checkKey(byte[] key) {
    if (key.length == 0 || key.length > options.maxKey()) {
      throw new FerriteException(
          key.length == 0 ? ErrorCode.INVALID_ARGUMENT : ErrorCode.TOO_LARGE,
          "key of " + key.length + " B (expected: >= 1 and <= " + options.maxKey() + " B)");
    }
  }

  void checkValue(int valueLength) {
    if (valueLength > options.maxValue()) {
      throw new FerriteException(
          ErrorCode.TOO_LARGE,
          "value of " + valueLength + " B (expected: <= " + options.maxValue() + " B)");
    }
  }

  void checkResize(int newSlots) {
    if (newSlots < 3 || newSlots > (1 << 26)) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "slots: " + newSlots + " (expected: >= 3 and <= " + (1 << 26) + ")");
    }
  }

  FerriteException full(String what) {
    fullErrors++;
    return new FerriteException(
        ErrorCode.NO_SPACE,
        "shard "
            + shard
            + " is full: "
            + what
            + "; resize the table (ferrite kv resize), or create it with more shards or"
            + " slotsPerShard");
  }
}
