package io.ferrite.apps.rsort;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;

/** valsort's checks: order (within and across parts), count, checksum. */
class RecordValidatorTest {
  static final int N = 2000;

  static ByteBuffer sorted() {
    ByteBuffer in = ByteBuffer.allocateDirect(N * Records.RECORD);
    RecordGenerator.generate(3, 0, N, in, 0);
    ByteBuffer out = ByteBuffer.allocateDirect(N * Records.RECORD);
    RecordSorter.sort(in, N, out);
    return out;
  }

  @Test
  void aSortedCopyPasses() {
    ByteBuffer in = ByteBuffer.allocateDirect(N * Records.RECORD);
    RecordGenerator.generate(3, 0, N, in, 0);
    RecordValidator.Summary input = RecordValidator.summarize(in, 0, N);
    RecordValidator.Summary output = RecordValidator.summarize(sorted(), 0, N);
    assertTrue(output.ordered());
    assertEquals(List.of(), RecordValidator.problems(input, output));
    assertEquals(0, output.duplicates());
  }

  @Test
  void swappedRecordsAreOutOfOrderButKeepTheChecksum() {
    ByteBuffer out = sorted();
    RecordValidator.Summary good = RecordValidator.summarize(out, 0, N);
    swap(out, 700, 701);
    RecordValidator.Summary bad = RecordValidator.summarize(out, 0, N);
    assertFalse(bad.ordered());
    assertEquals(1, bad.unordered());
    assertEquals(701, bad.firstUnordered());
    assertEquals(good.checksum(), bad.checksum(), "the sum of record checksums ignores order");
    List<String> problems = RecordValidator.problems(good, bad);
    assertEquals(1, problems.size(), problems.toString());
    assertTrue(problems.get(0).contains("out of order, the first at output record 701"));
  }

  @Test
  void aChangedValueChangesTheChecksum() {
    ByteBuffer out = sorted();
    RecordValidator.Summary good = RecordValidator.summarize(out, 0, N);
    out.put(1234 * Records.RECORD + 50, (byte) (out.get(1234 * Records.RECORD + 50) ^ 1));
    RecordValidator.Summary bad = RecordValidator.summarize(out, 0, N);
    assertTrue(bad.ordered(), "only a value byte changed");
    List<String> problems = RecordValidator.problems(good, bad);
    assertEquals(1, problems.size(), problems.toString());
    assertTrue(problems.get(0).startsWith("checksum"), problems.get(0));
  }

  @Test
  void aLostRecordChangesCountAndChecksum() {
    ByteBuffer out = sorted();
    RecordValidator.Summary good = RecordValidator.summarize(out, 0, N);
    List<String> problems =
        RecordValidator.problems(good, RecordValidator.summarize(out, 0, N - 1));
    assertEquals(2, problems.size(), problems.toString());
    assertTrue(problems.get(0).startsWith("record count: 1999 in the output, 2000"));
  }

  @Test
  void partsMergeInOrderAndTheirBoundaryIsChecked() {
    ByteBuffer out = sorted();
    RecordValidator.Summary whole = RecordValidator.summarize(out, 0, N);
    RecordValidator.Summary a = RecordValidator.summarize(out, 0, 1200);
    RecordValidator.Summary b = RecordValidator.summarize(out, 1200 * Records.RECORD, N - 1200);
    assertEquals(whole, a.then(RecordValidator.Summary.EMPTY).then(b));
    RecordValidator.Summary reversed = b.then(a);
    assertEquals(1, reversed.unordered(), "parts in the wrong order: their boundary");
    assertEquals(N - 1200, reversed.firstUnordered());
    assertEquals(whole.checksum(), reversed.checksum());
  }

  private static void swap(ByteBuffer b, int i, int j) {
    byte[] x = new byte[Records.RECORD];
    byte[] y = new byte[Records.RECORD];
    b.get(i * Records.RECORD, x);
    b.get(j * Records.RECORD, y);
    b.put(i * Records.RECORD, y);
    b.put(j * Records.RECORD, x);
  }
}
