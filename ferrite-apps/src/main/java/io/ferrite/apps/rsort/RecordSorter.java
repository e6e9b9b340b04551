package io.ferrite.apps.rsort;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.ForkJoinPool;
import java.util.stream.IntStream;

/**
 * Sorts records in memory without a per-record object: one {@code long} per record packs the top
 * bits of its key above the record's index, {@link Arrays#parallelSort(long[])} sorts the longs,
 * and the records are then copied once, in key order, to the output.
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
 * <p>Key extraction and the copy run in as many slices as the common fork-join pool is wide; {@code
 * parallelSort} uses that pool too. RSort starts its JVMs with a pool as wide as the cores they
 * share: the single-JVM reference gets all of them, each of W workers 1/W.
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
    if ((long) n * Records.RECORD > dst.capacity()) {
      throw new IllegalArgumentException(
          "output buffer: " + dst.capacity() + " B for " + n + " records");
    }
    long t0 = System.nanoTime();
    Keys keys = new Keys(src, n);
    forSlices(n, keys.parts, keys::extract);
    long t1 = System.nanoTime();
    keys.sort();
    long t2 = System.nanoTime();
    keys.permute(dst);
    long t3 = System.nanoTime();
    return new Timings(t1 - t0, t2 - t1, t3 - t2);
  }

  /**
   * The packed keys of {@code n} records held in a buffer: {@link #extract} them (all at once, or
   * piece by piece as the records arrive), {@link #sort}, then {@link #permute} the records.
   */
  public static final class Keys {
    private final ByteBuffer in;
    private final int n;
    private final int indexBits;
    private final long[] keys;
    private final int parts;

    /** For the {@code n} records at the start of {@code src}. */
    public Keys(ByteBuffer src, int n) {
      this(src, n, parts(n));
    }

    /** As {@link #Keys(ByteBuffer, int)}, permuting in {@code parts} slices (tests). */
    Keys(ByteBuffer src, int n, int parts) {
      if (n < 0 || (long) n * Records.RECORD > src.capacity()) {
        throw new IllegalArgumentException(
            "records: " + n + " (expected: 0 to " + src.capacity() / Records.RECORD + ")");
      }
      this.in = Records.bigEndian(src);
      this.n = n;
      this.indexBits = Math.max(1, 64 - Long.numberOfLeadingZeros(Math.max(1, n - 1)));
      this.keys = new long[n];
      this.parts = parts;
    }

    /** Packs the keys of records {@code [from, to)}; slices may run in parallel. */
    public void extract(int from, int to) {
      long prefixMask = -1L << indexBits;
      for (int i = from; i < to; i++) {
        keys[i] = ((Records.hi(in, i * Records.RECORD) & prefixMask) | i) ^ Long.MIN_VALUE;
      }
    }

    /** Sorts the packed keys and resolves prefix ties on the following key bits. */
    public void sort() {
      Arrays.parallelSort(keys);
      resolveTies(in, keys, 0, n, indexBits, 0);
    }

    /** Copies the records in key order to the start of {@code dst}. */
    public void permute(ByteBuffer dst) {
      long indexMask = (1L << indexBits) - 1;
      forSlices(
          n,
          parts,
          (from, to) -> {
            ByteBuffer out = dst.duplicate();
            for (int r = from; r < to; r++) {
              int idx = (int) (keys[r] & indexMask);
              out.put(r * Records.RECORD, in, idx * Records.RECORD, Records.RECORD);
            }
          });
    }

    /**
     * Streams the records in key order to target {@code target} of {@code sink} from byte 0, each
     * slice through its own {@link Stage}.
     */
    public void permute(RecordSink sink, int target) {
      long indexMask = (1L << indexBits) - 1;
      forSlices(
          n,
          parts,
          (from, to) -> {
            Stage stage = new Stage(sink, target, (long) from * Records.RECORD);
            try {
              for (int r = from; r < to; r++) {
                stage.add(in, (int) (keys[r] & indexMask) * Records.RECORD);
              }
            } finally {
              stage.finish();
            }
          });
    }
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

  /** A slice {@code [from, to)} of work. */
  @FunctionalInterface
  interface Slice {
    void run(int from, int to);
  }

  /** How many slices {@code n} items are cut into: the common pool's width, 1 for little work. */
  static int parts(int n) {
    if (n < PARALLEL_THRESHOLD) {
      return 1;
    }
    return Math.max(1, Math.min(ForkJoinPool.getCommonPoolParallelism(), n / 4096));
  }

  /** Runs {@code body} over {@code [0, n)} in {@code parts} slices, in parallel. */
  static void forSlices(int n, int parts, Slice body) {
    if (parts == 1) {
      body.run(0, n);
      return;
    }
    IntStream.range(0, parts)
        .parallel()
        .forEach(p -> body.run((int) ((long) n * p / parts), (int) ((long) n * (p + 1) / parts)));
  }
}
