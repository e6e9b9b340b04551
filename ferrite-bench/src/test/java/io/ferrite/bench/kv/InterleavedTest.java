package io.ferrite.bench.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The interleaved Redis comparison's harness: both contenders run, on the same threads, never at
 * the same time, and each is credited only with its own ops.
 */
class InterleavedTest {
  @Test
  void contendersAlternateNeverOverlapAndCountOnlyTheirOwnOps() throws Exception {
    AtomicInteger inA = new AtomicInteger();
    AtomicInteger inB = new AtomicInteger();
    AtomicInteger overlaps = new AtomicInteger();
    AtomicLong opsA = new AtomicLong();
    AtomicLong opsB = new AtomicLong();
    KvBench.Op a =
        r -> {
          inA.incrementAndGet();
          if (inB.get() > 0) {
            overlaps.incrementAndGet();
          }
          for (int i = 0; i < 1000; i++) {
            Thread.onSpinWait();
          }
          opsA.incrementAndGet();
          inA.decrementAndGet();
        };
    KvBench.Op b =
        r -> {
          inB.incrementAndGet();
          if (inA.get() > 0) {
            overlaps.incrementAndGet();
          }
          Thread.yield();
          opsB.incrementAndGet();
          inB.decrementAndGet();
        };
    KvBench.Result[] res = Interleaved.drive(a, b, 4, Duration.ofMillis(400));
    assertEquals(0, overlaps.get(), "ops of the two contenders overlapped");
    assertTrue(opsA.get() > 0 && opsB.get() > 0, "both ran: " + opsA + ", " + opsB);
    // Recorded ops are a subset of the ops run (the warm-up is not recorded).
    assertTrue(res[0].latency().getTotalCount() <= opsA.get());
    assertTrue(res[1].latency().getTotalCount() <= opsB.get());
    assertTrue(res[0].latency().getTotalCount() > 0 && res[1].latency().getTotalCount() > 0);
    assertTrue(res[0].throughput() > 0 && res[1].throughput() > 0);
  }

  @Test
  void aFailingOpEndsTheRunWithItsFailure() {
    KvBench.Op ok = r -> Thread.yield();
    KvBench.Op bad =
        r -> {
          throw new IllegalStateException("boom");
        };
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () -> Interleaved.drive(ok, bad, 3, Duration.ofMillis(200)));
    assertEquals("boom", e.getCause().getMessage());
  }
}
