package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.extent.Extents;
import io.ferrite.kernel.proto.LittleEndian;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The hopscotch bucket format on its own: a copy is accepted only if it is one whole version, in
 * whatever order its bytes were copied; slots encode and match keys; extents check incarnations.
 */
@ExtendWith(SeedExtension.class)
class HopscotchLayoutTest {
  static final int SLOT = HopscotchLayout.slotBytes(56);
  static final int BUCKET = HopscotchLayout.bucketBytes(SLOT);

  static byte[] bucket(long version, Random r) {
    byte[] b = new byte[BUCKET];
    for (int i = 0; i < HopscotchLayout.BUCKET_SLOTS; i++) {
      byte[] k = new byte[1 + r.nextInt(16)];
      byte[] v = new byte[r.nextInt(40)];
      r.nextBytes(k);
      r.nextBytes(v);
      HopscotchLayout.putInlineSlot(b, HopscotchLayout.BUCKET_HEADER + i * SLOT, SLOT, k, v);
    }
    LittleEndian.putLong(b, 0, version);
    LittleEndian.putInt(b, HopscotchLayout.FWD_JOINT, r.nextInt());
    HopscotchLayout.seal(b, 0, BUCKET);
    return b;
  }

  @Test
  void aCopyThatMixesTwoVersionsIsTornWhereverItWasCut(Random random) {
    byte[] old = bucket(10, random);
    byte[] now = bucket(12, random);
    assertEquals(HopscotchLayout.Check.OK, HopscotchLayout.check(old, 0, BUCKET));
    assertEquals(HopscotchLayout.Check.OK, HopscotchLayout.check(now, 0, BUCKET));
    for (int cut = 1; cut < BUCKET; cut++) {
      byte[] front = old.clone();
      System.arraycopy(now, cut, front, cut, BUCKET - cut);
      byte[] back = now.clone();
      System.arraycopy(old, cut, back, cut, BUCKET - cut);
      assertEquals(expected(front, old, now), HopscotchLayout.check(front, 0, BUCKET), "" + cut);
      assertEquals(expected(back, old, now), HopscotchLayout.check(back, 0, BUCKET), "" + cut);
    }
    for (int word = 0; word < BUCKET; word += 8) {
      // One word of the new version inside the old one (an unordered copy): torn, unless equal.
      byte[] mixed = old.clone();
      System.arraycopy(now, word, mixed, word, 8);
      assertEquals(
          expected(mixed, old, now), HopscotchLayout.check(mixed, 0, BUCKET), "word at " + word);
    }
  }

  /** OK only for a copy that is, byte for byte, one of the two versions. */
  private static HopscotchLayout.Check expected(byte[] copy, byte[] old, byte[] now) {
    return java.util.Arrays.equals(copy, old) || java.util.Arrays.equals(copy, now)
        ? HopscotchLayout.Check.OK
        : HopscotchLayout.Check.TORN;
  }

  @Test
  void anOddVersionIsBeingWrittenAndMovedMeansRefetch(Random random) {
    byte[] b = bucket(11, random);
    assertEquals(HopscotchLayout.Check.TORN, HopscotchLayout.check(b, 0, BUCKET));
    LittleEndian.putLong(b, 0, HopscotchLayout.MOVED);
    assertEquals(HopscotchLayout.Check.MOVED, HopscotchLayout.check(b, 0, BUCKET));
  }

  @Test
  void slotsMatchTheirKeyOnly() {
    byte[] b = new byte[BUCKET];
    byte[] key = "alice".getBytes(StandardCharsets.UTF_8);
    int at = HopscotchLayout.BUCKET_HEADER;
    HopscotchLayout.putInlineSlot(b, at, SLOT, key, new byte[] {1, 2, 3});
    long h = KeyHash.of(key);
    assertTrue(HopscotchLayout.slotMatches(b, at, SLOT, key, h));
    assertFalse(
        HopscotchLayout.slotMatches(b, at, SLOT, "alicf".getBytes(StandardCharsets.UTF_8), h));
    assertFalse(
        HopscotchLayout.slotMatches(b, at, SLOT, "alic".getBytes(StandardCharsets.UTF_8), h));
    assertArrayEquals(new byte[] {1, 2, 3}, HopscotchLayout.inlineValue(b, at));
    int out = at + SLOT;
    HopscotchLayout.putOutOfLineSlot(b, out, SLOT, key.length, h, 500, 3L << 32 | 4096, 521, 7, 99);
    assertTrue(HopscotchLayout.slotMatches(b, out, SLOT, key, h));
    assertTrue(HopscotchLayout.outOfLine(b, out));
    assertEquals(3, HopscotchLayout.extentRegion(b, out));
    assertEquals(4096, HopscotchLayout.extentOffset(b, out));
    assertEquals(521, HopscotchLayout.extentLength(b, out));
    assertEquals(7, HopscotchLayout.extentIncarnation(b, out));
    assertFalse(HopscotchLayout.slotMatches(b, out, SLOT, key, h + 1), "another hash");
    assertFalse(HopscotchLayout.slotMatches(b, at + 2 * SLOT, SLOT, key, h), "an empty slot");
  }

  @Test
  void anExtentVerifiesWholeWithItsChecksumAndIsCurrentOnlyWhenMarked() {
    byte[] key = {1, 2};
    byte[] value = {3, 4, 5};
    byte[] e = Extents.image(42, key, value);
    long sum = Extents.checksum(e);
    assertEquals(42, Extents.incarnation(e));
    assertTrue(Extents.valid(e.clone(), sum));
    assertFalse(Extents.current(e.clone(), sum), "not marked current yet");
    byte[] marked = e.clone();
    LittleEndian.putInt(marked, Extents.CURRENT, 42);
    assertTrue(Extents.valid(marked.clone(), sum), "the checksum does not cover the current word");
    assertTrue(Extents.current(marked.clone(), sum));
    LittleEndian.putInt(marked, Extents.CURRENT, 43);
    assertFalse(Extents.current(marked, sum), "marked for another incarnation");
    assertTrue(Extents.hasKey(e, key));
    assertFalse(Extents.hasKey(e, new byte[] {1, 3}));
    assertArrayEquals(key, Extents.key(e));
    assertArrayEquals(value, Extents.value(e));
    assertFalse(Extents.valid(Extents.image(43, key, value), sum), "freed and reused");
    byte[] freed = e.clone();
    LittleEndian.putInt(freed, 0, 0);
    assertFalse(Extents.valid(freed, Extents.checksum(freed)), "freed (incarnation 0)");
    byte[] torn = e.clone();
    torn[torn.length - 1] ^= 1;
    assertFalse(Extents.valid(torn, sum), "torn");
    assertFalse(Extents.valid(Arrays.copyOf(e, e.length - 1), sum), "short");
  }

  @Test
  void fatPointersRoundTrip() {
    byte[] b = new byte[32];
    assertTrue(HopscotchLayout.isNull(b, 16));
    HopscotchLayout.putPointer(b, 16, 5L << 32 | 123456, 77);
    assertFalse(HopscotchLayout.isNull(b, 16));
    assertEquals(5, HopscotchLayout.pointerRegion(b, 16));
    assertEquals(123456, HopscotchLayout.pointerOffset(b, 16));
    assertEquals(77, HopscotchLayout.pointerIncarnation(b, 16));
    HopscotchLayout.putNullPointer(b, 16);
    assertTrue(HopscotchLayout.isNull(b, 16));
  }
}
