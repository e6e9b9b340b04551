package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.netty.NettyServer;
import java.io.IOException;
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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;

/**
 * An shm endpoint with a test service, for the ring tests: echo (on the service executor or
 * inline), sized answers (for chunking), the answering thread's name, answers that come later from
 * another thread, and calls that block a service thread until released.
 */
abstract class RingTestSupport {
  static final int SVC = 1;
  static final int ECHO = 1;
  static final int ECHO_INLINE = 2;
  static final int SIZED = 3;
  static final int THREAD = 4;
  static final int THREAD_INLINE = 5;
  static final int LATER = 6;
  static final int BLOCK = 7;

  /**
   * Inline, and blocks the poller until {@link #unstall} opens (what a handler must never do);
   * answered at once when it runs on another thread.
   */
  static final int STALL_INLINE = 8;

  static final Duration DEADLINE = Duration.ofSeconds(30);

  final Credentials credentials =
      new Credentials("ring-test", "ring-test-secret-0123456789".getBytes(StandardCharsets.UTF_8));

  ShmFabric fabric;
  Path dir;
  FabricServer server;
  final List<AutoCloseable> closeLater = new ArrayList<>();
  final CountDownLatch release = new CountDownLatch(1);
  final CountDownLatch unstall = new CountDownLatch(1);
  final CountDownLatch stalled = new CountDownLatch(1);
  private final ScheduledThreadPoolExecutor later =
      new ScheduledThreadPoolExecutor(1, new NamedThreadFactory("ring-test-later", true));

  /** Starts a server with {@code rings}, {@code threads} service threads and {@code queue}. */
  void start(ShmFabric.Rings rings, int threads, int queue) throws IOException {
    start(new ShmFabric(rings), threads, queue);
  }

  /** Starts a server of {@code f} (closed after the test). */
  void start(ShmFabric f, int threads, int queue) throws IOException {
    Path shm = Paths.get("/dev/shm");
    dir =
        Files.createTempDirectory(
            Files.isDirectory(shm) ? shm : Paths.get("/tmp"), "ferrite-ring-");
    fabric = f;
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
                threads,
                queue,
                ServerSpec.DEFAULT_MAX_FRAME));
  }

  @AfterEach
  void stopServer() throws Exception {
    release.countDown();
    unstall.countDown();
    for (int i = closeLater.size() - 1; i >= 0; i--) {
      closeLater.get(i).close();
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

  ShmConnection connect() {
    ShmConnection c =
        (ShmConnection) fabric.connect(server.address(), ConnectOptions.of(credentials));
    closeLater.add(c);
    return c;
  }

  RingServer ringServer() {
    return (RingServer) ((NettyServer) server).ringHost();
  }

  long inlineCalls() {
    return ((NettyServer) server).dispatcher().inlineCalls();
  }

  /** Ring files currently in the server's directory. */
  long ringFiles() throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().endsWith(".rings")).count();
    }
  }

  /** Mappings of ring files of this server in this process. */
  long ringMappings() throws IOException {
    try (Stream<String> lines = Files.lines(Paths.get("/proc/self/maps"))) {
      return lines.filter(l -> l.contains(dir.toString()) && l.contains(".rings")).count();
    }
  }

  static void await(String what, BooleanSupplier condition) throws InterruptedException {
    for (int i = 0; i < 2000; i++) {
      if (condition.getAsBoolean()) {
        return;
      }
      Thread.sleep(5);
    }
    throw new AssertionError("timed out waiting until " + what);
  }

  static ByteBuffer bytes(Random random, int n) {
    byte[] b = new byte[n];
    random.nextBytes(b);
    return ByteBuffer.wrap(b);
  }

  static ByteBuffer sizedRequest(int n, long seed) {
    return ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN).putInt(n).putLong(seed).flip();
  }

  static ByteBuffer sized(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return ByteBuffer.wrap(b);
  }

  static String text(ByteBuffer b) {
    return StandardCharsets.UTF_8.decode(b.duplicate()).toString();
  }

  ByteBuffer call(FabricConnection c, int opcode, ByteBuffer request) {
    return Futures.join(c.call(SVC, opcode, request, DEADLINE));
  }

  void assertEcho(FabricConnection c, int opcode, ByteBuffer request, String where) {
    ByteBuffer got = call(c, opcode, request.duplicate());
    assertNotNull(got, where);
    assertEquals(request, got, where + ": echo differs");
  }

  /** The test service; a test class may wrap it to add opcodes of its own (above 16). */
  RpcHandler handler() {
    return new RpcHandler() {
      @Override
      public CompletableFuture<ByteBuffer> handle(
          RpcContext ctx, int service, int opcode, ByteBuffer request) {
        if (service != SVC) {
          return Futures.failed(ErrorCode.UNKNOWN_SERVICE, "no service " + service);
        }
        switch (opcode) {
          case ECHO, ECHO_INLINE:
            return CompletableFuture.completedFuture(copy(request));
          case SIZED:
            {
              ByteBuffer r = request.duplicate().order(ByteOrder.LITTLE_ENDIAN);
              return CompletableFuture.completedFuture(sized(r.getInt(), r.getLong()));
            }
          case THREAD, THREAD_INLINE:
            return CompletableFuture.completedFuture(
                StandardCharsets.UTF_8.encode(Thread.currentThread().getName()));
          case LATER:
            {
              int micros = request.duplicate().order(ByteOrder.LITTLE_ENDIAN).getInt();
              ByteBuffer answer = copy(request);
              CompletableFuture<ByteBuffer> f = new CompletableFuture<>();
              later.schedule(() -> f.complete(answer), micros, TimeUnit.MICROSECONDS);
              return f;
            }
          case BLOCK:
            try {
              release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
            return CompletableFuture.completedFuture(ByteBuffer.allocate(0));
          default:
            return Futures.failed(ErrorCode.UNKNOWN_OPCODE, "opcode " + opcode);
        }
      }

      @Override
      public CompletableFuture<ByteBuffer> handleInline(
          RpcContext ctx, int service, int opcode, ByteBuffer request) {
        if (service == SVC && (opcode == ECHO_INLINE || opcode == THREAD_INLINE)) {
          return handle(ctx, service, opcode, request);
        }
        if (service == SVC && opcode == STALL_INLINE) {
          if (!Thread.currentThread().getName().startsWith("ferrite-shm-rpc-")) {
            // Read by the I/O thread after a doorbell: stalling that would stop the socket too.
            return CompletableFuture.completedFuture(ByteBuffer.allocate(0));
          }
          stalled.countDown();
          try {
            unstall.await(30, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return CompletableFuture.completedFuture(ByteBuffer.allocate(0));
        }
        return null;
      }
    };
  }

  static ByteBuffer copy(ByteBuffer request) {
    ByteBuffer out = ByteBuffer.allocate(request.remaining());
    out.put(request.duplicate()).flip();
    return out;
  }
}
