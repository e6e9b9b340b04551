package io.ferrite.kernel.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** One call in {@link SampledTimer#EVERY} is timed, the first of all among them. */
class SampledTimerTest {
  @Test
  void oneCallInSixteenIsRecordedStartingWithTheFirst() {
    Timer t = Timer.builder("t").register(new SimpleMeterRegistry());
    SampledTimer s = new SampledTimer(t);
    long first = s.start();
    assertTrue(first != 0, "the first call is sampled");
    s.stop(first - 5_000_000);
    assertEquals(1, t.count());
    assertEquals(5.0, t.totalTime(TimeUnit.MILLISECONDS), 1.0);
    int sampled = 0;
    for (int i = 1; i < 3 * SampledTimer.EVERY; i++) {
      long start = s.start();
      sampled += start != 0 ? 1 : 0;
      s.stop(start);
    }
    assertEquals(2, sampled, "calls 16 and 32 of 48");
    assertEquals(3, t.count(), "48 calls, 3 timed");
    // A peek takes no turn: a call declined after it leaves the turn to the next call.
    long peeked = s.peek();
    assertTrue(peeked != 0, "call 48 is sampled");
    assertTrue(s.start() != 0, "and still is, after a peek without advance");
    assertTrue(s.peek() == 0);
  }
}
