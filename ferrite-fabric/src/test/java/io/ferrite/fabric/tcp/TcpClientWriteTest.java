package io.ferrite.fabric.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.netty.NettyConnection;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The client's send path: callers write frames to the socket themselves under a write lock, and
 * fall back to the event loop when the socket is full. Frames of many threads must never
 * interleave, each thread's ops must take effect in issue order, and the in-flight bound must never
 * make an I/O thread wait. (A full socket is driven by {@link TcpClientBackpressureTest}.)
 */
class TcpClientWriteTest extends TcpTestSupport {
  private static final int THREADS = 8;
  private static final int SLICE = REGION_BYTES / THREADS;

  @Test
  void concurrentCallersNeverInterleaveFrames() throws Exception {
    start(RpcHandler.none(), 1, 16);
    FabricConnection c = connect();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      int slice = t;
      Random r = new Random(seed + t);
      Thread th =
          new Thread(
              () -> {
                try {
                  go.await();
                  hammer(c, slice, r);
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "writer-" + t);
      threads.add(th);
      th.start();
    }
    go.countDown();
    for (Thread th : threads) {
      th.join(60_000);
    }
    assertNull(failure.get(), () -> where() + ": " + failure.get());
    assertTrue(c.isOpen(), where());
    // The shared connection and its blocking lanes (the synchronous reads of the callers).
    assertEquals(1 + ((NettyConnection) c).lanes(), server.connections(), where());
  }

  /**
   * Random small writes (copied into the frame), large ones (header and payload in separate
   * buffers, heap or direct), batches and atomics on this thread's slice; every read must see the
   * bytes of the writes before it, whole.
   */
  private void hammer(FabricConnection c, int slice, Random r) {
    int base = slice * SLICE;
    byte[] expected = new byte[SLICE];
    ByteBuffer initial = ByteBuffer.allocate(SLICE);
    c.readSync(ref, base, initial);
    System.arraycopy(initial.array(), 0, expected, 0, SLICE);
    long counterOffset = base + SLICE - 8L;
    long counter = c.fetchAndAddSync(ref, counterOffset, 0);
    int dataBytes = SLICE - 8;
    for (int i = 0; i < 150; i++) {
      int len = r.nextInt(4) == 0 ? 4097 + r.nextInt(dataBytes / 2) : 1 + r.nextInt(4096);
      int at = r.nextInt(dataBytes - len + 1);
      byte[] data = new byte[len];
      r.nextBytes(data);
      ByteBuffer src = r.nextBoolean() ? ByteBuffer.allocateDirect(len) : ByteBuffer.allocate(len);
      src.put(data).flip();
      System.arraycopy(data, 0, expected, at, len);
      CompletableFuture<Void> w;
      CompletableFuture<Long> add;
      ByteBuffer back = ByteBuffer.allocateDirect(SLICE);
      CompletableFuture<Void> read;
      if (r.nextBoolean()) {
        // Pipelined, not waited for in between: issue order alone must order them.
        w = c.write(ref, base + at, src);
        add = c.fetchAndAdd(ref, counterOffset, 1);
        read = c.read(ref, base, back);
      } else {
        Batch b = c.batch();
        w = b.write(ref, base + at, src);
        add = b.fetchAndAdd(ref, counterOffset, 1);
        read = b.read(ref, base, back);
        b.flush();
      }
      Futures.join(w);
      assertEquals(counter++, (long) Futures.join(add), where());
      Futures.join(read);
      byte[] got = new byte[dataBytes];
      back.get(0, got);
      for (int k = 0; k < dataBytes; k++) {
        if (got[k] != expected[k]) {
          throw new AssertionError(
              where() + ": slice " + slice + " byte " + k + " after op " + i + " differs");
        }
      }
    }
  }

  @Test
  void callbacksOnTheIoThreadNeverWaitForTheInFlightBound() throws Exception {
    start(RpcHandler.none(), 1, 16);
    FabricConnection c =
        closeLater(
            fabric.connect(server.address(), ConnectOptions.of(credentials).withMaxInFlight(1)));
    RegionRef r = ref;
    ByteBuffer a = ByteBuffer.allocate(8);
    ByteBuffer b = ByteBuffer.allocate(8);
    ByteBuffer d = ByteBuffer.allocate(8);
    // The callback runs on the I/O thread and issues two ops against a bound of one: the second
    // would wait forever for a permit that only this same thread can give back.
    CompletableFuture<Void> all =
        c.read(r, 0, a)
            .thenCompose(v -> CompletableFuture.allOf(c.read(r, 8, b), c.read(r, 16, d)))
            .orTimeout(10, java.util.concurrent.TimeUnit.SECONDS);
    Futures.join(all);
    ByteBuffer whole = ByteBuffer.allocate(24);
    c.readSync(r, 0, whole);
    assertArrayEquals(
        whole.array(),
        ByteBuffer.allocate(24).put(a.array()).put(b.array()).put(d.array()).array(),
        where());
    // And afterwards the bound still works for an ordinary caller.
    for (int i = 0; i < 100; i++) {
      c.writeSync(r, 64, ByteBuffer.wrap(new byte[] {(byte) i}));
    }
    assertTrue(c.isOpen());
  }

  @Test
  void opsAfterCloseFailAtOnce() throws Exception {
    start(RpcHandler.none(), 1, 16);
    FabricConnection c =
        fabric.connect(
            server.address(),
            new ConnectOptions(credentials, Duration.ofSeconds(5), Duration.ofSeconds(5)));
    c.readSync(ref, 0, ByteBuffer.allocate(8));
    c.close();
    CompletableFuture<Void> f = c.read(ref, 0, ByteBuffer.allocate(8));
    assertTrue(f.isCompletedExceptionally(), where());
  }
}
