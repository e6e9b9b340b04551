package io.ferrite.apps.rsort;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The sortbenchmark.org record (gensort/valsort): 100 bytes, a 10-byte key first, compared as an
 * unsigned big-endian number. Keys are read as two words: {@code hi}, the first 8 bytes as a
 * big-endian long (compared unsigned), and {@code lo}, bytes 8-9.
 */
public final class Records {
  private Records() {}

  /** Bytes per record. */
  public static final int RECORD = 100;

  /** Bytes of the key at the start of each record. */
  public static final int KEY = 10;

  /** Largest number of records one direct buffer holds (2 GiB - 1, rounded down to records). */
  public static final int MAX_BUFFER_RECORDS = Integer.MAX_VALUE / RECORD;

  /** {@code buf} seen big-endian, as keys are compared (a duplicate: position and limit free). */
  static ByteBuffer bigEndian(ByteBuffer buf) {
    return buf.duplicate().order(ByteOrder.BIG_ENDIAN);
  }

  /** The first 8 key bytes of the record at byte {@code at} of a big-endian buffer. */
  static long hi(ByteBuffer be, int at) {
    return be.getLong(at);
  }

  /** Key bytes 8 and 9 of the record at byte {@code at}, as an unsigned 16-bit value. */
  static int lo(ByteBuffer be, int at) {
    return be.getShort(at + 8) & 0xFFFF;
  }

  /** Compares the keys of the records at byte {@code a} and byte {@code b} (unsigned). */
  static int compare(ByteBuffer be, int a, ByteBuffer be2, int b) {
    int c = Long.compareUnsigned(hi(be, a), hi(be2, b));
    return c != 0 ? c : Integer.compare(lo(be, a), lo(be2, b));
  }

  /**
   * The key range (bucket) of a key whose first 8 bytes are {@code hi}, out of {@code buckets}
   * equal ranges of the key space: {@code floor(hi * buckets / 2^64)} with {@code hi} unsigned, so
   * bucket {@code j} holds keys below every key of bucket {@code j + 1} (RSort §V-C: the key range
   * of bucket j is defined globally).
   */
  static int bucketOf(long hi, int buckets) {
    // Unsigned multiply-high (Java 18 has Math.unsignedMultiplyHigh): the signed one, corrected
    // for a negative (i.e. >= 2^63 unsigned) hi; buckets is positive.
    return (int) (Math.multiplyHigh(hi, buckets) + ((hi >> 63) & buckets));
  }

  /**
   * {@code len} (1..63) bits of the 80-bit key of the record at byte {@code at}, starting {@code
   * off} bits from its most significant bit; bits past the key's end read as 0.
   */
  static long keyBits(ByteBuffer be, int at, int off, int len) {
    long h = hi(be, at);
    long l = (long) lo(be, at) << 48; // the key left-aligned in 128 bits: h then l
    long top;
    if (off == 0) {
      top = h;
    } else if (off < 64) {
      top = (h << off) | (l >>> (64 - off));
    } else {
      top = l << (off - 64);
    }
    return top >>> (64 - len);
  }
}
