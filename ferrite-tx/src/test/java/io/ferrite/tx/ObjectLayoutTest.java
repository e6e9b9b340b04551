package io.ferrite.tx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ferrite.fabric.testing.SeedExtension;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The object layout alone: round trips, size classes, and every torn copy of two versions of an
 * object (each split point, in both orders, and a lock bit) rejected.
 */
@ExtendWith(SeedExtension.class)
class ObjectLayoutTest {
  @Test
  void sizeClassesAndRoundTrips(Random random) {
    assertEquals(1, ObjectLayout.lines(1));
    assertEquals(1, ObjectLayout.lines(40));
    assertEquals(2, ObjectLayout.lines(41));
    assertEquals(2, ObjectLayout.lines(96));
    assertEquals(3, ObjectLayout.lines(97));
    for (int size : new int[] {1, 40, 41, 96, 97, 600, 1000}) {
      int lines = ObjectLayout.lines(size);
      assertEquals(true, ObjectLayout.capacity(lines) >= size);
      byte[] v = new byte[size];
      random.nextBytes(v);
      ByteBuffer image = ObjectLayout.encode(lines, 12, 3, v);
      assertEquals(12, ObjectLayout.verify(image, lines, 3));
      assertEquals(ObjectLayout.FREED, ObjectLayout.verify(image, lines, 4));
      assertArrayEquals(v, ObjectLayout.payload(image, size));
    }
    assertThrows(IllegalArgumentException.class, () -> ObjectLayout.encode(1, 1, 0, new byte[41]));
  }

  @Test
  void everyTornCopyOfTwoVersionsIsRejected(Random random) {
    for (int size : new int[] {8, 40, 100, 300}) {
      int lines = ObjectLayout.lines(size);
      byte[] a = new byte[size];
      byte[] b = new byte[size];
      random.nextBytes(a);
      random.nextBytes(b);
      byte[] old = ObjectLayout.encode(lines, 7, 1, a).array();
      byte[] next = ObjectLayout.encode(lines, 8, 1, b).array();
      for (int split = 1; split < old.length; split++) {
        for (boolean oldFirst : new boolean[] {true, false}) {
          byte[] first = oldFirst ? old : next;
          byte[] second = oldFirst ? next : old;
          byte[] copy = first.clone();
          System.arraycopy(second, split, copy, split, copy.length - split);
          // A split inside bytes both images share (zero padding) is no tear: that copy is whole.
          long whole =
              Arrays.equals(copy, old) ? 7 : Arrays.equals(copy, next) ? 8 : ObjectLayout.RETRY;
          assertEquals(
              whole,
              ObjectLayout.verify(ByteBuffer.wrap(copy), lines, 1),
              "size "
                  + size
                  + ", split at "
                  + split
                  + (oldFirst ? " (old first)" : " (new first)"));
        }
      }
      byte[] locked = old.clone();
      locked[7] |= (byte) 0x80; // the header's bit 63, little-endian
      assertEquals(ObjectLayout.RETRY, ObjectLayout.verify(ByteBuffer.wrap(locked), lines, 1));
    }
  }
}
