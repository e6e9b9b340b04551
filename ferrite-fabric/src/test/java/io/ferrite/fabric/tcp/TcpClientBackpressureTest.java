package io.ferrite.fabric.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.Frames;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.testing.NettyLeakExtension;
import java.io.BufferedInputStream;
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
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A hand-written server that stops reading: the client's socket fills, its callers' frames fall
 * back to the event loop, and a caller with {@code maxInFlight} ops unanswered waits. When the
 * server reads again, every frame must arrive whole and in issue order (request ids 1, 2, 3, ...;
 * each payload the one its caller wrote), and every op must succeed; then ops go straight to the
 * socket again.
 */
@ExtendWith(NettyLeakExtension.class)
class TcpClientBackpressureTest {
  private static final int OPS = 160;
  private static final int SIZE = 256 << 10;
  private static final int MAX_IN_FLIGHT = 48;

  private final Credentials credentials =
      new Credentials("fake", "fake-server-secret-0123".getBytes(StandardCharsets.UTF_8));
  private final RegionRef ref = new RegionRef(1, 1, 77, 1L << 30);
  private final CountDownLatch serverMayRead = new CountDownLatch(1);
  private final AtomicReference<String> serverError = new AtomicReference<>();
  private final AtomicInteger answered = new AtomicInteger();
  private TcpFabric fabric;
  private ServerSocket listener;
  private volatile Socket accepted;
  private OutputStream out;
  private Thread serverThread;

