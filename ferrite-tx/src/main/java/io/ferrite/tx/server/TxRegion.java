package io.ferrite.tx.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.ObjectLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One tx region at its primary: the memory clients read one-sided, and its allocator. The region is
 * cut into slabs of {@code tx.slab.size}; a slab is given one size class (a number of cache lines)
 * when first needed and keeps it for the region's life, so a freed slot is only ever reused for an
 * object of the same size class (FaRM §3.5: type stability): a stale fat pointer then lands on an
 * object header, never inside another object's payload, and its incarnation tells it apart.
 *
 * <p>The allocator's state (free lists, bump pointers) lives in this JVM, under this object's
 * monitor; a backup promoted to primary rebuilds it from what its copy saw ({@link #rebuilt}).
 * Object words are changed only through {@link #lock}, {@link #apply} and {@link #unlock} (CAS and
 * release stores on the mapped memory), which one-sided readers see.
 */
final class TxRegion {
  private final int id;
  private final MappedRegion memory;
  private final long slabSize;
  private final int maxSize;
  private final Map<Integer, ArrayDeque<Long>> free = new HashMap<>();
  private final Map<Integer, List<long[]>> slabs = new HashMap<>(); // class → [start, next]
  private long nextSlab;
  private long live;

  /**
   * The lowest incarnation an allocation hands out: {@code (epoch - 1) << 40} of the epoch this
   * server became the primary at, so a fat pointer an earlier primary handed out for a slot that
   * was never committed (its copy here never saw it) can never match an object allocated here.
   */
  private final long floor;

  /** The placement as this primary knows it (refreshed when a backup stops answering). */
  private volatile long epoch;

  private volatile List<Integer> backups;

  TxRegion(
      int id, MappedRegion memory, long slabSize, int maxSize, long epoch, List<Integer> backups) {
    this(id, memory, slabSize, maxSize, epoch, backups, 0);
  }

  /**
   * As above, handing out incarnations from at least {@code minFloor} (a region rebuilt from a
   * log).
   */
  private TxRegion(
      int id,
      MappedRegion memory,
      long slabSize,
      int maxSize,
      long epoch,
      List<Integer> backups,
      long minFloor) {
    this.id = id;
    this.memory = memory;
    this.slabSize = slabSize;
    this.maxSize = maxSize;
    this.epoch = epoch;
    this.backups = List.copyOf(backups);
    this.full = this.backups;
    this.floor = Math.max((epoch - 1) << 40, minFloor);
  }

  /**
   * A promoted backup's copy as a primary region: each slab keeps the size class its objects had;
   * its bump pointer is past the last slot the copy saw (live or freed), every other slot below it
   * (allocated by the old primary, never committed) is free; slabs the copy never saw stay unused.
   * Incarnations are handed out from at least {@code minFloor} ({@link TxLogs#recover}; 0 for a
   * promoted backup, whose epoch floor suffices).
   */
  static TxRegion rebuilt(
      int id,
      MappedRegion memory,
      long slabSize,
      int maxSize,
      long epoch,
      List<Integer> backups,
      Map<Long, Integer> slabLines,
      java.util.Set<Long> liveSlots,
      long minFloor) {
    TxRegion r = new TxRegion(id, memory, slabSize, maxSize, epoch, backups, minFloor);
    java.util.TreeMap<Long, Long> end = new java.util.TreeMap<>();
    for (long at : liveSlots) {
      long slab = at - at % slabSize;
      end.merge(slab, at + slabLines.get(slab) * (long) ObjectLayout.LINE, Math::max);
    }
    for (Map.Entry<Long, Integer> e : new java.util.TreeMap<>(slabLines).entrySet()) {
      long slab = e.getKey();
      int lines = e.getValue();
      long bytes = (long) lines * ObjectLayout.LINE;
      long top = Math.max(end.getOrDefault(slab, slab), r.seenTop(slab, lines));
      r.slabs.computeIfAbsent(lines, k -> new ArrayList<>()).add(new long[] {slab, top});
      for (long at = slab; at + bytes <= top; at += bytes) {
        if (!liveSlots.contains(at)) {
          r.free.computeIfAbsent(lines, k -> new ArrayDeque<>()).add(at);
        } else {
          r.live++;
        }
      }
      r.nextSlab = Math.max(r.nextSlab, slab + slabSize);
    }
    return r;
  }

  /** Past the last slot of the slab whose header the copy ever wrote (a version above 0). */
  private long seenTop(long slab, int lines) {
    long bytes = (long) lines * ObjectLayout.LINE;
    long top = slab;
    for (long at = slab; at + bytes <= slab + slabSize; at += bytes) {
      if (memory.getLongAcquire(at) != 0) {
        top = at + bytes;
      }
    }
    return top;
  }

  int id() {
    return id;
  }

  /**
   * Rewrites {@code log} as this region's image ({@link TxLog#checkpoint}): slots read under this
   * monitor (no allocation meanwhile), inside the log's lock (no write applied meanwhile).
   */
  void checkpoint(TxLog log) {
    log.checkpoint(
        out -> {
          synchronized (this) {
            Map<Long, Integer> lines = new HashMap<>();
            Map<Long, Long> tops = new HashMap<>();
            slabs.forEach(
                (c, list) ->
                    list.forEach(
                        s -> {
                          lines.put(s[0], c);
                          tops.put(s[0], s[1]);
                        }));
            java.util.Set<Long> freeSlots = new java.util.HashSet<>();
            free.values().forEach(freeSlots::addAll);
            TxLog.image(memory, id, lines, tops, freeSlots::contains, out);
          }
        });
  }

  long epoch() {
    return epoch;
  }

  List<Integer> backups() {
    return backups;
  }

  private long refreshedNanos = System.nanoTime() - 1_000_000_000L;

  /**
   * Whether the placement should be asked of the master again: at most every 50 ms per region, so
   * the many records in flight to a backup that stopped answering do not each ask it.
   */
  synchronized boolean refreshDue() {
    long now = System.nanoTime();
    if (now - refreshedNanos < 50_000_000L) {
      return false;
    }
    refreshedNanos = now;
    return true;
  }

  /** Takes a newer placement (epoch) from the master. */
  synchronized void placement(long epoch, List<Integer> backups) {
    placement(epoch, backups, java.util.Set.of());
  }

  /**
   * Takes a newer placement: its backups, and of the copies this primary began filling ({@link
   * TxRepair}) those the master still lists as filling; records go to both.
   */
  synchronized void placement(long epoch, List<Integer> backups, java.util.Set<Integer> filling) {
    if (epoch > this.epoch) {
      this.full = List.copyOf(backups);
      this.filled.retainAll(filling);
      this.filled.removeAll(backups);
      this.epoch = epoch;
      this.backups = targets();
    }
  }

  /** Full backups (the master's) and copies being filled: {@link #backups} is their union. */
  private List<Integer> full;

  private final java.util.Set<Integer> filled = new java.util.LinkedHashSet<>();

  private List<Integer> targets() {
    List<Integer> t = new ArrayList<>(full);
    filled.stream().filter(s -> !t.contains(s)).forEach(t::add);
    return List.copyOf(t);
  }

  /** A fill of {@code server} began: every record is forwarded to it from now on. */
  synchronized void beginFill(int server) {
    filled.add(server);
    this.backups = targets();
  }

  /** What a fill copies: each slab's start, size class (lines) and bump pointer; free slots. */
  record Layout(List<long[]> slabs, java.util.Set<Long> free) {}

  synchronized Layout layout() {
    List<long[]> out = new ArrayList<>();
    slabs.forEach((lines, list) -> list.forEach(s -> out.add(new long[] {s[0], lines, s[1]})));
    java.util.Set<Long> f = new java.util.HashSet<>();
    free.values().forEach(f::addAll);
    return new Layout(out, f);
  }

  MappedRegion memory() {
    return memory;
  }

  synchronized long live() {
    return live;
  }

  /**
   * Allocates an object of {@code size} payload bytes: its offset, incarnation and version. The
   * slot's header is bumped to a new version and its payload zeroed (one image written under the
   * slot's lock bit, so a reader of a stale pointer to this slot sees a consistent object of
   * another incarnation, never a half-written one).
   *
   * @throws FerriteException TOO_LARGE over {@code tx.object.max}; NO_SPACE when the region has no
   *     free slot of the class and no empty slab
   */
  synchronized long[] allocate(int size) {
    if (size < 1 || size > maxSize) {
      throw new FerriteException(
          ErrorCode.TOO_LARGE,
          "tx object of " + size + " bytes (expected: 1 to " + maxSize + ", tx.object.max)");
    }
    int lines = ObjectLayout.lines(size);
    long offset = takeSlot(lines);
    long header = memory.getLongAcquire(offset);
    long incarnation = Math.max(memory.getLongAcquire(offset + ObjectLayout.INCARNATION), floor);
    long next = (header & ~ObjectLayout.LOCK) + 1;
    write(offset, lines, next, incarnation, new byte[0], header);
    live++;
    return new long[] {offset, incarnation, next};
  }

  private long takeSlot(int lines) {
    ArrayDeque<Long> q = free.get(lines);
    if (q != null && !q.isEmpty()) {
      return q.poll();
    }
    long bytes = (long) lines * ObjectLayout.LINE;
    long end = memory.length() - io.ferrite.tx.TxLeaseWord.RESERVED; // the lease word's line
    for (long[] s : slabs.getOrDefault(lines, List.of())) {
      if (s[1] + bytes <= Math.min(s[0] + slabSize, end)) {
        long at = s[1];
        s[1] += bytes;
        return at;
      }
    }
    if (nextSlab + slabSize > memory.length() || nextSlab + bytes > end) {
      throw new FerriteException(
          ErrorCode.NO_SPACE,
          "tx region "
              + id
              + " is full: no free slot of "
              + lines
              + " lines and no empty slab ("
              + live
              + " objects live in "
              + memory.length()
              + " bytes)");
    }
    long[] s = {nextSlab, nextSlab + bytes};
    nextSlab += slabSize;
    slabs.computeIfAbsent(lines, k -> new ArrayList<>()).add(s);
    return s[0];
  }

  /** Where {@code p} may point: bounds, alignment, an allocated size class at that offset. */
  void check(FatPointer p) {
    int lines = ObjectLayout.lines(p.size());
    if (p.size() > maxSize
        || p.offset() + (long) lines * ObjectLayout.LINE
            > memory.length() - io.ferrite.tx.TxLeaseWord.RESERVED) {
      throw new FerriteException(ErrorCode.OUT_OF_BOUNDS, p + " is outside tx region " + id);
    }
    synchronized (this) {
      for (long[] s : slabs.getOrDefault(lines, List.of())) {
        if (p.offset() >= s[0] && p.offset() < s[1] && (p.offset() - s[0]) % (lines * 64L) == 0) {
          return;
        }
      }
    }
    throw new FerriteException(
        ErrorCode.INVALID_ARGUMENT, p + " does not address an object of its size class");
  }

  /**
   * Locks the object if its header holds {@code expected} unlocked and its incarnation is {@code
   * p}'s: {@link io.ferrite.tx.TxProtocol#OK}, LOCKED or CHANGED. The CAS is atomic with respect to
   * other CASes on the word and to one-sided reads of it (FaRM §3.4, LOCK).
   */
  int lock(FatPointer p, long expected) {
    long h = memory.compareAndSwap(p.offset(), expected, expected | ObjectLayout.LOCK);
    if (h != expected) {
      return (h & ObjectLayout.LOCK) != 0
          ? io.ferrite.tx.TxProtocol.LOCKED
          : io.ferrite.tx.TxProtocol.CHANGED;
    }
    if (memory.getLongAcquire(p.offset() + ObjectLayout.INCARNATION) != p.incarnation()) {
      memory.putLongRelease(p.offset(), expected);
      return io.ferrite.tx.TxProtocol.CHANGED;
    }
    return io.ferrite.tx.TxProtocol.OK;
  }

  /** Whether the object's header holds {@code version}, unlocked (a local VALIDATE). */
  boolean holds(FatPointer p, long version) {
    return memory.getLongAcquire(p.offset()) == version
        && memory.getLongAcquire(p.offset() + ObjectLayout.INCARNATION) == p.incarnation();
  }

  /** Releases a lock taken by {@link #lock} at {@code expected}, changing nothing. */
  void unlock(FatPointer p, long expected) {
    memory.putLongRelease(p.offset(), expected);
  }

  /**
   * COMMIT-PRIMARY for one object this transaction locked at {@code expected}: writes {@code value}
   * at version {@code expected + 1} and unlocks; or, for a free, bumps the incarnation (zeroing the
   * payload) and returns the slot to its class's free list.
   */
  void apply(FatPointer p, long expected, boolean isFree, byte[] value) {
    int lines = ObjectLayout.lines(p.size());
    long incarnation = p.incarnation() + (isFree ? 1 : 0);
    write(p.offset(), lines, expected + 1, incarnation, isFree ? new byte[0] : value, expected);
    if (isFree) {
      synchronized (this) {
        free.computeIfAbsent(lines, k -> new ArrayDeque<>()).add(p.offset());
        live--;
      }
    }
  }

  /**
   * Writes the image at {@code version}: everything but the header first (plain stores), then the
   * header, unlocked, with release semantics, so a reader that sees the new header sees the lines.
   * The caller holds the object's lock (or the region monitor for a free slot), so the header it
   * overwrites ({@code current}) is its own; it is set locked first, so a reader racing the plain
   * stores sees a locked object and retries instead of relying on the checksum alone.
   */
  private void write(
      long offset, int lines, long version, long incarnation, byte[] value, long current) {
    writeImage(memory, offset, lines, version, incarnation, value, current);
  }

  /** {@link #write} on any region's memory (a backup's copy too). */
  static void writeImage(
      MappedRegion memory,
      long offset,
      int lines,
      long version,
      long incarnation,
      byte[] value,
      long current) {
    memory.putLongRelease(offset, current | ObjectLayout.LOCK);
    ByteBuffer image = ObjectLayout.encode(lines, version, incarnation, value);
    memory.writeFrom(offset + 8, image.position(8));
    memory.putLongRelease(offset, image.order(ByteOrder.LITTLE_ENDIAN).getLong(0));
  }
}
