package io.ferrite.apps.rsort;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** gensort's binary layout, and records that depend only on (seed, index). */
class RecordGeneratorTest {
  static byte[] record(long seed, long index) {
    byte[] b = new byte[Records.RECORD];
    RecordGenerator.record(seed, index, b, 0);
    return b;
  }

  @Test
  void knownRecords() {
    // Pinned (and computed independently from the SplitMix64 definition): a change here changes
    // every data set generated with a seed.
    assertEquals("989b3f130a063869290d", key(record(42, 0)));
    assertEquals("2a990be63a01b2d50c4b", key(record(42, 1)));
    assertEquals("39dedf2dd32913931f3c", key(record(42, 123_456_789)));
    assertEquals("863b891f4c0abd4f4d58", key(record(7, 0)));
  }

  private static String key(byte[] r) {
    return HexFormat.of().formatHex(r, 0, Records.KEY);
  }

  @Test
  void theLayoutIsGensorts() {
    long index = 0x1234_5678_9ABCL;
    byte[] r = record(42, index);
    assertEquals(0x00, r[10]);
    assertEquals(0x11, r[11]);
    assertEquals(
        "0000000000000000000012345678" + "9ABC", new String(r, 12, 32, StandardCharsets.US_ASCII));
    assertArrayEquals(
        new byte[] {(byte) 0x88, (byte) 0x99, (byte) 0xAA, (byte) 0xBB}, slice(r, 44, 4));
    assertArrayEquals(
        new byte[] {(byte) 0xCC, (byte) 0xDD, (byte) 0xEE, (byte) 0xFF}, slice(r, 96, 4));
    // Filler: the low 48 random bits as hex digits, each 4 times; key bytes 8-9 are bits 63..48.
    long lo = RecordGenerator.randomLo(42, index);
    assertEquals((byte) (lo >>> 56), r[8]);
    assertEquals((byte) (lo >>> 48), r[9]);
    String hex = String.format(java.util.Locale.ROOT, "%012X", lo & 0xFFFF_FFFF_FFFFL);
    for (int i = 0; i < 12; i++) {
      for (int k = 0; k < 4; k++) {
        assertEquals(hex.charAt(i), (char) r[48 + 4 * i + k], "filler byte " + (48 + 4 * i + k));
      }
    }
  }

  private static byte[] slice(byte[] b, int from, int n) {
    byte[] out = new byte[n];
    System.arraycopy(b, from, out, 0, n);
    return out;
  }

  @Test
  void aRecordDependsOnlyOnSeedAndIndexSoSharesCanBeMadeApart() {
    int n = 25_000;
    ByteBuffer whole = ByteBuffer.allocateDirect(n * Records.RECORD);
    RecordGenerator.generate(9, 1000, n, whole, 0);
    ByteBuffer parts = ByteBuffer.allocateDirect(n * Records.RECORD);
    RecordGenerator.generate(9, 1000 + 12_345, n - 12_345, parts, 12_345 * Records.RECORD);
    RecordGenerator.generate(9, 1000, 12_345, parts, 0);
    assertEquals(whole, parts);
    assertArrayEquals(record(9, 1000 + 777), slice(whole, 777));
    assertNotEquals(key(record(9, 5)), key(record(10, 5)), "another seed, other keys");
  }

  private static byte[] slice(ByteBuffer b, int record) {
    byte[] out = new byte[Records.RECORD];
    b.get(record * Records.RECORD, out);
    return out;
  }
}
