package io.ferrite.kv;

import io.ferrite.fabric.verify.Checksum64;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The memory layout of one Pilaf shard (Pilaf §3.2, Figure 4/5), shared by the server that writes
 * it and the clients that read it one-sided.
 *
 * <h2>Entry region</h2>
 *
 * <pre>
 *  0        8        16       24       32       40       64
 *  +--------+--------+--------+--------+--------+-- ... --+----------------+----
 *  | magic  | epoch  | moves  | slots  | lease  | (resvd) | entry 0 (32 B) | entry 1 ...
 *  +--------+--------+--------+--------+--------+-- ... --+----------------+----
 * </pre>
 *
 * {@code lease} is the server's lease word ({@link ShardLayout#LEASE_OFFSET}, replicated shards
 * only). {@code epoch} is the layout epoch: the server bumps it (release) when the layout clients
 * cached changes, e.g. a new extent region; a client that sees another epoch fetches the layout
 * again. {@code moves} is a sequence counter around every cuckoo displacement (odd while keys
 * move); a client confirms a miss by reading it before and after its three entries, in one batch.
 *
 * <h2>Entry (32 bytes): a root object with its own checksum, holding a self-verifying pointer</h2>
 *
 * <pre>
 *  0                 4          6          8                 12                16
 *  +-----------------+----------+----------+-----------------+-----------------+
 *  | extent length   | region # | flags    | extent offset   | key tag         |
 *  +-----------------+----------+----------+-----------------+-----------------+
 *  16                                      24                                  32
 *  +---------------------------------------+-----------------------------------+
 *  | extent checksum (XXH3-64 of extent)   | entry checksum (XXH3-64 of 0..24) |
 *  +---------------------------------------+-----------------------------------+
 * </pre>
 *
 * An empty entry is 32 zero bytes. Anything else must verify, or the copy is torn. An entry whose
 * flags are {@code MOVED} (2), checksummed like any other, belongs to an entry array a resize
 * replaced: the reader fetches the layout again.
 *
 * <h2>Extent (in an extent region)</h2>
 *
 * The {@link Extents} both layouts share: an incarnation, the key and value lengths, a current
 * word, the key, the value. The entry's extent checksum covers all but the current word.
 *
 * <p>All words little-endian.
 */
public final class PilafLayout {
  public static final long MAGIC = 0x46524B565049414CL; // "LAIPVKRF"
  public static final int HEADER = 64;
  public static final int EPOCH_OFFSET = 8;
  public static final int MOVES_OFFSET = 16;
  public static final int SLOTS_OFFSET = 24;
  public static final int ENTRY = 32;
  public static final int FLAG_IN_USE = 1;
  public static final int FLAG_MOVED = 2;

  private PilafLayout() {}

  /** Byte offset of {@code slot}'s entry in the entry region. */
  public static long entryOffset(int slot) {
    return HEADER + (long) slot * ENTRY;
  }

  /** Size of the entry region of a shard with {@code slots} entries. */
  public static long entryRegionLength(int slots) {
    return HEADER + (long) slots * ENTRY;
  }

  /** A decoded entry; {@code null} from {@link #decode} means torn. */
  public record Entry(int length, int region, int flags, int offset, int tag, long checksum) {
    public static final Entry EMPTY = new Entry(0, 0, 0, 0, 0, 0);
    public static final Entry MOVED = new Entry(0, 0, FLAG_MOVED, 0, 0, 0);

    public boolean inUse() {
      return (flags & FLAG_IN_USE) != 0;
    }

    /** The entry array was replaced by a resize: fetch the layout again. */
    public boolean moved() {
      return (flags & FLAG_MOVED) != 0;
    }
  }

  /** Encodes the entry that marks a slot of a replaced entry array. */
  public static void encodeMoved(ByteBuffer dst, int at) {
    ByteBuffer d = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    d.putLong(at, 0);
    d.putLong(at + 8, 0);
    d.putLong(at + 16, 0);
    d.putShort(at + 6, (short) FLAG_MOVED);
    d.putLong(at + 24, Checksum64.of(d, at, 24));
  }

  /** Encodes an in-use entry into {@code dst} at {@code at}. */
  public static void encode(
      ByteBuffer dst, int at, int length, int region, int offset, int tag, long sum) {
    ByteBuffer d = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    d.putInt(at, length);
    d.putShort(at + 4, (short) region);
    d.putShort(at + 6, (short) FLAG_IN_USE);
    d.putInt(at + 8, offset);
    d.putInt(at + 12, tag);
    d.putLong(at + 16, sum);
    d.putLong(at + 24, Checksum64.of(d, at, 24));
  }

  /**
   * Verifies and decodes the entry copy at {@code at}: {@link Entry#EMPTY} for an empty entry, the
   * entry if its checksum matches, or {@code null} for a torn or corrupt copy (Pilaf §3.3: retry).
   */
  public static Entry decode(ByteBuffer src, int at) {
    ByteBuffer s = src.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    long w0 = s.getLong(at);
    long w1 = s.getLong(at + 8);
    long w2 = s.getLong(at + 16);
    long w3 = s.getLong(at + 24);
    if ((w0 | w1 | w2 | w3) == 0) {
      return Entry.EMPTY;
    }
    if (w3 != Checksum64.of(s, at, 24)) {
      return null;
    }
    int flags = s.getShort(at + 6) & 0xFFFF;
    if (flags == FLAG_MOVED) {
      return Entry.MOVED;
    }
    if (flags != FLAG_IN_USE) {
      return null;
    }
    return new Entry(
        s.getInt(at), s.getShort(at + 4) & 0xFFFF, flags, s.getInt(at + 8), s.getInt(at + 12), w2);
  }
}
