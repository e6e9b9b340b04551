package io.ferrite.kv;

import static io.ferrite.kernel.proto.LittleEndian.getInt;
import static io.ferrite.kernel.proto.LittleEndian.getLong;
import static io.ferrite.kernel.proto.LittleEndian.getU16;
import static io.ferrite.kernel.proto.LittleEndian.putInt;
import static io.ferrite.kernel.proto.LittleEndian.putLong;

import io.ferrite.fabric.verify.Checksum64;
import java.util.Arrays;

/**
 * The memory layout of one hopscotch shard (FaRM §3.6, "chained associative hopscotch hashing"),
 * shared by the server that writes it and the clients that read it one-sided. Every method works on
 * a {@code byte[]} copy the way a client holds it; the server builds images the same way and copies
 * them into its region.
 *
 * <h2>Bucket region</h2>
 *
 * <pre>
 *  0        8        16        24          32       40       64
 *  +--------+--------+---------+-----------+--------+-- ... --+----------+----------+-- ... --+
 *  | magic  | epoch  | buckets | slotBytes | lease  | (resvd) | bucket 0 | bucket 1 |   ...   | bucket n
 *  +--------+--------+---------+-----------+--------+-- ... --+----------+----------+-- ... --+
 * </pre>
 *
 * A key hashes to a home bucket {@code b} in {@code [0, buckets)} and is always in bucket {@code
 * b}, bucket {@code b + 1} (its <i>neighbourhood</i>, read with one one-sided read) or {@code b}'s
 * overflow chain. Bucket {@code n = buckets} exists only as the second half of {@code n - 1}'s
 * neighbourhood, so a neighbourhood never wraps. {@code epoch} is the layout epoch: the server
 * bumps it when what clients cache changes (a new extent region, a resize). {@code lease} is the
 * server's lease word ({@link ShardLayout#LEASE_OFFSET}, replicated shards only).
 *
 * <h2>Bucket ({@link #bucketBytes}: 40 + 4 × slotBytes)</h2>
 *
 * <pre>
 *  0                 8                 12                16                                   32
 *  +-----------------+-----------------+-----------------+------------------------------------+
 *  | version u64     | back joint u32  | fwd joint u32   | overflow: fat pointer (16 B)       |
 *  +-----------------+-----------------+-----------------+------------------------------------+
 *  32                                                              32 + 4s        40 + 4s
 *  +------------+------------+------------+------------+------------+
 *  | slot 0     | slot 1     | slot 2     | slot 3     | XXH3-64 of [0, 32 + 4s)
 *  +------------+------------+------------+------------+------------+
 * </pre>
 *
 * <ul>
 *   <li><b>version</b>: a sequence lock. The server makes it odd, writes the rest, then makes it
 *       even (release between each step); {@link #MOVED} marks a bucket of an array replaced by a
 *       resize. The checksum covers the version and everything else, so a copy is accepted only if
 *       its version is even and its checksum matches, whatever order the fabric copied the bytes in
 *       (a plain memcpy or a socket send gives no order, unlike FaRM's cache-line-ordered DMA).
 *   <li><b>joint versions</b> (FaRM Figure 9): {@code fwd} of bucket b and {@code back} of bucket b
 *       + 1 count the moves between the two buckets; a neighbourhood copy is consistent only if
 *       {@code fwd(b) == back(b + 1)}. A move writes b + 1 (key added, back + 1) and then b (key
 *       removed, fwd + 1), so a copy that mixes the two buckets from either side of a move fails.
 *   <li><b>overflow</b>: the head of b's chain of overflow blocks, or zero.
 * </ul>
 *
 * <h2>Fat pointer (16 B; FaRM's 128-bit fat pointers)</h2>
 *
 * <pre>
 *  | offset u32 | region # u16 | 0 u16 | incarnation u64 |
 * </pre>
 *
 * <h2>Overflow block ({@link #blockBytes}: 40 + 2 × slotBytes, in an extent region)</h2>
 *
 * <pre>
 *  | version u64 | incarnation u64 | next: fat pointer (16 B) | slot 0 | slot 1 | XXH3-64 |
 * </pre>
 *
 * The version and checksum work as in a bucket. The incarnation must equal the pointer's: the
 * server increments it when a key moves out of the block (to a bucket slot freed by a delete) and
 * when the block is freed, so a reader that followed an old pointer restarts instead of missing a
 * key. Blocks are type-stable: a freed block is only ever reused as a block.
 *
 * <h2>Slot ({@code slotBytes} = 8 + inline bytes, rounded up to 8)</h2>
 *
 * <pre>
 *  0            2       3     4              8
 *  +------------+-------+-----+--------------+---------------------------------------------+
 *  | key len u16| flags | 0   | value len u32| inline: key, value                          |
 *  +------------+-------+-----+--------------+---------------------------------------------+
 *                                             out of line (flag 2):
 *                                             8  key hash u64 (XXH3-64 of the key)
 *                                             16 extent offset u32 | region # u16 | 0 u16
 *                                             24 extent length u32 | incarnation u32
 *                                             32 extent checksum u64 (XXH3-64 of the extent)
 * </pre>
 *
 * An empty slot has flags 0. Pairs whose key plus value fit the table's inline bytes live in the
 * slot; larger ones in an {@link Extents extent}, whose incarnation is the slot's, unique in the
 * shard (0 once freed); the slot's checksum covers the extent (Pilaf's self-verifying pointer). All
 * words little-endian.
 */
