package io.ferrite.fabric.netty;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Frames;
import io.ferrite.fabric.Role;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A blocking lane: a second, plain blocking socket to the same server, authenticated like any
 * connection, on which one calling thread at a time sends synchronous small reads and reads their
 * answers itself ({@link Lanes}).
 *
 * <p>Why: on the shared connection a response is read by the client's event loop, which then
 * completes a future and wakes the waiting caller (a futex wake and a scheduler hop per op, 42% of
 * the client I/O thread in a profile). On a lane the caller's own blocking {@code read} returns
 * with the answer: a round trip costs a {@code write} and a {@code read} on the calling thread, as
 * with a blocking Redis or raw-socket client.
 *
 * <p>Frames are those of {@link Frames}; a lane sends READ requests, all of one call written with
 * one {@code write}, or one small RPC ({@link #call}), and matches answers by request id. An RPC on
 * a lane is served by the server like any other (inline, or by a dispatch thread); only its {@link
 * io.ferrite.fabric.RpcContext#connectionId} is the lane's, not the shared connection's.
 *
 * <h2>Deadlines</h2>
 *
 * A blocking read has no timeout of its own; {@link Lanes}' watchdog closes a lane whose op (or
 * handshake) is past its deadline, which ends the blocked call with an {@link IOException}. {@link
 * #state} decides who ends an op: the owner moves {@code BUSY -> IDLE}, the watchdog {@code BUSY ->
 * EXPIRED}; whoever loses knows the other won.
 *
 * <h2>Waiting for an answer: poll, then block</h2>
 *
 * With {@link io.ferrite.fabric.FabricTuning#tcpPollSpinNanos} above 0 the caller first polls the
 * socket without blocking (non-blocking {@code read}s, yielding between them) for that long, and
 * only then blocks in {@code read}: an answer that comes within the bound finds its reader awake,
 * so its vCPU has not halted and the sender's kernel need not wake it (see {@link SpinThenWait} for
 * why that matters on a VM). A caller polls only while it is the only caller of the connection
 * waiting for an answer ({@link Lanes}' count of waiters); otherwise it blocks at once. A lone
 * caller is the case that pays the wake-up: with others waiting, their answers keep the cores
 * awake, and pollers would take the cores the server needs to answer them (a first version let one
 * caller per connection poll: its 16 threads' reads were within the large run-to-run noise, so the
 * rule is the safer one, not a measured gain). The socket stays in non-blocking mode while answers
 * come within the bound; a write the socket does not take whole, or a poll that ran out, puts it
 * back in blocking mode (one {@code fcntl} each way).
 */
final class Lane {
  /** Ops of at most this many bytes take a lane; larger ones stream through the event loop. */
  static final int MAX_READ = 64 << 10;

  /** At most this many ops per call (one write of their frames). */
  static final int MAX_OPS = 256;

  /**
   * RPCs with requests of at most this many bytes take a lane; larger ones the event loop. A
   * request that does not fit {@link #out} after its header is written from the caller's buffer
   * (one gathering write), so this bounds only what one caller holds a lane for: a kv multiPut of
   * 16 pairs of 1 KiB (about 17 KiB) rides a lane, as a batch of small reads does.
   */
  static final int MAX_CALL_REQUEST = 64 << 10;

  private static final int READ_BODY = Frames.REGION_OP_HEADER + 4;
  private static final int READ_FRAME = Frames.HEADER + READ_BODY;

  static final int IDLE = 0;
  static final int BUSY = 1;
  static final int EXPIRED = 2;

  final AtomicInteger state = new AtomicInteger(IDLE);

  /** Deadline of the current op; written before {@link #state} becomes BUSY. */
  volatile long deadlineNanos;

  private final SocketChannel ch;
  private final ByteBuffer out =
      ByteBuffer.allocateDirect(MAX_OPS * READ_FRAME).order(ByteOrder.LITTLE_ENDIAN);
  private final ByteBuffer in = ByteBuffer.allocateDirect(MAX_READ).order(ByteOrder.LITTLE_ENDIAN);
  private long nextRequestId = 1;
  private final long spinNanos;
  private final AtomicInteger waiters;
  private boolean blocking = true;

  /**
   * @param spinNanos how long a caller polls for an answer before it blocks (0: blocks at once)
   * @param waiters the connection's count of callers waiting for an answer now, shared by its lanes
   */
  Lane(long spinNanos, AtomicInteger waiters) throws IOException {
    this.ch = SocketChannel.open();
    this.spinNanos = spinNanos;
    this.waiters = waiters;
    in.flip(); // read mode, empty
  }

  /** Marks the start of an op with a deadline; see {@link #state}. */
  void begin(long deadlineNanos) {
    this.deadlineNanos = deadlineNanos;
    state.set(BUSY);
  }

  /** Marks the end of an op; false if the watchdog expired it (the lane is then closed). */
  boolean end() {
    return state.compareAndSet(BUSY, IDLE);
  }

  boolean expired() {
    return state.get() == EXPIRED;
  }

  /** From the watchdog: closes the lane if its op is past its deadline. */
  void expireIfLate(long nowNanos) {
    if (state.get() == BUSY && nowNanos - deadlineNanos > 0 && state.compareAndSet(BUSY, EXPIRED)) {
      close();
    }
  }

  /** Closes the socket; a thread blocked on it gets an {@link IOException}. Idempotent. */
  void close() {
    try {
      ch.close();
    } catch (IOException e) {
      // The descriptor is released either way.
    }
  }

  // ---- handshake (the caller's thread, under a deadline set with begin())

  /**
   * Connects and runs the handshake of {@link Frames}: checks the server's proof before proving
   * itself, and that the server is the one the shared connection talks to.
   */
  void open(InetSocketAddress remote, int timeoutMillis, Credentials credentials, int remoteId)
      throws IOException {
    ch.socket().connect(remote, Math.max(1, timeoutMillis));
    ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
    byte[] clientNonce = Handshake.nonce();
    byte[] id = credentials.clusterId().getBytes(StandardCharsets.UTF_8);
    out.clear();
    Role role = credentials.role();
    header(Frames.TYPE_HELLO, 0, Handshake.HELLO_FIXED + id.length + Handshake.HELLO_TAIL);
    out.putInt(Frames.MAGIC).putShort((short) Frames.PROTOCOL_VERSION).putShort((short) id.length);
    out.put(id).put(clientNonce).put((byte) role.wire());
    out.put(Handshake.helloCheck(credentials, role, clientNonce));
    flushOut();
    ByteBuffer hello;
    try {
      hello = handshakeAnswer(Frames.TYPE_HELLO);
    } catch (FerriteException e) {
      throw Handshake.refusedHello(credentials, remote.toString(), e.code(), e.detail());
    }
    if (hello.remaining() != Handshake.HELLO_RESPONSE) {
      throw new IOException("HELLO response of " + hello.remaining() + " B");
    }
    int node = hello.getInt();
    byte[] serverNonce = new byte[Frames.NONCE_BYTES];
    byte[] proof = new byte[Frames.PROOF_BYTES];
    hello.get(serverNonce).get(proof);
    if (!Handshake.verify(
        Handshake.serverProof(credentials, role, clientNonce, serverNonce), proof)) {
      throw new FerriteException(
          ErrorCode.AUTH_FAILED, "server at " + remote + " failed to prove the cluster secret");
    }
    if (node != remoteId) {
      throw new IOException("server " + node + " at " + remote + " (expected: " + remoteId + ")");
    }
    out.clear();
    header(Frames.TYPE_AUTH, 0, Frames.PROOF_BYTES);
    out.put(Handshake.clientProof(credentials, role, serverNonce, clientNonce));
    flushOut();
    if (handshakeAnswer(Frames.TYPE_AUTH).hasRemaining()) {
      throw new IOException("AUTH response with a body");
    }
  }

  /** The body of the next frame, which must be an OK response of {@code type}. */
  private ByteBuffer handshakeAnswer(int type) throws IOException {
    fill(Frames.HEADER);
    int frameLength = in.getInt();
    int t = in.get() & 0xff;
    int flags = in.get() & 0xff;
    int status = in.getShort() & 0xffff;
    in.getLong();
    int body = frameLength - Frames.HEADER_AFTER_LENGTH;
    if (body < 0 || body > Handshake.HELLO_RESPONSE + Wire.MAX_ERROR_MESSAGE) {
      throw new IOException("handshake frame of " + body + " B");
    }
    fill(body);
    ByteBuffer b = in.slice().limit(body).order(ByteOrder.LITTLE_ENDIAN);
    in.position(in.position() + body);
    if (t != type || flags != Frames.FLAG_RESPONSE) {
      throw new IOException(Wire.typeName(t) + " during the handshake");
    }
    if (status != ErrorCode.OK.wire()) {
      throw new FerriteException(
          ErrorCode.fromWire(status), StandardCharsets.UTF_8.decode(b).toString());
    }
    return b;
  }

  // ---- reads (the owning caller's thread)

  /**
   * Sends {@code ops} in one write and reads their answers, ending each op as its answer arrives
   * (an error status ends it with that error; the lane stays usable). Throws if the lane broke: ops
   * not ended then have no answer, and the lane must be discarded.
   */
  void read(List<RegionOps.Read> ops) throws IOException {
    int n = ops.size();
    long first = nextRequestId;
    nextRequestId += n;
    out.clear();
    for (int i = 0; i < n; i++) {
      RegionOps.Read op = ops.get(i);
      header(Frames.TYPE_READ, first + i, READ_BODY);
      out.putInt(op.ref.regionId()).putInt(0).putLong(op.ref.rkey()).putLong(op.offset);
      out.putInt(op.length);
    }
    flushOut();
    for (int k = 0; k < n; k++) {
      fill(Frames.HEADER);
      int frameLength = in.getInt();
      int type = in.get() & 0xff;
      int flags = in.get() & 0xff;
      int status = in.getShort() & 0xffff;
      long id = in.getLong();
      long i = id - first;
      int body = frameLength - Frames.HEADER_AFTER_LENGTH;
      if (type != Frames.TYPE_READ || flags != Frames.FLAG_RESPONSE || i < 0 || i >= n) {
        throw new IOException(
            "unexpected " + Wire.typeName(type) + " frame (flags " + flags + ", id " + id + ")");
      }
      RegionOps.Read op = ops.get((int) i);
      if (op.future.isDone() || body < 0) {
        throw new IOException("second answer or bad length for request " + id);
      }
      if (status != ErrorCode.OK.wire()) {
        op.endNow(readError(status, body));
        continue;
      }
      if (body != op.length) {
        throw new IOException("READ response of " + body + " B (expected: " + op.length + ")");
      }
      copyBody(op);
      op.endNow(null);
    }
  }

  /**
   * Sends one RPC and reads its answer on this thread: the response body (owned by the caller), or
   * a {@link FerriteException} with the server's error status (the lane stays usable). Throws
   * {@link IOException} if the lane broke (the call's outcome is then unknown: it may have run) and
   * the lane must be discarded.
   */
  ByteBuffer call(int service, int opcode, ByteBuffer request, long deadlineMillis, int maxResponse)
      throws IOException {
    int n = request.remaining();
    long id = nextRequestId++;
    out.clear();
    // RPC    service u16 | opcode u16 | deadlineMillis u32 | request ...       [response ...]
    header(Frames.TYPE_RPC, id, RpcDispatcher.RPC_HEADER + n);
    out.putShort((short) service).putShort((short) opcode);
    out.putInt((int) Math.min(Math.max(1, deadlineMillis), 0xffff_ffffL));
    if (n <= out.remaining()) {
      out.put(request.duplicate());
      flushOut();
    } else {
      // Header from out, body from the caller's buffer: no copy into out first.
      out.flip();
      ByteBuffer[] frame = {out, request.duplicate()};
      while (frame[1].hasRemaining()) {
        if (ch.write(frame) == 0) {
          blocking(true);
        }
      }
    }
    fill(Frames.HEADER);
    int frameLength = in.getInt();
    int type = in.get() & 0xff;
    int flags = in.get() & 0xff;
    int status = in.getShort() & 0xffff;
    long answered = in.getLong();
    int body = frameLength - Frames.HEADER_AFTER_LENGTH;
    if (type != Frames.TYPE_RPC || flags != Frames.FLAG_RESPONSE || answered != id || body < 0) {
      throw new IOException(
          "unexpected "
              + Wire.typeName(type)
              + " frame (flags "
              + flags
              + ", id "
              + answered
              + ", expected "
              + id
              + ")");
    }
    if (status != ErrorCode.OK.wire()) {
      throw readError(status, body);
    }
    if (body > maxResponse) {
      throw new IOException("RPC response of " + body + " B (expected: <= " + maxResponse + ")");
    }
    ByteBuffer rsp = ByteBuffer.allocate(body);
    readInto(rsp);
    return rsp.flip();
  }

  /** Moves the op's body from the read buffer (and the socket) into the caller's buffer. */
  private void copyBody(RegionOps.Read op) throws IOException {
    ByteBuffer v = op.view;
    v.limit(v.capacity()).position(op.base);
    v.limit(op.base + op.length);
    readInto(v);
  }

  /** Reads an error answer's message ({@code body} bytes) into the failure it reports. */
  private FerriteException readError(int status, int body) throws IOException {
    if (body > Wire.MAX_ERROR_MESSAGE) {
      throw new IOException("error message of " + body + " B");
    }
    fill(body);
    ByteBuffer msg = in.slice().limit(body);
    in.position(in.position() + body);
    return new FerriteException(
        ErrorCode.fromWire(status), StandardCharsets.UTF_8.decode(msg).toString());
  }

  /** Fills {@code dst} (position to limit) from the read buffer, then from the socket. */
  private void readInto(ByteBuffer dst) throws IOException {
    while (dst.hasRemaining()) {
      if (!in.hasRemaining()) {
        in.clear();
        int r = receive(in);
        in.flip();
        if (r < 0) {
          throw new EOFException("the server closed the lane");
        }
        continue;
      }
      int take = Math.min(dst.remaining(), in.remaining());
      int lim = in.limit();
      in.limit(in.position() + take);
      dst.put(in);
      in.limit(lim);
    }
  }

  private void header(int type, long requestId, int bodyLength) {
    out.putInt(Frames.HEADER_AFTER_LENGTH + bodyLength);
    out.put((byte) type).put((byte) 0).putShort((short) 0).putLong(requestId);
  }

  private void flushOut() throws IOException {
    out.flip();
    while (out.hasRemaining()) {
      if (ch.write(out) == 0) {
        blocking(true); // the socket is full (or was non-blocking): wait for room
      }
    }
  }

  /**
   * One {@code read} of what the socket has, at least a byte (or -1 at its end): polled for {@link
   * #spinNanos} if no other caller of the connection is waiting for an answer, then blocking.
   */
  private int receive(ByteBuffer dst) throws IOException {
    if (spinNanos == 0) {
      return ch.read(dst);
    }
    int waiting = waiters.incrementAndGet();
    try {
      if (waiting == 1) {
        blocking(false);
        long start = System.nanoTime();
        do {
          int r = ch.read(dst);
          if (r != 0) {
            return r;
          }
          Thread.yield();
        } while (System.nanoTime() - start < spinNanos);
      }
      blocking(true);
      return ch.read(dst);
    } finally {
      waiters.decrementAndGet();
    }
  }

  private void blocking(boolean on) throws IOException {
    if (blocking != on) {
      ch.configureBlocking(on);
      blocking = on;
    }
  }

  /** Makes at least {@code k} (at most the buffer's size) bytes readable in {@link #in}. */
  private void fill(int k) throws IOException {
    if (in.remaining() >= k) {
      return;
    }
    in.compact();
    while (in.position() < k) {
      if (receive(in) < 0) {
        in.flip();
        throw new EOFException("the server closed the lane");
      }
    }
    in.flip();
  }
}
