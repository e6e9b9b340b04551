package io.ferrite.bench.ceiling;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.Measure;
import io.ferrite.bench.Progress;
import io.ferrite.bench.Sizes;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;

/**
 * The ceiling of the tcp fabric: raw loopback TCP between two threads of this JVM, blocking {@link
 * SocketChannel}s with {@code TCP_NODELAY} on 127.0.0.1, no framing beyond an 8 B header, no
 * handshake, no copies but the kernel's. A tcp one-sided op is this plus the fabric's work (frame,
 * decode, rkey and bounds check, copy from the region), so the gap between the two is the fabric's
 * overhead.
 *
 * <h2>Wire</h2>
 *
 * Each message on a connection starts with one little-endian {@code i64 v}:
 *
 * <ul>
 *   <li>{@code v >= 0}: the server answers with {@code v} bytes (ping-pong: an 8 B request for an N
 *       B response, the shape of a one-sided read);
 *   <li>{@code SYNC}: the server answers the {@code i64} count of stream bytes it has received
 *       since the previous {@code SYNC};
 *   <li>any other {@code v < 0}: {@code -v} bytes of stream follow; the server reads and discards
 *       them and answers nothing.
 * </ul>
 *
 * One connection carries everything, so warm-up and measurement share its socket buffers and no
 * connection setup is timed.
 *
 * <h2>Results</h2>
 *
 * <ul>
 *   <li>{@code ceiling.socket.pingpong.<N>.{p50,p99,p99.9}}: round trip of 8 B out, N B back (ns);
 *   <li>{@code ceiling.socket.rr.1MiB.bandwidth}: back-to-back request/response transfers, 8 B out
 *       and 1 MiB back, one at a time (MiB/s);
 *   <li>{@code ceiling.socket.stream.1MiB.bandwidth}: one-way stream of 1 MiB writes (MiB/s), timed
 *       until the server has received everything.
 * </ul>
 */
public final class SocketCeiling implements AutoCloseable {
  public static final String PINGPONG = "ceiling.socket.pingpong.";
  public static final String STREAM_PREFIX = "ceiling.socket.stream.";
  public static final String RR_PREFIX = "ceiling.socket.rr.";

  private static final long SYNC = Long.MIN_VALUE;
  private static final int MAX_MESSAGE = 16 << 20;

  private final ServerSocketChannel acceptor;
  private final Thread acceptThread;
  private final List<Thread> connectionThreads = new ArrayList<>();
  private final List<SocketChannel> connections = new ArrayList<>();
  private volatile boolean closed;

  private SocketCeiling() throws IOException {
    acceptor = ServerSocketChannel.open();
    acceptor.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    acceptThread = new Thread(this::acceptLoop, "ferrite-bench-socket-accept");
    acceptThread.setDaemon(true);
    acceptThread.start();
  }

  /** Starts the raw server on a free loopback port. */
  public static SocketCeiling start() throws IOException {
    return new SocketCeiling();
  }

  /** Name prefix of the ping-pong with an {@code n}-byte response, e.g. ...pingpong.8B. */
  public static String pingPong(int n) {
    return PINGPONG + Sizes.label(n);
  }

  /** Name of the one-way stream bandwidth of {@code size}-byte writes. */
  public static String stream(int size) {
    return STREAM_PREFIX + Sizes.label(size) + ".bandwidth";
  }

  /** Name of the request/response bandwidth of {@code size}-byte responses. */
  public static String requestResponse(int size) {
    return RR_PREFIX + Sizes.label(size) + ".bandwidth";
  }

  /** Measures every socket ceiling and adds it to {@code report}. */
  public void measure(
      BenchReport report,
      Measure.Plan plan,
      int[] responseSizes,
      int bandwidthSize,
      Progress progress)
      throws Exception {
    try (SocketChannel ch = connect()) {
      ByteBuffer request = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
      for (int n : responseSizes) {
        progress.step(pingPong(n) + " latency");
        ByteBuffer response = ByteBuffer.allocateDirect(n);
        Measure.addLatency(
            report,
            pingPong(n),
            Measure.latency(plan, i -> roundTrip(ch, request, n, response)),
            null);
      }

      progress.step(requestResponse(bandwidthSize));
      ByteBuffer big = ByteBuffer.allocateDirect(bandwidthSize);
      double rr =
          Measure.bandwidth(
              plan,
              deadline -> {
                long bytes = 0;
                while (System.nanoTime() < deadline) {
                  roundTrip(ch, request, bandwidthSize, big);
                  bytes += bandwidthSize;
                }
                return bytes;
              });
      report.add(
          BenchResult.of(requestResponse(bandwidthSize), rr, Sizes.BANDWIDTH_UNIT, Better.HIGHER));

      progress.step(stream(bandwidthSize));
      ByteBuffer chunk = ByteBuffer.allocateDirect(bandwidthSize);
      double stream = Measure.bandwidth(plan, deadline -> streamUntil(ch, chunk, deadline));
      report.add(
          BenchResult.of(stream(bandwidthSize), stream, Sizes.BANDWIDTH_UNIT, Better.HIGHER));
    }
  }

