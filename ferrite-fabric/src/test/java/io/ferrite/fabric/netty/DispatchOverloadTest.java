package io.ferrite.fabric.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.shm.ShmFabric;
import io.ferrite.fabric.tcp.TcpFabric;
import io.ferrite.fabric.testing.NettyLeakExtension;
import io.ferrite.fabric.testing.SeedExtension;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The dispatch threads behind every byte-stream fabric (tcp; shm through its rings and through its
 * socket): overload is answered BUSY at once while inline calls still run, and many threads' calls
 * are each answered once, with their own answer, also when the handler completes on another thread.
 */
@ExtendWith({NettyLeakExtension.class, SeedExtension.class})
class DispatchOverloadTest {
  private static final int SVC = 1;
  private static final int BLOCK = 1;
  private static final int ECHO = 2;
  private static final int INLINE = 3;
  private static final int LATER = 4;
  private static final Duration DEADLINE = Duration.ofSeconds(60);

  private final CountDownLatch release = new CountDownLatch(1);
  private final CountDownLatch blocking = new CountDownLatch(2);
  private final Set<String> handled = ConcurrentHashMap.newKeySet();
  private final Queue<String> duplicates = new ConcurrentLinkedQueue<>();
  private final ScheduledExecutorService later =
      new ScheduledThreadPoolExecutor(1, new NamedThreadFactory("test-later", true));

  private Path dir;
  private Fabric fabric;
  private FabricServer server;

  private static ByteBuffer copy(ByteBuffer b) {
    ByteBuffer c = ByteBuffer.allocate(b.remaining());
    c.put(b.duplicate()).flip();
    return c;
  }

  private void record(ByteBuffer request) {
    if (request.remaining() == 8) {
      String key =
          request.getInt(request.position()) + "/" + request.getInt(request.position() + 4);
      if (!handled.add(key)) {
        duplicates.add(key);
      }
    }
  }

