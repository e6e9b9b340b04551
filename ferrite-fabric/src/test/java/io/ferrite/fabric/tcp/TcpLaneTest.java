package io.ferrite.fabric.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Frames;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.netty.NettyConnection;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Blocking lanes (synchronous small reads on the caller's own socket, {@code Lane}) under
 * concurrency: many threads on one connection mixing lane reads with async ops on the shared
 * connection must read what they wrote (a thread's ops take effect in issue order); the number of
 * lanes is bounded; closing the connection or stopping the server mid-op ends every caller with a
 * clear error and leaks no descriptor; an unanswered lane read times out.
 */
class TcpLaneTest extends TcpTestSupport {
  private static final int THREADS = 24;
  private static final int SLICE = 8192;

  @Test
  void threadsMixingLaneReadsWithAsyncOpsReadWhatTheyWrote() throws Exception {
    start(RpcHandler.none(), 1, 16);
    NettyConnection c = (NettyConnection) connect();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicInteger maxConnections = new AtomicInteger();
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      int base = t * SLICE;
      Random r = new Random(seed + t);
      Thread th =
          new Thread(
              () -> {
                try {
                  go.await();
                  // 300 steps, then on until some read took a lane (a lane is taken only when the
                  // shared connection has nothing in flight, which 24 busy threads on 2 cores may
                  // not leave for a while), at most 5000.
                  for (int i = 0;
                      (i < 300 || (c.lanes() == 0 && i < 5000)) && failure.get() == null;
                      i++) {
                    step(c, base, r);
                    maxConnections.accumulateAndGet(server.connections(), Math::max);
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "lane-user-" + t);
      threads.add(th);
      th.start();
    }
    go.countDown();
    for (Thread th : threads) {
      th.join(120_000);
      assertTrue(!th.isAlive(), th.getName() + " hangs; " + where());
    }
    assertNull(failure.get(), () -> where() + ": " + failure.get());
    assertTrue(c.isOpen(), where());
    assertTrue(c.lanes() > 0, "no read took a lane; " + where());
    assertTrue(
        maxConnections.get() <= 1 + 16, "connections: " + maxConnections.get() + "; " + where());
    assertEquals(0, c.counters().errors(OpKind.READ), where());
    closeClients();
    awaitConnections(0);
  }

  /** One random step on this thread's slice; every read must see this thread's last write. */
  private static void step(FabricConnection c, int base, Random r) {
    int off = base + r.nextInt(SLICE - 600);
    int len = 1 + r.nextInt(512);
    byte[] data = new byte[len];
    r.nextBytes(data);
    ByteBuffer back = ByteBuffer.allocate(len);
    switch (r.nextInt(4)) {
      case 0 -> {
        // Not awaited: the read that follows must still see it (issue order).
        CompletableFuture<Void> w = c.write(REF_HOLDER.get(), off, ByteBuffer.wrap(data));
        c.readSync(REF_HOLDER.get(), off, back);
        w.join();
      }
      case 1 -> {
        c.writeSync(REF_HOLDER.get(), off, ByteBuffer.wrap(data));
        c.readSync(REF_HOLDER.get(), off, back);
      }
      case 2 -> {
        c.writeSync(REF_HOLDER.get(), off, ByteBuffer.wrap(data));
        Batch b = c.batch();
        ByteBuffer head = ByteBuffer.allocateDirect(len);
        CompletableFuture<Void> f1 = b.read(REF_HOLDER.get(), off, back);
        CompletableFuture<Void> f2 = b.read(REF_HOLDER.get(), off, head);
        b.flushSync();
        assertTrue(f1.isDone() && f2.isDone());
        byte[] h = new byte[len];
        head.get(0, h);
        assertArrayEquals(data, h);
      }
      default -> {
        c.writeSync(REF_HOLDER.get(), off, ByteBuffer.wrap(data));
        c.read(REF_HOLDER.get(), off, back).join();
      }
    }
    assertArrayEquals(data, back.array());
  }

  /** The region of the running test, for the static step (one test at a time per class). */
  private static final AtomicReference<RegionRef> REF_HOLDER = new AtomicReference<>();

  @Override
  void start(RpcHandler rpc, int serviceThreads, int serviceQueue) throws IOException {
    super.start(rpc, serviceThreads, serviceQueue);
    REF_HOLDER.set(ref);
  }

  @Test
  void closingTheConnectionMidReadEndsEveryCallerAndLeaksNoDescriptor() throws Exception {
    start(RpcHandler.none(), 1, 16);
    // The first connection and lane start what stays for the process (event loops, the JDK's
    // pre-close socket pair): count descriptors after those.
    try (FabricConnection warm = fabric.connect(server.address(), ConnectOptions.of(credentials))) {
      warm.readSync(ref, 0, ByteBuffer.allocate(8));
      assertEquals(1, ((NettyConnection) warm).lanes(), where());
    }
    awaitConnections(0);
    long fdsBefore = openDescriptors();
    FabricConnection c = fabric.connect(server.address(), ConnectOptions.of(credentials));
    List<Throwable> unexpected = new CopyOnWriteArrayList<>();
    AtomicInteger reads = new AtomicInteger();
    AtomicBoolean stop = new AtomicBoolean();
    List<Thread> threads = hammer(c, stop, reads, unexpected);
    await(() -> reads.get() > 2000, "readers got going");
    c.close();
    stop.set(true);
    for (Thread th : threads) {
      th.join(30_000);
      assertTrue(!th.isAlive(), th.getName() + " hangs after close; " + where());
    }
    assertTrue(unexpected.isEmpty(), () -> where() + ": " + unexpected);
    assertEquals(0, ((NettyConnection) c).lanes(), where());
    awaitConnections(0);
    await(() -> openDescriptors() <= fdsBefore, "descriptors back to " + fdsBefore);
  }

  @Test
  void stoppingTheServerMidReadEndsEveryCallerWithUnavailable() throws Exception {
    start(RpcHandler.none(), 1, 16);
    FabricConnection c = connect();
    List<Throwable> unexpected = new CopyOnWriteArrayList<>();
    AtomicInteger reads = new AtomicInteger();
    AtomicBoolean stop = new AtomicBoolean();
    List<Thread> threads = hammer(c, stop, reads, unexpected);
    await(() -> reads.get() > 2000, "readers got going");
    server.close();
    for (Thread th : threads) {
      th.join(30_000);
      assertTrue(!th.isAlive(), th.getName() + " hangs after the server stopped; " + where());
    }
    assertTrue(unexpected.isEmpty(), () -> where() + ": " + unexpected);
    await(() -> !c.isOpen(), "the connection sees the server gone");
    FerriteException e =
        assertThrows(FerriteException.class, () -> c.readSync(ref, 0, ByteBuffer.allocate(8)));
    assertEquals(ErrorCode.UNAVAILABLE, e.code(), e.getMessage());
  }

  /**
   * Threads reading one connection until {@code stop} or their first failure, which must be a
   * {@link FerriteException} of {@link ErrorCode#UNAVAILABLE} (anything else is collected).
   */
  private List<Thread> hammer(
      FabricConnection c, AtomicBoolean stop, AtomicInteger reads, List<Throwable> unexpected) {
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 8; t++) {
      int base = t * SLICE;
      Thread th =
          new Thread(
              () -> {
                ByteBuffer dst = ByteBuffer.allocate(256);
                byte[] expected = new byte[256];
                region.readInto(base, ByteBuffer.wrap(expected));
                try {
                  while (!stop.get()) {
                    dst.clear();
                    c.readSync(ref, base, dst);
                    if (!Arrays.equals(expected, dst.array())) {
                      unexpected.add(new AssertionError("read other bytes than the region's"));
                      return;
                    }
                    reads.incrementAndGet();
                  }
                } catch (FerriteException e) {
                  if (e.code() != ErrorCode.UNAVAILABLE) {
                    unexpected.add(e);
                  }
                } catch (Throwable e) {
                  unexpected.add(e);
                }
              },
              "reader-" + t);
      threads.add(th);
      th.start();
    }
    return threads;
  }

  private static long openDescriptors() {
    try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
      return s.count();
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  // ---- a lane whose server never answers

  @Test
  void anUnansweredLaneReadTimesOutAndTheConnectionStaysUsable() throws Exception {
    ServerSocket listener = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
    List<Socket> accepted = new CopyOnWriteArrayList<>();
    Thread acceptor = new Thread(() -> fakeServer(listener, accepted), "fake-server-acceptor");
    acceptor.start();
    fabric = newFabric();
    try {
      NettyConnection c =
          (NettyConnection)
              fabric.connect(
                  "tcp://127.0.0.1:" + listener.getLocalPort(),
                  new ConnectOptions(credentials, Duration.ofSeconds(5), Duration.ofMillis(300)));
      RegionRef r = new RegionRef(9, 1, 77, 1 << 20);
      ByteBuffer dst = ByteBuffer.allocate(64);
      FerriteException e = assertThrows(FerriteException.class, () -> c.readSync(r, 0, dst));
      assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
      assertTrue(c.isOpen(), "a lane's timeout closes only the lane");
      assertEquals(0, c.lanes(), "the expired lane is gone");
      c.close();
    } finally {
      fabric.close();
      fabric = null;
      listener.close();
      for (Socket s : accepted) {
        s.close();
      }
      acceptor.join(5000);
    }
  }

  /** Accepts connections, completes each one's handshake, then reads requests and never answers. */
  private void fakeServer(ServerSocket listener, List<Socket> accepted) {
    try {
      while (true) {
        Socket s = listener.accept();
        accepted.add(s);
        Thread t = new Thread(() -> silent(s), "fake-server-conn");
        t.setDaemon(true);
        t.start();
      }
    } catch (IOException e) {
      // closed by the test
    }
  }

  private void silent(Socket s) {
    try {
      OutputStream out = s.getOutputStream();
      DataInputStream in = new DataInputStream(s.getInputStream());
      byte[] hello = readFrame(in);
      int idLen = ByteBuffer.wrap(hello).order(ByteOrder.LITTLE_ENDIAN).getShort(6) & 0xffff;
      byte[] clientNonce = Arrays.copyOfRange(hello, 8 + idLen, 8 + idLen + 16);
      byte[] serverNonce = new byte[16];
      Arrays.fill(serverNonce, (byte) 5);
      ByteBuffer rsp = ByteBuffer.allocate(52).order(ByteOrder.LITTLE_ENDIAN);
      rsp.putInt(9).put(serverNonce);
      rsp.put(RawClient.hmac(credentials.secret(), "ferrite-server", 2, clientNonce, serverNonce));
      out.write(RawClient.frame(Frames.TYPE_HELLO, Frames.FLAG_RESPONSE, 0, 0, rsp.array()));
      readFrame(in);
      out.write(RawClient.frame(Frames.TYPE_AUTH, Frames.FLAG_RESPONSE, 0, 0, new byte[0]));
      out.flush();
      while (true) {
        readFrame(in);
      }
    } catch (IOException e) {
      // closed by the client or the test
    }
  }

  private static byte[] readFrame(DataInputStream in) throws IOException {
    byte[] header = new byte[16];
    in.readFully(header);
    byte[] body = new byte[ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN).getInt(0) - 12];
    in.readFully(body);
    return body;
  }
}
