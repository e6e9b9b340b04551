package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.testing.NettyLeakExtension;
import io.ferrite.fabric.testing.SeedExtension;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
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
class ShmRingPollerForwardTest {
  private static final int SVC = 1;

  /** Inline: forwards the request to {@link #peer} ({@link #ECHO_INLINE}), answers its answer. */
  private static final int FORWARD = 1;

  private static final int ECHO_INLINE = 2;

  /** Inline: forwards the request to {@link #peer} ({@link #LATER}), answers its answer. */
  private static final int FORWARD_LATER = 3;

  /** Answered by a timer thread 0-300 us later (request: i32 micros, then anything). */
  private static final int LATER = 4;

  private static final Duration DEADLINE = Duration.ofSeconds(30);

  private final Credentials credentials =
      new Credentials("fwd-test", "fwd-test-secret-0123456789abc".getBytes(StandardCharsets.UTF_8));
  private final ScheduledThreadPoolExecutor later =
      new ScheduledThreadPoolExecutor(1, new NamedThreadFactory("fwd-test-later", true));

  /** Threads that completed a forward's answer. */
  private final List<String> completedOn =
      java.util.Collections.synchronizedList(new ArrayList<>());

  private ShmFabric fabric;
  private Path dir;
  private FabricServer server;
  private final List<ShmConnection> connections = new ArrayList<>();
  private volatile ShmConnection peer;

  @AfterEach
  void stopServer() throws Exception {
    for (ShmConnection c : connections) {
      c.close();
    }
    if (server != null) {
      server.close();
    }
    if (fabric != null) {
      fabric.close();
    }
    later.shutdownNow();
    if (dir != null) {
      FileTrees.delete(dir);
    }
  }

  private void start() throws Exception {
    Path shm = Paths.get("/dev/shm");
    dir =
        Files.createTempDirectory(Files.isDirectory(shm) ? shm : Paths.get("/tmp"), "ferrite-fwd-");
    fabric = new ShmFabric(new ShmFabric.Rings(true, 64 << 10, 64 << 10));
    server =
        fabric.serve(
            new ServerSpec(
                9,
                credentials,
                new RegionTable(),
                handler(),
                "127.0.0.1",
                0,
                dir,
                2,
                64,
                ServerSpec.DEFAULT_MAX_FRAME));
    peer = connect();
  }

  private ShmConnection connect() {
    ShmConnection c =
        (ShmConnection) fabric.connect(server.address(), ConnectOptions.of(credentials));
    connections.add(c);
    return c;
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

  private RpcHandler handler() {
    return new RpcHandler() {
      @Override
      public CompletableFuture<ByteBuffer> handle(
          RpcContext ctx, int service, int opcode, ByteBuffer request) {
        if (service != SVC) {
          return Futures.failed(ErrorCode.UNKNOWN_SERVICE, "no service " + service);
        }
        switch (opcode) {
          case ECHO_INLINE:
            return CompletableFuture.completedFuture(copy(request));
          case LATER:
            {
              int micros = request.duplicate().order(ByteOrder.LITTLE_ENDIAN).getInt();
              ByteBuffer answer = copy(request);
              CompletableFuture<ByteBuffer> f = new CompletableFuture<>();
              later.schedule(() -> f.complete(answer), micros, TimeUnit.MICROSECONDS);
              return f;
            }
          default:
            return Futures.failed(ErrorCode.UNKNOWN_OPCODE, "opcode " + opcode);
        }
      }

      @Override
      public CompletableFuture<ByteBuffer> handleInline(
          RpcContext ctx, int service, int opcode, ByteBuffer request) {
        if (service != SVC) {
          return null;
        }
        if (opcode == FORWARD || opcode == FORWARD_LATER) {
          return peer.call(SVC, opcode == FORWARD ? ECHO_INLINE : LATER, copy(request), DEADLINE)
              .thenApply(
                  b -> {
                    completedOn.add(Thread.currentThread().getName());
                    return b;
                  });
        }
        return opcode == ECHO_INLINE ? handle(ctx, service, opcode, request) : null;
      }
    };
  }

  private static ByteBuffer bytes(Random random, int n) {
    byte[] b = new byte[n];
    random.nextBytes(b);
    return ByteBuffer.wrap(b);
  }

  private static ByteBuffer copy(ByteBuffer request) {
    ByteBuffer out = ByteBuffer.allocate(request.remaining());
    out.put(request.duplicate()).flip();
    return out;
  }
}
