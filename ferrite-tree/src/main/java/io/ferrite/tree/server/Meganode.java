package io.ferrite.tree.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.kv.Extents;
import io.ferrite.kv.server.ExtentAllocator;
import io.ferrite.tree.MeganodeReader;
import io.ferrite.tree.Node;
import io.ferrite.tree.NodeSource;
import io.ferrite.tree.TreeLimits;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A meganode (Cell §2.2): one service region of fixed-size small nodes holding a local B-link tree
 * by Sagiv's algorithm, its leaves pointing to key-value extents ({@link Extents}) in extent
 * regions. Node 0 is the header, encoded as a node whose {@code right} is the root's index and
 * whose {@code level} is the root's level; nodes 1.. are tree nodes, handed out by a bump pointer.
 *
 * <h2>Concurrency</h2>
 *
 * Searches are lock-free ({@link MeganodeReader} over {@link #source()}, the same code a client
 * runs one-sided). A writer locks <i>one node at a time</i> (Sagiv): the lock is the node's head
 * version word, taken by a compare-and-swap from even to odd; the tail word is then made odd
 * (release) and a store-store fence keeps both odd words ahead of the body's writes; unlocking
 * writes the tail then the head back to the next even value (release), so a reader that saw both
 * words even and equal, the head read (acquire) before the body and the tail after it (load-load
 * fence), copied a body no writer touched in between (Cell §2.3). A split writes the new right
 * sibling (not yet reachable) before it relinks the locked left node, then unlocks it and inserts
 * the separator into the parent as a separate step, as in Lehman and Yao; a search that reaches the
 * left node in between follows its right link.
 *
 * <p>Not built yet: freeing nodes (only a meganode split frees them) and the meganode split itself.
 * When the nodes run out, a put fails with {@link ErrorCode#NO_SPACE}.
 */
public final class Meganode {
  private final MappedRegion region;
  private final int nodeSize;
  private final int capacity;
  private final ExtentAllocator extents;
  private final TreeLimits limits;
  private final AtomicInteger incarnations = new AtomicInteger();
  private final Object allocation = new Object();
  private final Source source = new Source();
  private volatile MappedRegion[] extentRegions;
  private int bump;

  /**
   * Formats {@code region} as an empty meganode of {@code nodeSize}-byte nodes (a multiple of 8, at
   * least 128) whose extents {@code extents} keeps.
   */
  public Meganode(MappedRegion region, int nodeSize, ExtentAllocator extents) {
    if (nodeSize < 128 || nodeSize % 8 != 0 || nodeSize > 65536) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "tree.node.size: " + nodeSize + " (expected: a multiple of 8, 128 to 65536)");
    }
    if (region.length() / nodeSize < 3) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "tree.meganode.size: "
              + region.length()
              + " (expected: at least 3 nodes of "
              + nodeSize
              + " B)");
    }
    this.region = region;
    this.nodeSize = nodeSize;
    this.capacity = (int) Math.min(Integer.MAX_VALUE, region.length() / nodeSize);
    this.extents = extents;
    this.extentRegions = extents.regions().toArray(new MappedRegion[0]);
    long largest = extents.region(0).length() - Extents.HEADER;
    this.limits = new TreeLimits(nodeSize, (int) Math.min(Integer.MAX_VALUE - 64, largest / 2));
    Node root = new Node();
    root.flags = Node.LEAF | Node.LIVE | Node.HIGH_INF;
    root.incarnation = 1;
    bump = 2;
    writeFresh(1, root);
    Node header = new Node();
    header.right = 1;
    writeFresh(0, header);
  }

  public TreeLimits limits() {
    return limits;
  }

  /** The region this meganode lives in. */
  public MappedRegion region() {
    return region;
  }

  /** Nodes handed out so far, header included, and the capacity. */
  public int[] nodeUsage() {
    synchronized (allocation) {
      return new int[] {bump, capacity};
    }
  }

  /** The lock-free node and extent source over this server's own memory. */
  public NodeSource source() {
    return source;
  }

  // ------------------------------------------------------------------ operations

  /** The value of {@code key}, or null. Lock-free. */
  public byte[] get(byte[] key) {
    return new MeganodeReader(source).get(limits.key(key));
  }

  /** Pairs in {@code [from, to)}, at most {@code limit}; see {@link MeganodeReader#scan}. */
  public List<Map.Entry<byte[], byte[]>> scan(byte[] from, byte[] to, int limit) {
    limits.scan(from, to, limit);
    return new MeganodeReader(source).scan(from, to, limit);
  }

  /**
   * Inserts or replaces {@code key}'s value; true if the key was new.
   *
   * @throws FerriteException INVALID_ARGUMENT for a bad key or value, NO_SPACE when the meganode or
   *     its extent regions are full
   */
  public boolean put(byte[] key, byte[] value) {
    limits.key(key);
    limits.value(value);
    int incarnation = incarnations.incrementAndGet();
    if (incarnation == 0) {
      incarnation = incarnations.incrementAndGet();
    }
    byte[] image = Extents.image(incarnation, key, value);
    long[] pointer = {allocateExtent(image), image.length, Extents.checksum(image)};
    MeganodeReader reader = new MeganodeReader(source);
    int[] path = new int[256];
    int index = descend(reader, key, path);
    Locked locked = lockCovering(key, index);
    index = locked.index();
    Node n = locked.node();
    long v = locked.version();
    int i = n.find(key);
    if (i >= 0) {
      long[] old = n.values.set(i, pointer);
      write(index, n, v);
      // The old extent is freed only after the leaf stopped pointing to it; a reader still holding
      // the old leaf copy fails its checksum once the extent is reused, and reads the leaf again.
      freeExtent(old);
      return false;
    }
    int at = n.ceiling(key);
    n.keys.add(at, key);
    n.values.add(at, pointer);
    insertOrSplit(index, n, v, reader, path);
    return true;
  }

  /** Deletes {@code key}; true if it was present. */
  public boolean delete(byte[] key) {
    limits.key(key);
    MeganodeReader reader = new MeganodeReader(source);
    int[] path = new int[256];
    int index = descend(reader, key, path);
    Locked locked = lockCovering(key, index);
    index = locked.index();
    Node n = locked.node();
    long v = locked.version();
    int i = n.find(key);
    if (i < 0) {
      unlock(index, v);
      return false;
    }
    n.keys.remove(i);
    long[] old = n.values.remove(i);
    // Sagiv: a delete removes the entry under the leaf's lock only; no merging, no rebalancing.
    write(index, n, v);
    freeExtent(old);
    return true;
  }

  // ------------------------------------------------------------------ Sagiv's insert

  /**
   * Writes the locked node {@code n} (an entry added) at {@code index}, splitting it when it does
   * not fit, and carries separators up the tree until one fits.
   */
  private void insertOrSplit(int index, Node n, long v, MeganodeReader reader, int[] path) {
    while (true) {
      if (n.encodedSize() <= nodeSize) {
        write(index, n, v);
        return;
      }
      // Split by bytes, both halves non-empty (the key limit guarantees both then fit).
      int total = n.encodedSize();
      int mid = 1;
      int per = n.leaf() ? Node.LEAF_ENTRY : Node.INNER_ENTRY;
      int size = Node.HEADER + Node.TRAILER + n.low.length + n.high.length;
      for (int i = 0; i < n.keys.size() - 1; i++) {
        size += per + n.keys.get(i).length;
        if (size >= total / 2) {
          mid = i + 1;
          break;
        }
      }
      int rightIndex = allocateNode();
      Node r = new Node();
      r.flags = n.flags;
      r.level = n.level;
      r.incarnation = Math.max(1, incarnationOf(rightIndex) + 1);
      byte[] sep = n.keys.get(mid);
      r.low = sep;
      r.high = n.high;
      r.right = n.right;
      r.keys.addAll(n.keys.subList(mid, n.keys.size()));
      r.values.addAll(n.values.subList(mid, n.values.size()));
      writeFresh(rightIndex, r);
      n.keys.subList(mid, n.keys.size()).clear();
      n.values.subList(mid, n.values.size()).clear();
      n.high = sep;
      n.flags &= ~Node.HIGH_INF;
      n.right = rightIndex;
      write(index, n, v);
      // The left node is unlocked: its right link leads searches to the new sibling until the
      // parent has the separator (Lehman and Yao). Now insert (sep, rightIndex) one level up.
      int level = n.level + 1;
      int parent = parentAt(level, sep, reader, path);
      if (parent < 0) {
        return; // a new root was built over the whole level, the separator in it
      }
      Locked locked = lockCovering(sep, parent);
      index = locked.index();
      n = locked.node();
      v = locked.version();
      if (n.find(sep) >= 0) {
        unlock(index, v); // a root built meanwhile has it already
        return;
      }
      int at = n.ceiling(sep);
      n.keys.add(at, sep);
      n.values.add(at, new long[] {rightIndex});
    }
  }

  /**
   * A node at {@code level} to start the separator's insert from: the one the descent passed, or
   * (the tree grew since) one found by a new search; -1 if {@code level} is above the root, in
   * which case a new root was built here over the level below.
   */
  private int parentAt(int level, byte[] sep, MeganodeReader reader, int[] path) {
    while (true) {
      Node header = reader.header();
      if (header.level < level) {
        if (growRoot(level - 1)) {
          return -1;
        }
        continue;
      }
      if (path[level] != 0) {
        return path[level];
      }
      int index = header.right;
      while (true) {
        Node n = reader.read(index);
        if (n.beyond(sep) && n.right != 0) {
          index = n.right;
        } else if (n.level == level) {
          return index;
        } else {
          index = (int) n.values.get(Math.max(0, n.floor(sep)))[0];
        }
      }
    }
  }

  /**
   * Builds a new root over every node of level {@code childLevel}, under the header's lock, if the
   * root is still at that level: the chain from the old root along right links, each node's low key
   * its separator (a split of the chain after this walk inserts its separator into the new root by
   * the usual path). True if this call built it.
   */
  private boolean growRoot(int childLevel) {
    long hv = lock(0);
    Node header = Node.decodeBody(copy(0));
    if (header.level != childLevel) {
      unlock(0, hv);
      return false;
    }
    Node root = new Node();
    root.flags = Node.LIVE | Node.HIGH_INF;
    root.level = childLevel + 1;
    MeganodeReader reader = new MeganodeReader(source);
    int index = header.right;
    while (index != 0) {
      Node n = reader.read(index);
      root.keys.add(n.low);
      root.values.add(new long[] {index});
      index = n.right;
    }
    if (root.encodedSize() > nodeSize) {
      unlock(0, hv);
      throw new FerriteException(
          ErrorCode.INTERNAL, "new root over " + root.keys.size() + " nodes does not fit a node");
    }
    int rootIndex = allocateNode();
    root.incarnation = Math.max(1, incarnationOf(rootIndex) + 1);
    writeFresh(rootIndex, root);
    header.right = rootIndex;
    header.level = childLevel + 1;
    write(0, header, hv);
    return true;
  }

  /**
   * Descends lock-free to the leaf for {@code key}, recording each level's node in {@code path}.
   */
  private int descend(MeganodeReader reader, byte[] key, int[] path) {
    while (true) {
      int index = reader.header().right;
      boolean stale = false;
      while (true) {
        Node n = reader.read(index);
        if (!n.live() || n.below(key)) {
          stale = true;
          break;
        }
        if (n.beyond(key) && n.right != 0) {
          index = n.right;
          continue;
        }
        path[n.level] = index;
        if (n.leaf()) {
          return index;
        }
        index = (int) n.values.get(Math.max(0, n.floor(key)))[0];
      }
      if (stale) {
        Thread.onSpinWait();
      }
    }
  }

  /** A node locked by {@link #lockCovering}: its index, its decoded body, its odd version. */
  private record Locked(int index, Node node, long version) {}

  /**
   * Locks the node at {@code key}'s level whose range holds it, starting at {@code index} and
   * moving right one lock at a time (Sagiv: unlock before locking the right sibling).
   */
  private Locked lockCovering(byte[] key, int index) {
    while (true) {
      long v = lock(index);
      Node n = Node.decodeBody(copy(index));
      if (n.beyond(key) && n.right != 0) {
        unlock(index, v);
        index = n.right;
        continue;
      }
      return new Locked(index, n, v);
    }
  }

  // ------------------------------------------------------------------ node words

  private long offset(int index) {
    return (long) index * nodeSize;
  }

  /** Takes node {@code index}'s lock: its head word from even to odd. Returns the odd value. */
  private long lock(int index) {
    long off = offset(index);
    while (true) {
      long v = region.getLongAcquire(off);
      if ((v & 1) == 0 && region.compareAndSwap(off, v, v + 1) == v) {
        region.putLongRelease(off + nodeSize - Node.TRAILER, v + 1);
        // Both words odd before any byte of the body changes (Cell §2.3).
        VarHandle.storeStoreFence();
        return v + 1;
      }
      Thread.onSpinWait();
    }
  }

  /** Releases a lock taken by {@link #lock} without a change: both words to the next even. */
  private void unlock(int index, long odd) {
    long off = offset(index);
    region.putLongRelease(off + nodeSize - Node.TRAILER, odd + 1);
    region.putLongRelease(off, odd + 1);
  }

  /** Writes the locked node's body, then unlocks it (tail, then head, release). */
  private void write(int index, Node n, long odd) {
    byte[] image = new byte[nodeSize];
    n.version = odd;
    n.encode(image);
    region.writeFrom(offset(index) + 8, ByteBuffer.wrap(image, 8, nodeSize - 16));
    unlock(index, odd);
  }

  /** Writes a node no search can reach yet (fresh, or the header at format time). */
  private void writeFresh(int index, Node n) {
    write(index, n, lock(index));
  }

  private byte[] copy(int index) {
    byte[] b = new byte[nodeSize];
    region.readInto(offset(index), ByteBuffer.wrap(b));
    return b;
  }

  private int incarnationOf(int index) {
    return Node.decodeBody(copy(index)).incarnation;
  }

  private int allocateNode() {
    synchronized (allocation) {
      if (bump >= capacity) {
        throw new FerriteException(
            ErrorCode.NO_SPACE,
            "meganode full: "
                + capacity
                + " nodes of "
                + nodeSize
                + " B in use (tree.meganode.size); meganode split is not built yet");
      }
      return bump++;
    }
  }

  // ------------------------------------------------------------------ extents

  private long allocateExtent(byte[] image) {
    synchronized (extents) {
      boolean[] grew = new boolean[1];
      long address = extents.allocate(image.length, grew);
      if (grew[0]) {
        extentRegions = extents.regions().toArray(new MappedRegion[0]);
      }
      extents.write(address, image);
      return address;
    }
  }

  private void freeExtent(long[] pointer) {
    synchronized (extents) {
      extents.free(pointer[0], (int) pointer[1]);
    }
  }

  /** Reads this meganode's nodes and extents from the server's own memory. */
  private final class Source implements NodeSource {
    @Override
    public int nodeSize() {
      return nodeSize;
    }

    @Override
    public void readNode(int index, byte[] dst) {
      long off = offset(index);
      long head = region.getLongAcquire(off);
      region.readInto(off + 8, ByteBuffer.wrap(dst, 8, nodeSize - 16));
      // The body's loads before the tail's: a write that began during the copy shows in the tail.
      VarHandle.loadLoadFence();
      long tail = region.getLongAcquire(off + nodeSize - Node.TRAILER);
      putLong(dst, 0, head);
      putLong(dst, nodeSize - Node.TRAILER, tail);
    }

    @Override
    public byte[] readExtent(long address, int length) {
      MappedRegion[] regions = extentRegions;
      int r = (int) (address >>> 32);
      long off = address & 0xFFFFFFFFL;
      byte[] e = new byte[length];
      if (r < regions.length && off + length <= regions[r].length()) {
        regions[r].readInto(off, ByteBuffer.wrap(e));
      }
      return e;
    }
  }

  private static void putLong(byte[] b, int at, long v) {
    for (int i = 0; i < 8; i++) {
      b[at + i] = (byte) (v >>> (8 * i));
    }
  }

  /** For tests: all pairs, in order, through the lock-free reader. */
  List<Map.Entry<byte[], byte[]>> all() {
    return new ArrayList<>(new MeganodeReader(source).scan(null, null, Integer.MAX_VALUE));
  }
}
