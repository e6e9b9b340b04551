package io.ferrite.fabric;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SeedExtension.class)
class BackoffTest {
  private static final long US = 1_000;
  private static final long MS = 1_000_000;

  @Test
  void exponentialDoublesUpToTheCap() {
    Backoff b = Backoff.builder().initial(Duration.ofMillis(50)).max(Duration.ofSeconds(2)).build();
    long[] expected = {50, 100, 200, 400, 800, 1600, 2000, 2000};
    for (int n = 1; n <= expected.length; n++) {
      assertEquals(expected[n - 1] * MS, b.delayNanos(n), "pause " + n);
      assertEquals(expected[n - 1], b.delayMillis(n), "pause " + n);
    }
    assertEquals(2000 * MS, b.delayNanos(Integer.MAX_VALUE));
  }

  @Test
  void spinsFirstThenLinearSteps() {
    Backoff b =
        Backoff.builder()
            .spins(100)
            .initial(Duration.ofNanos(10 * US))
            .multiplier(1)
            .step(Duration.ofNanos(10 * US))
            .max(Duration.ofMillis(1))
            .build();
    for (int n = 1; n <= 100; n++) {
      assertEquals(0, b.delayNanos(n), "pause " + n + " spins");
    }
    assertEquals(10 * US, b.delayNanos(101));
    assertEquals(20 * US, b.delayNanos(102));
    assertEquals(990 * US, b.delayNanos(199));
    assertEquals(1000 * US, b.delayNanos(200));
    assertEquals(1000 * US, b.delayNanos(5000));
  }

  @Test
  void theLoopsKeepTheirFormerTimings() {
    // The formulas the four loops had before they shared this class.
    Backoff kv =
        Backoff.builder().spins(4).initial(Duration.ofNanos(US)).max(Duration.ofMillis(1)).build();
    Backoff client =
        Backoff.builder().initial(Duration.ofMillis(20)).max(Duration.ofMillis(20L << 20)).build();
    Backoff verify =
        Backoff.builder().initial(Duration.ofMillis(2)).max(Duration.ofMillis(50)).build();
    for (int attempt = 0; attempt < 40; attempt++) {
      long former = attempt < 4 ? 0 : Math.min(MS, US << Math.min(attempt - 4, 10));
      assertEquals(former, kv.delayNanos(attempt + 1), "kv attempt " + attempt);
    }
    for (int n = 1; n < 40; n++) {
      assertEquals(20L << Math.min(n - 1, 20), client.delayMillis(n), "client attempt " + n);
      assertEquals(Math.min(50, 1L << Math.min(n, 6)), verify.delayMillis(n), "verify " + n);
    }
  }

  @Test
  void jitterShortensWithinItsFractionAndReplaysFromTheSeed(Random random) {
    Backoff b =
        Backoff.builder()
            .initial(Duration.ofMillis(10))
            .max(Duration.ofMillis(80))
            .jitter(0.5)
            .build();
    long seed = random.nextLong();
    Random first = new Random(seed);
    Random again = new Random(seed);
    boolean shortened = false;
    for (int n = 1; n < 200; n++) {
      long full = b.delayNanos(n);
      long d = b.delayNanos(n, first);
      assertTrue(d <= full && d >= full / 2, n + ": " + d + " of " + full);
      assertEquals(d, b.delayNanos(n, again), "same seed, same pauses");
      shortened |= d < full;
    }
    assertTrue(shortened, "jitter never shortened a pause");
    Backoff none = Backoff.builder().initial(Duration.ofMillis(10)).build();
    assertEquals(none.delayNanos(3), none.delayNanos(3, first));
  }

  @Test
  void attemptsStopAtTheDeadlineAndNeverPauseBeyondIt() throws Exception {
    AtomicLong now = new AtomicLong(1_000 * MS);
    Backoff b = Backoff.builder().initial(Duration.ofMillis(10)).max(Duration.ofSeconds(1)).build();
    Backoff.Attempts a = b.start(Duration.ofMillis(35), now::get, new Random(1));
    assertEquals(10 * MS, a.next());
    now.addAndGet(10 * MS);
    assertEquals(20 * MS, a.next());
    now.addAndGet(20 * MS);
    assertEquals(5 * MS, a.next(), "capped at what is left");
    assertFalse(a.expired());
    now.addAndGet(5 * MS);
    assertTrue(a.expired());
    assertEquals(-1, a.next());
    assertFalse(a.sleep(), "past the deadline: no sleep, give up");
    assertEquals(5, a.failures());
    a.reset();
    assertEquals(0, a.failures());

    Backoff.Attempts forever = b.start();
    for (int n = 0; n < 30; n++) {
      assertTrue(forever.next() > 0);
    }
    assertFalse(forever.expired());
    assertEquals(1_000 * MS, forever.next(), "capped");
  }

  @Test
  void sleepIsInterruptible() {
    Backoff b =
        Backoff.builder().initial(Duration.ofSeconds(30)).max(Duration.ofSeconds(30)).build();
    Thread.currentThread().interrupt();
    assertThrows(InterruptedException.class, () -> b.start().sleep());
    assertFalse(Thread.interrupted(), "the interrupt was consumed by the exception");
  }

  @Test
  void refusesNonsense() {
    assertThrows(
        IllegalArgumentException.class,
        () -> Backoff.builder().initial(Duration.ofMillis(5)).max(Duration.ofMillis(1)).build());
    assertThrows(IllegalArgumentException.class, () -> Backoff.builder().jitter(1).build());
    assertThrows(IllegalArgumentException.class, () -> Backoff.builder().multiplier(0.5).build());
    assertThrows(IllegalArgumentException.class, () -> Backoff.builder().spins(-1).build());
  }
}
