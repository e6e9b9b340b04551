package io.ferrite.tree;

import io.ferrite.kernel.proto.LittleEndian;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One small node of a meganode's local B-link tree (Cell §2.2, Sagiv's algorithm), decoded from or
 * encoded to its fixed-size image. All words little-endian; {@code N} is the node size:
 *
 * <pre>
 *  0            8             12      13      14        16          20        22         24         32
 *  +------------+-------------+-------+-------+---------+-----------+---------+----------+----------+
 *  | version u64| incarn. u32 | flags | level | count   | right u32 | lowLen  | highLen  | link u64 |
 *  +------------+-------------+-------+-------+---------+-----------+---------+----------+----------+
 *  | low key | high key | entries ...                                    | ... | version u64  |
 *  +---------+----------+------------------------------------------------+-----+--------------+
 *  32                                                                          N-8           N
 *
 *  leaf entry:     | keyLen u16 | key | extent address u64 | extent length u32 | checksum u64 |
 *  internal entry: | keyLen u16 | key | child node u32 |
 * </pre>
 *
 * <ul>
 *   <li>The <b>version words</b> at both ends are equal and even when the node is at rest; the
 *       server makes both odd before it writes the body and both even (the next even) after (Cell
 *       §2.3). A copy whose two words differ, or are odd, is torn: read it again.
 *   <li>The <b>incarnation</b> changes whenever the node is freed; flag {@link #LIVE} is cleared. A
 *       reader that reaches a node that is not live, or whose key range {@code [low, high)} does
 *       not hold its key (the node was reused elsewhere), restarts from the root (Cell §2.4).
 *   <li>{@code low} of length 0 is minus infinity (keys are never empty); {@link #HIGH_INF} marks
 *       plus infinity. {@code right} is the node index of the right sibling, 0 for none (node 0 is
 *       the meganode header, never a tree node).
 *   <li><b>Node 0 is the meganode's header</b>, in the same format: {@code right} is the local
 *       root's index and {@code level} its level; {@code low}, {@code high} and {@link #HIGH_INF}
 *       are the meganode's key range, {@code link} its right meganode (the B-link tree of
 *       meganodes), flag {@link #LEAF} set for a leaf meganode (entries point to extents) and clear
 *       for an internal one (leaf entries hold child meganode pointers in the address word, length
 *       and checksum 0).
 *   <li>An internal node's first entry has the node's low key; entry {@code i} covers keys from its
 *       key up to the next entry's key (Lehman and Yao's separators).
 * </ul>
 */
public final class Node {
  public static final int HEADER = 32;
  public static final int TRAILER = 8;
  public static final int LEAF = 1;
  public static final int LIVE = 2;
  public static final int HIGH_INF = 4;

  /** Bytes of a leaf entry besides its key: length, address, extent length, checksum. */
  public static final int LEAF_ENTRY = 2 + 8 + 4 + 8;

  /** Bytes of an internal entry besides its key: length, child. */
  public static final int INNER_ENTRY = 2 + 4;

  public long version;
  public int incarnation;
  public int flags;
  public int level;
  public int right;

  /** Header only: the right meganode's pointer, {@code server << 32 | region}; 0 for none. */
  public long link;

  public byte[] low = new byte[0];
  public byte[] high = new byte[0];
  public final List<byte[]> keys;

  /** Leaf: extent address; internal: child node index. */
  public final List<long[]> values;

  public Node() {
    this(10);
  }

  /**
   * A node with room for {@code entries} entries: {@link #decodeBody} sizes its lists to the count
   * it decodes, since growing them was a third of a server-side search's time.
   */
  private Node(int entries) {
    keys = new ArrayList<>(entries);
    values = new ArrayList<>(entries);
  }

  public boolean leaf() {
    return (flags & LEAF) != 0;
  }

  public boolean live() {
    return (flags & LIVE) != 0;
  }

  public boolean highInfinite() {
    return (flags & HIGH_INF) != 0;
  }

  /** Whether {@code key} is at or beyond this node's high key: the search goes right. */
  public boolean beyond(byte[] key) {
    return !highInfinite() && Arrays.compareUnsigned(key, high) >= 0;
  }

  /** Whether {@code key} is below this node's low key: a reused node, restart. */
  public boolean below(byte[] key) {
    return low.length > 0 && Arrays.compareUnsigned(key, low) < 0;
  }

  /** Index of the last entry whose key is at most {@code key}, or -1. */
  public int floor(byte[] key) {
    int lo = 0;
    int hi = keys.size() - 1;
    int found = -1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      if (Arrays.compareUnsigned(keys.get(mid), key) <= 0) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found;
  }

  /** Index of the entry with exactly {@code key}, or -1. */
  public int find(byte[] key) {
    int i = floor(key);
    return i >= 0 && Arrays.equals(keys.get(i), key) ? i : -1;
  }

  /** Index of the first entry whose key is at least {@code key}. */
  public int ceiling(byte[] key) {
    int i = floor(key);
    return i >= 0 && Arrays.equals(keys.get(i), key) ? i : i + 1;
  }

  /** The encoded size of this node's body: header, boundary keys, entries, trailer. */
  public int encodedSize() {
    int size = HEADER + low.length + high.length + TRAILER;
    int per = leaf() ? LEAF_ENTRY : INNER_ENTRY;
    for (byte[] k : keys) {
      size += per + k.length;
    }
    return size;
  }

  /** Encodes this node into {@code dst} (node size bytes), version words as {@link #version}. */
  public void encode(byte[] dst) {
    Arrays.fill(dst, (byte) 0);
    putLong(dst, 0, version);
    putInt(dst, 8, incarnation);
    dst[12] = (byte) flags;
    dst[13] = (byte) level;
    putShort(dst, 14, keys.size());
    putInt(dst, 16, right);
    putShort(dst, 20, low.length);
    putShort(dst, 22, high.length);
    putLong(dst, 24, link);
    int at = HEADER;
    System.arraycopy(low, 0, dst, at, low.length);
    at += low.length;
    System.arraycopy(high, 0, dst, at, high.length);
    at += high.length;
    boolean leaf = leaf();
    for (int i = 0; i < keys.size(); i++) {
      byte[] k = keys.get(i);
      long[] v = values.get(i);
      putShort(dst, at, k.length);
      System.arraycopy(k, 0, dst, at + 2, k.length);
      at += 2 + k.length;
      if (leaf) {
        putLong(dst, at, v[0]);
        putInt(dst, at + 8, (int) v[1]);
        putLong(dst, at + 12, v[2]);
        at += 20;
      } else {
        putInt(dst, at, (int) v[0]);
        at += 4;
      }
    }
    putLong(dst, dst.length - TRAILER, version);
  }

  /**
   * Decodes a copy of a node image, or returns null if the copy is torn (version words differ or
   * odd) or its lengths do not add up (a torn copy whose words happen to agree cannot pass this
   * check and then crash the decoder: every length is bounds-checked).
   */
  public static Node decode(byte[] src) {
    long head = getLong(src, 0);
    long tail = getLong(src, src.length - TRAILER);
    if (head != tail || (head & 1) != 0) {
      return null;
    }
    return decodeBody(src);
  }

  /**
   * The entry count of a node copy if it is whole, as {@link #decode} would accept it (version
   * words equal and even, the boundary keys and every entry inside the node), else -1: for readers
   * that use the copy in place ({@code MeganodeReader#find}). Allocates nothing.
   */
  public static int checkedCount(byte[] src) {
    long head = getLong(src, 0);
    long tail = getLong(src, src.length - TRAILER);
    if (head != tail || (head & 1) != 0) {
      return -1;
    }
    int count = getShort(src, 14);
    int limit = src.length - TRAILER;
    int at = HEADER + getShort(src, 20) + getShort(src, 22);
    if (at > limit) {
      return -1;
    }
    int per = (src[12] & LEAF) != 0 ? 20 : 4;
    for (int i = 0; i < count; i++) {
      if (at + 2 > limit) {
        return -1;
      }
      at += 2 + getShort(src, at) + per;
      if (at > limit) {
        return -1;
      }
    }
    return count;
  }

  /**
   * Decodes a node image without checking its version words: for the server, reading a node it has
   * locked (both words odd). Null if its lengths do not add up.
   */
  public static Node decodeBody(byte[] src) {
    int count = getShort(src, 14);
    // At most one entry per 3 bytes (an entry is 2 + key >= 1 + 4 bytes): a torn count cannot
    // make a huge list.
    Node n = new Node(Math.min(count, src.length / 3));
    n.version = getLong(src, 0);
    n.incarnation = getInt(src, 8);
    n.flags = src[12] & 0xFF;
    n.level = src[13] & 0xFF;
    n.right = getInt(src, 16);
    int lowLen = getShort(src, 20);
    int highLen = getShort(src, 22);
    n.link = getLong(src, 24);
    int limit = src.length - TRAILER;
    int at = HEADER;
    if (at + lowLen + highLen > limit) {
      return null;
    }
    n.low = Arrays.copyOfRange(src, at, at + lowLen);
    at += lowLen;
    n.high = Arrays.copyOfRange(src, at, at + highLen);
    at += highLen;
    boolean leaf = n.leaf();
    for (int i = 0; i < count; i++) {
      if (at + 2 > limit) {
        return null;
      }
      int kl = getShort(src, at);
      int need = 2 + kl + (leaf ? 20 : 4);
      if (at + need > limit) {
        return null;
      }
      n.keys.add(Arrays.copyOfRange(src, at + 2, at + 2 + kl));
      at += 2 + kl;
      if (leaf) {
        n.values.add(
            new long[] {
              getLong(src, at), getInt(src, at + 8) & 0xFFFFFFFFL, getLong(src, at + 12)
            });
        at += 20;
      } else {
        n.values.add(new long[] {getInt(src, at) & 0xFFFFFFFFL});
        at += 4;
      }
    }
    return n;
  }

  // Little-endian words: kv's helpers (the extent format is kv's too).

  static void putLong(byte[] b, int at, long v) {
    LittleEndian.putLong(b, at, v);
  }

  static long getLong(byte[] b, int at) {
    return LittleEndian.getLong(b, at);
  }

  static void putInt(byte[] b, int at, int v) {
    LittleEndian.putInt(b, at, v);
  }

  static int getInt(byte[] b, int at) {
    return LittleEndian.getInt(b, at);
  }

  static void putShort(byte[] b, int at, int v) {
    b[at] = (byte) v;
    b[at + 1] = (byte) (v >>> 8);
  }

  static int getShort(byte[] b, int at) {
    return (b[at] & 0xFF) | (b[at + 1] & 0xFF) << 8;
  }
}
