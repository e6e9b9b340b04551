package io.ferrite.apps.rsort;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The packed-key sort against a plain comparator sort, on random and on adversarial keys. */
@ExtendWith(SeedExtension.class)
class RecordSorterTest {
  @Test
  void sortsGeneratedRecords(Random random) {
    int n = 100_000 + random.nextInt(1000);
    ByteBuffer in = ByteBuffer.allocateDirect(n * Records.RECORD);
    RecordGenerator.generate(random.nextLong(), 0, n, in, 0);
    checkAgainstReference(in, n);
  }

  @Test
  void sortsKeysThatTieOnEveryPrefixLevel(Random random) {
    // Few distinct first bytes, many equal 8-byte prefixes, equal whole keys: every tie level.
    int n = 70_000;
    ByteBuffer in = ByteBuffer.allocateDirect(n * Records.RECORD);
    for (int i = 0; i < n; i++) {
      int at = i * Records.RECORD;
      long hi = ((long) random.nextInt(3) << 56) | (random.nextInt(4) == 0 ? random.nextInt(5) : 0);
      in.putLong(at, hi);
      in.putShort(at + 8, (short) random.nextInt(random.nextBoolean() ? 3 : 65536));
      in.putInt(at + 10, i); // the payload tells records apart
    }
    checkAgainstReference(in, n);
  }

  @Test
  void equalKeysKeepTheirInputOrder() {
    int n = 5000;
    ByteBuffer in = ByteBuffer.allocateDirect(n * Records.RECORD);
    for (int i = 0; i < n; i++) {
      in.putInt(i * Records.RECORD + 10, i);
    }
    ByteBuffer out = ByteBuffer.allocateDirect(n * Records.RECORD);
    RecordSorter.sort(in, n, out);
    for (int i = 0; i < n; i++) {
      assertEquals(i, out.getInt(i * Records.RECORD + 10));
    }
  }

  @Test
  void tinyInputs() {
    for (int n = 0; n < 4; n++) {
      ByteBuffer in = ByteBuffer.allocateDirect(Math.max(1, n) * Records.RECORD);
      RecordGenerator.generate(n, 0, n, in, 0);
      checkAgainstReference(in, n);
    }
  }

  private static void checkAgainstReference(ByteBuffer in, int n) {
    ByteBuffer out = ByteBuffer.allocateDirect(Math.max(1, n) * Records.RECORD);
    RecordSorter.sort(in, n, out);
    checkAgainstReference(in, n, out);
    // The streaming path of RSort's phase two: 3 slices, each through its own stage.
    ByteBuffer streamed = ByteBuffer.allocateDirect(Math.max(1, n) * Records.RECORD);
    RecordSorter.Keys keys = new RecordSorter.Keys(in, n, 3);
    keys.extract(0, n / 2);
    keys.extract(n / 2, n);
    keys.sort();
    keys.permute(RecordSink.into(streamed), 0);
    assertEquals(out, streamed);
  }

  private static void checkAgainstReference(ByteBuffer in, int n, ByteBuffer out) {
    Integer[] order = new Integer[n];
    for (int i = 0; i < n; i++) {
      order[i] = i;
    }
    ByteBuffer be = Records.bigEndian(in);
    Arrays.sort(
        order,
        Comparator.<Integer>comparingInt(i -> 0)
            .thenComparing(
                (a, b) -> Records.compare(be, a * Records.RECORD, be, b * Records.RECORD))
            .thenComparingInt(i -> i));
    byte[] want = new byte[Records.RECORD];
    byte[] got = new byte[Records.RECORD];
    for (int r = 0; r < n; r++) {
      in.get(order[r] * Records.RECORD, want);
      out.get(r * Records.RECORD, got);
      assertTrue(Arrays.equals(want, got), "record " + r + " of " + n);
    }
    RecordValidator.Summary s = RecordValidator.summarize(out, 0, n);
    assertTrue(s.ordered(), s.describe());
    assertEquals(RecordValidator.summarize(in, 0, n).checksum(), s.checksum());
  }
}
