package io.ferrite.kv.server;

import static io.ferrite.kernel.proto.LittleEndian.getLong;
import static io.ferrite.kernel.proto.LittleEndian.putLong;
import static io.ferrite.kv.HopscotchLayout.BLOCK_SLOTS;
import static io.ferrite.kv.HopscotchLayout.BUCKET_HEADER;
import static io.ferrite.kv.HopscotchLayout.INCARNATION;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.kernel.extent.ExtentAllocator;
import io.ferrite.kv.HopscotchLayout;
import java.lang.invoke.VarHandle;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * How a {@link HopscotchShard} writes its regions: bucket and block images written as the next
 * version of a sequence lock, overflow blocks (type-stable, with incarnations), extents marked
 * freed. Not thread-safe: the shard's lock guards it. The images are shared scratch buffers: {@link
 * #bucket} and {@link #block} hold what the last {@code load} read until the matching {@code
 * store}.
 */
final class HopscotchMemory {
  /** An overflow block, as the server tracks it (the region holds the truth readers see). */
  static final class Block {
    final long addr;
    long incarnation;
    final long[] hashes = new long[BLOCK_SLOTS];
    final long[] extAddr = new long[BLOCK_SLOTS];
    final int[] extLen = new int[BLOCK_SLOTS];
    final boolean[] used = new boolean[BLOCK_SLOTS];
    Block next;

    Block(long addr) {
      this.addr = addr;
    }

    int usedCount() {
      int n = 0;
      for (boolean u : used) {
        n += u ? 1 : 0;
      }
      return n;
    }

    int freeSlot() {
      for (int i = 0; i < BLOCK_SLOTS; i++) {
        if (!used[i]) {
          return i;
        }
      }
      return -1;
    }

    void set(int i, long h, long addr, int len) {
      used[i] = true;
      hashes[i] = h;
      extAddr[i] = addr;
      extLen[i] = len;
    }
  }

  final int slotBytes;
  final int bucketBytes;
  final int blockBytes;

  /** The bucket image between {@link #loadBucket} and {@link #storeBucket}. */
  final byte[] bucket;

  /** The block image between {@link #loadBlock} and {@link #storeBlock}. */
  final byte[] block;

  private final ExtentAllocator alloc;
  private final ArrayDeque<Block> freeBlocks = new ArrayDeque<>();
  private int blocks;
  private long nextIncarnation = 1;
  private Runnable afterWrite = () -> {};

  HopscotchMemory(int inlineBytes, ExtentAllocator alloc) {
    this.slotBytes = HopscotchLayout.slotBytes(inlineBytes);
    this.bucketBytes = HopscotchLayout.bucketBytes(slotBytes);
    this.blockBytes = HopscotchLayout.blockBytes(slotBytes);
    this.bucket = new byte[bucketBytes];
    this.block = new byte[blockBytes];
    this.alloc = alloc;
  }

  /** For protocol tests: runs {@code r} after every write to a region (see the shard). */
  void afterEachWrite(Runnable r) {
    this.afterWrite = r;
  }

  /** Blocks in use (linked in a chain). */
  int blocks() {
    return blocks;
  }

  /** Offset of slot {@code i} in a bucket or block image. */
  int slotOffset(int i) {
    return BUCKET_HEADER + i * slotBytes;
  }

  long bucketOffset(int b) {
    return HopscotchLayout.bucketOffset(b, bucketBytes);
  }

  /** A new shard-unique incarnation; its low 32 bits are never 0 (0 marks a freed extent). */
  long incarnation() {
    long i = nextIncarnation++;
    if ((int) i == 0) {
      i = nextIncarnation++;
    }
    return i;
  }

  // ------------------------------------------------------------------ buckets

  /** Writes every bucket of a fresh table region: zero, version 0, checksum sealed. */
  void initBuckets(MappedRegion r, int buckets) {
    Arrays.fill(bucket, (byte) 0);
    HopscotchLayout.seal(bucket, 0, bucketBytes);
    for (int b = 0; b <= buckets; b++) {
      r.writeFrom(bucketOffset(b), ByteBuffer.wrap(bucket));
    }
  }

  /**
   * Copies {@code length} bytes at {@code offset} of {@code r} into {@code dst} (a plain copy, as
   * {@link MappedRegion#readInto}, without wrapping the array on every load).
   */
  static void read(MappedRegion r, long offset, byte[] dst, int length) {
    r.buffer().getBytes((int) offset, dst, 0, length);
    Reference.reachabilityFence(r);
  }

  void loadBucket(MappedRegion r, int b) {
    read(r, bucketOffset(b), bucket, bucketBytes);
  }

  void storeBucket(MappedRegion r, int b) {
    store(r, bucketOffset(b), bucket, bucketBytes);
  }

  /** Marks bucket {@code b} of a replaced array {@link HopscotchLayout#MOVED}. */
  void poison(MappedRegion r, int b) {
    r.putLongRelease(bucketOffset(b), HopscotchLayout.MOVED);
    afterWrite.run();
  }

