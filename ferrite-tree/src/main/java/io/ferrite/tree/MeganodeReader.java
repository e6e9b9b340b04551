package io.ferrite.tree;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kv.Extents;
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
 * root; the key at or past its high key — follow its right link (a split moved the key right).
 * Every extent copy is checked against the leaf's pointer (XXH3-64, kv's {@link Extents}): a
 * mismatch means the extent was freed and reused after the leaf was read, so the leaf is read
 * again. Retries are bounded: past {@link #MAX_RETRIES} the search fails with {@link
 * ErrorCode#BUSY} (retryable).
 */
public final class MeganodeReader {
  /** Bound on torn copies and restarts of one operation. */
  public static final int MAX_RETRIES = 100_000;

  private final NodeSource source;
  private final byte[] buf;
  private long nodeReads;
  private long torn;
  private long restarts;

  public MeganodeReader(NodeSource source) {
    this.source = source;
    this.buf = new byte[source.nodeSize()];
  }

  /** Node copies read so far (each a one-sided read on the client path), torn ones included. */
  public long nodeReads() {
    return nodeReads;
  }

  /** Torn node copies read again so far. */
  public long tornReads() {
    return torn;
  }

  /** Searches restarted from the root so far (a stale node, or an extent freed under a leaf). */
  public long restarts() {
    return restarts;
  }

  /** A whole, decoded copy of node {@code index}, reading it again while torn. */
  public Node read(int index) {
    for (int attempt = 0; attempt < MAX_RETRIES; attempt++) {
      nodeReads++;
      source.readNode(index, buf);
      Node n = Node.decode(buf);
      if (n != null) {
        return n;
      }
      torn++;
      Thread.onSpinWait();
    }
    throw busy("node " + index + " torn on every read");
  }

  /** The root's node index and level, from the meganode header (node 0: right, level). */
  public Node header() {
    return read(0);
  }

  /**
   * The leaf whose key range holds {@code key}, or null when a node on the way was stale (the
   * caller restarts).
   */
  private Node leaf(byte[] key) {
    int index = header().right;
    while (true) {
      Node n = read(index);
      if (!n.live() || n.below(key)) {
        return null;
      }
      if (n.beyond(key)) {
        index = n.right;
        if (index == 0) {
          return null;
        }
        continue;
      }
      if (n.leaf()) {
        return n;
      }
      int i = n.floor(key);
      if (i < 0) {
        return null;
      }
      index = (int) n.values.get(i)[0];
    }
  }

  private Node leafRetrying(byte[] key) {
    for (int attempt = 0; attempt < MAX_RETRIES; attempt++) {
      Node n = leaf(key);
      if (n != null) {
        return n;
      }
      restarts++;
    }
    throw busy("search for a key restarted on every attempt");
  }

  /** The value of {@code key}, or null if absent. Linearizes at the read of the leaf. */
  public byte[] get(byte[] key) {
    for (int attempt = 0; attempt < MAX_RETRIES; attempt++) {
      Node leaf = leafRetrying(key);
      int i = leaf.find(key);
      if (i < 0) {
        return null;
      }
      byte[] e = extent(leaf.values.get(i), key);
      if (e != null) {
        return Extents.value(e);
      }
      restarts++;
    }
    throw busy("extent of a key changed on every read");
  }

  /** A verified copy of the extent a leaf entry points to, of {@code key}, or null: re-read. */
  private byte[] extent(long[] pointer, byte[] key) {
    byte[] e = source.readExtent(pointer[0], (int) pointer[1]);
    if (!Extents.valid(e, pointer[2]) || !Extents.hasKey(e, key)) {
      return null;
    }
    return e;
  }

  /**
   * Up to {@code limit} pairs with keys from {@code from} (inclusive, null: the first) to {@code
   * to} (exclusive, null: the last) in unsigned byte order, following right links across leaves.
   * Each leaf's pairs are read from one consistent copy of it: the scan is linearizable per leaf,
   * not as a whole (as Cell's range operation).
   */
  public List<Map.Entry<byte[], byte[]>> scan(byte[] from, byte[] to, int limit) {
    List<Map.Entry<byte[], byte[]>> out = new ArrayList<>();
    byte[] resume = from == null ? new byte[] {0} : from;
    boolean first = from == null;
    int retries = 0;
    Node leaf = first ? leftmostLeaf() : leafRetrying(resume);
    while (true) {
      boolean again = false;
      int start = first ? 0 : leaf.ceiling(resume);
      for (int i = start; i < leaf.keys.size() && out.size() < limit; i++) {
        byte[] k = leaf.keys.get(i);
        if (to != null && Arrays.compareUnsigned(k, to) >= 0) {
          return out;
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
        if (++retries > MAX_RETRIES) {
          throw busy("scan: extents changed on every read");
        }
        restarts++;
        first = false;
        leaf = leafRetrying(resume);
        continue;
      }
      if (out.size() >= limit || leaf.highInfinite() || leaf.right == 0) {
        return out;
      }
      if (to != null && Arrays.compareUnsigned(leaf.high, to) >= 0) {
        return out;
      }
      // Continue at the right sibling from this leaf's high key: keys moved right by a split
      // after this copy are found there, none twice (they are all >= high).
      resume = leaf.high;
      first = false;
      Node next = read(leaf.right);
      if (!next.live() || next.below(resume) || next.beyond(resume)) {
        restarts++;
        next = leafRetrying(resume);
      }
      leaf = next;
    }
  }

  private Node leftmostLeaf() {
    for (int attempt = 0; attempt < MAX_RETRIES; attempt++) {
      Node n = read(header().right);
      while (n.live() && n.low.length == 0 && !n.leaf() && !n.keys.isEmpty()) {
        n = read((int) n.values.get(0)[0]);
      }
      if (n.live() && n.low.length == 0 && n.leaf()) {
        return n;
      }
      restarts++;
    }
    throw busy("scan: leftmost leaf stale on every read");
  }

  private static FerriteException busy(String what) {
    return new FerriteException(
        ErrorCode.BUSY, what + " (" + MAX_RETRIES + " attempts); retry later");
  }
}
