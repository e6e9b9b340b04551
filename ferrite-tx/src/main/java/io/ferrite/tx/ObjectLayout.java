package io.ferrite.tx;

import io.ferrite.fabric.verify.Checksum64;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A tx object in region memory: FaRM's layout (Figure 8) with one addition, a checksum.
 *
 * <pre>
 *  line 0   0        8             16           24                         64
 *           +--------+-------------+------------+--------------------------+
 *           | header | incarnation | checksum64 | payload [0, 40)          |
 *           +--------+-------------+------------+--------------------------+
 *  line k   64k      64k + 8                                           64k + 64
 *  (k >= 1) +--------+-------------------------------------------------------+
 *           | lineV  | payload [40 + 56(k-1), 40 + 56k)                       |
 *           +--------+-------------------------------------------------------+
 *  header   = LOCK (bit 63) | version (63 bits)
 *  lineV    = version, in every line after the first (FaRM's per-cache-line versions)
 *  checksum = XXH3-64 over version, incarnation and the whole payload capacity
 * </pre>
 *
 * <p>A one-sided read of the object is consistent when the lock bit is clear, every line version
 * equals the header's version and the checksum matches. FaRM needs no checksum: RDMA reads are
 * cache-line atomic on its hardware, so equal line versions prove that no line mixes two writes.
 * Ferrite's fabrics give no such guarantee (the shm fabric's copy is a plain Java memcpy, the tcp
 * fabric's a copy on the server, and the local fabric tears reads at half their length, which may
 * be inside a line), so a line could hold an old version word beside new data. The checksum closes
 * that hole (as {@link io.ferrite.fabric.verify.VersionedObject} does for Cell's versions) at the
 * cost of hashing the object on every verified read (XXH3: a few ns per 64 bytes).
 *
 * <p>The writer (the server applying a commit, only while it holds the object's lock) writes the
 * lines and the checksum with plain stores, then stores the new unlocked header with release
 * semantics; a reader's acquire of the header (or the fabric's copy) pairs with it.
 */
public final class ObjectLayout {
  /** Cache line size. */
  public static final int LINE = 64;

  /** The lock bit of the header word. */
  public static final long LOCK = 1L << 63;

  /** Payload bytes in line 0 and in each later line. */
  public static final int FIRST_PAYLOAD = 40;

  public static final int LINE_PAYLOAD = 56;

  public static final int INCARNATION = 8;
  public static final int CHECKSUM = 16;

  /** What {@link #verify} returns for a copy that is locked, torn or corrupt: read again. */
  public static final long RETRY = -1;

  /** What {@link #verify} returns for a consistent copy of another incarnation: freed. */
  public static final long FREED = -2;

  private ObjectLayout() {}

  /** The lines an object of {@code size} payload bytes takes: its size class. */
  public static int lines(int size) {
    return size <= FIRST_PAYLOAD ? 1 : 1 + (size - FIRST_PAYLOAD + LINE_PAYLOAD - 1) / LINE_PAYLOAD;
  }

  /** The payload capacity of an object of {@code lines} lines. */
  public static int capacity(int lines) {
    return FIRST_PAYLOAD + (lines - 1) * LINE_PAYLOAD;
  }

  /** The byte of the payload's {@code i}-th byte within the object. */
  static int payloadByte(int i) {
    return i < FIRST_PAYLOAD
        ? 24 + i
        : LINE * (1 + (i - FIRST_PAYLOAD) / LINE_PAYLOAD) + 8 + (i - FIRST_PAYLOAD) % LINE_PAYLOAD;
  }

  /**
   * The object image of {@code lines} lines holding {@code payload} (shorter is zero-padded), at
   * {@code version} (unlocked) and {@code incarnation}: what the server writes, header last.
   */
  public static ByteBuffer encode(int lines, long version, long incarnation, byte[] payload) {
    int cap = capacity(lines);
    if (payload.length > cap) {
      throw new IllegalArgumentException(
          "payload: " + payload.length + " bytes (expected: <= " + cap + ")");
    }
    ByteBuffer b = ByteBuffer.allocate(lines * LINE).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(0, version);
    b.putLong(INCARNATION, incarnation);
    for (int k = 1; k < lines; k++) {
      b.putLong(k * LINE, version);
    }
    for (int i = 0; i < payload.length; i++) {
      b.put(payloadByte(i), payload[i]);
    }
    b.putLong(CHECKSUM, checksum(b, lines));
    return b;
  }

  /**
   * Checks a copy of an object of {@code lines} lines expected at {@code incarnation}: its version
   * if consistent and of that incarnation, {@link #RETRY} if locked or torn, {@link #FREED} if
   * consistent but of another incarnation. The copy is at position 0 of {@code copy}.
   */
  public static long verify(ByteBuffer copy, int lines, long incarnation) {
    ByteBuffer b = copy.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    long header = b.getLong(0);
    if ((header & LOCK) != 0) {
      return RETRY;
    }
    for (int k = 1; k < lines; k++) {
      if (b.getLong(k * LINE) != header) {
        return RETRY;
      }
    }
    if (b.getLong(CHECKSUM) != checksum(b, lines)) {
      return RETRY;
    }
    return b.getLong(INCARNATION) == incarnation ? header : FREED;
  }

  /** Whether the header word of a copy has the lock bit set. */
  public static boolean locked(ByteBuffer copy) {
    return (copy.duplicate().order(ByteOrder.LITTLE_ENDIAN).getLong(0) & LOCK) != 0;
  }

  /** The first {@code size} payload bytes of a verified copy. */
  public static byte[] payload(ByteBuffer copy, int size) {
    byte[] out = new byte[size];
    // One bulk copy per line (a byte loop cost 1 us for 600 bytes, 25x the read itself).
    copy.get(24, out, 0, Math.min(size, FIRST_PAYLOAD));
    for (int at = FIRST_PAYLOAD, k = 1; at < size; at += LINE_PAYLOAD, k++) {
      copy.get(k * LINE + 8, out, at, Math.min(LINE_PAYLOAD, size - at));
    }
    return out;
  }

  /**
   * XXH3 over version, incarnation and every payload byte (line versions excluded: they are checked
   * against the header). Gathers the payload into one array first: one hash call.
   */
  private static long checksum(ByteBuffer b, int lines) {
    int cap = capacity(lines);
    byte[] all = new byte[16 + cap];
    ByteBuffer a = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
    a.putLong(0, b.getLong(0));
    a.putLong(8, b.getLong(INCARNATION));
    b.get(24, all, 16, FIRST_PAYLOAD);
    for (int k = 1; k < lines; k++) {
      b.get(k * LINE + 8, all, 16 + FIRST_PAYLOAD + (k - 1) * LINE_PAYLOAD, LINE_PAYLOAD);
    }
    return Checksum64.of(all);
  }
}
