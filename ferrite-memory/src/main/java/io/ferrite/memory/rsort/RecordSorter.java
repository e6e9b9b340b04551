package io.ferrite.memory.rsort;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.ForkJoinPool;
import java.util.stream.IntStream;

/**
 * Sorts records in memory without a per-record object: one {@code long} per record packs the top
 * bits of its key above the record's index, {@link Arrays#parallelSort(long[])} sorts the longs,
 * and the records are then copied once, in key order, into the output buffer.
 *
 * <pre>
 *  63                        indexBits   0
 * +-----------------------------+---------+
 * | key bits [0, 64-indexBits)  |  index  |   xor 2^63, so the signed sort orders the key unsigned
 * +-----------------------------+---------+
 * </pre>
 *
 * With {@code n} records the index takes {@code ceil(log2 n)} bits, leaving at least 33 key bits (n
 * < 2^31). Records whose packed prefixes tie are re-sorted among themselves on the next key bits in
 * the same way, level after level, until the 80 key bits are used up; random keys tie rarely (10
 * million records: about 50 pairs), and a data set full of equal keys still sorts in O(n log n) per
 * level. Equal keys keep their input order (the index breaks the tie).
 *
 * <p>Key extraction and the copy run on the common fork-join pool in as many slices as it has
 * threads plus the caller; {@code parallelSort} uses that pool too (and sorts sequentially when its
 * parallelism is 1: RSort's worker JVMs get a parallelism of the machine's cores).
 */
public final class RecordSorter {
  private RecordSorter() {}

  private static final int KEY_BITS = Records.KEY * 8;

  /** Below this many records the work stays on the calling thread. */
  private static final int PARALLEL_THRESHOLD = 1 << 16;

  /** Timings of one {@link #sort}, in ns. */
  public record Timings(long keysNanos, long sortNanos, long permuteNanos) {}

  /**
   * Sorts the {@code n} records at the start of {@code src} into the start of {@code dst}. Neither
   * buffer's position, limit or byte order matters or changes.
   */
  public static Timings sort(ByteBuffer src, int n, ByteBuffer dst) {
    if (n < 0 || (long) n * Records.RECORD > src.capacity()) {
      throw new IllegalArgumentException(
          "records: " + n + " (expected: 0 to " + src.capacity() / Records.RECORD + ")");
    }
    if ((long) n * Records.RECORD > dst.capacity()) {
      throw new IllegalArgumentException(
          "output buffer: " + dst.capacity() + " B for " + n + " records");
    }
    ByteBuffer in = Records.bigEndian(src);
    int indexBits = Math.max(1, 64 - Long.numberOfLeadingZeros(Math.max(1, n - 1)));
    long t0 = System.nanoTime();
    long[] keys = keys(in, n, indexBits);
    long t1 = System.nanoTime();
    Arrays.parallelSort(keys);
    resolveTies(in, keys, 0, n, indexBits, 0);
    long t2 = System.nanoTime();
    permute(in, keys, indexBits, dst);
    long t3 = System.nanoTime();
    return new Timings(t1 - t0, t2 - t1, t3 - t2);
  }

  private static long[] keys(ByteBuffer in, int n, int indexBits) {
    long[] keys = new long[n];
    long prefixMask = -1L << indexBits;
    forSlices(
        n,
        (from, to) -> {
          for (int i = from; i < to; i++) {
            keys[i] = ((Records.hi(in, i * Records.RECORD) & prefixMask) | i) ^ Long.MIN_VALUE;
          }
        });
    return keys;
  }

  /**
   * Within {@code keys[from, to)}, sorted on key bits {@code [off, off + 64 - indexBits)}, finds
   * the runs that tie on those bits and orders each on the bits after them.
   */
  private static void resolveTies(
      ByteBuffer in, long[] keys, int from, int to, int indexBits, int off) {
    long prefixMask = -1L << indexBits;
    int i = from;
    while (i < to) {
      int j = i + 1;
      while (j < to && ((keys[j] ^ keys[i]) & prefixMask) == 0) {
        j++;
      }
      if (j - i > 1) {
        resolveRun(in, keys, i, j, indexBits, off + 64 - indexBits);
      }
      i = j;
    }
  }

  private static void resolveRun(
      ByteBuffer in, long[] keys, int from, int to, int indexBits, int off) {
    if (off >= KEY_BITS) {
      return; // equal keys: already in index (input) order
    }
    long indexMask = (1L << indexBits) - 1;
    int bits = 64 - indexBits;
    for (int k = from; k < to; k++) {
      int idx = (int) (keys[k] & indexMask);
      long next = Records.keyBits(in, idx * Records.RECORD, off, bits);
      keys[k] = ((next << indexBits) | idx) ^ Long.MIN_VALUE;
    }
    Arrays.sort(keys, from, to);
    resolveTies(in, keys, from, to, indexBits, off);
  }

  private static void permute(ByteBuffer in, long[] keys, int indexBits, ByteBuffer dst) {
    long indexMask = (1L << indexBits) - 1;
    forSlices(
        keys.length,
        (from, to) -> {
          ByteBuffer out = dst.duplicate();
          for (int r = from; r < to; r++) {
            int idx = (int) (keys[r] & indexMask);
            out.put(r * Records.RECORD, in, idx * Records.RECORD, Records.RECORD);
          }
        });
  }

  /** A slice {@code [from, to)} of work. */
  @FunctionalInterface
  interface Slice {
    void run(int from, int to);
  }

  /** Runs {@code body} over {@code [0, n)} in slices on the common pool and the calling thread. */
  static void forSlices(int n, Slice body) {
    int parts = Math.min(ForkJoinPool.getCommonPoolParallelism() + 1, Math.max(1, n / 4096));
    if (n < PARALLEL_THRESHOLD || parts <= 1) {
      body.run(0, n);
      return;
    }
    IntStream.range(0, parts)
        .parallel()
        .forEach(p -> body.run((int) ((long) n * p / parts), (int) ((long) n * (p + 1) / parts)));
  }
}
