package io.ferrite.fabric.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * RPC answers the handler gives inline on the tcp server's event loop go out with the read burst's
 * other responses ({@link ResponseBuffer}), answers given later from another thread go directly
 * ({@link ServerWriter}), and answers too large to gather go as frames of their own: pipelined from
 * many threads beside one-sided reads, each answer reaches its own call whole, an inline error its
 * own call with its code, and no protocol error closes the connection.
 */
@ExtendWith({NettyLeakExtension.class, SeedExtension.class})
class InlineBurstAnswerTest {
  private static final int SVC = 1;
  private static final int NOW = 1; // answered inline, before handleInline returns
  private static final int LATER = 2; // taken inline, answered afterwards by another thread
  private static final int FAIL = 3; // taken inline, failed before handleInline returns
  private static final int REGION_BYTES = 1 << 20;
  private static final Duration DEADLINE = Duration.ofSeconds(60);

  @Test
  void inlineAnswersReachTheirCallsAmongPipelinedReads(Random random) throws Exception {
    Path dir = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-burst-");
    Credentials creds =
        new Credentials("burst", "burst-test-secret-0123456789".getBytes(StandardCharsets.UTF_8));
    MappedRegion region = MappedRegion.create(dir.resolve("r"), 1, REGION_BYTES, random.nextLong());
    byte[] fill = new byte[REGION_BYTES];
    random.nextBytes(fill);
    region.writeFrom(0, ByteBuffer.wrap(fill));
    RegionTable regions = new RegionTable();
    regions.register(region);
    ExecutorService later =
        Executors.newSingleThreadExecutor(new NamedThreadFactory("inline-burst-later", true));
    RpcHandler handler = new SizedInline(later);
    TcpFabric fabric = new TcpFabric(2, Duration.ofSeconds(5));
    FabricServer server =
        fabric.serve(
            ServerSpec.loopback(4, creds, regions, handler, dir).withServiceThreads(1, 64));
    RegionRef ref = regions.ref(4, 1);
    try (FabricConnection c = fabric.connect(server.address(), ConnectOptions.of(creds))) {
      Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < 6; t++) {
        long seed = random.nextLong();
        Thread th = new Thread(() -> run(c, ref, fill, new Random(seed), failures), "burst-" + t);
        threads.add(th);
        th.start();
      }
      for (Thread th : threads) {
        th.join();
      }
      assertNull(failures.peek(), () -> failures.size() + " failures: " + failures.peek());
      assertTrue(c.isOpen(), "no protocol error closed the connection");
      assertEquals(0, c.counters().errors(OpKind.READ));
      assertTrue(((NettyServer) server).dispatcher().inlineCalls() >= 6 * 200);
    } finally {
      server.close();
      fabric.close();
      later.shutdownNow();
      assertTrue(later.awaitTermination(10, TimeUnit.SECONDS));
      region.closeAndDelete();
      Files.deleteIfExists(dir);
    }
  }

  private static void run(
      FabricConnection c, RegionRef ref, byte[] fill, Random r, Queue<Throwable> failures) {
    try {
      for (int i = 0; i < 200 && failures.isEmpty(); i++) {
        int op = 1 + r.nextInt(3);
        // Around the gathering limit (a 4 KiB body), and now and then a large one.
        int n = r.nextInt(8) == 0 ? r.nextInt(200_000) : r.nextInt(2 * SoftNic.COPY_READ_LIMIT);
        long s = r.nextLong();
        ByteBuffer req = ByteBuffer.allocate(12).putInt(0, n).putLong(4, s);
        Batch b = c.batch();
        List<ByteBuffer> dsts = new ArrayList<>();
        List<Integer> offs = new ArrayList<>();
        for (int k = 0; k < 1 + r.nextInt(8); k++) {
          int len = 1 + r.nextInt(r.nextBoolean() ? 64 : 8192);
          int off = r.nextInt(REGION_BYTES - len);
          ByteBuffer dst = ByteBuffer.allocate(len);
          b.read(ref, off, dst);
          dsts.add(dst);
          offs.add(off);
        }
        CompletableFuture<ByteBuffer> call = c.call(SVC, op, req, DEADLINE);
        Futures.join(b.flush());
        for (int k = 0; k < dsts.size(); k++) {
          byte[] want = new byte[dsts.get(k).capacity()];
          System.arraycopy(fill, offs.get(k), want, 0, want.length);
          assertArrayEquals(want, dsts.get(k).array(), "read " + k);
        }
        if (op == FAIL) {
          FerriteException e = assertThrows(FerriteException.class, () -> Futures.join(call));
          assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), e.getMessage());
          assertTrue(e.getMessage().contains("refused " + s), e.getMessage());
        } else {
          ByteBuffer rsp = Futures.join(call);
          byte[] got = new byte[rsp.remaining()];
          rsp.get(got);
          assertArrayEquals(bytes(s, n), got, "answer of " + n + " B, opcode " + op);
        }
      }
    } catch (Throwable e) {
      failures.add(e);
    }
  }

  /** Answers of a size given by the request, filled from the request's seed; all taken inline. */
  private static final class SizedInline implements RpcHandler {
    private final Executor later;

    SizedInline(Executor later) {
      this.later = later;
    }

    @Override
    public CompletableFuture<ByteBuffer> handle(
        RpcContext ctx, int service, int opcode, ByteBuffer request) {
      int n = request.getInt(request.position());
      long seed = request.getLong(request.position() + 4);
      return switch (opcode) {
        case NOW -> CompletableFuture.completedFuture(ByteBuffer.wrap(bytes(seed, n)));
        case LATER -> CompletableFuture.supplyAsync(() -> ByteBuffer.wrap(bytes(seed, n)), later);
        default ->
            CompletableFuture.failedFuture(
                new FerriteException(ErrorCode.INVALID_ARGUMENT, "refused " + seed));
      };
    }

    @Override
    public CompletableFuture<ByteBuffer> handleInline(
        RpcContext ctx, int service, int opcode, ByteBuffer request) {
      return handle(ctx, service, opcode, request);
    }
  }

  private static byte[] bytes(long seed, int n) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }
}
