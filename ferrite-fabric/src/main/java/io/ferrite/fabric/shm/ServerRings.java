package io.ferrite.fabric.shm;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.netty.RingHost;
import io.ferrite.fabric.netty.RpcDispatcher;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.ControlledMessageHandler;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;

/**
 * One connection's rings on the server: requests read by the {@link RingServer}'s poller (or, when
 * the poller slept and the client rang, by the connection's I/O thread) and dispatched, responses
 * written by whichever thread finished the call (the reading thread for inline handlers, a service
 * thread otherwise).
 *
 * <p>The client is not trusted: it shares the file, so every record is checked (type, lengths,
 * offsets) before it is used, and a malformed one, or any failure reading the ring, closes this
 * connection (logged) and nothing else.
 *
 * <p>A response that finds the response ring full is queued here, in order, and the poller writes
 * it when the client has made room; meanwhile the poller reads no more of this connection's
 * requests, so what is queued stays bounded by the calls already running.
 */
final class ServerRings implements RpcDispatcher.Responder, ControlledMessageHandler {
  /** Requests read from one connection per poll, so that one busy client cannot starve others. */
  static final int BATCH = 64;

  private final RingServer server;
  private final RingHost.RingPeer peer;
  private final RpcContext caller;
  private final RingFile file;
  private final int maxChunk;
  private final int maxRequest;
  private final Queue<Pending> overflow = new ConcurrentLinkedQueue<>();

  /** Who reads the request ring: the poller, or the I/O thread after a doorbell. */
  private final AtomicBoolean reading = new AtomicBoolean();

  private volatile boolean closed;

  ServerRings(RingServer server, RingHost.RingPeer peer, RingFile file) {
    this.server = server;
    this.peer = peer;
    this.caller = peer.context();
    this.file = file;
    this.maxChunk = file.responses.maxMsgLength() - RingRecords.RESPONSE_HEADER;
    this.maxRequest = file.requests.maxMsgLength();
  }

  /** A response not yet entirely in the ring: the rest of {@code body} from {@code offset}. */
  private static final class Pending {
    final long requestId;
    final int status;
    final ByteBuffer body;
    int offset;

    Pending(long requestId, int status, ByteBuffer body, int offset) {
      this.requestId = requestId;
      this.status = status;
      this.body = body;
      this.offset = offset;
    }
  }

  // ---------------------------------------------------------------- poller side

  /**
   * The poller: writes queued responses, then reads up to {@link #BATCH} requests. Skipped while
   * the I/O thread reads (after a doorbell).
   */
  int poll() {
    if (closed || !reading.compareAndSet(false, true)) {
      return 0;
    }
    try {
      if (!file.acquire()) {
        return 0;
      }
      try {
        int work = 0;
        if (!overflow.isEmpty()) {
          work += flush();
          if (!overflow.isEmpty()) {
            return work;
          }
        }
        return work + readRequests();
      } finally {
        file.release();
      }
    } finally {
      reading.set(false);
    }
  }

  /**
   * The I/O thread, on a doorbell (the poller slept): reads the requests right here, so the call
   * that rang waits for one thread wake-up, not two; inline handlers answer on this thread. Leaves
   * the ring to the poller if it is reading, or if responses are queued.
   */
  void readNow() {
    if (closed || !overflow.isEmpty() || !reading.compareAndSet(false, true)) {
      return;
    }
    try {
      if (file.acquire()) {
        try {
          while (readRequests() > 0 && overflow.isEmpty()) {
            // until empty
          }
        } finally {
          file.release();
        }
      }
    } finally {
      reading.set(false);
    }
  }

  /**
   * Under {@link #reading} and the file: dispatches up to {@link #BATCH} requests. Returns 0 only
   * when the ring had nothing (consuming the padding at the ring's end counts as progress).
   */
  private int readRequests() {
    try {
      long before = file.requests.consumerPosition();
      int n = file.requests.controlledRead(this, BATCH);
      return n > 0 || file.requests.consumerPosition() != before ? Math.max(1, n) : 0;
    } catch (BadRecord e) {
      closeConnection("malformed ring record: " + e.getMessage());
      return 0;
    } catch (RuntimeException e) {
      closeConnection("unreadable request ring: " + e);
      return 0;
    }
  }

  boolean backlogged() {
    return !closed && !overflow.isEmpty();
  }

  /** Whether there is anything to do: a request written (maybe not committed yet). */
  boolean hasWork() {
    if (closed || !file.acquire()) {
      return false;
    }
    try {
      return file.requests.size() > 0 || !overflow.isEmpty();
    } finally {
      file.release();
    }
  }

  void setAsleep(boolean asleep) {
    if (closed || !file.acquire()) {
      return;
    }
    try {
      if (asleep) {
        file.setAsleep(RingFile.SERVER_ASLEEP);
      } else {
        file.setAwake(RingFile.SERVER_ASLEEP);
      }
    } finally {
      file.release();
    }
  }

