package io.ferrite.tree.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.kernel.proto.LittleEndian;
import io.ferrite.tree.MeganodeReader;
import io.ferrite.tree.Node;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Collection;

/**
 * The fixed-size nodes of one meganode region, as the server writes them: node locks in the version
 * words, whole-node writes, allocation. Node {@code i} is at offset {@code i * nodeSize}; node 0 is
 * the meganode's header.
 *
 * <h2>Version words (Cell §2.3)</h2>
 *
 * The lock is the node's head version word, taken by a compare-and-swap from even to odd (full
 * fence); the tail word is then made odd (release) and a store-store fence keeps both odd words
 * ahead of the body's writes. Unlocking writes the tail, then the head, to the next even value
 * (release). {@link #readNode} reads the head (acquire), the body, then (after a load-load fence)
 * the tail: a copy whose two words are equal and even was not overlapped by any write. A client's
 * one-sided read copies in address order, so the same check holds for it.
 *
 * <p>Allocation: a bump pointer, then a free list of nodes a meganode split freed (their
 * incarnation bumped and {@code LIVE} cleared first). Thread-safe.
 */
final class NodeRegion {
  private final MappedRegion region;
  private final int nodeSize;
  private final int capacity;
  private final ArrayDeque<Integer> free = new ArrayDeque<>();
  private int bump = 1;

  NodeRegion(MappedRegion region, int nodeSize) {
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
  }

  MappedRegion region() {
    return region;
  }

  int nodeSize() {
    return nodeSize;
  }

  private long offset(int index) {
    return (long) index * nodeSize;
  }

  /** Takes node {@code index}'s lock: its head word from even to odd. Returns the odd value. */
  long lock(int index) {
    long off = offset(index);
    int spins = 0;
    while (true) {
      long v = region.getLongAcquire(off);
      if ((v & 1) == 0 && region.compareAndSwap(off, v, v + 1) == v) {
        region.putLongRelease(off + nodeSize - Node.TRAILER, v + 1);
        // Both words odd before any byte of the body changes (Cell §2.3).
        VarHandle.storeStoreFence();
        return v + 1;
      }
      MeganodeReader.backoff(spins++);
    }
  }

  /** Releases a lock taken by {@link #lock} without a change: both words to the next even. */
  void unlock(int index, long odd) {
    long off = offset(index);
    region.putLongRelease(off + nodeSize - Node.TRAILER, odd + 1);
    region.putLongRelease(off, odd + 1);
  }

  /** Writes the locked node's body, then unlocks it (tail, then head, release). */
  void write(int index, Node n, long odd) {
    byte[] image = new byte[nodeSize];
    n.version = odd;
    n.encode(image);
    region.writeFrom(offset(index) + 8, ByteBuffer.wrap(image, 8, nodeSize - 16));
    unlock(index, odd);
  }

  /** Writes a node no search can reach yet (fresh, or the header at format time). */
  void writeFresh(int index, Node n) {
    write(index, n, lock(index));
  }

  /** A plain copy of node {@code index}: for a node this thread holds locked. */
  byte[] copy(int index) {
    byte[] b = new byte[nodeSize];
    region.readInto(offset(index), ByteBuffer.wrap(b));
    return b;
  }

  /** The incarnation a node last had (a fresh node's next one is that plus one). */
  int incarnationOf(int index) {
    return Node.decodeBody(copy(index)).incarnation;
  }

  /** A reader's copy of node {@code index}: head, body, tail in that order (see above). */
  void readNode(int index, byte[] dst) {
    long off = offset(index);
    long head = region.getLongAcquire(off);
    region.readInto(off + 8, ByteBuffer.wrap(dst, 8, nodeSize - 16));
    // The body's loads before the tail's: a write that began during the copy shows in the tail.
    VarHandle.loadLoadFence();
    long tail = region.getLongAcquire(off + nodeSize - Node.TRAILER);
    LittleEndian.putLong(dst, 0, head);
    LittleEndian.putLong(dst, nodeSize - Node.TRAILER, tail);
  }

  /**
   * A free node's index.
   *
   * @throws FerriteException NO_SPACE when every node is in use
   */
  synchronized int allocate() {
    Integer reused = free.pollFirst();
    if (reused != null) {
      return reused;
    }
    if (bump >= capacity) {
      throw full();
    }
    return bump++;
  }

  /** Checks that {@code nodes} nodes are free now (not reserved: a check before a write). */
  synchronized void requireFree(int nodes) {
    if (capacity - bump + free.size() < nodes) {
      throw full();
    }
  }

  /** Gives back nodes already invalidated (not live, next incarnation). */
  synchronized void free(Collection<Integer> nodes) {
    free.addAll(nodes);
  }

  /** Nodes in use, header included, and the capacity. */
  synchronized int[] usage() {
    return new int[] {bump - free.size(), capacity};
  }

  private FerriteException full() {
    return new FerriteException(
        ErrorCode.NO_SPACE,
        "meganode full: "
            + capacity
            + " nodes of "
            + nodeSize
            + " B in use (tree.meganode.size): puts came faster than the meganode split");
  }
}
