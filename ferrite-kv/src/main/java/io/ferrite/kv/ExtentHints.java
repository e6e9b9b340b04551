package io.ferrite.kv;

import io.ferrite.fabric.RegionRef;
import java.lang.ref.WeakReference;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Where a table handle last found each key's out-of-line value: a bounded client-side cache of the
 * self-verifying pointers its lookups followed, so that the next lookup of the key can read the
 * extent alone — one read, without the table — instead of the table and then the extent.
 *
 * <h2>Why a hint can never give a wrong answer</h2>
 *
 * A hint is only ever a guess of where to read; the extent's current word decides ({@link
 * Extents}). The server keeps it equal to the extent's incarnation only while the pointer to the
 * extent is published and current, so a copy whose checksum matches the hint's (it covers the
 * incarnation, the key and the value) and whose current word equals its incarnation had that word
 * copied at an instant when it was the key's value, and holds that value: the lookup is
 * linearizable at that instant. Anything else — the key written or deleted since (the word cleared,
 * the extent perhaps reused), a copy torn by such a write, a region the layout does not have —
 * fails the check: the hint is forgotten and the lookup reads the table as without it, which
 * remembers the new pointer. A hint into a region that is gone fails the read: it is forgotten and
 * the lookup starts again with the layout fetched anew.
 *
 * <h2>Shape</h2>
 *
 * A 4-way set-associative table indexed by the key's hash (direct-mapped, keys that shared an entry
 * evicted each other: 3–4% of a zipfian benchmark's lookups went without a hint, so half of its
 * 16-key multiGets needed a second round), in primitive arrays (a lookup touches no object: it
 * showed in a multiGet's profile as a pointer chase per key), shared by every handle of the table
 * in the process ({@link #forTable}) and their threads, without locks: a racy read may mix the
 * fields of two hints, which is only a wrong guess (the copy fails its check and the hint is
 * forgotten), and a lost update costs one table read. Capacity: configuration key {@code
 * kv.extent.hints} entries (default {@value #DEFAULT_CAPACITY}, 28 B each; 0 turns hints off for a
 * client; {@link KvClient#extentHints} turns them off for the tables a client opens). Used on every
 * fabric: over tcp a hinted get is one round trip instead of two; over shm one copy and one
 * checksum of the extent instead of the table's copy and checksum beside them (1 KiB gets 1.3-1.7x
 * the throughput).
 */
final class ExtentHints {
  static final int DEFAULT_CAPACITY = 1 << 16;
  static final int MAX_CAPACITY = 1 << 24;

  /** Ways per set: a key's hint may be in any of 4 adjacent entries (one cache line of hashes). */
  static final int WAYS = 4;

  /** One key's last seen extent: the fields of the pointer to it. */
  record Hint(long hash, int region, int offset, int length, long checksum) {}

  /** Every table's hints in this process, by table id (random 64-bit, never reused). */
  private static final Map<Long, WeakReference<ExtentHints>> SHARED = new HashMap<>();

  /** The capacity asked for (before rounding): handles asking for another get their own. */
  private final int requested;

  private final long[] hashes;
  private final long[] places; // region << 32 | offset
  private final int[] lengths;
  private final long[] checksums;
  private final int mask;

  ExtentHints(int capacity) {
    if (capacity < 0 || capacity > MAX_CAPACITY) {
      throw new IllegalArgumentException(
          "kv.extent.hints: " + capacity + " (expected: 0 to " + MAX_CAPACITY + ")");
    }
    this.requested = capacity;
    int n = capacity == 0 ? 0 : Math.max(WAYS, Integer.highestOneBit(capacity - 1) << 1);
    this.hashes = n == 0 ? null : new long[n];
    this.places = new long[n];
    this.lengths = new int[n];
    this.checksums = new long[n];
    this.mask = n - 1;
  }

  /**
   * The hints of table {@code tableId} that every handle of it in this process shares (what one
   * handle learns, the others use), kept while a handle holds them; {@code capacity} entries (the
   * client's {@code kv.extent.hints}: a handle asking for another capacity gets hints of its own,
   * which later handles then share).
   */
  static ExtentHints forTable(long tableId, int capacity) {
    synchronized (SHARED) {
      WeakReference<ExtentHints> r = SHARED.get(tableId);
      ExtentHints h = r == null ? null : r.get();
      if (h == null || h.requested != capacity) {
        SHARED.values().removeIf(w -> w.get() == null);
        h = new ExtentHints(capacity);
        SHARED.put(tableId, new WeakReference<>(h));
      }
      return h;
    }
  }

  /** Number of hints this cache holds at most (0: off). */
  int capacity() {
    return hashes == null ? 0 : hashes.length;
  }

  /** The hint of {@code hash}, or null (a copy; for tests and the slow path). */
  Hint lookup(long hash) {
    int i = find(hash);
    return i < 0 ? null : new Hint(hash, region(i), offset(i), lengths[i], checksums[i]);
  }

  /** The index of the hint of {@code hash}, or -1; read its fields with the accessors below. */
  int find(long hash) {
    if (hashes == null || hash == 0) {
      return -1;
    }
    int set = set(hash);
    for (int i = set; i < set + WAYS; i++) {
      if (hashes[i] == hash) {
        return i;
      }
    }
    return -1;
  }

  int region(int i) {
    return (int) (places[i] >>> 32);
  }

  int offset(int i) {
    return (int) places[i];
  }

  int length(int i) {
    return lengths[i];
  }

  long checksum(int i) {
    return checksums[i];
  }

  /**
   * The region of {@code extents} that hint {@code i} reads, or null if it is not a valid read
   * there.
   */
  RegionRef regionIn(int i, List<RegionRef> extents) {
    int region = region(i);
    int length = lengths[i];
    if (region < 0 || region >= extents.size() || length <= 0) {
      return null;
    }
    RegionRef r = extents.get(region);
    return (offset(i) & 0xFFFFFFFFL) + length <= r.length() ? r : null;
  }

  /** Remembers the pointer a lookup of {@code hash} just followed to a verified value. */
  void remember(long hash, int region, int offset, int length, long checksum) {
    if (hashes == null || hash == 0) {
      return;
    }
    long place = (long) region << 32 | (offset & 0xFFFFFFFFL);
    int i = find(hash);
    if (i >= 0 && places[i] == place && lengths[i] == length && checksums[i] == checksum) {
      return; // the common case: the hint the lookup used; no write
    }
    if (i < 0) {
      i = victim(hash);
    }
    hashes[i] = 0; // a reader racing this sees no hint or a mix, never a wrong answer
    places[i] = place;
    lengths[i] = length;
    checksums[i] = checksum;
    hashes[i] = hash;
  }

  /** Where a new hint of {@code hash} goes in its set: a free way, else one picked by the hash. */
  private int victim(long hash) {
    int set = set(hash);
    for (int i = set; i < set + WAYS; i++) {
      if (hashes[i] == 0) {
        return i;
      }
    }
    return set + (int) (hash >>> 58) % WAYS;
  }

  /** Forgets the hint of {@code hash} (the hinted read failed). */
  void forget(long hash) {
    int i = find(hash);
    if (i >= 0) {
      hashes[i] = 0;
    }
  }

  /** The first index of the set of {@value #WAYS} ways {@code hash} may live in. */
  private int set(long hash) {
    return (int) (hash ^ (hash >>> 32)) & mask & -WAYS;
  }
}
