package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Futures;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.testing.NettyLeakExtension;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Many threads on one connection over tiny rings (4 KiB: a record holds at most 512 B), so the
 * rings wrap thousands of times, fill up (requests then take the socket, responses queue on the
 * server), and answers arrive in chunks, interleaved with other calls' chunks. Every answer must be
 * exactly its request's, whatever the path. Sizes, opcodes and batch shapes come from the seed.
 */
@ExtendWith({NettyLeakExtension.class, SeedExtension.class})
class ShmRingStressTest extends RingTestSupport {
  private static final int THREADS = 6;
  private static final int CALLS = 1500;

  @Test
  @Timeout(300)
  void concurrentCallersOnTinyRingsLoseNothing(TestSeed seed) throws Exception {
    start(new ShmFabric.Rings(true, 4096, 4096), 2, 4096);
    ShmConnection c = connect();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicLong done = new AtomicLong();
    CyclicBarrier go = new CyclicBarrier(THREADS);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      Random random = new Random(seed.value() * 31 + t);
      Thread th =
          new Thread(
              () -> {
                try {
                  go.await();
                  run(c, random, done);
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "ring-stress-" + t);
      threads.add(th);
      th.start();
    }
    for (Thread th : threads) {
      th.join();
    }
    if (failure.get() != null) {
      throw new AssertionError(
          "failed (replay with " + seed.reproduceOption() + "): " + failure.get(), failure.get());
    }
    assertEquals((long) THREADS * CALLS, done.get());
    assertEquals(0, c.rings().pendingCalls(), "calls left pending");
    long rpcs = c.counters().ops(OpKind.RPC);
    assertEquals((long) THREADS * CALLS, rpcs, "client counted every call once");
    assertTrue(
        c.rings().file().requests.consumerPosition() > 20L * 4096,
        "the request ring wrapped many times");
  }

  private void run(ShmConnection c, Random random, AtomicLong done) {
    int i = 0;
    while (i < CALLS) {
      // Mostly one call at a time, sometimes a burst issued before any is awaited.
      int burst = random.nextInt(8) == 0 ? 1 + random.nextInt(64) : 1;
      burst = Math.min(burst, CALLS - i);
      List<CompletableFuture<ByteBuffer>> futures = new ArrayList<>();
      List<ByteBuffer> expected = new ArrayList<>();
      for (int k = 0; k < burst; k++) {
        int kind = random.nextInt(10);
        if (kind < 7) {
          // Requests around the record limit; some too large for a record (the socket).
          int n = random.nextInt(4) == 0 ? random.nextInt(1200) : random.nextInt(200);
          ByteBuffer req = bytes(random, n);
          expected.add(req);
          futures.add(c.call(SVC, kind < 4 ? ECHO_INLINE : ECHO, req.duplicate(), DEADLINE));
        } else {
          // Responses of up to 3 ring capacities: many chunks.
          int n = random.nextInt(3 * 4096);
          long s = random.nextLong();
          expected.add(sized(n, s));
          futures.add(c.call(SVC, SIZED, sizedRequest(n, s), DEADLINE));
        }
      }
      for (int k = 0; k < burst; k++) {
        ByteBuffer got = Futures.join(futures.get(k));
        if (!expected.get(k).equals(got)) {
          throw new AssertionError(
              "call "
                  + (i + k)
                  + ": answer of "
                  + got.remaining()
                  + " B differs from expected "
                  + expected.get(k).remaining()
                  + " B");
        }
        done.incrementAndGet();
      }
      i += burst;
    }
  }
}
