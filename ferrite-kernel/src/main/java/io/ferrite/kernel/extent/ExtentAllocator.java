package io.ferrite.kernel.extent;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.verify.Checksum64;
import java.lang.invoke.VarHandle;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Carves a shard's extent regions into extents by size class: classes grow by powers of two with a
 * half step between (32, 48, 64, 96, 128, ...), so an extent wastes at most a third of its class.
 * Freed extents go on their class's free list and are reused first; fresh ones are bumped off the
 * newest region; when that is full a new region is created (up to a limit). Not thread-safe: the
 * shard's lock guards it.
 *
 * <p>An address is {@code region << 32 | offset}. Reusing a freed extent at once is safe for
 * one-sided readers: their pointer's checksum no longer matches, so they retry (Pilaf §3.3); and a
 * freed extent's current word was cleared before its pointer changed, so a hint to it does not
 * answer either ({@link Extents}).
 */
public final class ExtentAllocator {
  static final int MIN_CLASS = 32;

  private final List<MappedRegion> regions = new ArrayList<>();
  private final int maxRegions;
  private final Supplier<MappedRegion> newRegion;
  private final List<ArrayDeque<Long>> free = new ArrayList<>();
  private long bump;
  private long usedBytes;
  private long freeBytes;

  public ExtentAllocator(MappedRegion first, int maxRegions, Supplier<MappedRegion> newRegion) {
    this.regions.add(first);
    this.maxRegions = maxRegions;
    this.newRegion = newRegion;
  }

  /**
   * The class index of an extent of {@code length} bytes: the smallest class of at least {@code
   * length} bytes. Computed, not searched (a put and the free of the value it replaces both ask).
   */
  static int classOf(int length) {
    if (length <= MIN_CLASS) {
      return 0;
    }
    // 2^(p-1) < length <= 2^p with p >= 6; the classes between are 1.5 x 2^(p-1) (odd) and 2^p.
    int p = 64 - Long.numberOfLeadingZeros(length - 1L);
    long half = 1L << (p - 1);
    return length <= half + half / 2 ? 2 * (p - 6) + 1 : 2 * (p - 5);
  }

  /**
   * Whether the extent at {@code addr} ({@code len} bytes) holds {@code key}: reads its header and
   * key only. A writer looking for a key compares it with every candidate's; reading the whole
   * extent for that copied the old value (1 KiB for a 1 KiB pair) into a new array on every put.
   */
  public boolean hasKey(long addr, int len, byte[] key) {
    if (len < Extents.HEADER + key.length) {
      return false;
    }
    // The key is copied into a scratch array (no allocation per candidate) and compared there
    // (Arrays.equals is vectorized; a byte-by-byte read of the region is bounds-checked per byte).
    MappedRegion r = region((int) (addr >>> 32));
    UnsafeBuffer b = r.buffer();
    int at = (int) (addr & 0xFFFFFFFFL);
    if (b.getInt(at + 4, ByteOrder.LITTLE_ENDIAN) != key.length) {
      return false;
    }
    if (keyScratch.length < key.length) {
      keyScratch = new byte[key.length];
    }
    b.getBytes(at + Extents.HEADER, keyScratch, 0, key.length);
    Reference.reachabilityFence(r);
    return Arrays.equals(keyScratch, 0, key.length, key, 0, key.length);
  }

  /** Where {@link #hasKey} copies a candidate's key (the shard's lock guards it). */
  private byte[] keyScratch = new byte[64];

  /** The bytes of class {@code c}: 32, 48, 64, 96, 128, 192, ... */
  static long classSize(int c) {
    long base = (long) MIN_CLASS << (c / 2);
    return (c & 1) == 0 ? base : base + base / 2;
  }

  public List<MappedRegion> regions() {
    return regions;
  }

  public MappedRegion region(int index) {
    return regions.get(index);
  }

