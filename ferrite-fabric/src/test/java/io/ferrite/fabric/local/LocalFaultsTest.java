package io.ferrite.fabric.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The local fabric's fault injection does what it says, so tests built on it prove something. */
class LocalFaultsTest {
  private final Credentials creds =
      new Credentials("faults", "0123456789abcdef0123".getBytes(StandardCharsets.UTF_8));
  private LocalNetwork network;
  private LocalFabric fabric;
  private Path dir;
  private MappedRegion region;
  private FabricServer server;
  private FabricConnection conn;
  private RegionRef ref;

  @BeforeEach
  void start() throws IOException {
    network = new LocalNetwork();
    fabric = new LocalFabric(network);
    dir = Files.createTempDirectory("ferrite-faults-");
    region = MappedRegion.create(dir.resolve("r"), 3, 4096, 77);
    RegionTable table = new RegionTable();
    table.register(region);
    RpcHandler echo = (ctx, s, o, req) -> CompletableFuture.completedFuture(req);
    server = fabric.serve(ServerSpec.loopback(1, creds, table, echo, dir));
    conn = fabric.connect(server.address(), ConnectOptions.of(creds));
    ref = table.ref(1, 3);
  }

  @AfterEach
  void stop() throws IOException {
    fabric.close();
    region.closeAndDelete();
    Files.deleteIfExists(dir);
  }

  private static ErrorCode code(CompletableFuture<?> f) {
    return assertThrows(FerriteException.class, () -> Futures.join(f)).code();
  }

  @Test
  void droppedRequestsDoNotHappen() {
    network.faults().dropNextRequests(2);
    assertEquals(ErrorCode.DROPPED, code(conn.fetchAndAdd(ref, 0, 1)));
    assertEquals(
        ErrorCode.DROPPED, code(conn.call(1, 1, ByteBuffer.allocate(1), Duration.ofSeconds(1))));
    assertEquals(0, region.getLongAcquire(0), "a dropped request must not run");
    assertEquals(0, conn.fetchAndAddSync(ref, 0, 1), "the fault is used up");
  }

  @Test
  void droppedResponsesHideOpsThatHappened() {
    network.faults().dropNextResponses(1);
    FerriteException e =
        assertThrows(FerriteException.class, () -> conn.fetchAndAddSync(ref, 8, 5));
    assertEquals(ErrorCode.DROPPED, e.code());
    assertTrue(e.retryable());
    assertEquals(5, region.getLongAcquire(8), "the op ran though its answer was lost");
  }

  @Test
  void delayedOpsCompleteLater() {
    network.faults().delay(Duration.ofMillis(50));
    CompletableFuture<Long> f = conn.fetchAndAdd(ref, 16, 1);
    assertFalse(f.isDone(), "a delayed op must not complete at once");
    assertEquals(0, Futures.join(f));
    assertEquals(1, region.getLongAcquire(16));
  }

  @Test
  void rpcPastItsDeadlineTimesOut() {
    network.faults().delay(Duration.ofMillis(300));
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> conn.callSync(1, 1, ByteBuffer.allocate(1), Duration.ofMillis(50)));
    assertEquals(ErrorCode.TIMEOUT, e.code());
  }

  @Test
  void aHeldRpcReachesItsServerOnlyWhenReleased() throws Exception {
    java.util.concurrent.atomic.AtomicInteger served =
        new java.util.concurrent.atomic.AtomicInteger();
    RegionTable table = new RegionTable();
    RpcHandler counting =
        (ctx, s, o, req) -> {
          served.incrementAndGet();
          return CompletableFuture.completedFuture(req);
        };
    FabricServer other = fabric.serve(ServerSpec.loopback(2, creds, table, counting, dir));
    FabricConnection c = fabric.connect(other.address(), ConnectOptions.of(creds));
    LocalFaults.Hold hold = network.faults().holdNextRpc(2, 7, 3);
    // Another node, service or opcode goes through.
    assertEquals(
        1,
        Futures.join(conn.call(7, 3, ByteBuffer.allocate(1), Duration.ofSeconds(5))).remaining());
    Futures.join(c.call(7, 4, ByteBuffer.allocate(2), Duration.ofSeconds(5)));
    assertEquals(1, served.get());
    assertFalse(hold.isCaught());
    CompletableFuture<ByteBuffer> held =
        c.call(7, 3, ByteBuffer.allocate(3), Duration.ofSeconds(30));
    assertTrue(hold.awaitCaught(Duration.ofSeconds(5)));
    // Only one RPC is held: the next one to the same opcode goes through at once.
    Futures.join(c.call(7, 3, ByteBuffer.allocate(4), Duration.ofSeconds(5)));
    assertEquals(2, served.get());
    assertFalse(held.isDone(), "a held RPC must not be answered");
    hold.release();
    assertEquals(3, Futures.join(held).remaining());
    assertEquals(3, served.get(), "the held RPC ran once released");
    // A dropped hold fails its RPC, which never runs.
    LocalFaults.Hold lost = network.faults().holdNextRpc(2, 7, 3);
    CompletableFuture<ByteBuffer> never =
        c.call(7, 3, ByteBuffer.allocate(5), Duration.ofSeconds(30));
    assertTrue(lost.awaitCaught(Duration.ofSeconds(5)));
    lost.drop();
    assertEquals(ErrorCode.DROPPED, code(never));
    assertEquals(3, served.get(), "a dropped RPC never reaches its server");
  }

  @Test
  void killedServerFailsEveryConnectionAndRefusesNewOnes() {
    network.faults().delay(Duration.ofMillis(100));
    CompletableFuture<Long> inFlight = conn.fetchAndAdd(ref, 24, 1);
    network.kill(server.address());
    assertEquals(ErrorCode.UNAVAILABLE, code(inFlight));
    assertFalse(conn.isOpen());
    network.faults().heal();
    assertEquals(ErrorCode.UNAVAILABLE, code(conn.read(ref, 0, ByteBuffer.allocate(8))));
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> fabric.connect(server.address(), ConnectOptions.of(creds)));
    assertEquals(ErrorCode.UNAVAILABLE, e.code());
    assertEquals(0, region.getLongAcquire(24), "an op in flight at the kill did not run");
  }
}
