package io.ferrite.apps.carafe.pregel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The mailbox grid: 2 W^2 containers, each holding its count word and capacity, none overlapping.
 */
@ExtendWith(SeedExtension.class)
class MailboxTest {
  @Test
  void containersHoldTheirCapacityAndDoNotOverlap(Random random) {
    for (int round = 0; round < 20; round++) {
      int w = 1 + random.nextInt(6);
      long[] cap = new long[w * w];
      for (int s = 0; s < cap.length; s++) {
        cap[s] = random.nextInt(4) == 0 ? 0 : random.nextInt(1000);
      }
      Mailbox m = new Mailbox(w, cap);
      List<long[]> ranges = new ArrayList<>();
      for (int i = 0; i < w; i++) {
        for (int j = 0; j < w; j++) {
          assertEquals(cap[i * w + j], m.capacity(i, j));
          for (int p = 0; p < 2; p++) {
            long at = m.container(i, j, p);
            assertEquals(0, at % 8, "container (" + i + ", " + j + ", " + p + ") aligned");
            ranges.add(new long[] {at, at + Mailbox.COUNT + Mailbox.MESSAGE * cap[i * w + j]});
          }
        }
      }
      ranges.sort(Comparator.comparingLong(r -> r[0]));
      for (int k = 0; k < ranges.size(); k++) {
        long[] r = ranges.get(k);
        assertTrue(r[1] <= m.bytes(), "inside the allocation");
        if (k > 0) {
          assertTrue(ranges.get(k - 1)[1] <= r[0], "containers overlap at " + r[0]);
        }
      }
    }
  }

  @Test
  void aGridOfTheWrongSizeIsRefused() {
    FerriteException e =
        assertThrows(FerriteException.class, () -> new Mailbox(2, new long[] {1, 2, 3}));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
  }
}