public final class HopscotchLayout {
  public static final long MAGIC = 0x46524B56484F5053L; // "SPOHVKRF"
  public static final int HEADER = 64;
  public static final int EPOCH_OFFSET = 8;
  public static final int BUCKETS_OFFSET = 16;
  public static final int SLOT_BYTES_OFFSET = 24;

  /** Slots per bucket (FaRM: H/2 with a neighbourhood of H = 8 slots). */
  public static final int BUCKET_SLOTS = 4;

  /** Slots per overflow block (FaRM: "currently two"). */
  public static final int BLOCK_SLOTS = 2;

  public static final int BUCKET_HEADER = 32;
  public static final int VERSION = 0;
  public static final int BACK_JOINT = 8;
  public static final int FWD_JOINT = 12;
  public static final int OVERFLOW = 16;
  public static final int INCARNATION = 8;
  public static final int NEXT = 16;
  public static final int FAT_POINTER = 16;

  public static final int SLOT_HEADER = 8;
  public static final int FLAG_USED = 1;
  public static final int FLAG_OUT_OF_LINE = 2;

  /** Inline bytes a slot holds at least (an out-of-line slot needs 32 after its header). */
  public static final int MIN_INLINE = 32;

  /** Inline bytes a slot holds at most. */
  public static final int MAX_INLINE = 4096;

  /** The version of a bucket of an array a resize replaced: refetch the layout. */
  public static final long MOVED = -1L;

  private static final long HOME_SALT = 0x4CF5AD432745937FL;

  private HopscotchLayout() {}

  // ------------------------------------------------------------------ geometry

  /** Bytes of a slot holding {@code inline} bytes of key plus value. */
  public static int slotBytes(int inline) {
    return SLOT_HEADER + ((inline + 7) & ~7);
  }

  public static int bucketBytes(int slotBytes) {
    return BUCKET_HEADER + BUCKET_SLOTS * slotBytes + 8;
  }

  public static int blockBytes(int slotBytes) {
    return BUCKET_HEADER + BLOCK_SLOTS * slotBytes + 8;
  }

  /** Home buckets of a shard of {@code slots} slots (at least 1). */
  public static int bucketsFor(int slots) {
    return Math.max(1, (slots + BUCKET_SLOTS - 1) / BUCKET_SLOTS);
  }

  /** Bytes of the bucket region: the header, {@code buckets} home buckets and the tail bucket. */
  public static long regionLength(int buckets, int inline) {
    return HEADER + (long) (buckets + 1) * bucketBytes(slotBytes(inline));
  }

  public static long bucketOffset(int bucket, int bucketBytes) {
    return HEADER + (long) bucket * bucketBytes;
  }

  /** The home bucket of a key hash among {@code buckets}. */
  public static int home(long hash, int buckets) {
    return (int) Long.remainderUnsigned(KeyHash.mix(hash ^ HOME_SALT), buckets);
  }

  // ------------------------------------------------------------------ verification

  /** What {@link #check} found in a copy of a bucket or block. */
  public enum Check {
    OK,
    /** Being written, or torn: read again. */
    TORN,
    /** The array was replaced by a resize: fetch the layout again. */
    MOVED
  }