  /**
   * Writes {@code image} (loaded from {@code at} and changed) back as the next version: odd
   * version, release fence, the rest of the image (its checksum computed with the final even
   * version), even version (release). A reader accepts only an even version with a matching
   * checksum, whatever order it copied the bytes in.
   */
  private void store(MappedRegion r, long at, byte[] image, int length) {
    long v = getLong(image, 0) & ~1L;
    putLong(image, 0, v + 2);
    HopscotchLayout.seal(image, 0, length);
    r.putLongRelease(at, v + 1);
    VarHandle.releaseFence();
    r.buffer().putBytes((int) (at + 8), image, 8, length - 8);
    Reference.reachabilityFence(r);
    r.putLongRelease(at, v + 2);
    afterWrite.run();
  }

  // ------------------------------------------------------------------ blocks

  MappedRegion blockRegion(Block b) {
    return alloc.region((int) (b.addr >>> 32));
  }

  long blockOffset(Block b) {
    return b.addr & 0xFFFFFFFFL;
  }

  void loadBlock(Block b) {
    read(blockRegion(b), blockOffset(b), block, blockBytes);
  }

  void storeBlock(Block b) {
    store(blockRegion(b), blockOffset(b), block, blockBytes);
  }

  /**
   * A block from the free list (type-stable reuse), or new room in the extent area; {@code onGrow}
   * runs when the extent area gained a region (the layout epoch must move first).
   *
   * @throws FerriteException NO_SPACE (with {@code whatIsFull}'s message) if there is no room
   */
  Block allocateBlock(Runnable onGrow, java.util.function.Function<String, FerriteException> full) {
    Block k = freeBlocks.pollFirst();
    if (k == null) {
      boolean[] grew = new boolean[1];
      long addr;
      try {
        addr = alloc.allocate(blockBytes, grew);
      } catch (FerriteException e) {
        if (e.code() == ErrorCode.NO_SPACE) {
          throw full.apply("no room for an overflow block (" + e.detail() + ")");
        }
        throw e;
      }
      if (grew[0]) {
        onGrow.run();
      }
      k = new Block(addr);
      // Zero the block (the memory may have held an extent): version 0, even.
      Arrays.fill(block, (byte) 0);
      blockRegion(k).writeFrom(blockOffset(k), ByteBuffer.wrap(block));
      afterWrite.run();
      k.incarnation = incarnation();
    }
    blocks++;
    Arrays.fill(k.used, false);
    k.next = null;
    return k;
  }

  /** Frees an unlinked block: its incarnation moves on, so readers holding a pointer restart. */
  void freeBlock(Block k) {
    k.incarnation = incarnation();
    loadBlock(k);
    Arrays.fill(block, 8, blockBytes, (byte) 0);
    putLong(block, INCARNATION, k.incarnation);
    storeBlock(k);
    Arrays.fill(k.used, false);
    k.next = null;
    blocks--;
    freeBlocks.addFirst(k);
  }

  // ------------------------------------------------------------------ extents

  MappedRegion extentRegion(long addr) {
    return alloc.region((int) (addr >>> 32));
  }

  byte[] readExtent(long addr, int len) {
    byte[] e = new byte[len];
    extentRegion(addr).readInto(addr & 0xFFFFFFFFL, ByteBuffer.wrap(e));
    return e;
  }

  /** Whether the extent at {@code addr} holds {@code key} ({@link ExtentAllocator#hasKey}). */
  boolean hasKey(long addr, int len, byte[] key) {
    return alloc.hasKey(addr, len, key);
  }

  /**
   * Writes a new extent, not current (before any slot points to it; {@link
   * io.ferrite.kernel.extent.Extents}).
   */
  void writeExtent(long addr, byte[] extent) {
    alloc.write(addr, extent);
    afterWrite.run();
  }

  /**
   * Writes a new extent of {@code key} and {@code value} straight into its region, not current
   * ({@link ExtentAllocator#writeExtent}); returns the checksum its slot holds.
   */
  long writeExtent(long addr, int incarnation, byte[] key, ByteBuffer value) {
    long sum = alloc.writeExtent(addr, incarnation, key, value);
    afterWrite.run();
    return sum;
  }

  /** Marks a new extent current, once the slot that points to it is published. */
  void markCurrent(long addr, int incarnation) {
    alloc.markCurrent(addr, incarnation);
    afterWrite.run();
  }

  /**
   * Clears the current word of an out-of-line extent (a hint to it no longer answers), before the
   * slot that points to it changes; no-op for an inline pair ({@code len} 0).
   */
  void clearCurrent(long addr, int len) {
    if (len == 0) {
      return;
    }
    alloc.clearCurrent(addr);
    afterWrite.run();
  }

  /**
   * Marks an out-of-line extent freed (incarnation 0: readers holding a pointer to it retry) and
   * gives it back to the allocator. Only once no slot points to it.
   */
  void freeExtent(long addr, int len) {
    if (len == 0) {
      return;
    }
    alloc.markFreed(addr);
    afterWrite.run();
    alloc.free(addr, len);
  }
}
