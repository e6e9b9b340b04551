package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Futures;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.testing.NettyLeakExtension;
import io.ferrite.fabric.testing.SeedExtension;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * An inline handler that forwards its request to another server and answers once that one answers
 * (a tx primary forwarding a commit to its backup, docs/TX.md "Measurements") has the forward's
 * answer read by the ring poller that sent it ({@link RingClient.InFlight#poll}), not rung for: a
 * doorbell costs a socket write and a wake-up of the connection's I/O thread. Here the "other
 * server" is this endpoint itself, through a second connection of its own.
 */
@ExtendWith({NettyLeakExtension.class, SeedExtension.class})
class ShmRingPollerForwardTest extends RingTestSupport {
  /** Inline: forwards the request to {@link #peer} ({@link #ECHO_INLINE}), answers its answer. */
  private static final int FORWARD = 20;

  /** Inline: forwards the request to {@link #peer} ({@link #LATER}), answers its answer. */
  private static final int FORWARD_LATER = 21;

  /** Threads that completed a forward's answer. */
  private final List<String> completedOn = Collections.synchronizedList(new ArrayList<>());

  private volatile ShmConnection peer;

  private void start() throws Exception {
    start(new ShmFabric.Rings(true, 64 << 10, 64 << 10), 2, 64);
    peer = connect();
  }

  @Test
  @Timeout(120)
  void theForwardsAnswerIsReadByThePollerThatSentIt(Random random) throws Exception {
    start();
    ShmConnection front = connect();
    int rounds = 300;
    for (int i = 0; i < rounds; i++) {
      ByteBuffer req = bytes(random, 1 + random.nextInt(64));
      assertEquals(req, Futures.join(front.call(SVC, FORWARD, req.duplicate(), DEADLINE)), "" + i);
    }
    long onPoller = completedOn.stream().filter(t -> t.startsWith("ferrite-shm-rpc-")).count();
    // Without the poller's look at its calls' rings, none is: each answer finds the peer's
    // client-asleep flag up, is rung for, and the peer connection's I/O thread completes it. (Not
    // every one is read by the poller: it may have gone to sleep first on a loaded machine.)
    assertTrue(
        onPoller > 0,
        "no forward's answer of "
            + rounds
            + " was read by the ring poller: "
            + peer.rings()
            + ", completed on "
            + completedOn.subList(0, Math.min(5, completedOn.size())));
  }

  @Test
  @Timeout(120)
  void forwardsAnsweredLateFromManyCallersAllEnd(Random random) throws Exception {
    // Forwards whose answers come 0-300 us later, from another thread: the poller may go to sleep
    // (letting go of the peer's ring) while they are in flight, and other callers' waits compete
    // for the role. Every answer is its own call's, and none is stranded.
    start();
    List<ShmConnection> fronts = List.of(connect(), connect());
    int threads = 3;
    long[] seeds = new long[threads];
    for (int t = 0; t < threads; t++) {
      seeds[t] = random.nextLong();
    }
    AtomicInteger done = new AtomicInteger();
    ExecutorService pool =
        Executors.newFixedThreadPool(threads, new NamedThreadFactory("fwd-caller", true));
    try {
      List<Future<?>> runs = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        Random r = new Random(seeds[t]);
        runs.add(
            pool.submit(
                () -> {
                  for (int round = 0; round < 200; round++) {
                    ShmConnection c = fronts.get(r.nextInt(fronts.size()));
                    boolean late = r.nextBoolean();
                    ByteBuffer req =
                        ByteBuffer.allocate(12)
                            .order(ByteOrder.LITTLE_ENDIAN)
                            .putInt(r.nextInt(300))
                            .putLong(r.nextLong())
                            .flip();
                    CompletableFuture<ByteBuffer> f =
                        c.call(SVC, late ? FORWARD_LATER : FORWARD, req.duplicate(), DEADLINE);
                    assertEquals(req, Futures.join(f), "round " + round);
                    done.incrementAndGet();
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
    assertEquals(threads * 200, done.get());
    assertEquals(0, peer.rings().pendingCalls(), "forwards left pending: " + peer.rings());
  }

  @Override
  RpcHandler handler() {
    RpcHandler base = super.handler();
    return new RpcHandler() {
      @Override
      public CompletableFuture<ByteBuffer> handle(
          RpcContext ctx, int service, int opcode, ByteBuffer request) {
        return base.handle(ctx, service, opcode, request);
      }

      @Override
      public CompletableFuture<ByteBuffer> handleInline(
          RpcContext ctx, int service, int opcode, ByteBuffer request) {
        if (service == SVC && (opcode == FORWARD || opcode == FORWARD_LATER)) {
          return peer.call(SVC, opcode == FORWARD ? ECHO_INLINE : LATER, copy(request), DEADLINE)
              .thenApply(
                  b -> {
                    completedOn.add(Thread.currentThread().getName());
                    return b;
                  });
        }
        return base.handleInline(ctx, service, opcode, request);
      }
    };
  }
}
