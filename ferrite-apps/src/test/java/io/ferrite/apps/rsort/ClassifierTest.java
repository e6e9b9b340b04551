package io.ferrite.apps.rsort;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Phase one's counting sort by key range: every record once, ranges in order, input order kept. */
@ExtendWith(SeedExtension.class)
class ClassifierTest {
  @Test
  void recordsAreGroupedByKeyRangeInInputOrder(Random random) {
    int n = 150_000 + random.nextInt(1000);
    int buckets = 1 + random.nextInt(7);
    ByteBuffer in = ByteBuffer.allocateDirect(n * Records.RECORD);
    RecordGenerator.generate(random.nextLong(), 0, n, in, 0);
    ByteBuffer out = ByteBuffer.allocateDirect(n * Records.RECORD);
    // 3 parts whatever the common pool's width: the parallel scatter, each part at its place.
    int[] counts = Classifier.classify(new Classifier(in, n, buckets, 3), out);
    int total = 0;
    for (int c : counts) {
      total += c;
    }
    assertEquals(n, total);
    ByteBuffer be = Records.bigEndian(out);
    int r = 0;
    for (int k = 0; k < buckets; k++) {
      long lastIndex = -1;
      for (int i = 0; i < counts[k]; i++, r++) {
        int at = r * Records.RECORD;
        assertEquals(k, Records.bucketOf(Records.hi(be, at), buckets), "record " + r);
        long index = Long.parseLong(ascii(out, at + 28, 16), 16); // gensort's record number
        assertTrue(index > lastIndex, "input order within range " + k);
        lastIndex = index;
      }
    }
    assertEquals(
        RecordValidator.summarize(in, 0, n).checksum(),
        RecordValidator.summarize(out, 0, n).checksum());
  }

  @Test
  void keyRangesSplitTheKeySpaceEvenly() {
    assertEquals(0, Records.bucketOf(0, 4));
    assertEquals(1, Records.bucketOf(0x4000_0000_0000_0000L, 4));
    assertEquals(2, Records.bucketOf(0x8000_0000_0000_0000L, 4));
    assertEquals(3, Records.bucketOf(-1L, 4));
    assertEquals(2, Records.bucketOf(-1L, 3));
    assertEquals(0, Records.bucketOf(-1L, 1));
  }

  private static String ascii(ByteBuffer b, int at, int n) {
    byte[] s = new byte[n];
    b.get(at, s);
    return new String(s, java.nio.charset.StandardCharsets.US_ASCII);
  }
}
