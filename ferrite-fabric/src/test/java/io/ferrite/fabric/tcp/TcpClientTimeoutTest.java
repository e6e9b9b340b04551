package io.ferrite.fabric.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Frames;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.testing.NettyLeakExtension;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The client against a hand-written server that authenticates properly and then answers when the
 * test says so: an unanswered op times out, its late answer is dropped without touching the
 * caller's buffer, and the connection keeps working; a server that sends a malformed frame gets the
 * connection closed and every pending op failed.
 */
@ExtendWith(NettyLeakExtension.class)
class TcpClientTimeoutTest {
  private final Credentials credentials =
      new Credentials("fake", "fake-server-secret-0123".getBytes(StandardCharsets.UTF_8));
  private final RegionRef ref = new RegionRef(1, 1, 77, 1 << 20);
  private final LinkedBlockingQueue<long[]> requests = new LinkedBlockingQueue<>();
  private TcpFabric fabric;
  private ServerSocket listener;
  private Socket accepted;
  private OutputStream out;
  private Thread serverThread;

  @AfterEach
  void stop() throws Exception {
    if (fabric != null) {
      fabric.close();
    }
    if (accepted != null) {
      accepted.close();
    }
    if (listener != null) {
      listener.close();
    }
    if (serverThread != null) {
      serverThread.join(5000);
    }
  }

  /** Starts the fake server: handshake, then queues (type, requestId, length) of each request. */
  private FabricConnection start(Duration opTimeout) throws IOException {
    listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
    serverThread =
        new Thread(
            () -> {
              try {
                accepted = listener.accept();
                accepted.setTcpNoDelay(true);
                out = accepted.getOutputStream();
                DataInputStream in = new DataInputStream(accepted.getInputStream());
                byte[] hello = readFrame(in);
                ByteBuffer h = ByteBuffer.wrap(hello).order(ByteOrder.LITTLE_ENDIAN);
                int idLen = h.getShort(6) & 0xffff;
                byte[] clientNonce = Arrays.copyOfRange(hello, 8 + idLen, 8 + idLen + 16);
                byte[] serverNonce = new byte[16];
                Arrays.fill(serverNonce, (byte) 5);
                ByteBuffer rsp = ByteBuffer.allocate(52).order(ByteOrder.LITTLE_ENDIAN);
                rsp.putInt(9).put(serverNonce);
                rsp.put(
                    RawClient.hmac(
                        credentials.secret(), "ferrite-server", 2, clientNonce, serverNonce));
                send(Frames.TYPE_HELLO, 0, 0, rsp.array());
                readFrame(in); // AUTH (its proof is not what this test is about)
                send(Frames.TYPE_AUTH, 0, 0, new byte[0]);
                while (true) {
                  byte[] header = new byte[16];
                  in.readFully(header);
                  ByteBuffer hb = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
                  byte[] body = new byte[hb.getInt(0) - 12];
                  in.readFully(body);
                  int len = ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN).getInt(24);
                  requests.add(new long[] {header[4], hb.getLong(8), len});
                }
              } catch (IOException e) {
                // closed by the test
              }
            },
            "fake-server");
    serverThread.start();
    fabric = new TcpFabric(1, Duration.ofSeconds(5));
    return fabric.connect(
        "tcp://127.0.0.1:" + listener.getLocalPort(),
        new ConnectOptions(credentials, Duration.ofSeconds(5), opTimeout));
  }

  private static byte[] readFrame(DataInputStream in) throws IOException {
    byte[] header = new byte[16];
    in.readFully(header);
    byte[] body = new byte[ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN).getInt(0) - 12];
    in.readFully(body);
    return body;
  }

  private synchronized void send(int type, int status, long id, byte[] body) throws IOException {
    out.write(RawClient.frame(type, Frames.FLAG_RESPONSE, status, id, body));
    out.flush();
  }

  @Test
  void anUnansweredReadTimesOutAndItsLateAnswerIsDropped() throws Exception {
    FabricConnection c = start(Duration.ofMillis(300));
    assertEquals(9, c.remoteId());
    ByteBuffer dst = ByteBuffer.allocateDirect(100_000);
    for (int i = 0; i < dst.capacity(); i++) {
      dst.put(i, (byte) 0x5a);
    }
    CompletableFuture<Void> first = c.read(ref, 0, dst);
    long[] req = requests.poll(5, TimeUnit.SECONDS);
    FerriteException e = assertThrows(FerriteException.class, () -> Futures.join(first));
    assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
    // The late answer arrives; it must not land in the caller's buffer.
    byte[] late = new byte[(int) req[2]];
    Arrays.fill(late, (byte) 1);
    send(Frames.TYPE_READ, 0, req[1], late);
    ByteBuffer dst2 = ByteBuffer.allocate(4);
    CompletableFuture<Void> second = c.read(ref, 0, dst2);
    long[] req2 = requests.poll(5, TimeUnit.SECONDS);
    send(Frames.TYPE_READ, 0, req2[1], new byte[] {1, 2, 3, 4});
    Futures.join(second);
    assertArrayEquals(new byte[] {1, 2, 3, 4}, dst2.array());
    for (int i = 0; i < dst.capacity(); i++) {
      if (dst.get(i) != 0x5a) {
        throw new AssertionError("a timed-out read wrote byte " + i + " of the caller's buffer");
      }
    }
    assertTrue(c.isOpen());
  }

  @Test
  void aMalformedAnswerClosesTheConnectionAndFailsPendingOps() throws Exception {
    FabricConnection c = start(Duration.ofSeconds(10));
    CompletableFuture<Void> a = c.read(ref, 0, ByteBuffer.allocate(8));
    CompletableFuture<Long> b = c.fetchAndAdd(ref, 0, 1);
    long[] ra = requests.poll(5, TimeUnit.SECONDS);
    requests.poll(5, TimeUnit.SECONDS);
    // A READ answer of the wrong length.
    send(Frames.TYPE_READ, 0, ra[1], new byte[3]);
    FerriteException ea = assertThrows(FerriteException.class, () -> Futures.join(a));
    FerriteException eb = assertThrows(FerriteException.class, () -> Futures.join(b));
    assertEquals(ErrorCode.PROTOCOL, ea.code(), ea.getMessage());
    assertEquals(ErrorCode.PROTOCOL, eb.code(), eb.getMessage());
    TcpTestSupport.await(() -> !c.isOpen(), "the client closes the connection");
  }
}
