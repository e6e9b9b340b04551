package io.ferrite.fabric.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.tcp.TcpFabric;
import io.ferrite.fabric.testing.NettyLeakExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A caller that finds the writer's lock held by someone who is not combining (the event loop's
 * marker callback, a connection being lost) leaves its op for the holder; the holder must send it
 * when it unlocks. Before, such an op waited for the next op, and with none forever: it was not
 * registered yet, so not even its timeout ran. Under TLS, every frame takes the loop.
 */
@ExtendWith(NettyLeakExtension.class)
class ClientWriterHandoffTest {
  @Test
  void anOpSubmittedWhileTheLockIsHeldIsSentWhenItIsReleased() throws Exception {
    Credentials creds =
        new Credentials("handoff", "handoff-secret-0123456789".getBytes(StandardCharsets.UTF_8));
    Path dir = Files.createTempDirectory("ferrite-handoff-");
    RegionTable regions = new RegionTable();
    try (MappedRegion region = MappedRegion.create(dir.resolve("r"), 1, 4096, 42);
        TcpFabric fabric = new TcpFabric(1, Duration.ofSeconds(5))) {
      regions.register(region);
      FabricServer server =
          fabric.serve(ServerSpec.loopback(1, creds, regions, RpcHandler.none(), dir));
      NettyConnection c =
          (NettyConnection) fabric.connect(server.address(), ConnectOptions.of(creds));
      RegionRef ref = regions.ref(1, 1);
      ClientWriter w = c.writer();
      CountDownLatch held = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      AtomicReference<Throwable> failure = new AtomicReference<>();
      Thread holder =
          new Thread(
              () -> {
                try {
                  w.lock();
                  try {
                    held.countDown();
                    release.await();
                  } finally {
                    w.unlock();
                  }
                } catch (Throwable e) { // NOPMD: checked after join
                  failure.set(e);
                }
              },
              "writer-holder");
      holder.start();
      held.await();
      // tryLock fails: the op is left in the submitted queue for the holder.
      CompletableFuture<Long> faa = c.fetchAndAdd(ref, 0, 5);
      release.countDown();
      holder.join();
      if (failure.get() != null) {
        throw new AssertionError("holder failed", failure.get());
      }
      // A bound only so that the bug shows as a failure rather than a hung build: the op's own
      // timeout (10 s) would end it if it had ever been registered.
      assertEquals(0L, faa.get(60, TimeUnit.SECONDS));
      assertEquals(5L, region.getLongAcquire(0));
      c.close();
      server.close();
    } finally {
      for (Path p : new Path[] {dir.resolve("r"), dir}) {
        Files.deleteIfExists(p);
      }
    }
  }
}
