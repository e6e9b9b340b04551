package io.ferrite.apps.rsort;

import java.nio.ByteBuffer;

/**
 * Generates sortbenchmark records in gensort's binary layout (gensort 1.5, {@code gen_rec}):
 *
 * <pre>
 * bytes  0-9   key: the high 80 bits of the record's 128 random bits
 * bytes 10-11  0x00 0x11
 * bytes 12-43  the record number as 32 upper-case hex digits (128 bits, big-endian)
 * bytes 44-47  0x88 0x99 0xAA 0xBB
 * bytes 48-95  filler: the low 48 random bits as 12 hex digits, each repeated 4 times
 * bytes 96-99  0xCC 0xDD 0xEE 0xFF
 * </pre>
 *
 * gensort draws the 128 random bits from a 128-bit LCG that skips ahead to a start record; here
 * they come from a seeded counter-based generator (SplitMix64 finalizers over {@code seed} and the
 * record number), so any worker makes any record from its index alone, in parallel, and the same
 * seed always gives the same records. Layout-compatible with gensort (valsort accepts the files)
 * but not byte-identical to gensort's data.
 */
public final class RecordGenerator {
  private RecordGenerator() {}

  private static final long GAMMA = 0x9E3779B97F4A7C15L;
  private static final byte[] HEX = {
    '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'A', 'B', 'C', 'D', 'E', 'F'
  };

  /** Records per staging batch of {@link #generate}. */
  private static final int BATCH = 10_000;

  /** SplitMix64's output function (Steele, Lea, Flood 2014): a bijection that mixes all bits. */
  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** The high 64 of record {@code index}'s 128 random bits. */
  static long randomHi(long seed, long index) {
    return mix(mix(seed) + (2 * index + 1) * GAMMA);
  }

  /** The low 64 of record {@code index}'s 128 random bits. */
  static long randomLo(long seed, long index) {
    return mix(mix(seed) + (2 * index + 2) * GAMMA);
  }

  /** Writes record {@code index} of the data set {@code seed} at {@code b[o..o+100)}. */
  public static void record(long seed, long index, byte[] b, int o) {
    long hi = randomHi(seed, index);
    long lo = randomLo(seed, index);
    for (int i = 0; i < 8; i++) {
      b[o + i] = (byte) (hi >>> (56 - 8 * i));
    }
    b[o + 8] = (byte) (lo >>> 56);
    b[o + 9] = (byte) (lo >>> 48);
    b[o + 10] = 0x00;
    b[o + 11] = 0x11;
    // The 128-bit record number: the high 64 bits are 0 (no data set has 2^64 records).
    for (int i = 0; i < 16; i++) {
      b[o + 12 + i] = '0';
      b[o + 28 + i] = HEX[(int) ((index >>> (60 - 4 * i)) & 0xF)];
    }
    b[o + 44] = (byte) 0x88;
    b[o + 45] = (byte) 0x99;
    b[o + 46] = (byte) 0xAA;
    b[o + 47] = (byte) 0xBB;
    for (int i = 0; i < 12; i++) {
      byte d = HEX[(int) ((lo >>> (44 - 4 * i)) & 0xF)];
      int at = o + 48 + 4 * i;
      b[at] = d;
      b[at + 1] = d;
      b[at + 2] = d;
      b[at + 3] = d;
    }
    b[o + 96] = (byte) 0xCC;
    b[o + 97] = (byte) 0xDD;
    b[o + 98] = (byte) 0xEE;
    b[o + 99] = (byte) 0xFF;
  }

  /**
   * Writes records {@code [first, first + count)} of data set {@code seed} into {@code dst} from
   * byte {@code at} (absolute; the buffer's position and limit are ignored).
   */
  public static void generate(long seed, long first, int count, ByteBuffer dst, int at) {
    byte[] batch = new byte[Math.min(count, BATCH) * Records.RECORD];
    int done = 0;
    while (done < count) {
      int n = Math.min(count - done, BATCH);
      for (int i = 0; i < n; i++) {
        record(seed, first + done + i, batch, i * Records.RECORD);
      }
      dst.put(at + done * Records.RECORD, batch, 0, n * Records.RECORD);
      done += n;
    }
  }
}