  private final RpcHandler handler =
      new RpcHandler() {
        @Override
        public CompletableFuture<ByteBuffer> handle(
            RpcContext ctx, int service, int opcode, ByteBuffer request) {
          switch (opcode) {
            case BLOCK -> {
              blocking.countDown();
              try {
                release.await(60, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              return CompletableFuture.completedFuture(copy(request));
            }
            case ECHO -> {
              record(request);
              return CompletableFuture.completedFuture(copy(request));
            }
            case LATER -> {
              // Answered by another thread, after this dispatch thread moved on.
              record(request);
              ByteBuffer answer = copy(request);
              CompletableFuture<ByteBuffer> f = new CompletableFuture<>();
              later.schedule(() -> f.complete(answer), 20, TimeUnit.MICROSECONDS);
              return f;
            }
            default -> {
              return Futures.failed(ErrorCode.UNKNOWN_OPCODE, "opcode " + opcode);
            }
          }
        }

        @Override
        public CompletableFuture<ByteBuffer> handleInline(
            RpcContext ctx, int service, int opcode, ByteBuffer request) {
          return opcode == INLINE ? CompletableFuture.completedFuture(copy(request)) : null;
        }
      };

  private FabricConnection start(String kind, int threads, int queue) throws Exception {
    dir = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-dispatch-");
    Credentials creds =
        new Credentials(
            "dispatch", "dispatch-test-secret-0123456789".getBytes(StandardCharsets.UTF_8));
    fabric =
        switch (kind) {
          case "tcp" -> new TcpFabric();
          case "shm" -> new ShmFabric();
          default -> new ShmFabric(ShmFabric.Rings.disabled());
        };
    server =
        fabric.serve(
            ServerSpec.loopback(5, creds, new RegionTable(), handler, dir)
                .withServiceThreads(threads, queue));
    return fabric.connect(server.address(), ConnectOptions.of(creds));
  }

  @AfterEach
  void stop() throws Exception {
    release.countDown();
    later.shutdownNow();
    if (server != null) {
      server.close();
    }
    if (fabric != null) {
      fabric.close();
    }
    if (dir != null) {
      Files.deleteIfExists(dir);
    }
  }

  private static ByteBuffer id(int a, int b) {
    ByteBuffer req = ByteBuffer.allocate(8);
    req.putInt(0, a).putInt(4, b);
    return req;
  }

  @ParameterizedTest
  @ValueSource(strings = {"tcp", "shm", "shm-socket"})
  void withEveryThreadBusyAndTheQueueFullANewCallIsBusyAtOnceAndInlineCallsAnswer(String kind)
      throws Exception {
    try (FabricConnection c = start(kind, 2, 3)) {
      List<CompletableFuture<ByteBuffer>> admitted = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        admitted.add(c.call(SVC, BLOCK, id(-1, i), DEADLINE));
      }
      assertTrue(blocking.await(60, TimeUnit.SECONDS), "both dispatch threads are blocked");
      for (int i = 0; i < 3; i++) {
        admitted.add(c.call(SVC, ECHO, id(0, i), DEADLINE));
      }
      // The handlers are still blocked (the latch is closed), and the refused call has a minute
      // to run: an answer now can only be the dispatcher's BUSY, not a timeout.
      for (int i = 0; i < 3; i++) {
        FerriteException busy =
            assertThrows(
                FerriteException.class,
                () -> Futures.join(c.call(SVC, ECHO, id(1, 0), DEADLINE)),
                kind + ": a call beyond 2 threads + 3 queued");
        assertEquals(ErrorCode.BUSY, busy.code(), busy.getMessage());
        assertTrue(busy.retryable());
      }
      for (int i = 0; i < 5; i++) {
        assertEquals(id(2, i), Futures.join(c.call(SVC, INLINE, id(2, i), DEADLINE)), "inline");
      }
      for (CompletableFuture<ByteBuffer> f : admitted) {
        assertFalse(f.isDone(), kind + ": an admitted call ended before the latch opened");
      }
      release.countDown();
      for (int i = 0; i < 5; i++) {
        ByteBuffer expected = i < 2 ? id(-1, i) : id(0, i - 2);
        assertEquals(expected, Futures.join(admitted.get(i)), kind + ": admitted call " + i);
      }
      assertFalse(handled.contains("1/0"), kind + ": a refused call ran");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"tcp", "shm", "shm-socket"})
  void manyThreadsCallsAreEachAnsweredOnceWithTheirOwnAnswer(String kind, Random random)
      throws Exception {
    int threads = 8;
    int calls = 250;
    try (FabricConnection c = start(kind, 2, 1024)) {
      Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
      AtomicInteger answered = new AtomicInteger();
      List<Thread> ts = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int me = t;
        long seed = random.nextLong();
        Thread th =
            new Thread(
                () -> {
                  try {
                    Random r = new Random(seed);
                    for (int i = 0; i < calls; i++) {
                      int op = r.nextBoolean() ? ECHO : LATER;
                      ByteBuffer rsp;
                      if (r.nextInt(4) == 0) {
                        // Several in flight from one thread, answered in any order.
                        CompletableFuture<ByteBuffer> a = c.call(SVC, op, id(me, i), DEADLINE);
                        i++;
                        CompletableFuture<ByteBuffer> b = c.call(SVC, op, id(me, i), DEADLINE);
                        assertEquals(id(me, i - 1), Futures.join(a));
                        rsp = Futures.join(b);
                        answered.incrementAndGet();
                      } else {
                        rsp = c.callSync(SVC, op, id(me, i), DEADLINE);
                      }
                      assertEquals(id(me, i), rsp, "answer to call " + me + "/" + i);
                      answered.incrementAndGet();
                    }
                  } catch (Throwable e) {
                    failures.add(e);
                  }
                },
                "caller-" + t);
        ts.add(th);
        th.start();
      }
      for (Thread th : ts) {
        th.join();
      }
      assertNull(failures.peek(), () -> kind + ": " + failures);
      assertTrue(
          duplicates.isEmpty(),
          () ->
              kind + ": " + duplicates.size() + " calls handled twice, e.g. " + duplicates.peek());
      assertEquals(answered.get(), handled.size(), kind + ": calls handled");
      assertTrue(answered.get() >= threads * calls, kind + ": answered " + answered.get());
    }
  }
}
