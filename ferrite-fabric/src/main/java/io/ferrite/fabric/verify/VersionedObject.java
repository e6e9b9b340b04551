package io.ferrite.fabric.verify;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A fixed-size object that a one-sided reader can verify without any lock: the version at both ends
 * (Cell §4.2) plus a 64-bit checksum of version and payload (Pilaf §3.3), so that a torn read is
 * detected whatever order the fabric copied the bytes in.
 *
 * <pre>
 *  0           8                    8 + n          16 + n         24 + n
 *  +-----------+--------------------+--------------+--------------+
 *  | version   | payload (n bytes)  | checksum64   | version      |
 *  +-----------+--------------------+--------------+--------------+
 *  checksum64 = XXH3-64 over bytes [0, 8 + n)
 * </pre>
 *
 * A writer that updates the object in place with one one-sided write (or as a memcpy on the server)
 * needs no other protocol: a reader accepts a copy only if both versions agree and the checksum
 * matches, else it retries. Little-endian.
 */
public final class VersionedObject {
  /** Bytes added to the payload: two versions and the checksum. */
  public static final int OVERHEAD = 24;

  /** What {@link #verify} returns for a torn or corrupt copy. */
  public static final long TORN = -1;

  private VersionedObject() {}

  /** Total size of an object with {@code payloadLength} bytes of payload. */
  public static int size(int payloadLength) {
    return payloadLength + OVERHEAD;
  }

  /**
   * Encodes {@code version} (>= 0) and {@code payload} (position to limit, unchanged) into {@code
   * dst} at {@code dst}'s position; the position is unchanged.
   */
  public static void encode(long version, ByteBuffer payload, ByteBuffer dst) {
    if (version < 0) {
      throw new IllegalArgumentException("version: " + version + " (expected: >= 0)");
    }
    int n = payload.remaining();
    int at = dst.position();
    ByteBuffer d = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    d.putLong(at, version);
    d.put(at + 8, payload, payload.position(), n);
    d.putLong(at + 8 + n, Checksum64.of(d, at, 8 + n));
    d.putLong(at + 16 + n, version);
  }

  /**
   * Verifies a copy of an object with {@code payloadLength} bytes of payload at {@code src}'s
   * position; returns its version, or {@link #TORN} if the copy is torn or corrupt.
   */
  public static long verify(ByteBuffer src, int payloadLength) {
    int at = src.position();
    ByteBuffer s = src.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    long head = s.getLong(at);
    long tail = s.getLong(at + 16 + payloadLength);
    if (head != tail || head < 0) {
      return TORN;
    }
    long sum = s.getLong(at + 8 + payloadLength);
    if (sum != Checksum64.of(s, at, 8 + payloadLength)) {
      return TORN;
    }
    return head;
  }
}
