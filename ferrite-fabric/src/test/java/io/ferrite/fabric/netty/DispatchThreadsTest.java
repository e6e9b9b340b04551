package io.ferrite.fabric.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The dispatch threads alone: no call is lost between a producer and a thread going to sleep (the
 * Dekker handshake), none runs twice, the bound refuses at once, and shutdown answers what no
 * thread took.
 */
@ExtendWith(SeedExtension.class)
class DispatchThreadsTest {
  /** Ends a test that lost a call (a lost wake-up never ends by itself). */
  private static final long STUCK_SECONDS = 60;

  private static DispatchThreads.Task task(Runnable run, Runnable abandon) {
    return new DispatchThreads.Task() {
      @Override
      public void run() {
        run.run();
      }

      @Override
      public void abandon() {
        abandon.run();
      }
    };
  }

  /**
   * Producers offer in bursts with pauses long enough that every dispatch thread parks between them
   * (no spin at all, and a short one), so each burst must wake a sleeper; every call runs exactly
   * once.
   */
  @Test
  void noCallIsLostOrRunTwiceAcrossParking(Random random) throws Exception {
    for (long spin : new long[] {0, 2_000}) {
      int producers = 4;
      int perProducer = 5_000;
      int total = producers * perProducer;
      DispatchThreads threads = new DispatchThreads("test-dispatch", 2, total, spin);
      AtomicIntegerArray runs = new AtomicIntegerArray(total);
      CountDownLatch done = new CountDownLatch(total);
      Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
      List<Thread> ts = new ArrayList<>();
      try {
        for (int p = 0; p < producers; p++) {
          int base = p * perProducer;
          long seed = random.nextLong();
          Thread t =
              new Thread(
                  () -> {
                    try {
                      Random r = new Random(seed);
                      for (int i = 0; i < perProducer; i++) {
                        int id = base + i;
                        boolean ok =
                            threads.offer(
                                task(
                                    () -> {
                                      runs.incrementAndGet(id);
                                      done.countDown();
                                    },
                                    () -> failures.add(new AssertionError("abandoned " + id))));
                        if (!ok) {
                          failures.add(new AssertionError("refused " + id));
                        }
                        if (r.nextInt(64) == 0) {
                          // Long enough for the threads to give up spinning and park.
                          LockSupport.parkNanos(r.nextInt(50_000));
                        }
                      }
                    } catch (Throwable e) {
                      failures.add(e);
                    }
                  },
                  "producer-" + p);
          ts.add(t);
          t.start();
        }
        for (Thread t : ts) {
          t.join();
        }
        assertTrue(
            done.await(STUCK_SECONDS, TimeUnit.SECONDS),
            "spin " + spin + ": " + done.getCount() + " calls were never run (a lost wake-up)");
        assertTrue(failures.isEmpty(), () -> "spin " + spin + ": " + failures);
        for (int i = 0; i < total; i++) {
          assertEquals(1, runs.get(i), "spin " + spin + ": call " + i + " ran");
        }
        assertEquals(0, waitForIdle(threads), "admitted calls left");
      } finally {
        threads.shutdown(1000);
      }
    }
  }

  /** A few calls at a time, each one waiting for the last, the way one client's round trips are. */
  @Test
  void oneCallAtATimeIsAlwaysTakenAlsoAfterAPark(Random random) throws Exception {
    DispatchThreads threads = new DispatchThreads("test-dispatch", 2, 4, 1_000);
    try {
      for (int i = 0; i < 2_000; i++) {
        CountDownLatch ran = new CountDownLatch(1);
        assertTrue(threads.offer(task(ran::countDown, () -> {})));
        assertTrue(ran.await(STUCK_SECONDS, TimeUnit.SECONDS), "call " + i + " never ran");
        if (random.nextInt(8) == 0) {
          LockSupport.parkNanos(random.nextInt(20_000)); // past the spin: the threads park
        }
      }
    } finally {
      threads.shutdown(1000);
    }
  }

