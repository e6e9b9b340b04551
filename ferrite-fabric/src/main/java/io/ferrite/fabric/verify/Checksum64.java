package io.ferrite.fabric.verify;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import net.openhft.hashing.LongHashFunction;
import org.agrona.BufferUtil;

/**
 * The 64-bit checksum of every self-verifying structure: XXH3-64 with seed 0. Never CRC-32: with
 * billions of reads a 32-bit check lets torn data through (Pilaf §3.3).
 */
public final class Checksum64 {
  private static final LongHashFunction XX3 = LongHashFunction.xx3();

  private Checksum64() {}

  /** Checksum of {@code buf} from {@code offset} for {@code length} bytes (position ignored). */
  public static long of(ByteBuffer buf, int offset, int length) {
    if (offset < 0 || length < 0 || offset > buf.capacity() - length) {
      throw new IndexOutOfBoundsException(
          "offset: " + offset + ", length: " + length + " (capacity " + buf.capacity() + ")");
    }
    if (buf.isDirect()) {
      // Hash the memory by address: the library's ByteBuffer path needs sun.nio.ch exported.
      try {
        return XX3.hashMemory(BufferUtil.address(buf) + offset, length);
      } finally {
        Reference.reachabilityFence(buf);
      }
    }
    if (buf.hasArray()) {
      return XX3.hashBytes(buf.array(), buf.arrayOffset() + offset, length);
    }
    byte[] copy = new byte[length];
    buf.get(offset, copy);
    return XX3.hashBytes(copy);
  }

  public static long of(byte[] bytes, int offset, int length) {
    return XX3.hashBytes(bytes, offset, length);
  }

  public static long of(byte[] bytes) {
    return XX3.hashBytes(bytes);
  }
}
