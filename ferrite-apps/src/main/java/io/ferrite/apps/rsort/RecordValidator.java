package io.ferrite.apps.rsort;

import io.ferrite.fabric.verify.Checksum64;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;

/**
 * valsort for Ferrite: a {@link Summary} of a sequence of records (count, checksum, order,
 * duplicate keys, first and last key), summaries of consecutive parts merged in order, and the
 * check that an output holds the input's records in order.
 *
 * <p>The checksum is the sum (mod 2^64) of every record's XXH3-64, the same whatever the order of
 * the records: valsort's idea (it sums CRC-32s) with Ferrite's 64-bit checksum, so the output of a
 * sort must have the input's checksum and count, and only reordering is allowed.
 */
public final class RecordValidator {
  private RecordValidator() {}

  /**
   * What valsort reports of a sequence of records.
   *
   * @param records how many
   * @param checksum sum of the records' XXH3-64 checksums, mod 2^64
   * @param unordered how many records have a smaller key than the record before them
   * @param firstUnordered index (in the sequence) of the first such record, -1 if none
   * @param duplicates how many records have the same key as the record before them
   * @param firstKey the first record's key (empty for no records)
   * @param lastKey the last record's key (empty for no records)
   */
  public record Summary(
      long records,
      long checksum,
      long unordered,
      long firstUnordered,
      long duplicates,
      byte[] firstKey,
      byte[] lastKey) {

    public static final Summary EMPTY = new Summary(0, 0, 0, -1, 0, new byte[0], new byte[0]);

    public boolean ordered() {
      return unordered == 0;
    }

    /** This summary followed by {@code next}, the summary of the records right after these. */
    public Summary then(Summary next) {
      if (records == 0) {
        return next;
      }
      if (next.records == 0) {
        return this;
      }
      int c = compareKeys(lastKey, next.firstKey);
      long unorderedAt = c > 0 ? records : -1;
      long first =
          firstUnordered >= 0
              ? firstUnordered
              : unorderedAt >= 0
                  ? unorderedAt
                  : next.firstUnordered >= 0 ? records + next.firstUnordered : -1;
      return new Summary(
          records + next.records,
          checksum + next.checksum,
          unordered + next.unordered + (c > 0 ? 1 : 0),
          first,
          duplicates + next.duplicates + (c == 0 ? 1 : 0),
          firstKey,
          next.lastKey);
    }

    /** valsort's report: records, checksum, duplicates, and whether all are in order. */
    public String describe() {
      return String.format(
              Locale.ROOT,
              "records %d, checksum %016x, duplicate keys %d, ",
              records,
              checksum,
              duplicates)
          + (ordered()
              ? "all in order"
              : unordered + " out of order (first at record " + firstUnordered + ")");
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Summary s
          && records == s.records
          && checksum == s.checksum
          && unordered == s.unordered
          && firstUnordered == s.firstUnordered
          && duplicates == s.duplicates
          && Arrays.equals(firstKey, s.firstKey)
          && Arrays.equals(lastKey, s.lastKey);
    }

    @Override
    public int hashCode() {
      return Long.hashCode(checksum) * 31 + Long.hashCode(records);
    }

    @Override
    public String toString() {
      return describe()
          + ", keys "
          + HexFormat.of().formatHex(firstKey)
          + ".."
          + HexFormat.of().formatHex(lastKey);
    }
  }

  /** The summary of the {@code n} records from byte {@code at} of {@code buf} (absolute). */
  public static Summary summarize(ByteBuffer buf, int at, int n) {
    if (n == 0) {
      return Summary.EMPTY;
    }
    ByteBuffer be = Records.bigEndian(buf);
    long checksum = 0;
    long unordered = 0;
    long firstUnordered = -1;
    long duplicates = 0;
    for (int i = 0; i < n; i++) {
      int r = at + i * Records.RECORD;
      checksum += Checksum64.of(buf, r, Records.RECORD);
      if (i > 0) {
        int c = Records.compare(be, r - Records.RECORD, be, r);
        if (c > 0) {
          unordered++;
          if (firstUnordered < 0) {
            firstUnordered = i;
          }
        } else if (c == 0) {
          duplicates++;
        }
      }
    }
    byte[] first = new byte[Records.KEY];
    byte[] last = new byte[Records.KEY];
    buf.get(at, first);
    buf.get(at + (n - 1) * Records.RECORD, last);
    return new Summary(n, checksum, unordered, firstUnordered, duplicates, first, last);
  }

  /** Unsigned lexicographic order of two keys. */
  static int compareKeys(byte[] a, byte[] b) {
    return Arrays.compareUnsigned(a, b);
  }

  /**
   * What is wrong with {@code output} as the sorted {@code input}: a different count, a different
   * checksum (records lost, duplicated or changed), records out of order. Empty when it is right.
   */
  public static List<String> problems(Summary input, Summary output) {
    List<String> out = new ArrayList<>();
    if (input.records != output.records) {
      out.add(
          "record count: " + output.records + " in the output, " + input.records + " in the input");
    }
    if (input.checksum != output.checksum) {
      out.add(
          String.format(
              Locale.ROOT,
              "checksum: %016x in the output, %016x in the input (records lost, duplicated or"
                  + " changed)",
              output.checksum,
              input.checksum));
    }
    if (!output.ordered()) {
      out.add(
          output.unordered
              + " record(s) out of order, the first at output record "
              + output.firstUnordered);
    }
    return out;
  }
}