  /**
   * Allocates room for {@code length} bytes; returns its address.
   *
   * @return the address; {@code grew[0]} is set when a region was added (the layout changed)
   * @throws FerriteException NO_SPACE when every region is full and no more may be added
   */
  public long allocate(int length, boolean[] grew) {
    int c = classOf(length);
    long size = classSize(c);
    while (free.size() <= c) {
      free.add(new ArrayDeque<>());
    }
    Long reused = free.get(c).pollFirst();
    if (reused != null) {
      freeBytes -= size;
      usedBytes += size;
      return reused;
    }
    MappedRegion last = regions.get(regions.size() - 1);
    if (bump + size > last.length()) {
      if (regions.size() >= maxRegions) {
        throw new FerriteException(
            ErrorCode.NO_SPACE,
            "extent area full: "
                + regions.size()
                + " regions of "
                + last.length()
                + " B in use (maxExtentRegions), no free extent of "
                + size
                + " B; delete keys or create the table with more extent space");
      }
      if (size > last.length()) {
        throw new FerriteException(
            ErrorCode.TOO_LARGE, "extent of " + length + " B exceeds a region of " + last.length());
      }
      regions.add(newRegion.get());
      grew[0] = true;
      bump = 0;
    }
    long addr = ((long) (regions.size() - 1) << 32) | bump;
    bump += size;
    usedBytes += size;
    return addr;
  }

  /** Frees the extent of {@code length} bytes at {@code addr}. */
  public void free(long addr, int length) {
    int c = classOf(length);
    long size = classSize(c);
    while (free.size() <= c) {
      free.add(new ArrayDeque<>());
    }
    free.get(c).addFirst(addr);
    usedBytes -= size;
    freeBytes += size;
  }

  // ------------------------------------------------------------------ extents (Extents)

  /** Writes a new extent image (its current word 0) at {@code addr}. */
  public void write(long addr, byte[] image) {
    region((int) (addr >>> 32)).writeFrom(addr & 0xFFFFFFFFL, ByteBuffer.wrap(image));
  }

  /**
   * Writes the extent of {@code key} and {@code value} (its position to its limit, left as they
   * are) under {@code incarnation}, not current, at {@code addr} ({@code HEADER + key + value}
   * bytes), straight into the region, and returns the checksum a pointer to it holds.
   *
   * <p>Cost: the value is copied once, from the request into the region (before: into an array by
   * the decoder, into an extent image, then into the region), and the checksum is one XXH3 pass
   * over the bytes just written, read back from the region while they are in the cache. Hashing the
   * region rather than the sources is what makes the checksum cover exactly what a reader copies;
   * nothing else writes an extent that no pointer names yet (the shard's lock is held).
   */
  public long writeExtent(long addr, int incarnation, byte[] key, ByteBuffer value) {
    MappedRegion r = region((int) (addr >>> 32));
    UnsafeBuffer b = r.buffer();
    int at = (int) (addr & 0xFFFFFFFFL);
    int valueLength = value.remaining();
    int length = Extents.HEADER + key.length + valueLength;
    b.putInt(at, incarnation, ByteOrder.LITTLE_ENDIAN);
    b.putInt(at + 4, key.length, ByteOrder.LITTLE_ENDIAN);
    b.putInt(at + 8, valueLength, ByteOrder.LITTLE_ENDIAN);
    b.putInt(at + Extents.CURRENT, 0, ByteOrder.LITTLE_ENDIAN);
    b.putBytes(at + Extents.HEADER, key);
    b.putBytes(at + Extents.HEADER + key.length, value, value.position(), valueLength);
    long sum = Checksum64.of(b.byteBuffer(), at, length);
    Reference.reachabilityFence(r);
    return sum;
  }

  /** Marks the extent at {@code addr} freed: its incarnation word 0 (plain; no allocation). */
  public void markFreed(long addr) {
    MappedRegion r = region((int) (addr >>> 32));
    r.buffer().putInt((int) (addr & 0xFFFFFFFFL), 0, ByteOrder.LITTLE_ENDIAN);
    Reference.reachabilityFence(r);
  }

  /**
   * Sets the current word of the extent at {@code addr} to its {@code incarnation} (release): the
   * pointer to it is published, and it is its key's value ({@link
   * io.ferrite.kernel.extent.Extents}).
   */
  public void markCurrent(long addr, int incarnation) {
    region((int) (addr >>> 32)).putIntRelease((addr & 0xFFFFFFFFL) + Extents.CURRENT, incarnation);
  }

  /**
   * Clears the current word of the extent at {@code addr} (full fence after): it is about to stop
   * being its key's value. Before the pointer to it changes.
   */
  public void clearCurrent(long addr) {
    region((int) (addr >>> 32)).putIntRelease((addr & 0xFFFFFFFFL) + Extents.CURRENT, 0);
    VarHandle.fullFence();
  }

  public long usedBytes() {
    return usedBytes;
  }

  public long freeBytes() {
    return freeBytes;
  }
}
