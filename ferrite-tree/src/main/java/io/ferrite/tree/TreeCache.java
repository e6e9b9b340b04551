package io.ferrite.tree;

import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A tree handle's client caches (Cell §2.2–2.3), bounded together in bytes ({@code
 * tree.cache.bytes}):
 *
 * <ul>
 *   <li><b>Nodes near the root</b>: decoded copies of small nodes a client-side search read — each
 *       meganode's header, its internal nodes (local level ≥ 1), and every node of an internal
 *       meganode. A leaf meganode's local leaves are never cached: a get's answer always comes from
 *       a fresh copy of its leaf (and of the extent the leaf points to), which is where it
 *       linearizes; a cached copy only decides where to read next.
 *   <li><b>Traversal paths by key range</b>: which leaf meganode held {@code [low, high)} when its
 *       header was read, so that a get goes straight to it (one meganode visited instead of one per
 *       meganode level), by either path.
 * </ul>
 *
 * <p>The caches are advisory (Cell §5: stale caches do not affect correctness): a cached copy may
 * be stale in any way, since every search checks the fresh leaf it ends at (live, its range holding
 * the key) and every server checks its meganode's range. What makes a copy stale is found by the
 * reader and dropped here: a right link followed (the parent's copy lacks a separator: its copy is
 * dropped, Cell §2.3), a node not live or reused (its meganode's copies are all dropped), a
 * meganode that answers RIGHT or RESTART for a cached range (the range is dropped).
 *
 * <p>Admission, not eviction, keeps the bound: a copy is kept only while the bytes kept stay under
 * the bound. Every search reads from the top down, so the nodes admitted first, and kept, are the
 * ones near the root (Cell: "only cache nodes near the root"); dropped copies free their bytes for
 * others. Thread-safe, lock-free (concurrent maps; the byte count is an atomic estimate).
 */
public final class TreeCache {
  /** A leaf meganode's key range as its header said: {@code [low, high)}, high null for +∞. */
  public record Range(byte[] low, byte[] high, long pointer) {
    boolean holds(byte[] key) {
      return Arrays.compareUnsigned(key, low) >= 0
          && (high == null || Arrays.compareUnsigned(key, high) < 0);
    }
  }

  private static final Comparator UNSIGNED = new Comparator();

  private final long capacity;
  private final AtomicLong bytes = new AtomicLong();
  private final AtomicLong hits = new AtomicLong();
  private final AtomicLong rejected = new AtomicLong();
  private final Map<Long, Map<Integer, Node>> nodes = new ConcurrentHashMap<>();
  private final ConcurrentSkipListMap<byte[], Range> ranges = new ConcurrentSkipListMap<>(UNSIGNED);

  /** A cache of at most {@code capacity} bytes (0: nothing is cached). */
  public TreeCache(long capacity) {
    if (capacity < 0) {
      throw new IllegalArgumentException("capacity: " + capacity + " (expected: >= 0)");
    }
    this.capacity = capacity;
  }

  /** The bound in bytes. */
  public long capacity() {
    return capacity;
  }

  /** Bytes kept now (an estimate of the heap the copies take). */
  public long bytes() {
    return bytes.get();
  }

  /** Node copies and ranges used instead of a read. */
  public long hits() {
    return hits.get();
  }

  /** Copies not kept because the bound was reached. */
  public long rejected() {
    return rejected.get();
  }

  /** Node copies kept now. */
  public int nodeCount() {
    int n = 0;
    for (Map<Integer, Node> m : nodes.values()) {
      n += m.size();
    }
    return n;
  }

  /** Drops every copy and range. */
  public void clear() {
    for (Long p : nodes.keySet()) {
      clear(p);
    }
    for (Range r : ranges.values()) {
      drop(r);
    }
  }

  // ------------------------------------------------------------------ nodes

  /** The cached copy of node {@code index} of meganode {@code pointer}, or null. */
  Node node(long pointer, int index) {
    Map<Integer, Node> m = nodes.get(pointer);
    Node n = m == null ? null : m.get(index);
    if (n != null) {
      hits.incrementAndGet();
    }
    return n;
  }

  /** Keeps a copy of node {@code index} of meganode {@code pointer}, if the bound allows. */
  void keep(long pointer, int index, Node n) {
    long size = footprint(n);
    if (!reserve(size)) {
      return;
    }
    Node old = nodes.computeIfAbsent(pointer, p -> new ConcurrentHashMap<>()).put(index, n);
    if (old != null) {
      bytes.addAndGet(-footprint(old));
    }
  }

  /** Drops the copy of node {@code index} of meganode {@code pointer}, if any. */
  void drop(long pointer, int index) {
    Map<Integer, Node> m = nodes.get(pointer);
    Node old = m == null ? null : m.remove(index);
    if (old != null) {
      bytes.addAndGet(-footprint(old));
    }
  }

  /** Drops every copy of meganode {@code pointer}'s nodes (one was found stale). */
  void clear(long pointer) {
    Map<Integer, Node> m = nodes.get(pointer);
    if (m == null) {
      return;
    }
    for (Integer i : m.keySet()) {
      drop(pointer, i);
    }
  }

  /** A {@link MeganodeReader.Cache} over this cache's copies of meganode {@code pointer}. */
  MeganodeReader.Cache of(long pointer) {
    return new MeganodeReader.Cache() {
      @Override
      public Node get(int index) {
        return node(pointer, index);
      }

      @Override
      public void keep(int index, Node n) {
        TreeCache.this.keep(pointer, index, n);
      }

      @Override
      public void drop(int index) {
        TreeCache.this.drop(pointer, index);
      }

      @Override
      public void clear() {
        TreeCache.this.clear(pointer);
      }
    };
  }

  // ------------------------------------------------------------------ ranges

  /** The leaf meganode a range cached for {@code key} names, or null. */
  Range route(byte[] key) {
    Map.Entry<byte[], Range> e = ranges.floorEntry(key);
    if (e == null || !e.getValue().holds(key)) {
      return null;
    }
    hits.incrementAndGet();
    return e.getValue();
  }

  /** Keeps leaf meganode {@code pointer}'s range, from a copy of its header. */
  void learn(long pointer, Node header) {
    if (!header.leaf() || !header.live()) {
      return;
    }
    Range r = new Range(header.low, header.highInfinite() ? null : header.high, pointer);
    Range old = ranges.get(r.low());
    if (old != null && old.pointer() == pointer && Arrays.equals(old.high(), r.high())) {
      return;
    }
    if (!reserve(footprint(r))) {
      return;
    }
    old = ranges.put(r.low(), r);
    if (old != null) {
      bytes.addAndGet(-footprint(old));
    }
  }

  /** Drops a range that proved stale (its meganode answered RIGHT or RESTART for a key in it). */
  void drop(Range r) {
    if (ranges.remove(r.low(), r)) {
      bytes.addAndGet(-footprint(r));
    }
  }

  // ------------------------------------------------------------------ bytes

  private boolean reserve(long size) {
    while (true) {
      long b = bytes.get();
      if (b + size > capacity) {
        rejected.incrementAndGet();
        return false;
      }
      if (bytes.compareAndSet(b, b + size)) {
        return true;
      }
    }
  }

  /**
   * Heap bytes of a decoded node, estimated: the object and its lists (~100 B), each key array (16
   * B header, padded) and its value array (24–40 B), two list slots, and the map entry that holds
   * the node (~64 B). An estimate is enough: the bound is a budget, not an allocator.
   */
  static long footprint(Node n) {
    long size = 164 + n.low.length + n.high.length + 32;
    for (byte[] k : n.keys) {
      size += 16 + ((k.length + 7) & ~7) + 40 + 8;
    }
    return size;
  }

  private static long footprint(Range r) {
    return 120 + r.low().length + (r.high() == null ? 0 : r.high().length) + 32;
  }

  /** Unsigned byte order (keys of the range map). */
  private static final class Comparator implements java.util.Comparator<byte[]> {
    @Override
    public int compare(byte[] a, byte[] b) {
      return Arrays.compareUnsigned(a, b);
    }
  }
}
