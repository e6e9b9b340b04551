package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.testing.NettyLeakExtension;
import io.ferrite.fabric.testing.SeedExtension;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Records no well-behaved client writes, put straight into a connection's shared request ring (what
 * a buggy or hostile process mapping the file could do). Each must close only that connection (as a
 * bad frame on the socket does): the server keeps serving every other client, and releases the bad
 * connection's rings.
 */
@ExtendWith({NettyLeakExtension.class, SeedExtension.class})
@Timeout(120)
class ShmRingBadClientTest extends RingTestSupport {
  private ShmConnection good;

  private void startWithAGoodClient() throws Exception {
    start(new ShmFabric.Rings(true, 4096, 4096), 2, 16);
    good = connect();
    assertEcho(good, ECHO_INLINE, ByteBuffer.wrap(new byte[] {1}), "good client");
  }

  @AfterEach
  void theOthersAreServedAndTheBadOnesRingsAreReleased() throws Exception {
    if (good == null) {
      return;
    }
    for (int i = 0; i < 20; i++) {
      assertEcho(good, i % 2 == 0 ? ECHO : ECHO_INLINE, ByteBuffer.allocate(i), "good client " + i);
    }
    await("only the good connection is left", () -> server.connections() == 1);
    await("only the good connection has rings", () -> ringServer().connections() == 1);
  }

  /** Writes with {@code poison} into a fresh connection's request ring; expects it closed. */
  private void poisoned(BiConsumer<ManyToOneRingBuffer, AtomicBuffer> poison) throws Exception {
    ShmConnection bad = connect();
    assertEcho(bad, ECHO, ByteBuffer.allocate(4), "bad client, before");
    ManyToOneRingBuffer requests = bad.rings().file().requests;
    poison.accept(requests, requests.buffer());
    // Wake the poller in case it sleeps: the next call on the good connection rings if needed.
    assertEcho(good, ECHO_INLINE, ByteBuffer.allocate(1), "good client, after the poison");
    await("the server closed the bad connection", () -> !bad.isOpen());
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> Futures.join(bad.call(SVC, ECHO, ByteBuffer.allocate(1), DEADLINE)));
    assertEquals(ErrorCode.UNAVAILABLE, e.code(), e.getMessage());
  }

  @Test
  void aRecordOfAnUnknownType() throws Exception {
    startWithAGoodClient();
    poisoned((ring, b) -> ring.write(7, new UnsafeBuffer(new byte[16]), 0, 16));
  }

  @Test
  void aRequestShorterThanItsHeader() throws Exception {
    startWithAGoodClient();
    poisoned((ring, b) -> ring.write(RingRecords.REQUEST, new UnsafeBuffer(new byte[8]), 0, 8));
  }

  @Test
  void aRecordWhoseLengthRunsPastTheRing() throws Exception {
    startWithAGoodClient();
    poisoned(
        (ring, b) -> {
          int at = ring.tryClaim(RingRecords.REQUEST, RingRecords.REQUEST_HEADER);
          // Instead of committing: a length field far beyond the ring (RecordDescriptor: the
          // length is the record's first word, 8 bytes before its body).
          b.putIntOrdered(at - 8, 0x4000_0000);
        });
  }

  @Test
  void garbageOverTheWholeRingIncludingItsPositions(Random random) throws Exception {
    startWithAGoodClient();
    ShmConnection bad = connect();
    assertEcho(bad, ECHO, ByteBuffer.allocate(4), "bad client, before");
    AtomicBuffer b = bad.rings().file().requests.buffer();
    byte[] junk = new byte[b.capacity()];
    random.nextBytes(junk);
    b.putBytes(0, junk);
    // Whatever the server makes of it (closes the connection, or finds nothing to read), the
    // others are served; closing the bad client releases its rings.
    for (int i = 0; i < 10; i++) {
      assertEcho(good, ECHO_INLINE, ByteBuffer.allocate(i), "good client " + i);
    }
    bad.close();
  }

  @Test
  void aMalformedResponseClosesTheClientsConnection() throws Exception {
    startWithAGoodClient();
    ShmConnection victim = connect();
    assertEcho(victim, ECHO, ByteBuffer.allocate(4), "before");
    CompletableFuture<ByteBuffer> pending =
        victim.call(SVC, BLOCK, ByteBuffer.allocate(0), DEADLINE);
    // A server-side bug: a record of an unknown type in the response ring.
    victim.rings().file().responses.write(9, new UnsafeBuffer(new byte[32]), 0, 32);
    FerriteException e = assertThrows(FerriteException.class, () -> Futures.join(pending));
    assertTrue(e.code() == ErrorCode.PROTOCOL || e.code() == ErrorCode.UNAVAILABLE, e.getMessage());
    await("the client closed its connection", () -> !victim.isOpen());
    release.countDown();
  }
}
