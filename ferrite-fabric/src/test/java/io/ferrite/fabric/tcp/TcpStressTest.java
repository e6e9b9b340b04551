package io.ferrite.fabric.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.netty.NettyConnection;
import io.ferrite.fabric.shm.ShmFabric;
import io.ferrite.fabric.testing.NettyLeakExtension;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Several threads share one connection and pipeline writes and reads of random sizes (many split
 * into several frames) into their own slices of one region, each reading back what it wrote without
 * waiting in between: ops of one thread take effect in issue order, so every read must see the
 * write before it, whole.
 */
@ExtendWith(NettyLeakExtension.class)
class TcpStressTest {
  private static final int THREADS = 3;
  private static final int SLICE = 12 << 20;

  private final long seed = Long.getLong("tests.seed", System.nanoTime());
  private final Credentials credentials =
      new Credentials("stress", "stress-secret-0123456789".getBytes(StandardCharsets.UTF_8));
  private final List<AutoCloseable> toClose = new ArrayList<>();
  private Path dir;

  @AfterEach
  void stop() throws Exception {
    for (int i = toClose.size() - 1; i >= 0; i--) {
      toClose.get(i).close();
    }
    if (dir != null) {
      FileTrees.delete(dir);
    }
  }

  @Test
  void tcp() throws Exception {
    run(new TcpFabric());
  }

  @Test
  void tcpWithTls() throws Exception {
    run(new TcpFabric(TlsTesting.tls()));
  }

  @Test
  void shm() throws Exception {
    run(new ShmFabric());
  }

  /**
   * Many bulk reads in flight at once, back to back with small reads and atomics, so the client
   * takes one response's header and body straight from the socket after another's (and stops at the
   * small ones, whose bodies come through read buffers): every byte must land in its own
   * destination.
   */
  @Test
  void pipelinedBulkReadsBetweenSmallOps() throws Exception {
    pipelinedBulkReads(new TcpFabric());
  }

  /** The same through the SSL engine, where no byte is read from the socket directly. */
  @Test
  void pipelinedBulkReadsBetweenSmallOpsOverTls() throws Exception {
    pipelinedBulkReads(new TcpFabric(TlsTesting.tls()));
  }

  private void pipelinedBulkReads(TcpFabric fabric) throws Exception {
    toClose.add(fabric);
    dir = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-stress-");
    RegionTable regions = new RegionTable();
    int size = 16 << 20;
    MappedRegion region = MappedRegion.create(dir.resolve("r"), 1, size, seed);
    toClose.add(region);
    regions.register(region);
    Random rnd = new Random(seed);
    byte[] content = new byte[size];
    rnd.nextBytes(content);
    region.writeFrom(0, ByteBuffer.wrap(content));
    FabricServer server =
        fabric.serve(ServerSpec.loopback(1, credentials, regions, RpcHandler.none(), dir));
    toClose.add(server);
    FabricConnection conn = fabric.connect(server.address(), ConnectOptions.of(credentials));
    toClose.add(conn);
    RegionRef ref = regions.ref(1, 1);
    for (int round = 0; round < 20; round++) {
      List<CompletableFuture<?>> futures = new ArrayList<>();
      List<ByteBuffer> dsts = new ArrayList<>();
      List<Integer> offsets = new ArrayList<>();
      for (int k = 0; k < 24; k++) {
        int len =
            switch (rnd.nextInt(4)) {
              case 0 -> 1 + rnd.nextInt(64);
              case 1 -> (64 << 10) + rnd.nextInt(64 << 10);
              default -> (1 << 20) - rnd.nextInt(4096);
            };
        int at = rnd.nextInt(size - len + 1);
        ByteBuffer dst = ByteBuffer.allocateDirect(len);
        futures.add(conn.read(ref, at, dst));
        dsts.add(dst);
        offsets.add(at);
        if (rnd.nextInt(3) == 0) {
          // Atomics on a word whose value the reads never look at (the first 8 bytes are only
          // read back when offset 0 is drawn, and then added 0).
          futures.add(conn.fetchAndAdd(ref, 8L * rnd.nextInt(4) + (size - 64), 0));
        }
      }
      for (CompletableFuture<?> f : futures) {
        Futures.join(f);
      }
      for (int k = 0; k < dsts.size(); k++) {
        ByteBuffer dst = dsts.get(k);
        int at = offsets.get(k);
        byte[] back = new byte[dst.capacity()];
        dst.get(0, back);
        if (!Arrays.equals(content, at, at + back.length, back, 0, back.length)) {
          throw new AssertionError(
              "round "
                  + round
                  + ", read "
                  + k
                  + " of "
                  + back.length
                  + " B at "
                  + at
                  + " differs (replay with -Dtests.seed="
                  + seed
                  + ")");
        }
      }
    }
  }

  private void run(Fabric fabric) throws Exception {
    toClose.add(fabric);
    dir = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-stress-");
    RegionTable regions = new RegionTable();
    MappedRegion region =
        MappedRegion.create(
            dir.resolve("r"), 1, (long) THREADS * SLICE, new Random(seed).nextLong());
    toClose.add(region);
    regions.register(region);
    FabricServer server =
        fabric.serve(ServerSpec.loopback(1, credentials, regions, RpcHandler.none(), dir));
    toClose.add(server);
    FabricConnection conn = fabric.connect(server.address(), ConnectOptions.of(credentials));
    toClose.add(conn);
    RegionRef ref = regions.ref(1, 1);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      int id = t;
      Thread th =
          new Thread(
              () -> {
                Random rnd = new Random(seed + id);
                long base = (long) id * SLICE;
                try {
                  for (int i = 0; i < 25 && failure.get() == null; i++) {
                    int len =
                        rnd.nextInt(4) == 0 ? 1 + rnd.nextInt(9 << 20) : 1 + rnd.nextInt(5000);
                    long at = base + rnd.nextInt(SLICE - len + 1);
                    byte[] data = new byte[len];
                    rnd.nextBytes(data);
                    ByteBuffer src =
                        rnd.nextBoolean() ? ByteBuffer.wrap(data) : ByteBuffer.allocateDirect(len);
                    if (src.isDirect()) {
                      src.put(data).flip();
                    }
                    ByteBuffer dst =
                        rnd.nextBoolean()
                            ? ByteBuffer.allocate(len)
                            : ByteBuffer.allocateDirect(len);
                    CompletableFuture<Void> w = conn.write(ref, at, src);
                    CompletableFuture<Void> r = conn.read(ref, at, dst);
                    CompletableFuture<Long> add = conn.fetchAndAdd(ref, base, 1);
                    Futures.join(w);
                    Futures.join(r);
                    byte[] back = new byte[len];
                    dst.get(back);
                    if (!Arrays.equals(data, back)) {
                      throw new AssertionError(
                          "thread " + id + " op " + i + ": " + len + " B at " + at + " differ");
                    }
                    Futures.join(add);
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "stress-" + t);
      threads.add(th);
      th.start();
    }
    for (Thread th : threads) {
      th.join();
    }
    if (failure.get() != null) {
      throw new AssertionError(
          fabric.name() + ", seed " + seed + " (replay with -Dtests.seed=" + seed + ")",
          failure.get());
    }
    for (int t = 0; t < THREADS; t++) {
      // Each thread's counter word was overwritten by its own writes in between; only check the
      // connection still answers atomics.
      conn.fetchAndAddSync(ref, (long) t * SLICE, 0);
    }
    // The shared connection and its blocking lanes (synchronous reads on the callers' sockets).
    int lanes = conn instanceof NettyConnection n ? n.lanes() : 0;
    assertEquals(0, server.connections() - 1 - lanes);
  }
}
