package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Futures;
import io.ferrite.fabric.testing.NettyLeakExtension;
import io.ferrite.fabric.testing.SeedExtension;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The sleep flags and doorbells: a side that sleeps is always woken by the other's next record. A
 * lost wake-up would hang a call forever, so every call here must end (the timeouts only guard
 * against hanging the build; nothing is asserted about time).
 */
@ExtendWith({NettyLeakExtension.class, SeedExtension.class})
class ShmRingDoorbellTest extends RingTestSupport {

  @Test
  @Timeout(120)
  void aSleepingPollerIsWokenByTheClientsNextCall(Random random) throws Exception {
    start(new ShmFabric.Rings(true, 64 << 10, 64 << 10), 2, 16);
    ShmConnection c = connect();
    RingFile file = c.rings().file();
    // A poller seen asleep may wake before the call lands (a park returns spuriously, or on the
    // permit a late doorbell left): that call finds it awake and need not ring. So each call rings
    // at most once, and most ring.
    int rings = 0;
    for (int i = 0; i < 30; i++) {
      await("the poller sleeps", () -> file.isAsleep(RingFile.SERVER_ASLEEP));
      long rang = c.rings().rang.sum();
      ByteBuffer req = bytes(random, random.nextInt(300));
      assertEcho(c, random.nextBoolean() ? ECHO_INLINE : ECHO, req, "call " + i + " to a sleeper");
      long now = c.rings().rang.sum();
      assertTrue(now - rang <= 1, "call " + i + " rang " + (now - rang) + " times");
      rings += (int) (now - rang);
    }
    assertTrue(rings >= 15, "only " + rings + " of 30 calls to a sleeping poller rang");
  }

  @Test
  @Timeout(120)
  void callsLandingInEveryPhaseOfThePollersIdlingAllEnd(Random random) throws Exception {
    // Pauses from 0 to 3 ms between calls: the poller is spinning, yielding, going to sleep, or
    // asleep (its idle budget is 50 to 800 us) when the next call lands.
    start(new ShmFabric.Rings(true, 64 << 10, 64 << 10), 2, 16);
    ShmConnection c = connect();
    for (int i = 0; i < 400; i++) {
      LockSupport.parkNanos(random.nextInt(3_000_000));
      assertEcho(c, ECHO_INLINE, bytes(random, random.nextInt(64)), "call " + i);
    }
    assertTrue(c.rings().rang.sum() > 0, "no call found the poller asleep: " + c.rings());
  }

  @Test
  @Timeout(120)
  void anAnswerNobodyWaitsForIsDeliveredByTheDoorbell(Random random) throws Exception {
    // LATER answers from a timer thread 0 to 3 ms after the call; the caller does not join (it
    // would help poll the ring) but waits on a latch, so only the doorbell to the client's I/O
    // thread can deliver the answer.
    start(new ShmFabric.Rings(true, 64 << 10, 64 << 10), 2, 16);
    ShmConnection c = connect();
    for (int i = 0; i < 100; i++) {
      int micros = random.nextInt(3000);
      ByteBuffer req = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(micros).flip();
      CompletableFuture<ByteBuffer> f = c.call(SVC, LATER, req.duplicate(), DEADLINE);
      CountDownLatch done = new CountDownLatch(1);
      f.whenComplete((v, t) -> done.countDown());
      assertTrue(
          done.await(60, TimeUnit.SECONDS), "answer " + i + " never delivered: " + c.rings());
      assertEquals(req, Futures.join(f));
    }
    assertTrue(c.rings().heard.sum() > 0, "no answer came by doorbell: " + c.rings());
  }

  @Test
  @Timeout(120)
  void manyAsyncCallsWithNobodyJoiningAllComplete(Random random) throws Exception {
    start(new ShmFabric.Rings(true, 4096, 4096), 2, 4096);
    ShmConnection c = connect();
    for (int round = 0; round < 20; round++) {
      int n = 1 + random.nextInt(200);
      CountDownLatch done = new CountDownLatch(n);
      for (int i = 0; i < n; i++) {
        c.call(
                SVC,
                random.nextBoolean() ? ECHO : ECHO_INLINE,
                bytes(random, random.nextInt(100)),
                DEADLINE)
            .whenComplete((v, t) -> done.countDown());
      }
      assertTrue(done.await(60, TimeUnit.SECONDS), "round " + round + ": " + c.rings());
      LockSupport.parkNanos(random.nextInt(2_000_000));
    }
    assertEquals(0, c.rings().pendingCalls());
  }
}
