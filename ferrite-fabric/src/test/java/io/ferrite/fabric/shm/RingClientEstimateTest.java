package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * How a client judges a kind of call fast (worth spinning for) or slow: one fast answer makes a
 * slow kind fast at once, one slow answer makes a fast kind slow at once, and otherwise answers are
 * averaged.
 */
class RingClientEstimateTest {
  private static final long SPIN = RingClient.SPIN_NANOS;

  @Test
  void aSlowKindThatAnswersWithinTheSpinIsFastAtOnce() {
    long slow = 90_000;
    assertTrue(slow > SPIN);
    assertEquals(3_000, RingClient.nextEstimate(slow, 3_000), "caught by a probe: fast again");
    assertTrue(RingClient.nextEstimate(slow, SPIN + 1) > SPIN, "a slowish answer stays slow");
  }

  @Test
  void aFastKindTurnsSlowAfterOneSlowAnswerAndIsAveragedOtherwise() {
    assertTrue(RingClient.nextEstimate(3_000, 1_000_000) > SPIN, "a journaled call: stop spinning");
    assertEquals((3_000 * 7 + 5_000) / 8, RingClient.nextEstimate(3_000, 5_000));
    assertEquals((200_000 * 7 + 300_000) / 8, RingClient.nextEstimate(200_000, 300_000));
    assertEquals(7_000, RingClient.nextEstimate(0, 7_000), "the first answer is the estimate");
  }
}