  @Test
  void theBoundRefusesAtOnceAndFreesWithTheThreads() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch running = new CountDownLatch(2);
    AtomicInteger ran = new AtomicInteger();
    Runnable block =
        () -> {
          running.countDown();
          try {
            release.await(STUCK_SECONDS, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          ran.incrementAndGet();
        };
    DispatchThreads threads = new DispatchThreads("test-dispatch", 2, 3, 1_000);
    try {
      assertTrue(threads.offer(task(block, () -> {})));
      assertTrue(threads.offer(task(block, () -> {})));
      assertTrue(running.await(STUCK_SECONDS, TimeUnit.SECONDS));
      for (int i = 0; i < 3; i++) {
        assertTrue(threads.offer(task(ran::incrementAndGet, () -> {})), "queued call " + i);
      }
      // Two running, three queued: the sixth is refused, again and again, without waiting.
      for (int i = 0; i < 10; i++) {
        assertFalse(threads.offer(task(ran::incrementAndGet, () -> {})), "call over the bound");
      }
      assertEquals(5, threads.admitted());
      release.countDown();
      assertEquals(0, waitForIdle(threads));
      assertEquals(5, ran.get());
      assertTrue(threads.offer(task(ran::incrementAndGet, () -> {})), "room again");
      assertEquals(0, waitForIdle(threads));
      assertEquals(6, ran.get());
    } finally {
      release.countDown();
      threads.shutdown(1000);
    }
  }

  @Test
  void shutdownAbandonsWhatNoThreadTookAndInterruptsAStuckHandler() throws Exception {
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch unstick = new CountDownLatch(1);
    AtomicInteger interrupted = new AtomicInteger();
    AtomicIntegerArray ran = new AtomicIntegerArray(4);
    AtomicIntegerArray abandoned = new AtomicIntegerArray(4);
    DispatchThreads threads = new DispatchThreads("test-dispatch", 1, 3, 0);
    try {
      assertTrue(
          threads.offer(
              task(
                  () -> {
                    running.countDown();
                    // Stuck past the grace period, interrupt or not: the queue is left to close.
                    for (; ; ) {
                      try {
                        if (unstick.await(STUCK_SECONDS, TimeUnit.SECONDS)) {
                          break;
                        }
                      } catch (InterruptedException e) {
                        interrupted.incrementAndGet();
                      }
                    }
                    ran.incrementAndGet(0);
                  },
                  () -> abandoned.incrementAndGet(0))));
      assertTrue(running.await(STUCK_SECONDS, TimeUnit.SECONDS));
      for (int i = 1; i < 4; i++) {
        int id = i;
        assertTrue(
            threads.offer(
                task(() -> ran.incrementAndGet(id), () -> abandoned.incrementAndGet(id))));
      }
      threads.shutdown(50);
      assertFalse(threads.offer(task(() -> {}, () -> {})), "a closed endpoint takes no call");
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(STUCK_SECONDS);
      while (interrupted.get() == 0 && System.nanoTime() < until) {
        Thread.sleep(1);
      }
      assertEquals(1, interrupted.get(), "the stuck handler was interrupted");
      for (int i = 1; i < 4; i++) {
        assertEquals(0, ran.get(i), "queued call " + i + " ran");
        assertEquals(1, abandoned.get(i), "queued call " + i + " was answered");
      }
    } finally {
      unstick.countDown();
    }
    assertEquals(0, waitForIdle(threads));
    assertEquals(1, ran.get(0));
    assertEquals(0, abandoned.get(0));
  }

  /** Waits (bounded) until no call is admitted; returns how many still are. */
  private static int waitForIdle(DispatchThreads threads) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(STUCK_SECONDS);
    while (threads.admitted() > 0 && System.nanoTime() < until) {
      Thread.sleep(1);
    }
    return threads.admitted();
  }
}
