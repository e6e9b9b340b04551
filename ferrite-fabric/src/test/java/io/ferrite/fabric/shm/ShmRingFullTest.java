package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Futures;
import io.ferrite.fabric.testing.NettyLeakExtension;
import io.ferrite.fabric.testing.SeedExtension;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/** Full rings: requests take the socket, responses wait on the server, nothing is lost. */
@ExtendWith({NettyLeakExtension.class, SeedExtension.class})
class ShmRingFullTest extends RingTestSupport {

  @Test
  @Timeout(120)
  void aFullRequestRingSendsCallsOverTheSocket(Random random) throws Exception {
    start(new ShmFabric.Rings(true, 4096, 4096), 2, 4096);
    ShmConnection c = connect();
    // Stall the poller (an inline handler that blocks, which real ones never do), then fill the
    // request ring behind it.
    CompletableFuture<ByteBuffer> stall;
    do {
      // Until one lands on the poller. One read by the I/O thread after a doorbell is answered at
      // once, and that I/O thread has just woken the poller: the next call, made at once, is
      // likely to find it polling.
      stall = c.call(SVC, STALL_INLINE, ByteBuffer.allocate(0), DEADLINE);
      while (!stall.isDone() && stalled.getCount() > 0) {
        Thread.sleep(1);
      }
    } while (stalled.getCount() > 0);
    List<CompletableFuture<ByteBuffer>> calls = new ArrayList<>();
    List<ByteBuffer> sent = new ArrayList<>();
    while (c.rings().full.sum() == 0) {
      ByteBuffer req = bytes(random, 1 + random.nextInt(300));
      sent.add(req);
      calls.add(c.call(SVC, ECHO, req.duplicate(), DEADLINE));
    }
    // What took the socket is answered while the poller is stuck: the last call did.
    assertEquals(sent.get(sent.size() - 1), Futures.join(calls.get(calls.size() - 1)));
    assertFalse(calls.get(0).isDone(), "the first call waits in the ring behind the stall");
    unstall.countDown();
    Futures.join(stall);
    for (int i = 0; i < calls.size(); i++) {
      assertEquals(sent.get(i), Futures.join(calls.get(i)), "call " + i);
    }
    assertEquals(0, c.rings().pendingCalls());
  }

  @Test
  @Timeout(120)
  void responsesToAClientThatDoesNotReadWaitWithoutHurtingOthers(Random random) throws Exception {
    start(new ShmFabric.Rings(true, 4096, 4096), 2, 4096);
    ShmConnection slow = connect();
    ShmConnection other = connect();
    // Answers of 64 KiB each: 16 ring capacities. Issued async; nobody joins yet, and the answers
    // are delivered (by doorbells) only as fast as the ring lets the server write them.
    List<CompletableFuture<ByteBuffer>> calls = new ArrayList<>();
    List<ByteBuffer> expected = new ArrayList<>();
    for (int i = 0; i < 32; i++) {
      long seed = random.nextLong();
      expected.add(sized(64 << 10, seed));
      calls.add(slow.call(SVC, SIZED, sizedRequest(64 << 10, seed), DEADLINE));
    }
    for (int i = 0; i < 50; i++) {
      assertEcho(other, ECHO_INLINE, bytes(random, 100), "the other client, call " + i);
    }
    for (int i = 0; i < calls.size(); i++) {
      assertEquals(expected.get(i), Futures.join(calls.get(i)), "answer " + i);
    }
    assertTrue(ringServer().queuedResponses.sum() > 0, "no answer ever found its ring full");
  }
}