  @AfterEach
  void stop() throws Exception {
    serverMayRead.countDown();
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

  /** The payload of the k-th WRITE (k from 0): a pattern the server can check. */
  private static byte patternByte(long k, int j) {
    return (byte) (k * 131 + j * 7 + (j >>> 11));
  }

  @Test
  void aFullSocketFallsBackToTheLoopInOrderAndBoundsCallers() throws Exception {
    FabricConnection c = start();
    AtomicInteger issued = new AtomicInteger();
    List<CompletableFuture<Void>> futures = new ArrayList<>();
    AtomicReference<Throwable> producerFailure = new AtomicReference<>();
    Thread producer =
        new Thread(
            () -> {
              try {
                // Buffers are reused only once their op has ended: ops end in issue order, and at
                // most MAX_IN_FLIGHT are unanswered, so buffer k % (2 * MAX_IN_FLIGHT) is free.
                ByteBuffer[] bufs = new ByteBuffer[2 * MAX_IN_FLIGHT];
                for (int b = 0; b < bufs.length; b++) {
                  bufs[b] =
                      b % 2 == 0 ? ByteBuffer.allocateDirect(SIZE) : ByteBuffer.allocate(SIZE);
                }
                for (int k = 0; k < OPS; k++) {
                  int slot = k % bufs.length;
                  if (k >= bufs.length) {
                    Futures.join(futures.get(k - bufs.length));
                  }
                  ByteBuffer src = bufs[slot];
                  src.clear();
                  for (int j = 0; j < SIZE; j++) {
                    src.put(j, patternByte(k, j));
                  }
                  CompletableFuture<Void> f = c.write(ref, (long) k * 8, src);
                  synchronized (futures) {
                    futures.add(f);
                  }
                  issued.incrementAndGet();
                }
              } catch (Throwable e) {
                producerFailure.set(e);
              }
            },
            "producer");
    producer.start();
    // The server reads nothing: the socket fills (a few MiB), then the bound stops the caller.
    TcpTestSupport.await(() -> issued.get() >= MAX_IN_FLIGHT, "the caller issued the bound");
    Thread.sleep(300);
    assertEquals(MAX_IN_FLIGHT, issued.get(), "ops issued while none was answered");
    assertTrue(producer.isAlive());
    serverMayRead.countDown();
    producer.join(30_000);
    assertNull(producerFailure.get(), () -> String.valueOf(producerFailure.get()));
    for (CompletableFuture<Void> f : futures) {
      Futures.join(f.orTimeout(10, TimeUnit.SECONDS));
    }
    assertNull(serverError.get(), serverError::get);
    assertEquals(OPS, answered.get());
    // Back to direct writes: a few more, answered as before.
    for (int k = OPS; k < OPS + 5; k++) {
      ByteBuffer src = ByteBuffer.allocateDirect(SIZE);
      for (int j = 0; j < SIZE; j++) {
        src.put(j, patternByte(k, j));
      }
      c.writeSync(ref, (long) k * 8, src);
    }
    assertNull(serverError.get(), serverError::get);
    assertTrue(c.isOpen());
  }

  private FabricConnection start() throws IOException {
    listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
    serverThread = new Thread(this::serve, "fake-server");
    serverThread.start();
    fabric = new TcpFabric(1, Duration.ofSeconds(5));
    return fabric.connect(
        "tcp://127.0.0.1:" + listener.getLocalPort(),
        new ConnectOptions(credentials, Duration.ofSeconds(5), Duration.ofSeconds(30))
            .withMaxInFlight(MAX_IN_FLIGHT));
  }

  private void serve() {
    try {
      accepted = listener.accept();
      accepted.setTcpNoDelay(true);
      out = accepted.getOutputStream();
      DataInputStream in = new DataInputStream(new BufferedInputStream(accepted.getInputStream()));
      byte[] hello = readFrame(in);
      ByteBuffer h = ByteBuffer.wrap(hello).order(ByteOrder.LITTLE_ENDIAN);
      int idLen = h.getShort(6) & 0xffff;
      byte[] clientNonce = Arrays.copyOfRange(hello, 8 + idLen, 8 + idLen + 16);
      byte[] serverNonce = new byte[16];
      ByteBuffer rsp = ByteBuffer.allocate(52).order(ByteOrder.LITTLE_ENDIAN);
      rsp.putInt(9).put(serverNonce);
      rsp.put(RawClient.hmac(credentials.secret(), "ferrite-server", 2, clientNonce, serverNonce));
      answer(Frames.TYPE_HELLO, 0, rsp.array());
      readFrame(in); // AUTH
      answer(Frames.TYPE_AUTH, 0, new byte[0]);
      serverMayRead.await();
      byte[] header = new byte[16];
      byte[] body = new byte[Frames.REGION_OP_HEADER + SIZE];
      for (long k = 0; ; k++) {
        in.readFully(header);
        ByteBuffer hb = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
        int length = hb.getInt(0);
        long id = hb.getLong(8);
        String what = "frame " + k + " (request id " + id + ")";
        if (header[4] != Frames.TYPE_WRITE || length != 12 + body.length || id != k + 1) {
          fail(what + ": type " + header[4] + ", length " + length + " (expected WRITE, in order)");
          return;
        }
        in.readFully(body);
        long offset = ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN).getLong(16);
        if (offset != k * 8) {
          fail(what + ": offset " + offset + " (expected " + k * 8 + ")");
          return;
        }
        for (int j = 0; j < SIZE; j++) {
          if (body[Frames.REGION_OP_HEADER + j] != patternByte(k, j)) {
            fail(what + ": payload byte " + j + " is not the one written");
            return;
          }
        }
        answered.incrementAndGet(); // before the answer, which the test may see at once
        answer(Frames.TYPE_WRITE, id, new byte[0]);
      }
    } catch (IOException e) {
      // closed by the test
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void fail(String reason) {
    serverError.compareAndSet(null, reason);
  }

  private static byte[] readFrame(DataInputStream in) throws IOException {
    byte[] header = new byte[16];
    in.readFully(header);
    byte[] body = new byte[ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN).getInt(0) - 12];
    in.readFully(body);
    return body;
  }

  private void answer(int type, long id, byte[] body) throws IOException {
    out.write(RawClient.frame(type, Frames.FLAG_RESPONSE, 0, id, body));
    out.flush();
  }
}
