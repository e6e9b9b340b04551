package io.ferrite.fabric.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.shm.ShmFabric;
import io.ferrite.fabric.tcp.TcpFabric;
import io.ferrite.fabric.testing.NettyLeakExtension;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Inline dispatch on every byte-stream fabric: an operation the handler takes inline runs on the
 * thread that received it and is answered even while the service executor is saturated, where a
 * blocking one gets BUSY; a handler that declines, or throws, behaves as through the executor.
 */
@ExtendWith(NettyLeakExtension.class)
class InlineDispatchTest {
  private static final int BLOCK = 1;
  private static final int INLINE = 2;
  private static final int DECLINED = 3;
  private static final int THROWS = 4;
  private static final Duration DEADLINE = Duration.ofSeconds(30);

  private final CountDownLatch release = new CountDownLatch(1);
  private final CountDownLatch blocking = new CountDownLatch(1);

  private final RpcHandler handler =
      new RpcHandler() {
        @Override
        public CompletableFuture<ByteBuffer> handle(
            RpcContext ctx, int service, int opcode, ByteBuffer request) {
          if (opcode == BLOCK) {
            blocking.countDown();
            try {
              release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
          return CompletableFuture.completedFuture(
              StandardCharsets.UTF_8.encode(Thread.currentThread().getName()));
        }

        @Override
        public CompletableFuture<ByteBuffer> handleInline(
            RpcContext ctx, int service, int opcode, ByteBuffer request) {
          if (opcode == THROWS) {
            throw new IllegalStateException("inline handler bug");
          }
          return opcode == INLINE ? handle(ctx, service, opcode, request) : null;
        }
      };

  @ParameterizedTest
  @ValueSource(strings = {"tcp", "shm", "shm-socket"})
  void inlineCallsAreAnsweredWhileTheExecutorIsSaturated(String kind) throws Exception {
    Path dir = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-inline-");
    Credentials creds =
        new Credentials("inline", "inline-test-secret-0123456789".getBytes(StandardCharsets.UTF_8));
    Fabric fabric =
        switch (kind) {
          case "tcp" -> new TcpFabric();
          case "shm" -> new ShmFabric();
          default -> new ShmFabric(ShmFabric.Rings.disabled());
        };
    // One service thread and no queue: one blocking call saturates it.
    FabricServer server =
        fabric.serve(
            new ServerSpec(
                3,
                creds,
                new RegionTable(),
                handler,
                "127.0.0.1",
                0,
                dir,
                1,
                0,
                ServerSpec.DEFAULT_MAX_FRAME));
    try (FabricConnection c = fabric.connect(server.address(), ConnectOptions.of(creds))) {
      CompletableFuture<ByteBuffer> blocked = c.call(1, BLOCK, ByteBuffer.allocate(0), DEADLINE);
      assertTrue(blocking.await(30, TimeUnit.SECONDS));
      FerriteException busy =
          assertThrows(
              FerriteException.class,
              () -> Futures.join(c.call(1, DECLINED, ByteBuffer.allocate(0), DEADLINE)));
      assertEquals(ErrorCode.BUSY, busy.code(), busy.getMessage());
      for (int i = 0; i < 10; i++) {
        String t =
            StandardCharsets.UTF_8
                .decode(Futures.join(c.call(1, INLINE, ByteBuffer.allocate(i), DEADLINE)))
                .toString();
        assertTrue(
            t.startsWith("ferrite-" + fabric.name() + "-server") || t.startsWith("ferrite-shm-rpc"),
            kind + ": inline call ran on " + t);
      }
      FerriteException bug =
          assertThrows(
              FerriteException.class,
              () -> Futures.join(c.call(1, THROWS, ByteBuffer.allocate(0), DEADLINE)));
      assertEquals(ErrorCode.INTERNAL, bug.code(), bug.getMessage());
      release.countDown();
      assertTrue(
          StandardCharsets.UTF_8
              .decode(Futures.join(blocked))
              .toString()
              .startsWith("ferrite-svc-3"));
      assertTrue(((NettyServer) server).dispatcher().inlineCalls() >= 10);
    } finally {
      release.countDown();
      server.close();
      fabric.close();
      Files.deleteIfExists(dir);
    }
  }
}
