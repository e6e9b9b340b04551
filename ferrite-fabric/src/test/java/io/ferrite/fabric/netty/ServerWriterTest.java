package io.ferrite.fabric.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.MappedRegion;
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
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Answers written by dispatch threads straight to the socket ({@link ServerWriter}) and responses
 * the event loop writes for one-sided ops share one connection without a byte of one landing inside
 * another: large answers that fill the socket (the rest then goes through the loop, and direct
 * writes wait until Netty has written it) mixed with pipelined reads, from many threads.
 */
@ExtendWith({NettyLeakExtension.class, SeedExtension.class})
class ServerWriterTest {
  private static final int SVC = 1;
  private static final int REGION_BYTES = 4 << 20;

  @Test
  void directAnswersAndLoopResponsesNeverInterleave(Random random) throws Exception {
    Path dir = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-writer-");
    Credentials creds =
        new Credentials("writer", "writer-test-secret-0123456789".getBytes(StandardCharsets.UTF_8));
    MappedRegion region = MappedRegion.create(dir.resolve("r"), 1, REGION_BYTES, random.nextLong());
    byte[] fill = new byte[REGION_BYTES];
    random.nextBytes(fill);
    region.writeFrom(0, ByteBuffer.wrap(fill));
    RegionTable regions = new RegionTable();
    regions.register(region);
    // Answers of a size given by the request, filled from the request's seed.
    RpcHandler sized =
        new RpcHandler() {
          @Override
          public CompletableFuture<ByteBuffer> handle(
              RpcContext ctx, int service, int opcode, ByteBuffer request) {
            int n = request.getInt(request.position());
            long seed = request.getLong(request.position() + 4);
            return CompletableFuture.completedFuture(ByteBuffer.wrap(bytes(seed, n)));
          }
        };
    TcpFabric fabric = new TcpFabric(2, Duration.ofSeconds(5));
    FabricServer server =
        fabric.serve(
            ServerSpec.loopback(4, creds, regions, sized, dir).withServiceThreads(2, 1024));
    RegionRef ref = regions.ref(4, 1);
    try (FabricConnection c = fabric.connect(server.address(), ConnectOptions.of(creds))) {
      Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < 6; t++) {
        long seed = random.nextLong();
        Thread th =
            new Thread(
                () -> {
                  try {
                    Random r = new Random(seed);
                    for (int i = 0; i < 60 && failures.isEmpty(); i++) {
                      // Up to 3 MiB answered by a dispatch thread: more than a socket buffer.
                      int n = r.nextInt(4) == 0 ? r.nextInt(3 << 20) : r.nextInt(70_000);
                      long s = r.nextLong();
                      ByteBuffer req = ByteBuffer.allocate(12).putInt(0, n).putLong(4, s);
                      CompletableFuture<ByteBuffer> call =
                          c.call(SVC, 1, req, Duration.ofSeconds(60));
                      // Meanwhile pipelined reads, answered by the event loop.
                      Batch b = c.batch();
                      List<ByteBuffer> dsts = new ArrayList<>();
                      List<Integer> offs = new ArrayList<>();
                      for (int k = 0; k < 16; k++) {
                        int len = 1 + r.nextInt(r.nextBoolean() ? 64 : 100_000);
                        int off = r.nextInt(REGION_BYTES - len);
                        ByteBuffer dst = ByteBuffer.allocate(len);
                        b.read(ref, off, dst);
                        dsts.add(dst);
                        offs.add(off);
                      }
                      CompletableFuture<Void> flushed = b.flush();
                      if (r.nextInt(3) == 0) {
                        // A slow reader: the client's event loop (where the future completes)
                        // stops reading for a while, the server's socket fills, and its writers
                        // must hand the rest of a frame to its event loop and wait for it.
                        flushed.thenRun(() -> LockSupport.parkNanos(5_000_000));
                      }
                      Futures.join(flushed);
                      for (int k = 0; k < dsts.size(); k++) {
                        byte[] want = new byte[dsts.get(k).capacity()];
                        System.arraycopy(fill, offs.get(k), want, 0, want.length);
                        assertArrayEquals(want, dsts.get(k).array(), "read " + k);
                      }
                      ByteBuffer rsp = Futures.join(call);
                      byte[] got = new byte[rsp.remaining()];
                      rsp.get(got);
                      assertArrayEquals(bytes(s, n), got, "answer of " + n + " B");
                    }
                  } catch (Throwable e) {
                    failures.add(e);
                  }
                },
                "writer-user-" + t);
        threads.add(th);
        th.start();
      }
      for (Thread th : threads) {
        th.join();
      }
      assertNull(failures.peek(), () -> failures.size() + " failures: " + failures.peek());
      assertTrue(c.isOpen(), "no protocol error closed the connection");
      assertEquals(0, c.counters().errors(OpKind.RPC));
      assertEquals(0, c.counters().errors(OpKind.READ));
    } finally {
      server.close();
      fabric.close();
      region.closeAndDelete();
      Files.deleteIfExists(dir);
    }
  }

  private static byte[] bytes(long seed, int n) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }
}