  /**
   * Checks the copy of a bucket (or block, with its own length) at {@code at}: not {@link #MOVED},
   * an even version and a matching checksum.
   */
  public static Check check(byte[] b, int at, int length) {
    long v = getLong(b, at + VERSION);
    if (v == MOVED) {
      return Check.MOVED;
    }
    if ((v & 1) != 0) {
      return Check.TORN;
    }
    int body = length - 8;
    return getLong(b, at + body) == Checksum64.of(b, at, body) ? Check.OK : Check.TORN;
  }

  /**
   * Checks a neighbourhood copy (bucket b then bucket b + 1, {@code bucketBytes} each): both whole
   * ({@link #check}) and consistent with each other, {@code fwd(b) == back(b + 1)} (FaRM Figure 9:
   * no move between the two buckets happened between the copies of the two).
   */
  public static Check verifyNeighbourhood(byte[] nb, int bucketBytes) {
    return verifyNeighbourhood(nb, 0, bucketBytes);
  }

  /** As {@link #verifyNeighbourhood(byte[], int)}, for a copy at {@code at} of {@code nb}. */
  public static Check verifyNeighbourhood(byte[] nb, int at, int bucketBytes) {
    Check c0 = check(nb, at, bucketBytes);
    Check c1 = check(nb, at + bucketBytes, bucketBytes);
    if (c0 == Check.MOVED || c1 == Check.MOVED) {
      return Check.MOVED;
    }
    if (c0 != Check.OK || c1 != Check.OK || fwdJoint(nb, at) != backJoint(nb, at + bucketBytes)) {
      return Check.TORN;
    }
    return Check.OK;
  }

  /**
   * Checks an overflow block copy reached through a fat pointer of {@code incarnation}: whole, and
   * still that incarnation (not freed, and no pair moved out of it since the pointer was read).
   */
  public static Check verifyBlock(byte[] block, int blockBytes, long incarnation) {
    return check(block, 0, blockBytes) == Check.OK && getLong(block, INCARNATION) == incarnation
        ? Check.OK
        : Check.TORN;
  }

  /** Writes the checksum of the image at {@code at} of {@code length} bytes into its last word. */
  public static void seal(byte[] b, int at, int length) {
    putLong(b, at + length - 8, Checksum64.of(b, at, length - 8));
  }

  public static int backJoint(byte[] b, int bucketAt) {
    return getInt(b, bucketAt + BACK_JOINT);
  }

  public static int fwdJoint(byte[] b, int bucketAt) {
    return getInt(b, bucketAt + FWD_JOINT);
  }

  // ------------------------------------------------------------------ fat pointers

  /** Whether the fat pointer at {@code at} is null (no block). */
  public static boolean isNull(byte[] b, int at) {
    return getLong(b, at) == 0 && getLong(b, at + 8) == 0;
  }

  public static int pointerOffset(byte[] b, int at) {
    return getInt(b, at);
  }

  public static int pointerRegion(byte[] b, int at) {
    return getU16(b, at + 4);
  }

  public static long pointerIncarnation(byte[] b, int at) {
    return getLong(b, at + 8);
  }

  /** Encodes a fat pointer to the block at address {@code region << 32 | offset}. */
  public static void putPointer(byte[] b, int at, long addr, long incarnation) {
    putLong(b, at, (addr & 0xFFFFFFFFL) | ((addr >>> 32) & 0xFFFF) << 32);
    putLong(b, at + 8, incarnation);
  }

  public static void putNullPointer(byte[] b, int at) {
    putLong(b, at, 0);
    putLong(b, at + 8, 0);
  }

  // ------------------------------------------------------------------ slots

  public static int flags(byte[] b, int slotAt) {
    return b[slotAt + 2] & 0xFF;
  }

  public static boolean used(byte[] b, int slotAt) {
    return (flags(b, slotAt) & FLAG_USED) != 0;
  }

  public static boolean outOfLine(byte[] b, int slotAt) {
    return (flags(b, slotAt) & FLAG_OUT_OF_LINE) != 0;
  }

  public static int keyLength(byte[] b, int slotAt) {
    return getU16(b, slotAt);
  }

  public static int valueLength(byte[] b, int slotAt) {
    return getInt(b, slotAt + 4);
  }

