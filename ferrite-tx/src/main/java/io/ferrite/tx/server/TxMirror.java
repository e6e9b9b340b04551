package io.ferrite.tx.server;

import io.ferrite.fabric.MappedRegion;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.ObjectLayout;
import io.ferrite.tx.TxProtocol;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A backup's copy of one tx region, fed by its primary's REPLICATE records (FaRM §3.4: "lock at the
 * primaries and log at backups"): the region memory (same layout, same offsets) and the log of the
 * transactions locked at the primary and not yet resolved.
 *
 * <p>Writes are applied <b>by version</b>: an object's image is installed at {@code expected + 1}
 * only if the copy's version is older, so a record that arrives twice or late changes nothing. The
 * copy also tracks each slab's size class and which slots hold a live object, from which a promoted
 * copy rebuilds the allocator ({@link TxRegion#rebuilt}).
 *
 * <p>Everything runs under this object's monitor, briefly (memory writes, no I/O): records are
 * applied on the fabric's receiving thread (inline), in the order the primary's connection
 * delivered them.
 */
final class TxMirror {
  /** A LOCK record: a transaction locked at the primary, waiting for its outcome. */
  record LockRecord(long txid, int deciderRegion, List<TxService.Write> writes) {}

  private final int id;
  private final MappedRegion memory;
  private final long slabSize;
  private final Map<Long, Integer> slabLines = new HashMap<>();
  private final Set<Long> live = new HashSet<>();
  private final Map<Long, LockRecord> locks = new LinkedHashMap<>();

  /** Resolved transactions (true: committed): DECIDE records, and COMMIT/ABORT seen; bounded. */
  private final Map<Long, Boolean> resolved;

  /** DECIDE records (the decider region's decisions), kept while bounded like {@link #resolved}. */
  private final Map<Long, Boolean> decided;

  /**
   * Pinned commit decisions (DECIDE records with regions, not yet UNPINned): never forgotten for
   * room, taken over by a promotion (docs/TX.md "Truncation").
   */
  private final Map<Long, int[]> pinned = new LinkedHashMap<>();

  private boolean promoted;

  /** This copy's log on disk ({@link TxLog}): what changes its committed state, in order. */
  private TxLog log;

  /** The fill that made this copy (the epoch its target was added at), 0 for a region's OPEN. */
  volatile long since;

  TxMirror(int id, MappedRegion memory, long slabSize) {
    this(id, memory, slabSize, RecentTxids.DECIDED);
  }

  /** As above, remembering the last {@code kept} decisions ({@code tx.decisions.kept}). */
  TxMirror(int id, MappedRegion memory, long slabSize, int kept) {
    this.resolved = RecentTxids.map(kept);
    this.decided = RecentTxids.map(kept);
    this.id = id;
    this.memory = memory;
    this.slabSize = slabSize;
  }

  int id() {
    return id;
  }

  /** From now on, appends what changes this copy's committed state to {@code log}. */
  synchronized void log(TxLog log) {
    this.log = log;
  }

  MappedRegion memory() {
    return memory;
  }

  /** Applies one record; false if this copy was promoted (the sender is no longer the primary). */
  synchronized boolean accept(int type, long txid, int deciderRegion, List<TxService.Write> ws) {
    if (promoted) {
      return false;
    }
    switch (type) {
      case TxProtocol.REC_LOCK -> {
        if (!resolved.containsKey(txid)) { // an ABORT that overtook its LOCK: never log it
          locks.put(txid, new LockRecord(txid, deciderRegion, ws));
        }
      }
      case TxProtocol.REC_LOCAL -> {
        if (log != null) {
          log.writes(ws);
        }
        ws.forEach(this::apply);
      }
      case TxProtocol.REC_COMMIT -> resolve(txid, true);
      case TxProtocol.REC_ABORT -> resolve(txid, false);
      default -> {
        // REC_OPEN: nothing beyond making the copy.
      }
    }
    return true;
  }

  /** A DECIDE record: the decision of the transaction whose decider region this is. */
  synchronized boolean decide(long txid, boolean commit) {
    return decide(txid, commit, TxLog.NO_PINS);
  }

  /** As {@link #decide(long, boolean)}, a commit pinned until {@code pins} resolved it. */
  synchronized boolean decide(long txid, boolean commit, int[] pins) {
    if (promoted) {
      return false;
    }
    decided.put(txid, commit);
    if (commit && pins.length > 0) {
      pinned.put(txid, pins);
    }
    if (log != null) {
      log.decide(txid, commit, pins);
    }
    resolve(txid, commit);
    return true;
  }

  /** An UNPIN record: these pinned decisions were resolved by all their regions. */
  synchronized boolean unpin(List<Long> txids) {
    if (promoted) {
      return false;
    }
    txids.forEach(pinned::remove);
    if (log != null) {
      log.unpin(txids);
    }
    return true;
  }

  private void resolve(long txid, boolean commit) {
    resolved.put(txid, commit);
    LockRecord r = locks.remove(txid);
    if (r != null && commit) {
      if (log != null) {
        log.writes(r.writes());
      }
      r.writes().forEach(this::apply);
    }
  }

  /** Installs one write if the copy's version of the object is older (see the class comment). */
  private void apply(TxService.Write w) {
    FatPointer p = w.ptr();
    int lines = ObjectLayout.lines(p.size());
    long version = w.expected() + 1;
    long current = memory.getLongAcquire(p.offset()) & ~ObjectLayout.LOCK;
    boolean isFree = w.kind() == TxProtocol.KIND_FREE;
    slabLines.putIfAbsent(p.offset() - p.offset() % slabSize, lines);
    if (current >= version) {
      return;
    }
    long incarnation = p.incarnation() + (isFree ? 1 : 0);
    TxRegion.writeImage(
        memory, p.offset(), lines, version, incarnation, isFree ? new byte[0] : w.value(), current);
    if (isFree) {
      live.remove(p.offset());
    } else {
      live.add(p.offset());
    }
  }

  /**
   * A fill's state (FILL_STATE, docs/TX.md "Recovery"): slab classes, the primary's pending LOCK
   * records (logged unless resolved already: a forwarded COMMIT or ABORT may overtake them) and its
   * decisions (acted on like DECIDE records).
   */
  synchronized boolean fillState(
      Map<Long, Integer> slabs,
      List<LockRecord> pendingLocks,
      Map<Long, Boolean> decisions,
      Map<Long, int[]> pins) {
    if (promoted) {
      return false;
    }
    slabs.forEach(slabLines::putIfAbsent);
    for (LockRecord rec : pendingLocks) {
      if (!resolved.containsKey(rec.txid())) {
        locks.putIfAbsent(rec.txid(), rec);
      }
    }
    decisions.forEach(
        (txid, commit) -> {
          int[] p = pins.getOrDefault(txid, TxLog.NO_PINS);
          if (log != null && !decided.containsKey(txid)) {
            log.decide(txid, commit, p);
          }
          decided.putIfAbsent(txid, commit);
          if (commit && p.length > 0) {
            pinned.putIfAbsent(txid, p);
          }
          resolve(txid, decided.get(txid));
        });
    return true;
  }

  /**
   * A fill's object image ({@code lines} lines, verified at the primary: consistent, unlocked),
   * installed like a record's write, by version: only if the copy's version is older, so an image
   * read before a forwarded write that already arrived never takes the object back.
   */
  synchronized boolean fillObject(
      long offset, int lines, java.nio.ByteBuffer image, boolean isLive) {
    if (promoted) {
      return false;
    }
    long version = image.order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong(0);
    slabLines.putIfAbsent(offset - offset % slabSize, lines);
    long current = memory.getLongAcquire(offset) & ~ObjectLayout.LOCK;
    if (current >= version) {
      return true;
    }
    if (log != null) {
      log.writes(List.of(TxLog.imageWrite(id, offset, lines, image, !isLive)));
    }
    memory.putLongRelease(offset, current | ObjectLayout.LOCK);
    memory.writeFrom(offset + 8, image.duplicate().position(8));
    memory.putLongRelease(offset, version);
    if (isLive) {
      live.add(offset);
    } else {
      live.remove(offset);
    }
    return true;
  }

  /** What a promotion takes over; this copy then refuses every record. */
  record Taken(
      Map<Long, Integer> slabLines,
      Set<Long> live,
      List<LockRecord> locks,
      Map<Long, Boolean> decided,
      Map<Long, int[]> pinned) {}

  synchronized Taken promote() {
    promoted = true;
    return new Taken(
        Map.copyOf(slabLines),
        Set.copyOf(live),
        List.copyOf(locks.values()),
        Map.copyOf(decided),
        new LinkedHashMap<>(pinned));
  }

  /**
   * Rewrites this copy's log as its image ({@link TxLog#checkpoint}); records wait meanwhile (this
   * monitor). A slot the copy wrote that holds no live object was freed.
   */
  synchronized void checkpoint() {
    if (log == null || promoted) {
      return;
    }
    Map<Long, Long> tops = new HashMap<>();
    slabLines.keySet().forEach(s -> tops.put(s, s + slabSize));
    log.checkpoint(out -> TxLog.image(memory, id, slabLines, tops, at -> !live.contains(at), out));
  }

  /** Pinned decisions held (tests). */
  synchronized int pinnedCount() {
    return pinned.size();
  }

  /** Logged LOCK records not yet resolved (tests). */
  synchronized int lockRecords() {
    return locks.size();
  }
}