  @Override
  public Action onMessage(int msgTypeId, MutableDirectBuffer buffer, int index, int length) {
    if (msgTypeId != RingRecords.REQUEST) {
      throw new BadRecord("record type " + msgTypeId + " (expected: a request)");
    }
    if (length < RingRecords.REQUEST_HEADER || length > maxRequest) {
      throw new BadRecord(
          "request record of "
              + length
              + " B (expected: "
              + RingRecords.REQUEST_HEADER
              + " to "
              + maxRequest
              + ")");
    }
    long requestId = buffer.getLong(index + RingRecords.REQ_ID);
    int service = buffer.getShort(index + RingRecords.REQ_SERVICE) & 0xffff;
    int opcode = buffer.getShort(index + RingRecords.REQ_OPCODE) & 0xffff;
    long deadline = buffer.getInt(index + RingRecords.REQ_DEADLINE) & 0xffff_ffffL;
    int n = length - RingRecords.REQUEST_HEADER;
    // A copy: the ring slot is zeroed and reused once this returns, and the client could change it.
    ByteBuffer request = ByteBuffer.allocate(n);
    buffer.getBytes(index + RingRecords.REQUEST_HEADER, request, n);
    request.flip();
    server.dispatcher.dispatch(caller, requestId, service, opcode, deadline, request, this);
    return overflow.isEmpty() ? Action.CONTINUE : Action.BREAK;
  }

  private static final class BadRecord extends RuntimeException {
    private static final long serialVersionUID = 1L;

    BadRecord(String message) {
      super(message, null, false, false);
    }
  }

  /** Closes the connection for {@code reason}; its rings are released when the socket closes. */
  void closeConnection(String reason) {
    if (!closed) {
      closed = true;
      peer.close(reason);
    }
  }

  void close() {
    closed = true;
    overflow.clear();
    file.close();
    file.unlink();
  }

  // ---------------------------------------------------------------- responses (any thread)

  @Override
  public void respond(long requestId, ByteBuffer body) {
    send(requestId, ErrorCode.OK.wire(), body.duplicate());
  }

  @Override
  public void fail(long requestId, ErrorCode code, String message) {
    byte[] msg = String.valueOf(message).getBytes(StandardCharsets.UTF_8);
    int n = Math.min(msg.length, Math.min(RingRecords.MAX_ERROR_MESSAGE, maxChunk));
    send(requestId, code.wire(), ByteBuffer.wrap(msg, 0, n));
  }

  private void send(long requestId, int status, ByteBuffer body) {
    if (closed || !file.acquire()) {
      return; // the client is gone: nobody to answer
    }
    boolean queued = false;
    try {
      Pending p = new Pending(requestId, status, body, 0);
      if (!overflow.isEmpty() || !write(p)) {
        // Behind what is queued already, or the ring is full: the poller finishes it.
        overflow.add(p);
        server.queuedResponses.increment();
        queued = true;
      }
      if (p.offset > 0 || p.body.remaining() == 0) {
        notifyClient();
      }
    } finally {
      file.release();
    }
    if (queued && !server.onPoller()) {
      server.wake();
    }
  }

  /**
   * Writes what is left of {@code p} as chunks; false when the ring filled up first ({@code p}
   * remembers how far it got).
   */
  private boolean write(Pending p) {
    ManyToOneRingBuffer ring = file.responses;
    ByteBuffer body = p.body;
    int total = body.remaining();
    do {
      int n = Math.min(maxChunk, total - p.offset);
      int at = ring.tryClaim(RingRecords.RESPONSE, RingRecords.RESPONSE_HEADER + n);
      if (at < 0) {
        return false;
      }
      MutableDirectBuffer b = ring.buffer();
      try {
        b.putLong(at + RingRecords.RSP_ID, p.requestId);
        b.putShort(at + RingRecords.RSP_STATUS, (short) p.status);
        b.putShort(at + RingRecords.RSP_STATUS + 2, (short) 0);
        b.putInt(at + RingRecords.RSP_TOTAL, total);
        b.putInt(at + RingRecords.RSP_OFFSET, p.offset);
        b.putInt(at + RingRecords.RSP_OFFSET + 4, 0);
        b.putBytes(at + RingRecords.RESPONSE_HEADER, body, body.position() + p.offset, n);
      } catch (RuntimeException e) {
        ring.abort(at);
        throw e;
      }
      ring.commit(at);
      p.offset += n;
    } while (p.offset < total);
    return true;
  }

  /** Poller only: writes queued responses in order, as far as the ring takes them. */
  private int flush() {
    int done = 0;
    boolean wrote = false;
    Pending p;
    while ((p = overflow.peek()) != null) {
      int before = p.offset;
      boolean whole = write(p);
      wrote |= p.offset > before || whole;
      if (!whole) {
        break;
      }
      overflow.poll();
      done++;
    }
    if (wrote) {
      notifyClient();
    }
    return done;
  }

  /** After writing: rings the client's doorbell if its consumer sleeps. */
  private void notifyClient() {
    if (file.producerCheckAsleep(RingFile.CLIENT_ASLEEP)) {
      peer.ringDoorbell();
    }
  }
}