  public static long keyHash(byte[] b, int slotAt) {
    return getLong(b, slotAt + 8);
  }

  public static int extentOffset(byte[] b, int slotAt) {
    return getInt(b, slotAt + 16);
  }

  public static int extentRegion(byte[] b, int slotAt) {
    return getU16(b, slotAt + 20);
  }

  public static int extentLength(byte[] b, int slotAt) {
    return getInt(b, slotAt + 24);
  }

  public static int extentIncarnation(byte[] b, int slotAt) {
    return getInt(b, slotAt + 28);
  }

  public static long extentChecksum(byte[] b, int slotAt) {
    return getLong(b, slotAt + 32);
  }

  /**
   * Whether the verified slot copy at {@code slotAt} (of a table with {@code slotBytes}) is in use
   * and names {@code key}: an inline slot by its bytes, an out-of-line slot by the key's hash (the
   * extent then confirms the key).
   */
  public static boolean slotMatches(byte[] b, int slotAt, int slotBytes, byte[] key, long hash) {
    int f = flags(b, slotAt);
    if ((f & FLAG_USED) == 0 || keyLength(b, slotAt) != key.length) {
      return false;
    }
    if ((f & FLAG_OUT_OF_LINE) != 0) {
      return keyHash(b, slotAt) == hash;
    }
    int from = slotAt + SLOT_HEADER;
    if ((long) key.length + valueLength(b, slotAt) > slotBytes - SLOT_HEADER) {
      return false; // corrupt lengths: never index past the slot
    }
    return Arrays.equals(b, from, from + key.length, key, 0, key.length);
  }

  /** The value of a verified inline slot copy that matched. */
  public static byte[] inlineValue(byte[] b, int slotAt) {
    int from = slotAt + SLOT_HEADER + keyLength(b, slotAt);
    return Arrays.copyOfRange(b, from, from + valueLength(b, slotAt));
  }

  /** Encodes an inline slot at {@code slotAt}; the rest of the slot is zeroed. */
  public static void putInlineSlot(byte[] b, int slotAt, int slotBytes, byte[] key, byte[] value) {
    Arrays.fill(b, slotAt, slotAt + slotBytes, (byte) 0);
    slotHeader(b, slotAt, key.length, FLAG_USED, value.length);
    System.arraycopy(key, 0, b, slotAt + SLOT_HEADER, key.length);
    System.arraycopy(value, 0, b, slotAt + SLOT_HEADER + key.length, value.length);
  }

  /**
   * {@link #putInlineSlot(byte[], int, int, byte[], byte[])} with the value read from {@code
   * value}'s position to its limit (left as they are): no intermediate array.
   */
  public static void putInlineSlot(
      byte[] b, int slotAt, int slotBytes, byte[] key, java.nio.ByteBuffer value) {
    int valueLength = value.remaining();
    Arrays.fill(b, slotAt, slotAt + slotBytes, (byte) 0);
    slotHeader(b, slotAt, key.length, FLAG_USED, valueLength);
    System.arraycopy(key, 0, b, slotAt + SLOT_HEADER, key.length);
    value.get(value.position(), b, slotAt + SLOT_HEADER + key.length, valueLength);
  }

  /** Encodes an out-of-line slot: the key's hash and a pointer to the extent at {@code addr}. */
  public static void putOutOfLineSlot(
      byte[] b,
      int slotAt,
      int slotBytes,
      int keyLength,
      long hash,
      int valueLength,
      long addr,
      int extentLength,
      int incarnation,
      long checksum) {
    Arrays.fill(b, slotAt, slotAt + slotBytes, (byte) 0);
    slotHeader(b, slotAt, keyLength, FLAG_USED | FLAG_OUT_OF_LINE, valueLength);
    putLong(b, slotAt + 8, hash);
    putInt(b, slotAt + 16, (int) addr);
    putInt(b, slotAt + 20, (int) (addr >>> 32) & 0xFFFF);
    putInt(b, slotAt + 24, extentLength);
    putInt(b, slotAt + 28, incarnation);
    putLong(b, slotAt + 32, checksum);
  }

  private static void slotHeader(byte[] b, int at, int keyLength, int flags, int valueLength) {
    putInt(b, at, (keyLength & 0xFFFF) | (flags & 0xFF) << 16);
    putInt(b, at + 4, valueLength);
  }
}
