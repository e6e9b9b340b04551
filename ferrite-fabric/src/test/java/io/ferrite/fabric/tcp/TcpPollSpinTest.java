package io.ferrite.fabric.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricTuning;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.netty.NettyConnection;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The tcp pollers ({@link FabricTuning#tcpPollSpinNanos}: server event loops that poll before they
 * block, lane callers that poll for their answers) change no semantics: RPCs (on lanes and through
 * the event loop, small and past the lane's buffer, answered at once and after the poll ran out)
 * and one-sided reads from several threads give the same answers with the spin off and with a spin
 * longer than any answer takes; and an idle server's event loop stops spinning after the bound (its
 * thread's CPU time stops growing).
 */
class TcpPollSpinTest extends TcpTestSupport {
  private static final int SVC = 9;
  private static final int ECHO = 1;
  private static final int SLOW_ECHO = 2;
  private static final int INLINE_ECHO = 3;
  private static final int FAIL = 4;
  private static final Duration DEADLINE = Duration.ofSeconds(60);

  private FabricTuning tuning = FabricTuning.DEFAULTS;
  private final Set<Long> loopThreads = ConcurrentHashMap.newKeySet();

  @Override
  Fabric newFabric() {
    return new TcpFabric(2, Duration.ofMillis(500), null, tuning);
  }

  private static ByteBuffer copy(ByteBuffer request) {
    ByteBuffer out = ByteBuffer.allocate(request.remaining());
    out.put(request.duplicate());
    return out.flip();
  }

  private final RpcHandler handler =
      new RpcHandler() {
        @Override
        public CompletableFuture<ByteBuffer> handle(
            RpcContext ctx, int service, int opcode, ByteBuffer request) {
          switch (opcode) {
            case ECHO -> {
              return CompletableFuture.completedFuture(copy(request));
            }
            case SLOW_ECHO -> {
              // Longer than the short spin of the test: the caller's poll runs out and it blocks.
              try {
                Thread.sleep(30);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              return CompletableFuture.completedFuture(copy(request));
            }
            default -> {
              return Futures.failed(ErrorCode.CONFLICT, "opcode " + opcode);
            }
          }
        }

        @Override
        public CompletableFuture<ByteBuffer> handleInline(
            RpcContext ctx, int service, int opcode, ByteBuffer request) {
          if (opcode != INLINE_ECHO) {
            return null;
          }
          loopThreads.add(Thread.currentThread().getId());
          return CompletableFuture.completedFuture(copy(request));
        }
      };

  private static ByteBuffer randomBytes(Random r, int n) {
    byte[] b = new byte[n];
    r.nextBytes(b);
    return ByteBuffer.wrap(b);
  }

  /** One worker's mix of calls and reads, each answer checked. */
  private void work(NettyConnection c, long workerSeed, int ops) {
    Random r = new Random(workerSeed);
    for (int i = 0; i < ops; i++) {
      int kind = r.nextInt(100);
      String what = "op " + i + " of worker seed " + workerSeed + "; " + where();
      if (kind < 30) {
        int n = r.nextInt(10) == 0 ? 20_000 + r.nextInt(40_000) : r.nextInt(300);
        ByteBuffer req = randomBytes(r, n);
        int op = r.nextBoolean() ? ECHO : INLINE_ECHO;
        assertEquals(req, c.callSync(SVC, op, req.duplicate(), DEADLINE), what);
      } else if (kind < 40) {
        ByteBuffer req = randomBytes(r, r.nextInt(300));
        assertEquals(req, c.call(SVC, ECHO, req.duplicate(), DEADLINE).join(), what);
      } else if (kind < 42) {
        ByteBuffer req = randomBytes(r, 16);
        assertEquals(req, c.callSync(SVC, SLOW_ECHO, req.duplicate(), DEADLINE), what);
      } else if (kind < 45) {
        FerriteException e =
            assertThrows(
                FerriteException.class,
                () -> c.callSync(SVC, FAIL, ByteBuffer.allocate(4), DEADLINE),
                what);
        assertEquals(ErrorCode.CONFLICT, e.code(), what);
      } else {
        int len = 1 + r.nextInt(r.nextInt(8) == 0 ? 60_000 : 512);
        int off = r.nextInt(REGION_BYTES - len);
        ByteBuffer want = ByteBuffer.allocate(len);
        region.readInto(off, want);
        ByteBuffer got = ByteBuffer.allocate(len);
        c.readSync(ref, off, got);
        assertArrayEquals(want.array(), got.array(), what);
      }
    }
  }

  @ParameterizedTest(name = "spin {0} ns")
  @ValueSource(longs = {0, 20_000_000})
  void callsAndReadsFromSeveralThreadsGiveTheSameAnswers(long spinNanos) throws Exception {
    tuning = FabricTuning.DEFAULTS.withTcpPollSpin(spinNanos);
    start(handler, 2, 64);
    NettyConnection c = (NettyConnection) connect();
    assertEquals(spinNanos, ((TcpFabric) fabric).tuning().tcpPollSpinNanos());
    int threads = 4;
    int ops = 400;
    ExecutorService pool =
        Executors.newFixedThreadPool(threads, new NamedThreadFactory("poll-spin-test", true));
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        long workerSeed = random.nextLong();
        done.add(pool.submit(() -> work(c, workerSeed, ops)));
      }
      for (Future<?> f : done) {
        f.get(5, TimeUnit.MINUTES); // a failure in a worker fails the test here
      }
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(1, TimeUnit.MINUTES), "workers did not stop");
    }
    assertTrue(c.lanes() > 0, "no call took a lane; " + where());
    assertFalse(loopThreads.isEmpty(), "no call was answered inline");
    assertTrue(c.counters().ops(OpKind.RPC) > 0);
    assertStillServes();
  }

  @Test
  void anIdleServerLoopStopsSpinningAfterTheBound() throws Exception {
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    Assumptions.assumeTrue(mx.isThreadCpuTimeSupported(), "no per-thread CPU time here");
    if (!mx.isThreadCpuTimeEnabled()) {
      mx.setThreadCpuTimeEnabled(true);
    }
    long bound = TimeUnit.MILLISECONDS.toNanos(300);
    tuning = FabricTuning.DEFAULTS.withTcpPollSpin(bound);
    start(handler, 1, 16);
    NettyConnection c = (NettyConnection) connect();
    // Inline answers, on lanes and on the shared connection, name the loops that served them.
    for (int i = 0; i < 200; i++) {
      ByteBuffer req = randomBytes(random, 8);
      assertEquals(req, c.callSync(SVC, INLINE_ECHO, req.duplicate(), DEADLINE), where());
      assertEquals(req, c.call(SVC, INLINE_ECHO, req.duplicate(), DEADLINE).join(), where());
    }
    assertFalse(loopThreads.isEmpty(), "no call was answered inline");
    long start = cpu(mx);
    Thread.sleep(150); // within the bound: the loops poll
    long spinning = cpu(mx) - start;
    Thread.sleep(TimeUnit.NANOSECONDS.toMillis(bound) + 500); // past it: they block
    long before = cpu(mx);
    Thread.sleep(1000);
    long idle = cpu(mx) - before;
    String figures =
        "loop CPU while within the bound: "
            + spinning / 1000
            + " us; over 1 s idle after it: "
            + idle / 1000
            + " us; loops "
            + loopThreads;
    // An idle loop that kept polling would take hundreds of ms of CPU in that second; a blocked
    // one takes none (a generous margin for a stray wake-up).
    assertTrue(idle < TimeUnit.MILLISECONDS.toNanos(50), figures);
    // And it did poll while within the bound: the loop's CPU grew while nothing was sent.
    assertTrue(spinning > idle, figures);
    assertStillServes();
  }

  /** The summed CPU time of the loops that answered inline calls. */
  private long cpu(ThreadMXBean mx) {
    long sum = 0;
    for (long id : loopThreads) {
      long t = mx.getThreadCpuTime(id);
      assertTrue(t >= 0, "loop thread " + id + " is gone");
      sum += t;
    }
    return sum;
  }
}
