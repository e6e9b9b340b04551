package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.testing.NettyLeakExtension;
import io.ferrite.fabric.testing.SeedExtension;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** RPCs through the shm rings: where they run, what falls back to the socket, cleanup. */
@ExtendWith({NettyLeakExtension.class, SeedExtension.class})
class ShmRingRpcTest extends RingTestSupport {

  @Test
  void inlineCallsRunOnThePollerAndTheOthersOnServiceThreads() throws Exception {
    start(rings(), 2, 16);
    ShmConnection c = connect();
    assertNotNull(c.rings(), "the connection has rings");
    long inlineBefore = inlineCalls();
    String inline = text(call(c, THREAD_INLINE, ByteBuffer.allocate(0)));
    String executor = text(call(c, THREAD, ByteBuffer.allocate(0)));
    // The poller, or the I/O thread that took the doorbell of a call that found it asleep.
    assertTrue(
        inline.startsWith("ferrite-shm-rpc-9") || inline.startsWith("ferrite-shm-server"),
        "inline call ran on " + inline);
    assertTrue(executor.startsWith("ferrite-svc-9"), "blocking call ran on " + executor);
    assertEquals(1, inlineCalls() - inlineBefore);
    // While the poller polls, an inline call is answered by it.
    for (int i = 0; i < 1000; i++) {
      if (text(call(c, THREAD_INLINE, ByteBuffer.allocate(0))).startsWith("ferrite-shm-rpc-9")) {
        break;
      }
      assertTrue(i < 999, "no inline call ever ran on the poller");
    }
    long calls = c.counters().ops(OpKind.RPC);
    assertTrue(calls >= 3, "client counted " + calls);
    assertEquals(calls, server.counters().ops(OpKind.RPC));
    assertEquals(0, c.rings().pendingCalls());
  }

  private static ShmFabric.Rings rings() {
    return new ShmFabric.Rings(true, 256 << 10, 1 << 20);
  }

  @Test
  void largeRequestsTakeTheSocketAndLargeResponsesComeInChunks(Random random) throws Exception {
    // 4 KiB rings: a record holds at most 512 B.
    start(new ShmFabric.Rings(true, 4096, 4096), 2, 16);
    ShmConnection c = connect();
    assertTrue(c.rings().maxRequest() < 512);
    for (int n :
        new int[] {0, 1, 100, c.rings().maxRequest(), c.rings().maxRequest() + 1, 10_000}) {
      assertEcho(c, ECHO, bytes(random, n), "request of " + n + " B");
      assertEcho(c, ECHO_INLINE, bytes(random, n), "inline request of " + n + " B");
    }
    for (int n : new int[] {0, 487, 488, 489, 4096, 100_000, 1 << 20}) {
      long seed = random.nextLong();
      assertEquals(sized(n, seed), call(c, SIZED, sizedRequest(n, seed)), "response of " + n);
    }
    assertEquals(0, c.rings().pendingCalls());
  }

  @Test
  void errorsAndUnknownServicesComeBackTyped() throws Exception {
    start(rings(), 2, 16);
    ShmConnection c = connect();
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> Futures.join(c.call(77, 1, ByteBuffer.allocate(3), DEADLINE)));
    assertEquals(ErrorCode.UNKNOWN_SERVICE, e.code());
    assertTrue(e.getMessage().contains("no service 77"), e.getMessage());
    assertEquals(1, c.counters().errors(OpKind.RPC));
    assertThrows(
        IllegalArgumentException.class, () -> c.call(1 << 16, 1, ByteBuffer.allocate(0), DEADLINE));
  }

  @Test
  void aClosedConnectionReleasesItsRingsOnBothSides() throws Exception {
    start(rings(), 2, 16);
    long before = ringMappings();
    ShmConnection c = connect();
    call(c, ECHO, ByteBuffer.allocate(8));
    assertEquals(0, ringFiles(), "the ring file is unlinked once both ends mapped it");
    assertEquals(before + 2, ringMappings(), "client and server map the rings");
    assertEquals(1, ringServer().connections());
    CompletableFuture<ByteBuffer> blocked = c.call(SVC, BLOCK, ByteBuffer.allocate(0), DEADLINE);
    c.close();
    FerriteException e = assertThrows(FerriteException.class, () -> Futures.join(blocked));
    assertEquals(ErrorCode.UNAVAILABLE, e.code());
    await("the server dropped the rings", () -> ringServer().connections() == 0);
    release.countDown(); // the blocked call's answer finds its rings closed, and is dropped
    await("both mappings are gone", () -> ringMappingsQuietly() == before);
    assertFalse(c.isOpen());
    assertThrows(
        FerriteException.class,
        () -> Futures.join(c.call(SVC, ECHO, ByteBuffer.allocate(0), DEADLINE)));
    // The server serves the next client as ever.
    assertEcho(connect(), ECHO_INLINE, ByteBuffer.wrap(new byte[] {1, 2, 3}), "next client");
  }

  private long ringMappingsQuietly() {
    try {
      return ringMappings();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @Test
  void withoutRingsEveryCallTakesTheSocket() throws Exception {
    start(ShmFabric.Rings.disabled(), 2, 16);
    ShmConnection c = connect();
    assertNull(c.rings());
    assertEcho(c, ECHO, ByteBuffer.wrap(new byte[] {4, 5}), "socket echo");
    // Inline dispatch works on the socket too: on the I/O thread.
    String t = text(call(c, THREAD_INLINE, ByteBuffer.allocate(0)));
    assertTrue(t.startsWith("ferrite-shm-server"), "inline on the socket ran on " + t);
  }
}
