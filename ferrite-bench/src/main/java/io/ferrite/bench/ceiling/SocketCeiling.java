package io.ferrite.bench.ceiling;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.Measure;
import io.ferrite.bench.Progress;
import io.ferrite.bench.Sizes;
import io.ferrite.bench.Throughput;
import io.ferrite.bench.Workload;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
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
import java.util.concurrent.ArrayBlockingQueue;

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
 *   <li>{@code ROTATE} followed by {@code i64 k}: stream messages from now on are received into
 *       {@code k} buffers in turn;
 *   <li>{@code FILL} followed by {@code i64 k}: stream messages from now on are received into one
 *       buffer of {@code k} bytes, each at the next offset, front to back, wrapping at its end (a
 *       large read's destination);
 *   <li>{@code HEAP} followed by {@code i64 how}: stream messages from now on are received into one
 *       {@code byte[]} of the message's size, by {@code how}: {@link #HEAP_INPUT_STREAM}, {@link
 *       #HEAP_STAGE_WHOLE}, {@link #HEAP_STAGE_PIECES}, {@link #HEAP_PIPELINED_WHOLE} or {@link
 *       #HEAP_PIPELINED_PIECES};
 *   <li>{@code POLL} (the first message on a connection only): the connection serves ping-pongs
 *       ({@code v >= 0}) for the rest of its life with both ends polling: its socket non-blocking,
 *       the server thread reading in a loop with {@link Thread#yield} between reads that found
 *       nothing, never blocking (see {@link #measurePollPingPong});
 *   <li>{@code OPS} (the first message on a connection only): the connection serves small
 *       request/response operations for the rest of its life, as a server should serve pipelined
 *       requests: each read takes every request that has arrived ({@code i64 n}: answer {@code n}
 *       bytes), and their answers go out together in one write;
 *   <li>any other {@code v < 0}: {@code -v} bytes of stream follow; the server reads and discards
 *       them and answers nothing.
 * </ul>
 *
 * One connection carries the latency and bandwidth measurements, so warm-up and measurement share
 * its socket buffers and no connection setup is timed; the operations ceilings open one connection
 * per client thread (each served by a thread of its own) before they start timing.
 *
 * <h2>Results</h2>
 *
 * <ul>
 *   <li>{@code ceiling.socket.pingpong.<N>.{p50,p99,p99.9}}: round trip of 8 B out, N B back (ns);
 *   <li>{@code ceiling.socket.pingpong.poll.<N>.{p50,p99,p99.9}} ({@link #measurePollPingPong}):
 *       the same round trip with neither thread ever blocking: both poll their socket with
 *       non-blocking reads, yielding between them, as the tcp fabric's pollers do;
 *   <li>{@code ceiling.socket.rr.1MiB.bandwidth}: back-to-back request/response transfers, 8 B out
 *       and 1 MiB back, one at a time (MiB/s);
 *   <li>{@code ceiling.socket.stream.1MiB.bandwidth}: one-way stream of 1 MiB writes (MiB/s), timed
 *       until the server has received everything, sent from a window of the size and at the offsets
 *       of the fabric's ops ({@link Workload}) and received into as many buffers, in turn, as the
 *       fabric keeps ops in flight: the reference of tcp bandwidth;
 *   <li>{@code ceiling.socket.stream.1MiB.onebuffer.bandwidth}: the same stream from one buffer
 *       into one buffer, both staying in cache (shown for comparison with earlier runs).
 *   <li>{@code ceiling.socket.stream.<D>.bandwidth} for a destination {@code D} larger than a
 *       message ({@link #measureFill}): the same stream of 1 MiB writes, received front to back
 *       into one buffer of {@code D} bytes, as a {@code D}-byte read fills its destination;
 *   <li>{@code ceiling.socket.stream.1MiB.heap.bandwidth} ({@link #measureHeap}): the same stream
 *       received into one 1 MiB {@code byte[]}, as an {@code InputStream} fills an application's
 *       array, by the fastest of five ways a plain Java program has (each reported too: {@code
 *       .heap.inputstream}, {@code .heap.stagewhole}, {@code .heap.stagepieces}, and with a second
 *       thread doing the copy, {@code .heap.pipelinedwhole}, {@code .heap.pipelinedpieces}).
 *   <li>{@code ceiling.socket.rr.<N>.t<T>.ops}: {@code T} threads, each on its own connection, each
 *       sending an 8 B request for N bytes and waiting for them, one at a time (operations/s of all
 *       threads together);
 *   <li>{@code ceiling.socket.rr.<N>.batch<B>.t<T>.ops}: the same with {@code B} requests sent in
 *       one write and their {@code B} answers awaited together (counted as B operations).
 * </ul>
 */
public final class SocketCeiling implements AutoCloseable {
  public static final String PINGPONG = "ceiling.socket.pingpong.";
  public static final String STREAM_PREFIX = "ceiling.socket.stream.";
  public static final String RR_PREFIX = "ceiling.socket.rr.";

  private static final long SYNC = Long.MIN_VALUE;
  private static final long OPS = Long.MIN_VALUE + 1;
  private static final long ROTATE = Long.MIN_VALUE + 2;
  private static final long FILL = Long.MIN_VALUE + 3;
  private static final long HEAP = Long.MIN_VALUE + 4;
  private static final long POLL = Long.MIN_VALUE + 5;
  private static final int MAX_ROTATE = 64;
  private static final long MAX_FILL = 1L << 30;

  /** {@code HEAP} mode: {@code Socket.getInputStream().read(byte[])} until the array is full. */
  public static final int HEAP_INPUT_STREAM = 0;

  /**
   * {@code HEAP} mode: {@code SocketChannel.read} of the whole message into a direct buffer of its
   * size, then one copy into the array.
   */
  public static final int HEAP_STAGE_WHOLE = 1;

  /**
   * {@code HEAP} mode: {@code SocketChannel.read} into a direct buffer of {@link #STAGE_PIECE}
   * bytes, each read's bytes copied into the array at once, while they are cache-hot.
   */
  public static final int HEAP_STAGE_PIECES = 2;

  /**
   * {@code HEAP} mode: two threads, as a reader with read-ahead has them: the connection's thread
   * reads whole messages into a ring of 4 direct buffers, a second thread copies each into the
   * array (the shape of a Ferrite File stream: I/O thread and caller).
   */
  public static final int HEAP_PIPELINED_WHOLE = 3;

  /** {@code HEAP} mode: {@link #HEAP_PIPELINED_WHOLE} with a ring of 16 {@link #STAGE_PIECE}s. */
  public static final int HEAP_PIPELINED_PIECES = 4;

  private static final String[] HEAP_NAMES = {
    "inputstream", "stagewhole", "stagepieces", "pipelinedwhole", "pipelinedpieces"
  };

  /** The staging buffer of {@link #HEAP_STAGE_PIECES}. */
  static final int STAGE_PIECE = 128 << 10;

  /** Window and receive buffers of the stream when a suite does not say. */
  private static final long DEFAULT_WINDOW = 16L << 20;

  private static final int DEFAULT_DEPTH = 4;

  /** Largest answer of an operations-mode request, and most requests answered in one write. */
  private static final int MAX_OP_RESPONSE = 64 << 10;

  private static final int MAX_OPS_PER_READ = 64;

  /** The unit of operation throughput. */
  public static final String OPS_UNIT = "ops/s";

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

  /**
   * Name prefix of the polling ping-pong with an {@code n}-byte response, e.g. ...pingpong.poll.8B.
   */
  public static String pingPongPoll(int n) {
    return PINGPONG + "poll." + Sizes.label(n);
  }

  /** Name of the one-way stream bandwidth of {@code size}-byte writes. */
  public static String stream(int size) {
    return STREAM_PREFIX + Sizes.label(size) + ".bandwidth";
  }

  /**
   * Name of the stream of {@code size}-byte writes from one buffer into one buffer, both cache-hot
   * (the definition of {@link #stream} before it sent from a window into rotating buffers).
   */
  public static String streamOneBuffer(int size) {
    return STREAM_PREFIX + Sizes.label(size) + ".onebuffer.bandwidth";
  }

  /**
   * Name of the stream of {@code size}-byte writes received into one {@code byte[]} of {@code size}
   * bytes, by the fastest way measured ({@link #measureHeap}).
   */
  public static String streamHeap(int size) {
    return STREAM_PREFIX + Sizes.label(size) + ".heap.bandwidth";
  }

  /** Name of the stream into a {@code byte[]} by one way ({@link #HEAP_INPUT_STREAM} ...). */
  public static String streamHeap(int size, int how) {
    return STREAM_PREFIX + Sizes.label(size) + ".heap." + HEAP_NAMES[how] + ".bandwidth";
  }

  /** Name of the request/response bandwidth of {@code size}-byte responses. */
  public static String requestResponse(int size) {
    return RR_PREFIX + Sizes.label(size) + ".bandwidth";
  }

  /**
   * Name of the request/response operations ceiling: {@code threads} threads, {@code batch}
   * requests of {@code size} bytes at a time (1: one at a time).
   */
  public static String ops(int size, int batch, int threads) {
    return RR_PREFIX
        + Sizes.label(size)
        + (batch > 1 ? ".batch" + batch : "")
        + ".t"
        + threads
        + ".ops";
  }

  /**
   * Measures {@link #ops} for {@code threads} threads, each with a connection of its own, asking
   * for {@code batch} answers of {@code size} bytes at a time, and adds it to {@code report}.
   */
  public BenchResult measureOps(
      BenchReport report, Measure.Plan plan, int size, int batch, int threads, Progress progress)
      throws Exception {
    if (size < 1 || size > MAX_OP_RESPONSE || batch < 1 || batch > MAX_OPS_PER_READ) {
      throw new IllegalArgumentException(
          "size: "
              + size
              + ", batch: "
              + batch
              + " (expected: 1 to "
              + MAX_OP_RESPONSE
              + " and 1 to "
              + MAX_OPS_PER_READ
              + ")");
    }
    String name = ops(size, batch, threads);
    progress.step(name);
    List<SocketChannel> opened = new ArrayList<>();
    try {
      double ops =
          Throughput.opsPerSecond(
              plan,
              threads,
              t -> {
                SocketChannel ch = connect();
                synchronized (opened) {
                  opened.add(ch);
                }
                ByteBuffer mode = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
                mode.putLong(0, OPS);
                writeFully(ch, mode);
                ByteBuffer requests =
                    ByteBuffer.allocateDirect(8 * batch).order(ByteOrder.LITTLE_ENDIAN);
                for (int k = 0; k < batch; k++) {
                  requests.putLong(8 * k, size);
                }
                ByteBuffer answers = ByteBuffer.allocateDirect(size * batch);
                return i -> {
                  requests.clear();
                  writeFully(ch, requests);
                  answers.clear();
                  readFully(ch, answers);
                  return batch;
                };
              },
              "socket-ops");
      return report.add(BenchResult.of(name, ops, OPS_UNIT, Better.HIGHER));
    } finally {
      for (SocketChannel ch : opened) {
        closeQuietly(ch);
      }
    }
  }

  /**
   * Measures {@link #pingPongPoll}: the ping-pong of 8 B out, {@code n} B back, on a connection of
   * its own whose two ends never block. The client writes its request, then reads its non-blocking
   * socket in a loop, calling {@link Thread#yield} after every read that found nothing; the server
   * thread does the same for the next request and writes the answer at once. The ceiling of a tcp
   * RPC whose caller and server poll ({@code tcp.poll.spin.nanos}, docs/KERNEL.md "tcp pollers"):
   * the blocking {@link #pingPong} measures instead a round trip whose two threads sleep in {@code
   * read} and are woken by the sender's kernel, which on a VM may be an interrupt to a halted vCPU
   * (tens of microseconds) and flatters anything that keeps its threads awake. Yield, not a busy
   * spin, as the fabric's pollers: on 2 cores a busy spinner holds the core its peer needs. Adds
   * the latency to {@code report}.
   */
  public void measurePollPingPong(BenchReport report, Measure.Plan plan, int n, Progress progress)
      throws Exception {
    if (n < 1 || n > MAX_OP_RESPONSE) {
      throw new IllegalArgumentException("n: " + n + " (expected: 1 to " + MAX_OP_RESPONSE + ")");
    }
    progress.step(pingPongPoll(n) + " latency");
    try (SocketChannel ch = connect()) {
      ByteBuffer request = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
      request.putLong(0, POLL);
      writeFully(ch, request);
      ch.configureBlocking(false);
      ByteBuffer response = ByteBuffer.allocateDirect(n);
      Measure.addLatency(
          report,
          pingPongPoll(n),
          Measure.latency(
              plan,
              i -> {
                request.clear();
                request.putLong(0, n);
                pollWrite(ch, request);
                response.clear();
                pollRead(ch, response);
              }),
          null);
    }
  }

  /** Writes all of {@code b} to a non-blocking channel, yielding while the socket is full. */
  private static void pollWrite(SocketChannel ch, ByteBuffer b) throws IOException {
    while (b.hasRemaining()) {
      if (ch.write(b) == 0) {
        Thread.yield();
      }
    }
  }

  /**
   * Fills {@code b} from a non-blocking channel, yielding after every read that found nothing;
   * false on EOF before the first byte (EOF in the middle is an error).
   */
  private static boolean pollReadOrEof(SocketChannel ch, ByteBuffer b) throws IOException {
    boolean any = false;
    while (b.hasRemaining()) {
      int r = ch.read(b);
      if (r < 0) {
        if (!any) {
          return false;
        }
        throw new EOFException("socket ceiling: truncated message");
      }
      if (r == 0) {
        Thread.yield();
      }
      any |= r > 0;
    }
    return true;
  }

  private static void pollRead(SocketChannel ch, ByteBuffer b) throws IOException {
    if (!pollReadOrEof(ch, b)) {
      throw new EOFException("socket ceiling: connection closed by the peer");
    }
  }

  /**
   * {@link #measure(BenchReport, Measure.Plan, Workload, int, int[], int, Progress)} with the
   * defaults of the fabric suite: a 16 MiB window, 4 receive buffers.
   */
  public void measure(
      BenchReport report,
      Measure.Plan plan,
      int[] responseSizes,
      int bandwidthSize,
      Progress progress)
      throws Exception {
    measure(
        report,
        plan,
        new Workload(Math.max(DEFAULT_WINDOW, bandwidthSize)),
        DEFAULT_DEPTH,
        responseSizes,
        bandwidthSize,
        progress);
  }

  /**
   * Measures every socket ceiling and adds it to {@code report}. The stream sends from {@code
   * workload}'s window at its offsets and is received into {@code depth} buffers in turn: the
   * memory a tcp read of that many ops in flight touches on each side (the region's window at the
   * server, the callers' buffers at the client), so that the ceiling does the fabric's copies minus
   * the fabric, not copies of one cache-hot buffer into another.
   */
  public void measure(
      BenchReport report,
      Measure.Plan plan,
      Workload workload,
      int depth,
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

      progress.step(streamOneBuffer(bandwidthSize));
      ByteBuffer chunk = ByteBuffer.allocateDirect(bandwidthSize);
      rotate(ch, 1);
      double hot =
          Measure.bandwidth(
              plan, deadline -> streamUntil(ch, chunk, i -> 0, bandwidthSize, deadline));
      report.add(
          BenchResult.of(streamOneBuffer(bandwidthSize), hot, Sizes.BANDWIDTH_UNIT, Better.HIGHER));

      progress.step(stream(bandwidthSize));
      if (workload.window() < bandwidthSize || workload.window() > Integer.MAX_VALUE) {
        throw new IllegalArgumentException(
            "window: " + workload.window() + " (expected: >= " + bandwidthSize + ", int-sized)");
      }
      ByteBuffer window = window(workload);
      rotate(ch, depth);
      double stream =
          Measure.bandwidth(
              plan,
              deadline ->
                  streamUntil(
                      ch, window, i -> workload.offset(i, bandwidthSize), bandwidthSize, deadline));
      report.add(
          BenchResult.of(stream(bandwidthSize), stream, Sizes.BANDWIDTH_UNIT, Better.HIGHER));
    }
  }

  /** The sender's window of a stream ceiling, written through so no page is the zero page. */
  private static ByteBuffer window(Workload workload) {
    ByteBuffer window = ByteBuffer.allocateDirect((int) workload.window());
    for (int i = 0; i + 8 <= window.capacity(); i += 8) {
      window.putLong(i, i * 0x9E3779B97F4A7C15L);
    }
    return window;
  }

  /**
   * Measures {@code ceiling.socket.stream.<destination>.bandwidth}: the stream of {@code size}-byte
   * writes from {@code workload}'s window (as {@link #stream}), received front to back into one
   * direct buffer of {@code destination} bytes, wrapping at its end: what a read of {@code
   * destination} bytes does to its destination, which a stream into a few cache-resident buffers
   * does not. Adds it to {@code report} and returns it.
   */
  public BenchResult measureFill(
      BenchReport report,
      Measure.Plan plan,
      Workload workload,
      int size,
      int destination,
      Progress progress)
      throws Exception {
    if (destination <= size || destination % size != 0 || workload.window() < size) {
      throw new IllegalArgumentException(
          "size: "
              + size
              + ", destination: "
              + destination
              + ", window: "
              + workload.window()
              + " (expected: a destination a multiple of the size above it, a window >= size)");
    }
    String name = stream(destination);
    progress.step(name);
    ByteBuffer window = window(workload);
    try (SocketChannel ch = connect()) {
      ByteBuffer m = ByteBuffer.allocateDirect(16).order(ByteOrder.LITTLE_ENDIAN);
      m.putLong(0, FILL).putLong(8, destination);
      writeFully(ch, m);
      double mibs =
          Measure.bandwidth(
              plan,
              deadline -> streamUntil(ch, window, i -> workload.offset(i, size), size, deadline));
      return report.add(BenchResult.of(name, mibs, Sizes.BANDWIDTH_UNIT, Better.HIGHER));
    }
  }

  /**
   * Measures {@link #streamHeap(int)}: the stream of {@code size}-byte writes from {@code
   * workload}'s window received into one {@code byte[]} of {@code size} bytes, as an application
   * reading an {@code InputStream} into its array gets them, by each of the ways a plain Java
   * program has ({@link #HEAP_INPUT_STREAM}, {@link #HEAP_STAGE_WHOLE}, {@link #HEAP_STAGE_PIECES},
   * {@link #HEAP_PIPELINED_WHOLE}, {@link #HEAP_PIPELINED_PIECES}; a socket cannot read into the
   * Java heap without a copy through native memory, in the JDK or Netty alike). Each is reported;
   * the ceiling is the fastest. Returns it.
   */
  public BenchResult measureHeap(
      BenchReport report, Measure.Plan plan, Workload workload, int size, Progress progress)
      throws Exception {
    if (workload.window() < size) {
      throw new IllegalArgumentException(
          "window: " + workload.window() + " (expected: >= " + size + ")");
    }
    ByteBuffer window = window(workload);
    double best = 0;
    for (int how = 0; how < HEAP_NAMES.length; how++) {
      progress.step(streamHeap(size, how));
      try (SocketChannel ch = connect()) {
        ByteBuffer m = ByteBuffer.allocateDirect(16).order(ByteOrder.LITTLE_ENDIAN);
        m.putLong(0, HEAP).putLong(8, how);
        writeFully(ch, m);
        double mibs =
            Measure.bandwidth(
                plan,
                deadline -> streamUntil(ch, window, i -> workload.offset(i, size), size, deadline));
        report.add(
            BenchResult.of(streamHeap(size, how), mibs, Sizes.BANDWIDTH_UNIT, Better.HIGHER));
        best = Math.max(best, mibs);
      }
    }
    return report.add(BenchResult.of(streamHeap(size), best, Sizes.BANDWIDTH_UNIT, Better.HIGHER));
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

  /** Where the {@code i}-th message of a stream starts in its source buffer. */
  @FunctionalInterface
  private interface Offsets {
    long of(long i);
  }

  /** Tells the server to receive stream messages into {@code buffers} buffers in turn. */
  private static void rotate(SocketChannel ch, int buffers) throws IOException {
    ByteBuffer m = ByteBuffer.allocateDirect(16).order(ByteOrder.LITTLE_ENDIAN);
    m.putLong(0, ROTATE);
    m.putLong(8, buffers);
    writeFully(ch, m);
  }

  /**
   * Streams {@code size}-byte writes from {@code source} at {@code offsets} (each behind its 8 B
   * header, in one gathering write) until the deadline, then waits until the server has received
   * all of them.
   */
  private static long streamUntil(
      SocketChannel ch, ByteBuffer source, Offsets offsets, int size, long deadline)
      throws IOException {
    ByteBuffer header = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer chunk = source.duplicate();
    ByteBuffer[] message = {header, chunk};
    long sent = 0;
    long i = 0;
    do {
      header.clear();
      header.putLong(0, -size);
      int at = (int) offsets.of(i++);
      chunk.limit(at + size).position(at);
      while (chunk.hasRemaining()) {
        ch.write(message);
      }
      sent += size;
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
    // Stream messages are received into these in turn (ROTATE); answers come from buffer.
    ByteBuffer[] receive = {buffer};
    int next = 0;
    long streamed = 0;
    // FILL: one large destination, filled front to back.
    ByteBuffer fill = null;
    int fillAt = 0;
    // HEAP: one array of the message's size, filled one of three ways.
    int heapHow = -1;
    byte[] heap = null;
    ByteBuffer stage = null;
    Pipeline pipeline = null;
    try (ch) {
      while (true) {
        header.clear();
        if (!readFullyOrEof(ch, header)) {
          return;
        }
        long v = header.getLong(0);
        if (v == OPS) {
          serveOps(ch);
          return;
        }
        if (v == POLL) {
          servePoll(ch, buffer);
          return;
        }
        if (v == ROTATE) {
          header.clear();
          readFully(ch, header);
          long k = header.getLong(0);
          if (k < 1 || k > MAX_ROTATE) {
            return;
          }
          receive = new ByteBuffer[(int) k];
          next = 0;
          fill = null;
          heapHow = -1;
          continue;
        }
        if (v == FILL || v == HEAP) {
          header.clear();
          readFully(ch, header);
          long k = header.getLong(0);
          if (v == FILL) {
            if (k < 1 || k > MAX_FILL) {
              return;
            }
            fill = ByteBuffer.allocateDirect((int) k);
            fillAt = 0;
            heapHow = -1;
          } else {
            if (k < 0 || k >= HEAP_NAMES.length) {
              return;
            }
            heapHow = (int) k;
            fill = null;
          }
          continue;
        }
        if (v == SYNC) {
          if (pipeline != null) {
            pipeline.drain();
          }
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
        if (v < 0 && fill != null) {
          if (n > fill.capacity()) {
            return;
          }
          if (fillAt + n > fill.capacity()) {
            fillAt = 0;
          }
          fill.limit(fillAt + (int) n).position(fillAt);
          readFully(ch, fill);
          fillAt += (int) n;
          streamed += n;
        } else if (v < 0 && heapHow >= 0) {
          if (heap == null || heap.length != n) {
            heap = new byte[(int) n];
          }
          if (heapHow == HEAP_STAGE_WHOLE && (stage == null || stage.capacity() < n)) {
            stage = ByteBuffer.allocateDirect((int) n);
          } else if (heapHow == HEAP_STAGE_PIECES
              && (stage == null || stage.capacity() < STAGE_PIECE)) {
            stage = ByteBuffer.allocateDirect(STAGE_PIECE);
          }
          if (heapHow >= HEAP_PIPELINED_WHOLE) {
            if (pipeline == null || pipeline.how != heapHow || pipeline.heap.length != n) {
              if (pipeline != null) {
                pipeline.close();
              }
              pipeline =
                  heapHow == HEAP_PIPELINED_WHOLE
                      ? new Pipeline(heapHow, (int) n, (int) n, 4)
                      : new Pipeline(heapHow, (int) n, STAGE_PIECE, 16);
            }
            pipeline.receive(ch);
          } else {
            receiveHeap(ch, heapHow, heap, stage);
          }
          streamed += n;
        } else if (v < 0) {
          int k = next;
          next = (next + 1) % receive.length;
          if (receive[k] == null || n > receive[k].capacity()) {
            receive[k] = ByteBuffer.allocateDirect((int) n);
          }
          ByteBuffer into = receive[k];
          into.clear().limit((int) n);
          readFully(ch, into);
          streamed += n;
        } else {
          if (n > buffer.capacity()) {
            buffer = ByteBuffer.allocateDirect((int) n);
          }
          buffer.clear().limit((int) n);
          writeFully(ch, buffer);
        }
      }
    } catch (IOException e) {
      // The client went away (or close() closed the channel): this connection is done.
    } finally {
      if (pipeline != null) {
        pipeline.close();
      }
    }
  }

  /**
   * The receiving half of {@link #HEAP_PIPELINED_WHOLE} / {@link #HEAP_PIPELINED_PIECES}: the
   * connection's thread reads each message in pieces into a ring of direct buffers; a copier thread
   * copies each piece into the array at its place and returns its buffer to the ring.
   */
  private static final class Pipeline implements Runnable {
    private record Piece(ByteBuffer buf, int at) {}

    private static final Piece DRAIN = new Piece(null, -1);

    final int how;
    final byte[] heap;
    private final int piece;
    private final ArrayBlockingQueue<Piece> full;
    private final ArrayBlockingQueue<ByteBuffer> free;
    private final ArrayBlockingQueue<Boolean> drained = new ArrayBlockingQueue<>(1);
    private final Thread copier;

    Pipeline(int how, int size, int piece, int depth) {
      this.how = how;
      this.heap = new byte[size];
      this.piece = piece;
      this.full = new ArrayBlockingQueue<>(depth + 2);
      this.free = new ArrayBlockingQueue<>(depth);
      for (int i = 0; i < depth; i++) {
        free.add(ByteBuffer.allocateDirect(piece));
      }
      copier = new Thread(this, "ferrite-bench-socket-copier");
      copier.setDaemon(true);
      copier.start();
    }

    /** Reads one message of {@code heap.length} bytes from {@code ch}, piece by piece. */
    void receive(SocketChannel ch) throws IOException {
      try {
        for (int at = 0; at < heap.length; ) {
          ByteBuffer b = free.take();
          int len = Math.min(piece, heap.length - at);
          b.clear().limit(len);
          readFully(ch, b);
          full.put(new Piece(b, at));
          at += len;
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new java.io.InterruptedIOException("socket ceiling: interrupted");
      }
    }

    /** Returns once every piece received so far is in the array. */
    void drain() throws IOException {
      try {
        full.put(DRAIN);
        drained.take();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new java.io.InterruptedIOException("socket ceiling: interrupted");
      }
    }

    @Override
    public void run() {
      try {
        while (true) {
          Piece p = full.take();
          if (p == DRAIN) {
            drained.put(Boolean.TRUE);
            continue;
          }
          p.buf().flip();
          p.buf().get(heap, p.at(), p.buf().remaining());
          free.put(p.buf());
        }
      } catch (InterruptedException e) {
        // Stopped.
      }
    }

    void close() {
      copier.interrupt();
      try {
        copier.join(5_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Receives one message of {@code heap.length} bytes into {@code heap}, the {@code how} way. */
  private static void receiveHeap(SocketChannel ch, int how, byte[] heap, ByteBuffer stage)
      throws IOException {
    int n = heap.length;
    switch (how) {
      case HEAP_INPUT_STREAM -> {
        InputStream in = ch.socket().getInputStream();
        int off = 0;
        while (off < n) {
          int r = in.read(heap, off, n - off);
          if (r < 0) {
            throw new EOFException("socket ceiling: truncated message");
          }
          off += r;
        }
      }
      case HEAP_STAGE_WHOLE -> {
        stage.clear().limit(n);
        readFully(ch, stage);
        stage.flip();
        stage.get(heap, 0, n);
      }
      default -> {
        int off = 0;
        while (off < n) {
          stage.clear().limit(Math.min(stage.capacity(), n - off));
          int r = ch.read(stage);
          if (r < 0) {
            throw new EOFException("socket ceiling: truncated message");
          }
          stage.flip();
          stage.get(heap, off, r);
          off += r;
        }
      }
    }
  }

  /**
   * Operations mode: every read takes all the requests that have arrived, and one write answers all
   * of them (the answers are zeros: the ceiling measures moving them, not making them).
   */
  private static void serveOps(SocketChannel ch) throws IOException {
    ByteBuffer in = ByteBuffer.allocateDirect(8 * MAX_OPS_PER_READ).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer out = ByteBuffer.allocateDirect(MAX_OP_RESPONSE * MAX_OPS_PER_READ);
    while (true) {
      if (ch.read(in) < 0) {
        return;
      }
      in.flip();
      long answer = 0;
      while (in.remaining() >= 8) {
        long n = in.getLong();
        if (n < 0 || n > MAX_OP_RESPONSE) {
          return;
        }
        answer += n;
      }
      in.compact();
      out.clear().limit((int) answer);
      writeFully(ch, out);
    }
  }

  /**
   * Polling mode ({@link #measurePollPingPong}): ping-pongs on a non-blocking socket, the next
   * request read in a loop that yields after every read that found nothing, never blocking, until
   * the client closes the connection.
   */
  private static void servePoll(SocketChannel ch, ByteBuffer answer) throws IOException {
    ch.configureBlocking(false);
    ByteBuffer header = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
    while (true) {
      header.clear();
      if (!pollReadOrEof(ch, header)) {
        return;
      }
      long n = header.getLong(0);
      if (n < 0 || n > answer.capacity()) {
        return;
      }
      answer.clear().limit((int) n);
      pollWrite(ch, answer);
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
