package io.ferrite.apps.rsort;

import java.nio.ByteBuffer;
import java.util.stream.IntStream;

/**
 * RSort's phase one on local memory (§V-C, classification): a counting sort of records by key
 * range. {@link #count} remembers each record's range as the records arrive (piece by piece, while
 * they are in the cache), then {@link #scatter} streams each range's records, in input order, to
 * that range's target of a {@link RecordSink}: every range becomes one contiguous run of records.
 * The scatter cuts the input into parts that run in parallel, each with its own stage per range and
 * its own place in each range (after the records of the parts before it), so no two threads write
 * the same bytes.
 */
public final class Classifier {
  private final ByteBuffer in;
  private final int n;
  private final int buckets;
  private final byte[] bucketOf;
  private final int[] counts;
  private final int parts;

  /**
   * For the {@code n} records at the start of {@code src}, over {@code buckets} key ranges (1 to
   * 127).
   */
  public Classifier(ByteBuffer src, int n, int buckets) {
    this(src, n, buckets, RecordSorter.parts(n));
  }

  /** As {@link #Classifier(ByteBuffer, int, int)}, scattering in {@code parts} parts (tests). */
  Classifier(ByteBuffer src, int n, int buckets, int parts) {
    if (buckets < 1 || buckets > 127) {
      throw new IllegalArgumentException("buckets: " + buckets + " (expected: 1 to 127)");
    }
    this.in = Records.bigEndian(src);
    this.n = n;
    this.buckets = buckets;
    this.bucketOf = new byte[n];
    this.counts = new int[buckets];
    this.parts = parts;
  }

  /** Records the key range of records {@code [from, to)} (one thread at a time). */
  public void count(int from, int to) {
    for (int i = from; i < to; i++) {
      int k = Records.bucketOf(Records.hi(in, i * Records.RECORD), buckets);
      bucketOf[i] = (byte) k;
      counts[k]++;
    }
  }

  /** Records per key range, of those counted so far. */
  public int[] counts() {
    return counts.clone();
  }

  /**
   * Streams every record to target {@code k} of {@code sink}, {@code k} its key range, at byte
   * offsets from 0 in input order. All records must have been counted.
   */
  public void scatter(RecordSink sink) {
    int[][] partCounts = new int[parts][buckets];
    run(
        parts,
        p -> {
          int[] c = partCounts[p];
          for (int i = from(p, parts), to = from(p + 1, parts); i < to; i++) {
            c[bucketOf[i]]++;
          }
        });
    run(
        parts,
        p -> {
          Stage[] stages = new Stage[buckets];
          try {
            for (int k = 0; k < buckets; k++) {
              long at = 0;
              for (int q = 0; q < p; q++) {
                at += partCounts[q][k];
              }
              stages[k] = new Stage(sink, k, at * Records.RECORD);
            }
            for (int i = from(p, parts), to = from(p + 1, parts); i < to; i++) {
              stages[bucketOf[i]].add(in, i * Records.RECORD);
            }
          } finally {
            for (Stage s : stages) {
              if (s != null) {
                s.finish();
              }
            }
          }
        });
  }

  /**
   * Copies the {@code n} records at the start of {@code src} into {@code dst} grouped by key range
   * (range 0 first, input order within a range) and returns the records per range.
   */
  public static int[] classify(ByteBuffer src, int n, int buckets, ByteBuffer dst) {
    return classify(new Classifier(src, n, buckets), dst);
  }

  static int[] classify(Classifier c, ByteBuffer dst) {
    int n = c.n;
    int buckets = c.buckets;
    c.count(0, n);
    int[] counts = c.counts();
    long[] base = new long[buckets];
    for (int k = 1; k < buckets; k++) {
      base[k] = base[k - 1] + (long) counts[k - 1] * Records.RECORD;
    }
    RecordSink into = RecordSink.into(dst);
    c.scatter((target, offset, records) -> into.write(0, base[target] + offset, records));
    return counts;
  }

  private int from(int p, int parts) {
    return (int) ((long) n * p / parts);
  }

  private static void run(int parts, java.util.function.IntConsumer part) {
    if (parts == 1) {
      part.accept(0);
    } else {
      IntStream.range(0, parts).parallel().forEach(part);
    }
  }
}
