package io.ferrite.tx.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.kernel.log.OpLog;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.ObjectLayout;
import io.ferrite.tx.TxProtocol;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;
import java.util.function.LongPredicate;

/**
 * One copy's log of one tx region on disk: every record that changed the copy's committed state, in
 * the order it was applied. The records are bodies of the kv face's {@link OpLog} (length, XXH3-64,
 * body; a torn tail cut at open, corruption refused; group commit by one syncer thread per log):
 *
 * <pre>
 *  WRITES  u8 1 | i32 n | n × (fat pointer | i64 expected | u8 kind | bytes value)
 *  DECIDE  u8 2 | i64 txid | u8 commit
 *  FLOOR   u8 3 | i64 incarnation floor
 *  LOCK    u8 4 | i64 txid | i32 decider region | i32 n | n × (fat pointer | i64 expected | u8 kind | bytes value)
 *  RESOLVED u8 5 | i64 txid | u8 commit
 *  PINNED  u8 6 | i64 txid | i32 n | n × i32 region
 *  UNPIN   u8 7 | i32 n | n × i64 txid
 * </pre>
 *
 * <p>A PINNED record is a DECIDE commit of a transaction with other participant regions: the
 * decision is kept (not forgotten for room, carried over by every checkpoint) until an UNPIN record
 * says those regions resolved it (docs/TX.md "Truncation"). An UNPIN record is queued, never waited
 * for: one lost with the process leaves its pins to be asked about again after a rebuild.
 *
 * <p>A WRITES record is a committed write set of this region (a LOCAL record or a single-server
 * commit applied, a COMMIT applied, a DECIDE commit applied at a backup): each write installs its
 * image at {@code expected + 1}, a FREE bumps the incarnation. Replay applies them <b>by
 * version</b> (as a backup applies records: {@link TxMirror}), so two records of one object
 * appended out of order still leave the newer image. A DECIDE record is a decision of the decider
 * region. A FLOOR record is the lowest incarnation a recovered primary hands out (see {@link
 * TxLogs#recover}).
 *
 * <p>A LOCK record is a two-phase transaction's writes of this region, locked here by a participant
 * that is not the decider while this is the region's only copy (no backup holds the LOCK record):
 * written before the LOCK is answered, so the coordinator may report the commit on the decider's OK
 * without waiting for this participant's COMMIT (docs/TX.md "Commit"). Its RESOLVED record (commit:
 * apply the LOCK record's writes, by version; abort: drop it) follows once the participant learnt
 * the outcome. Replay hands both to the copy as a backup's LOCK and COMMIT/ABORT records; a LOCK
 * record left without one is locked again when the copy is promoted, and resolved by asking the
 * decider (as a promoted backup's are).
 *
 * <p>Appends are queued to the server's {@link TxLogAppender}, which encodes and writes them to the
 * page cache off the caller's thread, in the order they were queued; {@link #flush} is the group
 * commit (a future completed by the syncer's fsync that covers every record queued before it, once
 * the appender wrote them). Thread-safe.
 *
 * <h2>Checkpoint</h2>
 *
 * {@link #checkpoint} replaces the log by the copy's image ({@link OpLog#rewrite}: a new file,
 * fsynced, renamed over the old one): a WRITES record per slot the copy ever wrote (a live object
 * at its version and incarnation, a freed slot as the FREE that made it), then the DECIDE records
 * this log holds (the last 65 536) and the incarnation floor. Appends take the read side of {@link
 * #shared}, the checkpoint the write side; a primary holds the read side across append and apply,
 * so the checkpoint sees every object either with its record logged and applied or with neither.
 */
