package io.ferrite.kernel.extent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.testing.SeedExtension;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The write path's one-copy extent write ({@link ExtentAllocator#writeExtent}): the value is read
 * from a view of a request (any position, junk on both sides), written straight into the region,
 * and the checksum is taken over what landed there. Whatever the route, the region must hold
 * exactly the image {@link Extents#image} builds and the checksum must be the one a reader checks
 * ({@link Extents#valid}), also when the extent reuses a freed one whose old bytes (a longer value,
 * a set current word) are still there.
 */
@ExtendWith(SeedExtension.class)
class ExtentWriteTest {
  @TempDir Path dir;

  @Test
  void oneCopyWriteIsTheImageAndItsChecksum(Random rnd) {
    MappedRegion region = MappedRegion.create(dir.resolve("extents"), 1, 16 << 20, 0x5EED);
    try {
      ExtentAllocator alloc =
          new ExtentAllocator(
              region,
              1,
              () -> {
                throw new AssertionError("one region is enough");
              });
      List<long[]> live = new ArrayList<>();
      for (int op = 0; op < 2_000; op++) {
        if (!live.isEmpty() && rnd.nextInt(3) == 0) {
          long[] e = live.remove(rnd.nextInt(live.size()));
          // As a shard does: the old extent was current, then freed; its bytes stay.
          alloc.markCurrent(e[0], (int) e[1]);
          alloc.free(e[0], (int) e[2]);
          continue;
        }
        byte[] key = new byte[1 + rnd.nextInt(64)];
        rnd.nextBytes(key);
        int valueLength = rnd.nextInt(3000);
        byte[] request = new byte[valueLength + rnd.nextInt(40) + rnd.nextInt(40)];
        rnd.nextBytes(request);
        int at = rnd.nextInt(request.length - valueLength + 1);
        ByteBuffer view =
            rnd.nextBoolean()
                ? ByteBuffer.wrap(request).slice(at, valueLength)
                : ByteBuffer.wrap(request, at, valueLength);
        int position = view.position();
        int limit = view.limit();
        byte[] value = Arrays.copyOfRange(request, at, at + valueLength);
        int inc = op + 1;
        int length = Extents.HEADER + key.length + valueLength;
        long addr = alloc.allocate(length, new boolean[1]);

        long sum = alloc.writeExtent(addr, inc, key, view);

        byte[] image = Extents.image(inc, key, value);
        assertEquals(Extents.checksum(image), sum, "checksum of op " + op);
        byte[] copy = new byte[length];
        region.readInto(addr & 0xFFFFFFFFL, ByteBuffer.wrap(copy));
        assertArrayEquals(image, copy, "extent of op " + op);
        assertTrue(Extents.valid(copy, sum));
        assertArrayEquals(value, Extents.value(copy));
        assertEquals(position, view.position(), "the view's position is left as it was");
        assertEquals(limit, view.limit(), "the view's limit is left as it was");

        assertTrue(alloc.hasKey(addr, length, key));
        byte[] other = key.clone();
        other[rnd.nextInt(other.length)] ^= 1;
        assertFalse(alloc.hasKey(addr, length, other));
        assertFalse(alloc.hasKey(addr, length, Arrays.copyOf(key, key.length + 1)));
        live.add(new long[] {addr, inc, length});
      }
    } finally {
      region.close();
    }
  }

  /**
   * The computed size class is the one the old search found: the smallest class of at least the
   * length (every length up to 4 MiB, and the edges past it).
   */
  @Test
  void sizeClassIsTheSmallestThatFits() {
    int c = 0;
    for (int length = 1; length <= 4 << 20; length++) {
      while (ExtentAllocator.classSize(c) < length) {
        c++;
      }
      if (ExtentAllocator.classOf(length) != c) {
        assertEquals(c, ExtentAllocator.classOf(length), "class of " + length);
      }
    }
    for (int length : new int[] {(1 << 30) - 1, 1 << 30, (1 << 30) + 1, Integer.MAX_VALUE}) {
      int k = ExtentAllocator.classOf(length);
      assertTrue(ExtentAllocator.classSize(k) >= length, "class of " + length);
      assertTrue(k == 0 || ExtentAllocator.classSize(k - 1) < length, "class of " + length);
    }
  }
}
