package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Futures;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.fabric.testing.NettyLeakExtension;
import io.ferrite.fabric.testing.SeedExtension;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A wait for one ring call also reads the answers of the waiting thread's other calls in flight, on
 * other connections ({@link RingClient.InFlight}): a two-server tx commit sends its LOCKs to two
 * servers and waits for one, and the other's answer should not need a doorbell.
 */
@ExtendWith({NettyLeakExtension.class, SeedExtension.class})
class ShmRingInFlightTest extends RingTestSupport {

  @Test
  @Timeout(120)
  void aWaitCompletesTheThreadsCallOnAnotherConnection(Random random) throws Exception {
    start(new ShmFabric.Rings(true, 64 << 10, 64 << 10), 2, 16);
    ShmConnection first = connect();
    ShmConnection second = connect();
    Thread me = Thread.currentThread();
    // The first call is answered inline (fast), the second by a dispatch thread (slower): the first
    // answer usually lands while this thread waits for the second. Without the help it is read by
    // the first connection's I/O thread after a doorbell, or by this thread's own later wait, never
    // by this thread while it waits for the second.
    int helped = 0;
    for (int i = 0; i < 300 && helped == 0; i++) {
      ByteBuffer a = bytes(random, 1 + random.nextInt(64));
      ByteBuffer b = bytes(random, 1 + random.nextInt(64));
      AtomicBoolean waiting = new AtomicBoolean();
      AtomicBoolean whileWaiting = new AtomicBoolean();
      CompletableFuture<ByteBuffer> fa = first.call(SVC, ECHO_INLINE, a.duplicate(), DEADLINE);
      fa.whenComplete((v, t) -> whileWaiting.set(Thread.currentThread() == me && waiting.get()));
      waiting.set(true);
      ByteBuffer gotB = Futures.join(second.call(SVC, ECHO, b.duplicate(), DEADLINE));
      waiting.set(false);
      assertEquals(b, gotB, "round " + i + ": the second answer");
      assertEquals(a, Futures.join(fa), "round " + i + ": the first answer");
      helped += whileWaiting.get() ? 1 : 0;
    }
    assertTrue(
        helped > 0,
        "in 300 rounds the wait for the second call never read the first's answer: "
            + first.rings()
            + "; "
            + second.rings());
  }

  @Test
  @Timeout(120)
  void callsOnSeveralConnectionsFromSeveralThreadsAllEnd(Random random) throws Exception {
    // Threads share three connections; each round sends one call on each, of a random kind
    // (inline, dispatch thread, a timer 0-200 us later), and joins them in a random order: every
    // answer is its own call's, and none is stranded when a wait lets go of another ring's role.
    start(new ShmFabric.Rings(true, 64 << 10, 64 << 10), 2, 64);
    List<ShmConnection> conns = List.of(connect(), connect(), connect());
    int threads = 4;
    long[] seeds = new long[threads];
    for (int t = 0; t < threads; t++) {
      seeds[t] = random.nextLong();
    }
    ExecutorService pool =
        Executors.newFixedThreadPool(threads, new NamedThreadFactory("in-flight-caller", true));
    try {
      List<Future<?>> runs = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        Random r = new Random(seeds[t]);
        runs.add(
            pool.submit(
                () -> {
                  for (int round = 0; round < 300; round++) {
                    List<ByteBuffer> sent = new ArrayList<>();
                    List<CompletableFuture<ByteBuffer>> calls = new ArrayList<>();
                    for (ShmConnection c : conns) {
                      int kind = r.nextInt(3);
                      ByteBuffer req =
                          kind == 2
                              ? ByteBuffer.allocate(8)
                                  .order(ByteOrder.LITTLE_ENDIAN)
                                  .putInt(r.nextInt(200))
                                  .putInt(r.nextInt())
                                  .flip()
                              : bytes(r, 1 + r.nextInt(100));
                      sent.add(req);
                      int op = kind == 0 ? ECHO_INLINE : kind == 1 ? ECHO : LATER;
                      calls.add(c.call(SVC, op, req.duplicate(), DEADLINE));
                    }
                    int firstJoined = r.nextInt(calls.size());
                    for (int k = 0; k < calls.size(); k++) {
                      int j = (firstJoined + k) % calls.size();
                      assertEquals(sent.get(j), Futures.join(calls.get(j)), "round " + round);
                    }
                  }
                }));
      }
      for (Future<?> f : runs) {
        f.get(100, TimeUnit.SECONDS); // a failure in a thread fails the test
      }
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS), "the callers did not stop");
    }
    for (ShmConnection c : conns) {
      assertEquals(0, c.rings().pendingCalls(), "calls left pending: " + c.rings());
    }
  }
}
