package io.ferrite.tree.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The peers thread's wait for a server that does not answer ({@link RemoteSplits.Backoff}), on a
 * made-up clock: 200 ms doubling to 30 s, tried only when due, logged once per outage, reset by an
 * answer.
 */
class PeerBackoffTest {
  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  @Test
  void aSilentServerIsTriedLessAndLessOftenUpToThirtySecondsApartAndLoggedOnce() {
    RemoteSplits.Backoff b = new RemoteSplits.Backoff();
    long now = 1_000 * MS;
    assertTrue(b.due(now), "a server never failed is due");
    assertTrue(b.failed(now), "the first failure is logged");
    long expected = 200 * MS;
    int tries = 1;
    for (int i = 0; i < 20; i++) {
      assertEquals(expected, b.waitNanos(), "wait after failure " + tries);
      assertFalse(b.due(now + b.waitNanos() - 1), "not tried before its wait");
      now += b.waitNanos();
      assertTrue(b.due(now), "due once the wait passed");
      assertFalse(b.failed(now), "a retry's failure is not logged");
      tries++;
      expected = Math.min(expected * 2, TimeUnit.SECONDS.toNanos(30));
    }
    assertEquals(TimeUnit.SECONDS.toNanos(30), b.waitNanos(), "capped at 30 s");
    assertTrue(b.answered(), "an answer after failures is logged");
    assertEquals(0, b.waitNanos(), "an answer resets the wait");
    assertTrue(b.due(now), "due at once after an answer");
    assertFalse(b.answered(), "an answer after answers is not logged");
    assertTrue(b.failed(now), "the next outage is logged again");
    assertEquals(200 * MS, b.waitNanos(), "and starts at 200 ms again");
  }
}