  private SocketChannel connect() throws IOException {
    SocketChannel ch = SocketChannel.open();
    ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
    ch.connect(acceptor.getLocalAddress());
    return ch;
  }

  private static void roundTrip(SocketChannel ch, ByteBuffer request, int n, ByteBuffer response)
      throws IOException {
    request.clear();
    request.putLong(0, n);
    writeFully(ch, request);
    response.clear();
    readFully(ch, response);
  }

  /**
   * Streams {@code chunk}-sized writes (each behind its 8 B header, in one gathering write) until
   * the deadline, then waits until the server has received all of them.
   */
  private static long streamUntil(SocketChannel ch, ByteBuffer chunk, long deadline)
      throws IOException {
    ByteBuffer header = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer[] message = {header, chunk};
    long sent = 0;
    do {
      header.clear();
      header.putLong(0, -chunk.capacity());
      chunk.clear();
      while (chunk.hasRemaining()) {
        ch.write(message);
      }
      sent += chunk.capacity();
    } while (System.nanoTime() < deadline);
    header.clear();
    header.putLong(0, SYNC);
    writeFully(ch, header);
    header.clear();
    readFully(ch, header);
    long received = header.getLong(0);
    if (received != sent) {
      throw new IOException("stream: server received " + received + " B of " + sent + " B");
    }
    return received;
  }

  private void acceptLoop() {
    int next = 0;
    while (!closed) {
      SocketChannel ch;
      try {
        ch = acceptor.accept();
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
      } catch (ClosedChannelException e) {
        return;
      } catch (IOException e) {
        if (closed) {
          return;
        }
        throw new UncheckedIOException("socket ceiling: accept failed", e);
      }
      Thread t = new Thread(() -> serve(ch), "ferrite-bench-socket-conn-" + next++);
      t.setDaemon(true);
      synchronized (this) {
        if (closed) {
          closeQuietly(ch);
          return;
        }
        connections.add(ch);
        connectionThreads.add(t);
      }
      t.start();
    }
  }

  private static void serve(SocketChannel ch) {
    ByteBuffer header = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer buffer = ByteBuffer.allocateDirect(64 << 10);
    long streamed = 0;
    try (ch) {
      while (true) {
        header.clear();
        if (!readFullyOrEof(ch, header)) {
          return;
        }
        long v = header.getLong(0);
        if (v == SYNC) {
          header.clear();
          header.putLong(0, streamed);
          writeFully(ch, header);
          streamed = 0;
          continue;
        }
        long n = Math.abs(v);
        if (n > MAX_MESSAGE) {
          return;
        }
        if (n > buffer.capacity()) {
          buffer = ByteBuffer.allocateDirect((int) n);
        }
        buffer.clear().limit((int) n);
        if (v < 0) {
          readFully(ch, buffer);
          streamed += n;
        } else {
          writeFully(ch, buffer);
        }
      }
    } catch (IOException e) {
      // The client went away (or close() closed the channel): this connection is done.
    }
  }

  private static void writeFully(SocketChannel ch, ByteBuffer b) throws IOException {
    while (b.hasRemaining()) {
      ch.write(b);
    }
  }

  private static void readFully(SocketChannel ch, ByteBuffer b) throws IOException {
    if (!readFullyOrEof(ch, b)) {
      throw new EOFException("socket ceiling: connection closed by the peer");
    }
  }

  /** False on EOF before the first byte; EOF in the middle is an error. */
  private static boolean readFullyOrEof(SocketChannel ch, ByteBuffer b) throws IOException {
    boolean any = false;
    while (b.hasRemaining()) {
      int r = ch.read(b);
      if (r < 0) {
        if (!any) {
          return false;
        }
        throw new EOFException("socket ceiling: truncated message");
      }
      any |= r > 0;
    }
    return true;
  }

  private static void closeQuietly(SocketChannel ch) {
    try {
      ch.close();
    } catch (IOException e) {
      // Closing a loopback socket we own: nothing useful to do.
    }
  }

  /** Stops accepting, closes every connection, waits for the threads. */
  @Override
  public void close() throws IOException {
    List<Thread> threads;
    synchronized (this) {
      closed = true;
      for (SocketChannel ch : connections) {
        closeQuietly(ch);
      }
      threads = new ArrayList<>(connectionThreads);
    }
    acceptor.close();
    try {
      acceptThread.join(5_000);
      for (Thread t : threads) {
        t.join(5_000);
      }
    } catch (InterruptedException e) {
      // The threads are daemons blocked on closed channels; stop waiting, keep the interrupt.
      Thread.currentThread().interrupt();
    }
  }
}