final class TxLog implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(TxLog.class.getName());
  static final int WRITES = 1;
  static final int DECIDE = 2;
  static final int FLOOR = 3;
  static final int LOCK = 4;
  static final int RESOLVED = 5;
  static final int PINNED = 6;
  static final int UNPIN = 7;

  private final int region;
  private final Path file;
  private final OpLog log;
  private final ReentrantReadWriteLock rw = new ReentrantReadWriteLock();
  private final TxLogAppender appender;

  /** Records queued to the appender, and of those how many it has handled (written or dropped). */
  private final java.util.concurrent.atomic.AtomicLong queued =
      new java.util.concurrent.atomic.AtomicLong();

  private volatile long handled;

  /** Set when a write failed: later records are refused, flushes fail (see the appender). */
  private volatile FerriteException broken;

  /** DECIDE records appended or replayed (carried over by a checkpoint); guarded by itself. */
  private final Map<Long, Boolean> decisions;

  /** PINNED records not yet UNPINned: txid → regions; guarded by {@link #decisions}. */
  private final Map<Long, int[]> pinned = new LinkedHashMap<>();

  /**
   * LOCK records written or replayed whose RESOLVED record is not (carried over by a checkpoint);
   * guarded by itself, which is held across a LOCK record's write.
   */
  private final Map<Long, TxMirror.LockRecord> locked = new LinkedHashMap<>();

  /**
   * Transactions aborted here before their LOCK record was written (an ABORT that overtook the
   * LOCK's record): the record is then not written. Bounded; guarded by {@link #locked}.
   */
  private final Map<Long, Boolean> abortedFirst = RecentTxids.map(1 << 12);

  /** The highest FLOOR record appended or replayed; guarded by {@link #decisions}. */
  private long floor;

  /** The log's bytes after its last checkpoint (or at open). */
  private volatile long checkpointed;

  private TxLog(int region, Path file, OpLog log, TxLogAppender appender, int kept) {
    this.decisions = RecentTxids.map(kept);
    this.region = region;
    this.file = file;
    this.log = log;
    this.appender = appender;
  }

  /** What a replay saw besides the writes: the highest incarnation any record names or sets. */
  static final class Replay {
    long maxIncarnation;
    long records;

    /** LOCK records without a RESOLVED record after them, in order. */
    final Map<Long, TxMirror.LockRecord> locks = new LinkedHashMap<>();
  }

  /**
   * Opens (or creates) the log {@code file} of {@code region}, handing each intact record's writes
   * and decisions to {@code copy} (null: none expected, a fresh log), in order.
   */
  static TxLog open(
      int region,
      Path file,
      TxMirror copy,
      Replay seen,
      OpLog.Fsync fsync,
      TxLogAppender appender) {
    return open(region, file, copy, seen, fsync, appender, RecentTxids.DECIDED);
  }

  /** As above, remembering the last {@code kept} plain decisions ({@code tx.decisions.kept}). */
  static TxLog open(
      int region,
      Path file,
      TxMirror copy,
      Replay seen,
      OpLog.Fsync fsync,
      TxLogAppender appender,
      int kept) {
    Consumer<ByteBuffer> replay =
        body -> {
          if (copy == null) {
            throw new FerriteException(
                ErrorCode.INTERNAL, "tx log " + file + " was expected empty (a fresh copy)");
          }
          Wire.Reader r = new Wire.Reader(body, "tx log record of region " + region);
          int type = r.u8("type");
          switch (type) {
            case WRITES -> {
              List<TxService.Write> ws = readWrites(r);
              r.end();
              for (TxService.Write w : ws) {
                long inc = w.ptr().incarnation() + (w.kind() == TxProtocol.KIND_FREE ? 1 : 0);
                seen.maxIncarnation = Math.max(seen.maxIncarnation, inc);
              }
              copy.accept(TxProtocol.REC_LOCAL, 0, 0, ws);
            }
            case DECIDE -> {
              long txid = r.i64("txid");
              boolean commit = r.u8("commit") != 0;
              r.end();
              copy.decide(txid, commit);
            }
            case FLOOR -> {
              seen.maxIncarnation = Math.max(seen.maxIncarnation, r.i64("floor"));
              r.end();
            }
            case PINNED -> {
              long txid = r.i64("txid");
              int[] regions = readRegions(r);
              r.end();
              copy.decide(txid, true, regions);
            }
            case UNPIN -> {
              List<Long> txids = readTxids(r);
              r.end();
              copy.unpin(txids);
            }
            case LOCK -> {
              long txid = r.i64("txid");
              int decider = r.i32("deciderRegion");
              List<TxService.Write> ws = readWrites(r);
              r.end();
              for (TxService.Write w : ws) {
                long inc = w.ptr().incarnation() + (w.kind() == TxProtocol.KIND_FREE ? 1 : 0);
                seen.maxIncarnation = Math.max(seen.maxIncarnation, inc);
              }
              seen.locks.put(txid, new TxMirror.LockRecord(txid, decider, ws));
              copy.accept(TxProtocol.REC_LOCK, txid, decider, ws);
            }
            case RESOLVED -> {
              long txid = r.i64("txid");
              boolean commit = r.u8("commit") != 0;
              r.end();
              seen.locks.remove(txid);
              copy.accept(
                  commit ? TxProtocol.REC_COMMIT : TxProtocol.REC_ABORT, txid, 0, List.of());
            }
            default ->
                throw new FerriteException(
                    ErrorCode.INTERNAL,
                    "tx log "
                        + file
                        + ": unknown record type "
                        + type
                        + " (a newer server's log?)");
          }
          seen.records++;
        };
    Map<Long, Boolean> decided = RecentTxids.map(kept);
    Map<Long, int[]> pins = new LinkedHashMap<>();
    long[] floor = new long[1];
    Consumer<ByteBuffer> remember =
        body -> {
          ByteBuffer b = body.duplicate().order(ByteOrder.LITTLE_ENDIAN);
          if (b.get(0) == DECIDE) {
            decided.put(b.getLong(1), b.get(9) != 0);
          } else if (b.get(0) == FLOOR) {
            floor[0] = Math.max(floor[0], b.getLong(1));
          } else if (b.get(0) == PINNED) {
            Wire.Reader r = new Wire.Reader(b.position(1), "tx log PINNED record");
            pins.put(r.i64("txid"), readRegions(r));
          } else if (b.get(0) == UNPIN) {
            readTxids(new Wire.Reader(b.position(1), "tx log UNPIN record")).forEach(pins::remove);
          }
          replay.accept(body);
        };
    TxLog l =
        new TxLog(
            region, file, OpLog.open("tx-region-" + region, file, remember, fsync), appender, kept);
    l.decisions.putAll(decided);
    l.pinned.putAll(pins);
    l.locked.putAll(seen.locks);
    l.floor = floor[0];
    l.checkpointed = l.log.bytes();
    return l;
  }

  int region() {
    return region;
  }

  Path file() {
    return file;
  }

  /** The side of the checkpoint lock appends take (a primary holds it across append and apply). */
  Lock shared() {
    return rw.readLock();
  }

  /**
   * Queues a committed write set of this region, encoded and written by the appender (not yet
   * durable: {@link #flush}). The writes' values are not copied: nobody changes them afterwards.
   */
  void writes(List<TxService.Write> ws) {
    writes(ws, false);
  }

  /**
   * As {@link #writes(List)}, or, when {@code now}, written by this thread before it returns: a
   * region whose only copy this is (no backup holds the write set) must not answer a commit that a
   * SIGKILL of this one process could lose, and a queued record is not in the file until the
   * appender's next batch (docs/TX.md "Logs on disk"). Replay applies write sets by version, so a
   * record written now may overtake an older one still queued.
   */
  void writes(List<TxService.Write> ws, boolean now) {
    rw.readLock().lock();
    try {
      if (now) {
        appendNow(writesRecord(ws));
      } else {
        queue(ws);
      }
    } finally {
      rw.readLock().unlock();
    }
  }

  /**
   * A decider region's commit decision and its write set, written by this thread with one {@code
   * write(2)} ({@link OpLog#appendAll}): the DECIDE record first, then the WRITES record, as the
   * two appends they replace wrote them (an alone decider used to write each with its own call).
   */
  void decideAndWrites(long txid, List<TxService.Write> ws, int[] pins) {
    rw.readLock().lock();
    try {
      synchronized (decisions) {
        decisions.put(txid, true);
        if (pins.length > 0) {
          pinned.put(txid, pins);
        }
      }
      writeNow(List.of(decideRecord(txid, true, pins), writesRecord(ws)));
    } finally {
      rw.readLock().unlock();
    }
  }

  /**
   * Writes a LOCK record ({@code ws}: the transaction's writes of this region) on this thread, with
   * one {@code write(2)}, before the LOCK is answered: in the file, it survives a SIGKILL of this
   * process (under {@code always} the caller also waits for {@link #flush}). False, nothing
   * written, if the transaction was aborted here first (its ABORT overtook this record).
   */
  boolean lock(long txid, int deciderRegion, List<TxService.Write> ws) {
    rw.readLock().lock();
    try {
      synchronized (locked) {
        if (abortedFirst.remove(txid) != null) {
          return false;
        }
        appendNow(lockRecord(txid, deciderRegion, ws));
        locked.put(txid, new TxMirror.LockRecord(txid, deciderRegion, ws));
        return true;
      }
    } finally {
      rw.readLock().unlock();
    }
  }

  /**
   * The outcome of a transaction whose LOCK record this log holds: a RESOLVED record, written by
   * this thread ({@code write(2)}) before the caller applies or unlocks, so it precedes in the file
   * every later record of its objects. (Queued, it could be lost with the process while a later
   * transaction's LOCK record of the same object, expecting the version this one installs or kept,
   * was written: replay would lock this one again and the later one, finding the older version, not
   * at all.) True if this log held its LOCK record. An abort of a transaction whose LOCK record is
   * not written yet is remembered, so that record is never written ({@link #lock}). A commit's
   * caller holds {@link #shared} across this and the apply (a checkpoint sees both or neither).
   */
  boolean resolve(long txid, boolean commit) {
    rw.readLock().lock();
    try {
      synchronized (locked) {
        if (locked.remove(txid) == null) {
          if (!commit) {
            abortedFirst.put(txid, true);
          }
          return false;
        }
        appendNow(new Wire.Writer().u8(RESOLVED).i64(txid).u8(commit ? 1 : 0).toArray());
        return true;
      }
    } finally {
      rw.readLock().unlock();
    }
  }

  /**
   * Forgets a replayed LOCK record that could not lock its objects again (they moved on: it was
   * resolved before, its objects written since): no record; a later checkpoint leaves it out.
   */
  void forget(long txid) {
    synchronized (locked) {
      locked.remove(txid);
    }
  }

  /** LOCK records this log holds without their RESOLVED record (tests). */
  int lockRecords() {
    synchronized (locked) {
      return locked.size();
    }
  }

  private static byte[] lockRecord(long txid, int deciderRegion, List<TxService.Write> ws) {
    Wire.Writer w = new Wire.Writer().u8(LOCK).i64(txid).i32(deciderRegion).i32(ws.size());
    for (TxService.Write x : ws) {
      FatPointer.writeTo(w, x.ptr());
      w.i64(x.expected()).u8(x.kind()).bytes(x.value());
    }
    return w.toArray();
  }

  /** Writes one record on this thread (an alone copy's; see {@link #writes(List, boolean)}). */
  private void appendNow(byte[] record) {
    writeNow(List.of(record));
  }

  /** Writes {@code records} on this thread with one {@code write(2)}; a failure breaks the log. */
  private void writeNow(List<byte[]> records) {
    failIfBroken();
    try {
      log.appendAll(records);
    } catch (FerriteException e) {
      broke(e);
      throw e;
    }
  }

  /** Refuses a record once a write of this log failed (the appender's or this thread's). */
  private void failIfBroken() {
    FerriteException b = broken;
    if (b != null) {
      throw new FerriteException(
          ErrorCode.INTERNAL, "tx log " + file + " failed earlier: " + b.getMessage(), b);
    }
  }

  private void queue(Object record) {
    failIfBroken();
    queued.incrementAndGet();
    appender.append(this, record);
  }

  /** A queued record's body ({@code byte[]} as is, a write set encoded); on the appender. */
  @SuppressWarnings("unchecked")
  static byte[] encode(Object record) {
    return record instanceof byte[] b ? b : writesRecord((List<TxService.Write>) record);
  }

  /** On the appender: writes a run of this log's records (dropped if the log broke). */
  void appendNow(List<byte[]> bodies) {
    try {
      if (broken == null) {
        log.appendAll(bodies);
      }
    } catch (FerriteException e) {
      broke(e);
    } finally {
      handled += bodies.size();
    }
  }

  /** On the appender: a record of this log could not be written or encoded. */
  void broke(RuntimeException e) {
    if (broken == null) {
      broken =
          e instanceof FerriteException fe
              ? fe
              : new FerriteException(ErrorCode.INTERNAL, "tx log " + file + ": " + e, e);
      // A closed log (its copy dropped or the server stopping) refuses late records: no error.
      boolean closed = broken.code() == ErrorCode.UNAVAILABLE;
      LOG.log(
          closed ? System.Logger.Level.DEBUG : System.Logger.Level.ERROR,
          "tx log " + file + " refuses records from now on",
          e);
    }
  }

  /** On the appender: a record that could not be encoded (the log broke) was dropped. */
  void dropped() {
    handled++; // one writer: the appender
  }

  /** On the appender: a flush or drain reached its place in the queue. */
  void marked(boolean fsync, CompletableFuture<Void> done) {
    FerriteException b = broken;
    if (b != null) {
      done.completeExceptionally(b);
    } else if (!fsync) {
      done.complete(null);
    } else {
      log.flush()
          .whenComplete(
              (v, e) -> {
                if (e == null) {
                  done.complete(null);
                } else {
                  done.completeExceptionally(e);
                }
              });
    }
  }

  private static byte[] writesRecord(List<TxService.Write> ws) {
    Wire.Writer w = new Wire.Writer().u8(WRITES).i32(ws.size());
    for (TxService.Write x : ws) {
      FatPointer.writeTo(w, x.ptr());
      w.i64(x.expected()).u8(x.kind()).bytes(x.value());
    }
    return w.toArray();
  }

  /** Appends a decision of this decider region. */
  void decide(long txid, boolean commit) {
    decide(txid, commit, false, NO_PINS);
  }

  /** As {@link #decide(long, boolean)}; {@code now} as in {@link #writes(List, boolean)}. */
  void decide(long txid, boolean commit, boolean now) {
    decide(txid, commit, now, NO_PINS);
  }

  /** As {@link #decide(long, boolean)}, a commit pinned for {@code pins} (none: a plain one). */
  void decide(long txid, boolean commit, int[] pins) {
    decide(txid, commit, false, pins);
  }

  /** As {@link #decide(long, boolean, int[])}; {@code now} as in {@link #writes(List, boolean)}. */
  void decide(long txid, boolean commit, boolean now, int[] pins) {
    rw.readLock().lock();
    try {
      synchronized (decisions) {
        decisions.put(txid, commit);
        if (commit && pins.length > 0) {
          pinned.put(txid, pins);
        }
      }
      byte[] record = decideRecord(txid, commit, pins);
      if (now) {
        appendNow(record);
      } else {
        queue(record);
      }
    } finally {
      rw.readLock().unlock();
    }
  }

  static final int[] NO_PINS = new int[0];

  private static byte[] decideRecord(long txid, boolean commit, int[] pins) {
    if (!commit || pins.length == 0) {
      return new Wire.Writer().u8(DECIDE).i64(txid).u8(commit ? 1 : 0).toArray();
    }
    Wire.Writer w = new Wire.Writer().u8(PINNED).i64(txid).i32(pins.length);
    for (int r : pins) {
      w.i32(r);
    }
    return w.toArray();
  }

  static int[] readRegions(Wire.Reader r) {
    int n = r.count("regions", 1 << 16);
    int[] out = new int[n];
    for (int i = 0; i < n; i++) {
      out[i] = r.i32("region");
    }
    return out;
  }

  static List<Long> readTxids(Wire.Reader r) {
    int n = r.count("txids", 1 << 24);
    List<Long> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(r.i64("txid"));
    }
    return out;
  }

  /**
   * Queues an UNPIN record: these pinned decisions' regions all resolved them (never waited for; a
   * record lost with the process leaves pins that are asked about again and released).
   */
  void unpin(List<Long> txids) {
    rw.readLock().lock();
    try {
      Wire.Writer w = new Wire.Writer().u8(UNPIN).i32(txids.size());
      synchronized (decisions) {
        for (long txid : txids) {
          pinned.remove(txid);
          w.i64(txid);
        }
      }
      queue(w.toArray());
    } finally {
      rw.readLock().unlock();
    }
  }

  /** Pinned decisions this log holds (tests). */
  int pinnedCount() {
    synchronized (decisions) {
      return pinned.size();
    }
  }

  /** Appends an incarnation floor and makes the log durable (blocks: not on a fabric thread). */
  void floor(long incarnation) {
    rw.readLock().lock();
    try {
      synchronized (decisions) {
        floor = Math.max(floor, incarnation);
      }
      queue(new Wire.Writer().u8(FLOOR).i64(incarnation).toArray());
    } finally {
      rw.readLock().unlock();
    }
    await(true);
  }

  private static void join(CompletableFuture<Void> f) {
    try {
      f.join();
    } catch (java.util.concurrent.CompletionException e) {
      throw FerriteException.unwrap(e);
    }
  }

  /**
   * Whether the log is past {@code threshold} bytes and twice its size after its last checkpoint.
   */
  boolean checkpointDue(long threshold) {
    long b = log.bytes();
    return b > threshold && b > 2 * checkpointed;
  }

  /**
   * Replaces the log by the copy's image, which {@code image} hands over (see the class comment);
   * nothing is appended meanwhile. The caller keeps the copy's memory still otherwise (a mirror
   * holds its monitor; a primary's image is read under the region's monitor, inside this lock).
   */
  void checkpoint(Consumer<Consumer<TxService.Write>> image) {
    rw.writeLock().lock();
    try {
      await(false); // what was queued before is in the old log (and in the image)
      if (broken != null) {
        return; // the old log stays; it refuses records anyway
      }
      log.rewrite(
          sink -> {
            List<TxService.Write> batch = new ArrayList<>();
            image.accept(
                w -> {
                  batch.add(w);
                  if (batch.size() == 64) {
                    sink.accept(writesRecord(batch));
                    batch.clear();
                  }
                });
            if (!batch.isEmpty()) {
              sink.accept(writesRecord(batch));
            }
            // After the image (which holds their objects at the versions they expect, locked or
            // not): replayed, they lock them again, as before the checkpoint.
            synchronized (locked) {
              locked.forEach(
                  (txid, rec) -> sink.accept(lockRecord(txid, rec.deciderRegion(), rec.writes())));
            }
            synchronized (decisions) {
              decisions.forEach(
                  (txid, commit) -> {
                    if (!pinned.containsKey(txid)) {
                      sink.accept(decideRecord(txid, commit, NO_PINS));
                    }
                  });
              // Every pinned decision, however old (docs/TX.md "Truncation").
              pinned.forEach((txid, regions) -> sink.accept(decideRecord(txid, true, regions)));
              if (floor > 0) {
                sink.accept(new Wire.Writer().u8(FLOOR).i64(floor).toArray());
              }
            }
          });
      checkpointed = log.bytes();
    } finally {
      rw.writeLock().unlock();
    }
  }

  /**
   * The image of a copy's memory as writes: every slot of every slab (start → size class in lines)
   * below its top whose header was ever written (a version above 0): a freed one ({@code free}) as
   * the FREE that made it, any other as a write of its payload at its version and incarnation.
   */
  static void image(
      MappedRegion memory,
      int region,
      Map<Long, Integer> slabLines,
      Map<Long, Long> tops,
      LongPredicate free,
      Consumer<TxService.Write> out) {
    for (Map.Entry<Long, Integer> e : new TreeMap<>(slabLines).entrySet()) {
      int lines = e.getValue();
      int bytes = lines * ObjectLayout.LINE;
      ByteBuffer copy = ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
      for (long at = e.getKey(); at + bytes <= tops.get(e.getKey()); at += bytes) {
        copy.clear();
        memory.readInto(at, copy);
        if ((copy.getLong(0) & ~ObjectLayout.LOCK) != 0) {
          out.accept(imageWrite(region, at, lines, copy, free.test(at)));
        }
      }
    }
  }

  /**
   * The write that installs an object's image ({@code lines} lines at {@code at}, position 0): a
   * freed slot's as the FREE that made it, any other's as a write of its payload at its version.
   */
  static TxService.Write imageWrite(
      int region, long at, int lines, ByteBuffer image, boolean freed) {
    ByteBuffer copy = image.duplicate().order(ByteOrder.LITTLE_ENDIAN).position(0);
    long version = copy.getLong(0) & ~ObjectLayout.LOCK;
    long incarnation = copy.getLong(ObjectLayout.INCARNATION);
    int size = ObjectLayout.capacity(lines);
    if (freed) {
      return new TxService.Write(
          new FatPointer(region, at, size, incarnation - 1),
          version - 1,
          TxProtocol.KIND_FREE,
          new byte[0]);
    }
    return new TxService.Write(
        new FatPointer(region, at, size, incarnation),
        version - 1,
        TxProtocol.KIND_WRITE,
        ObjectLayout.payload(copy, size));
  }

  /**
   * Completed once every record queued before this call is on disk (written by the appender, then
   * one shared fsync of the syncer); failed if the log broke.
   */
  CompletableFuture<Void> flush() {
    FerriteException b = broken;
    if (b != null) {
      return CompletableFuture.failedFuture(b);
    }
    if (handled == queued.get()) {
      return log.flush(); // nothing in the queue: the syncer alone (the interval tick's case)
    }
    return appender.mark(this, true, false);
  }

  /** Completed once every record queued before this call was written (not fsynced). */
  CompletableFuture<Void> drained() {
    return handled == queued.get()
        ? CompletableFuture.completedFuture(null)
        : appender.mark(this, false, false);
  }

  /**
   * As {@link #flush} ({@code fsync}) or {@link #drained}, for a caller that blocks on it: its
   * future is completed by the appender (or the syncer) directly, not through the completions
   * thread, which a commit's continuation may hold while it waits for a lock this caller holds (a
   * checkpoint holds the log's write lock and the copy's monitor).
   */
  private void await(boolean fsync) {
    FerriteException b = broken;
    if (b != null) {
      throw b;
    }
    if (handled == queued.get()) {
      if (fsync) {
        join(log.flush());
      }
      return;
    }
    join(appender.mark(this, fsync, true));
  }

  long bytes() {
    return log.bytes();
  }

  /** The kv log underneath (tests: its monitor holds the appender). */
  OpLog opLog() {
    return log;
  }

  /** Records queued and not yet handled by the appender (tests). */
  long queuedNow() {
    return queued.get() - handled;
  }

  long fsyncs() {
    return log.fsyncs();
  }

  private static List<TxService.Write> readWrites(Wire.Reader r) {
    int n = r.count("writes", 1 << 20);
    List<TxService.Write> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      FatPointer p = FatPointer.readFrom(r);
      long expected = r.i64("expectedVersion");
      int kind = r.u8("kind");
      byte[] value = r.bytes("value");
      out.add(new TxService.Write(p, expected, kind, value));
    }
    return out;
  }

  /** Writes what is queued, then closes the log (which syncs it). */
  @Override
  public void close() {
    close(false);
  }

  /**
   * As {@link #close()}; {@code crashed} (tests: a SIGKILL as a JVM-internal stop can show it) does
   * not wait for what is queued: the appender dropped it ({@link TxLogAppender#abandon}).
   */
  void close(boolean crashed) {
    if (crashed) {
      log.close();
      return;
    }
    try {
      await(false);
    } catch (FerriteException e) {
      LOG.log(System.Logger.Level.WARNING, "tx log " + file + ": " + e.getMessage());
    }
    log.close();
  }
}
