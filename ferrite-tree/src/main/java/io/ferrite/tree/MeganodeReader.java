package io.ferrite.tree;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.extent.Extents;
import java.util.AbstractMap.SimpleImmutableEntry;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Lock-free search of one meganode's local B-link tree over a {@link NodeSource} (Sagiv's search,
 * Cell §2.2–2.4): the same code serves the server's own searches (over its region) and a client's
 * one-sided searches (over the fabric). Not thread-safe (one copy buffer); cheap to create.
 *
 * <p>Every node copy is checked before use: torn (version words differ or odd) — read it again; not
 * live, or its low key above the key sought (it was freed and reused elsewhere) — restart from the
 * meganode's header; the key at or past its high key — follow its right link (a split moved the key
 * right), or, at the end of a level (a meganode split trimmed it), read the header again, whose
 * high key then sends the search to the right meganode. Every extent copy is checked against the
 * leaf's pointer (XXH3-64, kv's {@link Extents}): a mismatch means the extent was freed and reused
 * after the leaf was read, so the leaf is read again. Retries are bounded: past {@link
 * #MAX_RETRIES} the search fails with {@link ErrorCode#BUSY} (retryable).
 */
public final class MeganodeReader {
  /** Bound on torn copies and restarts of one operation (with {@link #backoff}: minutes). */
  public static final int MAX_RETRIES = 100_000;

  /** What a search of one meganode found. */
  public record Outcome(Kind kind, byte[] value, long pointer) {
    public enum Kind {
      /** A leaf meganode holds the key: {@code value}. */
      VALUE,
      /** A leaf meganode's range holds the key, but not the key. */
      ABSENT,
      /** Go on at meganode {@code pointer}: the child (of an internal meganode) for the key. */
      NEXT,
      /** The key is past this meganode's range: go on at its right meganode {@code pointer}. */
      RIGHT,
      /** The key is below this meganode's range: start again from the tree's root. */
      RESTART
    }
  }

  /** Part of a scan: the pairs this meganode held, and where to go on ({@code next} 0: done). */
  public record ScanPart(List<Map.Entry<byte[], byte[]>> pairs, long next, byte[] resume) {}

  /**
   * Where a client keeps copies of the nodes near the root of one meganode ({@link TreeCache}):
   * searches take the header and internal nodes from it (every node of an internal meganode), and
   * tell it which copies proved stale. Never a leaf meganode's local leaves: a get's answer always
   * comes from a fresh copy of its leaf. Thread-safe.
   */
  public interface Cache {
    /** The kept copy of node {@code index}, or null. */
    Node get(int index);

    /** Keeps a copy of node {@code index} (if the cache's bound allows). */
    void keep(int index, Node n);

    /** Drops the copy of node {@code index}: a right link was followed from or past it. */
    void drop(int index);

    /** Drops every copy of this meganode's nodes: one was stale (freed, reused, trimmed). */
    void clear();
  }

  private final NodeSource source;
  private final Cache cache;
  private final byte[] buf;
  private final int maxRetries;
  private long nodeReads;
  private long torn;
  private long restarts;
  private long cacheHits;
  private long extentReads;
  private Node lastHeader;

  public MeganodeReader(NodeSource source) {
    this(source, (Cache) null);
  }

  /** A reader that takes nodes near the root from {@code cache} (null: none) when it can. */
  public MeganodeReader(NodeSource source, Cache cache) {
    this(source, MAX_RETRIES, new byte[source.nodeSize()], cache);
  }

  /**
   * A reader that gives up with {@link ErrorCode#BUSY} past {@code maxRetries} torn copies (of one
   * node) or restarts (of one operation). The server's inline searches, on an I/O thread that must
   * not wait, use a small bound (spins only, {@link #backoff}) and hand the request to a service
   * thread, which searches again with {@link #MAX_RETRIES}, when a writer holds a node that long.
   */
  public MeganodeReader(NodeSource source, int maxRetries) {
    this(source, maxRetries, new byte[source.nodeSize()]);
  }

  /**
   * A reader that copies nodes into {@code buffer} (node size bytes), which it overwrites until it
   * is no longer used: the server's searches reuse one per thread instead of allocating a node's
   * worth of bytes per meganode searched.
   */
  public MeganodeReader(NodeSource source, int maxRetries, byte[] buffer) {
    this(source, maxRetries, buffer, null);
  }

  private MeganodeReader(NodeSource source, int maxRetries, byte[] buffer, Cache cache) {
    if (maxRetries < 1) {
      throw new IllegalArgumentException("maxRetries: " + maxRetries + " (expected: >= 1)");
    }
    if (buffer.length != source.nodeSize()) {
      throw new IllegalArgumentException(
          "buffer: "
              + buffer.length
              + " bytes (expected: the node size, "
              + source.nodeSize()
              + ")");
    }
    this.source = source;
    this.buf = buffer;
    this.maxRetries = maxRetries;
    this.cache = cache;
  }

  /** Node copies taken from the cache instead of read so far. */
  public long cacheHits() {
    return cacheHits;
  }

  /** Extent copies read so far (each a one-sided read on the client path). */
  public long extentReads() {
    return extentReads;
  }

  /** The header copy the last search used (read or cached), or null before any. */
  public Node lastHeader() {
    return lastHeader;
  }

  /** Node copies read so far (each a one-sided read on the client path), torn ones included. */
  public long nodeReads() {
    return nodeReads;
  }

  /** Torn node copies read again so far. */
  public long tornReads() {
    return torn;
  }

  /** Searches restarted from the header so far (a stale node, an extent freed under a leaf). */
  public long restarts() {
    return restarts;
  }

  /** A whole, decoded copy of node {@code index}, reading it again while torn. */
  public Node read(int index) {
    for (int attempt = 0; attempt < maxRetries; attempt++) {
      nodeReads++;
      source.readNode(index, buf);
      Node n = Node.decode(buf);
      if (n != null) {
        return n;
      }
      torn++;
      backoff(attempt);
    }
    throw busy("node " + index + " torn on every read");
  }

  /**
   * Waits before reading a torn node again: spins first (a write holds a node for a few hundred
   * nanoseconds), then yields, then parks up to a millisecond (a writer preempted while it holds
   * the node, on a busy machine), so that the bound on retries is not a bound of a few
   * milliseconds.
   */
  public static void backoff(int attempt) {
    if (attempt < 64) {
      Thread.onSpinWait();
    } else if (attempt < 256) {
      Thread.yield();
    } else {
      java.util.concurrent.locks.LockSupport.parkNanos(
          Math.min(1_000_000L, 1000L * (attempt - 255)));
    }
  }

  /** The meganode's header (node 0): local root, meganode range, right meganode. */
  public Node header() {
    return read(0);
  }

  /**
   * The local leaf whose key range holds {@code key}, starting at the root the header names, or
   * null when a node on the way was stale or a level ended (the caller reads the header again).
   */
  private Node leaf(byte[] key, Node header) {
    int index = header.right;
    int parent = 0;
    while (true) {
      Node n = cache == null ? null : cache.get(index);
      boolean cached = n != null;
      if (cached) {
        cacheHits++;
      } else {
        n = read(index);
        // Nodes near the root only: internal nodes, or any node of an internal meganode (whose
        // local leaves hold child meganode pointers). A leaf meganode's leaves are always read.
        if (cache != null && n.live() && (!n.leaf() || !header.leaf())) {
          cache.keep(index, n);
        }
      }
      if (!n.live() || n.below(key)) {
        stale();
        return null;
      }
      if (n.beyond(key)) {
        // A split moved keys right: the copy that sent us here (the parent's, or the header's
        // root) lacks the new separator, so it is dropped, and so is this copy if it was one
        // (Cell §2.3: a right link followed invalidates what was cached from the parent).
        if (cache != null) {
          cache.drop(parent);
          if (cached) {
            cache.drop(index);
          }
        }
        index = n.right;
        if (index == 0) {
          stale();
          return null;
        }
        continue;
      }
      if (n.leaf()) {
        return n;
      }
      int i = n.floor(key);
      if (i < 0) {
        stale();
        return null;
      }
      parent = index;
      index = (int) n.values.get(i)[0];
    }
  }

  /** A node on the way was freed, reused, or a level ended: nothing cached of it is trusted. */
  private void stale() {
    if (cache != null) {
      cache.clear();
    }
  }

  /** The header: the cached copy if any (a search's first step), else a fresh one, kept. */
  private Node searchHeader() {
    Node h = cache == null ? null : cache.get(0);
    if (h != null) {
      cacheHits++;
    } else {
      h = header();
      if (cache != null && h.live()) {
        cache.keep(0, h);
      }
    }
    lastHeader = h;
    return h;
  }

  /**
   * Searches this meganode for {@code key} (empty: the smallest key, for internal searches).
   * Linearizes at the read of the leaf holding it.
   */
  public Outcome search(byte[] key) {
    for (int attempt = 0; attempt < maxRetries; attempt++) {
      // A cached header is safe to decide by: a meganode's low key never changes and its high key
      // only shrinks (a split), so "below" and "beyond" from an old copy are still true, and its
      // old right link still leads to a meganode at or left of the key's (meganode B-link).
      Node h = searchHeader();
      if (h.below(key)) {
        return new Outcome(Outcome.Kind.RESTART, null, 0);
      }
      if (h.beyond(key)) {
        return new Outcome(Outcome.Kind.RIGHT, null, h.link);
      }
      Node leaf = leaf(key, h);
      if (leaf == null) {
        restarts++;
        continue;
      }
      if (!h.leaf()) {
        int i = leaf.floor(key);
        if (i < 0) {
          stale();
          restarts++;
          continue;
        }
        return new Outcome(Outcome.Kind.NEXT, null, leaf.values.get(i)[0]);
      }
      int i = leaf.find(key);
      if (i < 0) {
        return new Outcome(Outcome.Kind.ABSENT, null, 0);
      }
      byte[] e = extent(leaf.values.get(i), key);
      if (e != null) {
        return new Outcome(Outcome.Kind.VALUE, Extents.value(e), 0);
      }
      restarts++;
    }
    throw busy("search restarted on every attempt");
  }

  // ------------------------------------------------------------------ in-place search

  /** {@link #leafEntry}: no entry for the key in the leaf reached. */
  private static final int NO_ENTRY = -1;

  /** {@link #leafEntry}: a stale node or the end of a level; read the header again. */
  private static final int STALE = -2;

  /**
   * The same answers as {@link #search}, read from the node copies in place: no node is decoded (a
   * decode allocates every key and pointer of the node, most of a server-side search's time), only
   * the header; each copy is checked as {@link Node#decode} checks it (version words equal and
   * even, every length inside the node) before any field of it is used. The server's searches run
   * this. Linearizes at the read of the leaf holding the key.
   */
  public Outcome find(byte[] key) {
    for (int attempt = 0; attempt < maxRetries; attempt++) {
      Node h = header();
      if (h.below(key)) {
        return new Outcome(Outcome.Kind.RESTART, null, 0);
      }
      if (h.beyond(key)) {
        return new Outcome(Outcome.Kind.RIGHT, null, h.link);
      }
      boolean leafMeganode = h.leaf();
      int at = leafEntry(key, h.right, !leafMeganode);
      if (at == STALE) {
        restarts++;
        continue;
      }
      if (!leafMeganode) {
        if (at < 0) {
          restarts++;
          continue;
        }
        return new Outcome(Outcome.Kind.NEXT, null, Node.getLong(buf, at + 2 + keyLength(at)));
      }
      if (at < 0) {
        return new Outcome(Outcome.Kind.ABSENT, null, 0);
      }
      int p = at + 2 + keyLength(at);
      byte[] e =
          extent(
              new long[] {
                Node.getLong(buf, p),
                Node.getInt(buf, p + 8) & 0xFFFFFFFFL,
                Node.getLong(buf, p + 12)
              },
              key);
      if (e != null) {
        return new Outcome(Outcome.Kind.VALUE, Extents.value(e), 0);
      }
      restarts++;
    }
    throw busy("search restarted on every attempt");
  }

  /**
   * From node {@code index} (the local root) down to the leaf for {@code key}, right links
   * followed, each node a checked copy in {@link #buf}: the offset in {@code buf} of the leaf's
   * entry for {@code key} (the last entry at or below it if {@code floor}), {@link #NO_ENTRY}, or
   * {@link #STALE}. The leaf's copy stays in {@code buf} for the caller.
   */
  private int leafEntry(byte[] key, int index, boolean floor) {
    while (true) {
      int count = readChecked(index);
      int flags = buf[12] & 0xFF;
      int lowLen = Node.getShort(buf, 20);
      int highLen = Node.getShort(buf, 22);
      if ((flags & Node.LIVE) == 0
          || (lowLen > 0
              && Arrays.compareUnsigned(key, 0, key.length, buf, Node.HEADER, Node.HEADER + lowLen)
                  < 0)) {
        return STALE;
      }
      int high = Node.HEADER + lowLen;
      if ((flags & Node.HIGH_INF) == 0
          && Arrays.compareUnsigned(key, 0, key.length, buf, high, high + highLen) >= 0) {
        index = Node.getInt(buf, 16);
        if (index == 0) {
          return STALE;
        }
        continue;
      }
      boolean leaf = (flags & Node.LEAF) != 0;
      int per = leaf ? 20 : 4;
      int found = NO_ENTRY;
      boolean exact = false;
      int at = high + highLen;
      for (int i = 0; i < count; i++) {
        int kl = Node.getShort(buf, at);
        int c = Arrays.compareUnsigned(buf, at + 2, at + 2 + kl, key, 0, key.length);
        if (c > 0) {
          break;
        }
        found = at;
        exact = c == 0;
        at += 2 + kl + per;
      }
      if (leaf) {
        return floor || exact ? found : NO_ENTRY;
      }
      if (found < 0) {
        return STALE;
      }
      index = Node.getInt(buf, found + 2 + keyLength(found));
    }
  }

  private int keyLength(int entry) {
    return Node.getShort(buf, entry);
  }

  /**
   * Copies node {@code index} into {@link #buf} until the copy is whole (version words equal and
   * even, every length inside the node: {@link Node#decode}'s checks, without decoding), reading it
   * again while torn; its entry count.
   */
  private int readChecked(int index) {
    for (int attempt = 0; attempt < maxRetries; attempt++) {
      nodeReads++;
      source.readNode(index, buf);
      int count = Node.checkedCount(buf);
      if (count >= 0) {
        return count;
      }
      torn++;
      backoff(attempt);
    }
    throw busy("node " + index + " torn on every read");
  }

  /** The value of {@code key} in this leaf meganode, or null (for a tree of one meganode). */
  public byte[] get(byte[] key) {
    // With a cache, search (which takes nodes near the root from it); without, find (in place).
    Outcome o = cache != null ? search(key) : find(key);
    if (o.kind() == Outcome.Kind.VALUE) {
      return o.value();
    }
    if (o.kind() == Outcome.Kind.ABSENT) {
      return null;
    }
    throw new FerriteException(ErrorCode.MOVED, "key outside this meganode: " + o);
  }

  /** A verified copy of the extent a leaf entry points to, of {@code key}, or null: re-read. */
  private byte[] extent(long[] pointer, byte[] key) {
    extentReads++;
    byte[] e = source.readExtent(pointer[0], (int) pointer[1]);
    if (!Extents.valid(e, pointer[2]) || !Extents.hasKey(e, key)) {
      return null;
    }
    return e;
  }

  /** The leaf holding {@code key}, or null when the key is beyond this meganode now. */
  private Node locate(byte[] key) {
    for (int attempt = 0; attempt < maxRetries; attempt++) {
      Node h = header();
      if (h.beyond(key)) {
        return null;
      }
      Node leaf = leaf(key, h);
      if (leaf != null) {
        return leaf;
      }
      restarts++;
    }
    throw busy("scan: leaf search restarted on every attempt");
  }

  /**
   * Up to {@code limit} pairs of this leaf meganode with keys from {@code from} (inclusive, empty:
   * the first) to {@code to} (exclusive, null: the last) in unsigned byte order, following right
   * links across leaves, and where the scan goes on (the right meganode and the key to resume at)
   * when it ran past this meganode's range. Each leaf's pairs come from one consistent copy of it:
   * the scan is linearizable per leaf, not as a whole (as Cell's range operation).
   */
  public ScanPart scan(byte[] from, byte[] to, int limit) {
    List<Map.Entry<byte[], byte[]>> out = new ArrayList<>(Math.min(limit, 256));
    byte[] resume = from;
    int retries = 0;
    Node leaf = locate(resume);
    while (true) {
      if (leaf == null) {
        return new ScanPart(out, header().link, resume);
      }
      boolean again = false;
      for (int i = leaf.ceiling(resume); i < leaf.keys.size() && out.size() < limit; i++) {
        byte[] k = leaf.keys.get(i);
        if (to != null && Arrays.compareUnsigned(k, to) >= 0) {
          return new ScanPart(out, 0, null);
        }
        byte[] e = extent(leaf.values.get(i), k);
        if (e == null) {
          again = true;
          resume = k;
          break;
        }
        out.add(new SimpleImmutableEntry<>(k, Extents.value(e)));
      }
      if (again) {
        // The extent was freed after this leaf copy: read the leaf holding the key again.
        if (++retries > maxRetries) {
          throw busy("scan: extents changed on every read");
        }
        restarts++;
        leaf = locate(resume);
        continue;
      }
      if (out.size() >= limit
          || (to != null && !leaf.highInfinite() && Arrays.compareUnsigned(leaf.high, to) >= 0)) {
        return new ScanPart(out, 0, null);
      }
      if (leaf.highInfinite()) {
        // The last local leaf: the meganode's own range goes on in the right meganode, if any,
        // from its high key, or past the last key this copy held if the meganode split since
        // (those were returned already; its successor is that key with a 0 byte appended).
        Node h = header();
        if (h.highInfinite()) {
          return new ScanPart(out, 0, null);
        }
        byte[] at = h.high;
        if (!leaf.keys.isEmpty()) {
          byte[] last = leaf.keys.get(leaf.keys.size() - 1);
          if (Arrays.compareUnsigned(last, at) >= 0) {
            at = Arrays.copyOf(last, last.length + 1);
          }
        }
        if (to != null && Arrays.compareUnsigned(at, to) >= 0) {
          return new ScanPart(out, 0, null);
        }
        return new ScanPart(out, h.link, at);
      }
      // Continue from this leaf's high key: keys a split moved right after this copy are found
      // there, none twice (all are >= high). The right sibling is the leaf for it unless it was
      // invalidated or reused meanwhile, or the level ended (a meganode split trimmed it).
      resume = leaf.high;
      Node next = leaf.right == 0 ? null : read(leaf.right);
      if (next == null
          || !next.live()
          || !next.leaf()
          || next.below(resume)
          || next.beyond(resume)) {
        restarts++;
        next = locate(resume);
      }
      leaf = next;
    }
  }

  private FerriteException busy(String what) {
    return new FerriteException(
        ErrorCode.BUSY, what + " (" + maxRetries + " attempts); retry later");
  }
}
