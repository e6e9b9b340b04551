package io.ferrite.fabric.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Counters;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Frames;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RpcHandler;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Bytes no well-behaved client sends, fed to a running tcp server through a raw socket. Each must
 * close only the offending connection; the server keeps serving, the region is unchanged, no buffer
 * leaks (checked by {@link io.ferrite.fabric.testing.NettyLeakExtension}) and the connection count
 * returns to zero.
 */
class TcpBadInputTest extends TcpTestSupport {
  private long checksum;

  @BeforeEach
  void setUp() throws Exception {
    start(RpcHandler.none(), 2, 16);
    checksum = regionChecksum();
  }

  @AfterEach
  void serverSurvived() throws Exception {
    closeClients();
    assertEquals(checksum, regionChecksum(), where() + ": region changed");
    assertStillServes();
    checksum = regionChecksum();
    awaitConnections(0);
  }

  private void assertClosed(RawClient c) throws Exception {
    assertTrue(c.closedByServer(), where() + ": server did not close the connection");
  }

  @Test
  void garbageBytesCloseTheConnection() throws Exception {
    byte[] junk = new byte[256];
    random.nextBytes(junk);
    RawClient c = raw();
    c.send(junk);
    assertClosed(c);
  }

  @Test
  void hugeFrameLengthIsRefusedBeforeAllocating() throws Exception {
    RawClient c = raw();
    c.send(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f, 1, 0, 0, 0});
    assertClosed(c);
    // Also after authentication, where frames may be larger.
    RawClient d = raw();
    d.handshake(credentials);
    d.send(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 10, 0, 0, 0});
    assertClosed(d);
  }

  @Test
  void frameLengthBelowTheHeaderIsRefused() throws Exception {
    RawClient c = raw();
    c.handshake(credentials);
    c.send(new byte[] {5, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    assertClosed(c);
  }

  @Test
  void readBeforeHandshakeRunsNothing() throws Exception {
    RawClient c = raw();
    c.send(RawClient.frame(Frames.TYPE_READ, 0, 0, 1, RawClient.read(REGION, ref.rkey(), 0, 8)));
    assertClosed(c);
    RawClient w = raw();
    byte[] write = RawClient.regionOp(REGION, ref.rkey(), 0, 8);
    w.send(RawClient.frame(Frames.TYPE_WRITE, 0, 0, 1, write));
    assertClosed(w);
    assertEquals(0, server.counters().ops(OpKind.READ), where());
    assertEquals(0, server.counters().ops(OpKind.WRITE), where());
  }

  @Test
  void oversizeHelloBeforeAuthIsRefused() throws Exception {
    RawClient c = raw();
    c.send(RawClient.frame(Frames.TYPE_HELLO, 0, 0, 0, new byte[64 << 10]));
    assertClosed(c);
  }

  @Test
  void unknownFrameTypeAfterAuthClosesTheConnection() throws Exception {
    RawClient c = raw();
    assertEquals(3, c.handshake(credentials));
    awaitConnections(1);
    c.send(RawClient.frame(99, 0, 0, 7, new byte[8]));
    assertClosed(c);
  }

  @Test
  void shmRingFramesCloseATcpConnection() throws Exception {
    // RINGS and DOORBELL belong to the shm fabric: a tcp server has no rings to give or wake.
    for (int type : new int[] {Frames.TYPE_RINGS, Frames.TYPE_DOORBELL}) {
      RawClient c = raw();
      c.handshake(credentials);
      c.send(RawClient.frame(type, 0, 0, 1, new byte[0]));
      assertClosed(c);
    }
  }

  @Test
  void requestWithFlagsOrStatusIsRefused() throws Exception {
    RawClient c = raw();
    c.handshake(credentials);
    c.send(RawClient.frame(Frames.TYPE_READ, 1, 0, 1, RawClient.read(REGION, ref.rkey(), 0, 8)));
    assertClosed(c);
    RawClient d = raw();
    d.handshake(credentials);
    d.send(RawClient.frame(Frames.TYPE_READ, 0, 3, 1, RawClient.read(REGION, ref.rkey(), 0, 8)));
    assertClosed(d);
  }

  @Test
  void shortOrLongBodiesAreRefused() throws Exception {
    int[][] cases = {
      {Frames.TYPE_READ, 27},
      {Frames.TYPE_READ, 29},
      {Frames.TYPE_WRITE, 23},
      {Frames.TYPE_CAS, 32},
      {Frames.TYPE_FAA, 40},
      {Frames.TYPE_MAP, 8},
      {Frames.TYPE_RPC, 7},
      {Frames.TYPE_HELLO, 40},
      {Frames.TYPE_AUTH, 32}
    };
    for (int[] k : cases) {
      RawClient c = raw();
      c.handshake(credentials);
      byte[] body = new byte[k[1]];
      ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN).putInt(0, REGION);
      c.send(RawClient.frame(k[0], 0, 0, 1, body));
      assertClosed(c);
    }
  }

  @Test
  void truncatedFrameThenCloseLeavesTheServerServing() throws Exception {
    RawClient c = raw();
    c.handshake(credentials);
    byte[] read =
        RawClient.frame(Frames.TYPE_READ, 0, 0, 1, RawClient.read(REGION, ref.rkey(), 0, 8));
    c.send(java.util.Arrays.copyOf(read, 20));
    c.close();
  }

  @Test
  void halfAWriteThenCloseChangesNothing() throws Exception {
    RawClient c = raw();
    c.handshake(credentials);
    int len = 1 << 20;
    byte[] body = RawClient.regionOp(REGION, ref.rkey(), 0, len);
    random.nextBytes(java.util.Arrays.copyOfRange(body, 24, body.length));
    for (int i = 24; i < body.length; i++) {
      body[i] = (byte) i;
    }
    byte[] frame = RawClient.frame(Frames.TYPE_WRITE, 0, 0, 1, body);
    c.send(java.util.Arrays.copyOf(frame, frame.length / 2));
    c.close();
    // A write frame applies whole or not at all: the region is checked unchanged afterwards.
    assertEquals(0, server.counters().ops(OpKind.WRITE), where());
  }

  @Test
  void badRkeyOverRawSocketIsAnErrorResponseNotAClose() throws Exception {
    RawClient c = raw();
    c.handshake(credentials);
    c.send(
        RawClient.frame(Frames.TYPE_READ, 0, 0, 11, RawClient.read(REGION, ref.rkey() ^ 1, 0, 8)));
    RawClient.Frame f = c.receive();
    assertEquals(Frames.TYPE_READ, f.type());
    assertEquals(Frames.FLAG_RESPONSE, f.flags());
    assertEquals(11, f.requestId());
    assertEquals(ErrorCode.BAD_RKEY.wire(), f.status(), f.text());
    // The connection still works.
    c.send(RawClient.frame(Frames.TYPE_READ, 0, 0, 12, RawClient.read(REGION, ref.rkey(), 8, 8)));
    RawClient.Frame ok = c.receive();
    assertEquals(0, ok.status(), ok.text());
    assertEquals(8, ok.body().length);
    assertEquals(
        region.getLongAcquire(8),
        ByteBuffer.wrap(ok.body()).order(ByteOrder.LITTLE_ENDIAN).getLong());
  }

  @Test
  void mapOverTcpIsUnsupported() throws Exception {
    RawClient c = raw();
    c.handshake(credentials);
    byte[] map = java.util.Arrays.copyOf(RawClient.regionOp(REGION, ref.rkey(), 0, 0), 16);
    c.send(RawClient.frame(Frames.TYPE_MAP, 0, 0, 4, map));
    RawClient.Frame f = c.receive();
    assertEquals(ErrorCode.UNSUPPORTED.wire(), f.status(), f.text());
  }

  @Test
  void unknownRpcServiceIsAnErrorResponseNotAClose() throws Exception {
    RawClient c = raw();
    c.handshake(credentials);
    ByteBuffer rpc = ByteBuffer.allocate(8 + 3).order(ByteOrder.LITTLE_ENDIAN);
    rpc.putShort((short) 999).putShort((short) 1).putInt(1000).put(new byte[] {1, 2, 3});
    c.send(RawClient.frame(Frames.TYPE_RPC, 0, 0, 5, rpc.array()));
    RawClient.Frame f = c.receive();
    assertEquals(ErrorCode.UNKNOWN_SERVICE.wire(), f.status(), f.text());
    assertEquals(5, f.requestId());
    // And through the fabric's client: a typed error, the connection stays open.
    FabricConnection conn = connect();
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> conn.callSync(999, 1, ByteBuffer.allocate(4), Duration.ofSeconds(5)));
    assertEquals(ErrorCode.UNKNOWN_SERVICE, e.code(), where());
    assertTrue(conn.isOpen());
    conn.readSync(ref, 0, ByteBuffer.allocate(8));
    conn.close();
  }

  @Test
  void wrongSecretRunsNothing() throws Exception {
    Credentials wrong =
        new Credentials("tcp-test", "a-different-secret-here".getBytes(StandardCharsets.UTF_8));
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> fabric.connect(server.address(), ConnectOptions.of(wrong)).close());
    assertEquals(ErrorCode.AUTH_FAILED, e.code(), where());
    // A raw client whose HELLO check is wrong is refused at HELLO, told its secret is wrong.
    byte[] nonce = new byte[16];
    byte[] id = "tcp-test".getBytes(StandardCharsets.UTF_8);
    RawClient c = raw();
    c.send(RawClient.frame(Frames.TYPE_HELLO, 0, 0, 0, rawHello(id, nonce, new byte[32])));
    RawClient.Frame refused = c.receive();
    assertEquals(ErrorCode.AUTH_FAILED.wire(), refused.status(), refused.text());
    assertTrue(refused.text().contains("secret is not valid for role ADMIN"), refused.text());
    assertClosed(c);
    // One that passes the check but answers the challenge wrongly is refused at AUTH, then closed.
    c = raw();
    byte[] check = RawClient.hmac(credentials.secret(), "ferrite-hello", 2, nonce, new byte[0]);
    c.send(RawClient.frame(Frames.TYPE_HELLO, 0, 0, 0, rawHello(id, nonce, check)));
    assertEquals(0, c.receive().status());
    c.send(RawClient.frame(Frames.TYPE_AUTH, 0, 0, 0, new byte[32]));
    refused = c.receive();
    assertEquals(ErrorCode.AUTH_FAILED.wire(), refused.status(), refused.text());
    assertClosed(c);
    // Nothing ran.
    Counters.Snapshot s = server.counters().snapshot();
    for (OpKind k : OpKind.values()) {
      assertEquals(0, s.ops(k), where() + ": " + s);
      assertEquals(0, s.errors(k), where() + ": " + s);
    }
  }

  /** A HELLO claiming role ADMIN with {@code check} as its helloCheck. */
  private static byte[] rawHello(byte[] id, byte[] nonce, byte[] check) {
    ByteBuffer hello =
        ByteBuffer.allocate(8 + id.length + 16 + 1 + 32).order(ByteOrder.LITTLE_ENDIAN);
    hello.putInt(Frames.MAGIC).putShort((short) Frames.PROTOCOL_VERSION);
    hello.putShort((short) id.length).put(id).put(nonce).put((byte) 2).put(check);
    return hello.array();
  }

  @Test
  void wrongVersionIsRefusedWithAnError() throws Exception {
    RawClient c = raw();
    byte[] id = "tcp-test".getBytes(StandardCharsets.UTF_8);
    ByteBuffer hello = ByteBuffer.allocate(8 + id.length + 16).order(ByteOrder.LITTLE_ENDIAN);
    hello.putInt(Frames.MAGIC).putShort((short) 99).putShort((short) id.length).put(id);
    hello.put(new byte[16]);
    c.send(RawClient.frame(Frames.TYPE_HELLO, 0, 0, 0, hello.array()));
    RawClient.Frame refused = c.receive();
    assertEquals(ErrorCode.AUTH_FAILED.wire(), refused.status(), refused.text());
    assertTrue(refused.text().contains("version"), refused.text());
    assertClosed(c);
  }

  @Test
  void silentPeerIsDroppedAfterTheHandshakeTimeout() throws Exception {
    RawClient c = raw();
    assertClosed(c); // the fixture's fabric waits 500 ms for a handshake
  }

  @Test
  void clientKilledMidBatchFailsPendingOpsAsUnavailable() throws Exception {
    FabricConnection conn = connect();
    awaitConnections(1);
    Batch b = conn.batch();
    List<CompletableFuture<Void>> reads = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      reads.add(b.read(ref, 0, ByteBuffer.allocateDirect(REGION_BYTES)));
    }
    CompletableFuture<Void> all = b.flush();
    conn.close();
    int unavailable = 0;
    for (CompletableFuture<Void> f : reads) {
      try {
        Futures.join(f);
      } catch (FerriteException e) {
        assertEquals(ErrorCode.UNAVAILABLE, e.code(), where() + ": " + e.getMessage());
        unavailable++;
      }
    }
    // The batch's future completes after its last op's, possibly on another thread a moment later:
    // wait for it (a flush that never completes fails here) rather than race it.
    try {
      all.get(30, TimeUnit.SECONDS);
    } catch (ExecutionException expected) {
      // some op failed, as the loop above saw
    }
    assertTrue(all.isDone());
    assertTrue(unavailable > 0, where() + ": close raced no op at all");
    assertThrows(FerriteException.class, () -> conn.readSync(ref, 0, ByteBuffer.allocate(8)));
  }

  @Test
  void serverClosedUnderLoadFailsPendingOpsAsUnavailable() throws Exception {
    FabricConnection conn = connect();
    List<CompletableFuture<Void>> reads = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      reads.add(conn.read(ref, 0, ByteBuffer.allocateDirect(REGION_BYTES)));
    }
    server.close();
    for (CompletableFuture<Void> f : reads) {
      try {
        Futures.join(f);
      } catch (FerriteException e) {
        assertEquals(ErrorCode.UNAVAILABLE, e.code(), where() + ": " + e.getMessage());
      }
    }
    await(() -> !conn.isOpen(), "the client sees the close");
    // The fixture's checks need a serving server: start a new one on the same regions.
    server =
        fabric.serve(
            io.ferrite.fabric.ServerSpec.loopback(3, credentials, regions, RpcHandler.none(), dir));
  }
}
