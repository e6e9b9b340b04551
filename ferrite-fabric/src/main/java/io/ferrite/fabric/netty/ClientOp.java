package io.ferrite.fabric.netty;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.netty.buffer.ByteBuf;
import io.netty.channel.unix.FileDescriptor;

/**
 * One request frame in flight on a client connection, from the moment it is written until its
 * response (or a timeout, or the connection's loss) ends it. Confined to the connection's event
 * loop: every method is called there, so ending an op needs no synchronization and happens once.
 *
 * <p>An op is linked into a {@link TimeoutList} while pending; {@code prev}/{@code next} are that
 * list's intrusive links.
 */
abstract class ClientOp {
  long requestId;
  long deadlineNanos;
  ClientOp prev;
  ClientOp next;
  TimeoutList list;
  private boolean done;

  /** Where a user-level op's in-flight permit goes back when it ends; null if it holds none. */
  private InFlight permits;

  /** For ops that are themselves {@link Outbound}: the permit to give back when this op ends. */
  public void holdPermit(InFlight permits) {
    this.permits = permits;
  }

  private void ended() {
    done = true;
    if (permits != null) {
      InFlight.release(permits);
      permits = null;
    }
  }

  /** The frame type of the request and of its response. */
  abstract int type();

  /** The one-sided ops share the connection's op timeout; an RPC carries its own. */
  boolean isRpc() {
    return false;
  }

  /** Writes the request frame (without flushing). */
  abstract void encode(ClientWriter out, long requestId);

  /**
   * The response header arrived with {@code status}; returns how {@link FrameReader} should take a
   * body of {@code bodyLength} bytes. Ops that stream override this; an error body is aggregated.
   */
  int onHeader(int status, int bodyLength) {
    return FrameReader.AGGREGATE;
  }

  /** A streamed body chunk: {@code n} bytes at {@code in}'s reader index. */
  void onBodyChunk(ByteBuf in, int n, boolean last) {
    throw new IllegalStateException(getClass().getSimpleName() + " does not stream");
  }

  /**
   * Reads up to {@code remaining} bytes of a streamed body straight from the socket into the op's
   * destination; returns how many (0 if the op does not take them this way).
   */
  int readDirect(FileDescriptor fd, int remaining) {
    return 0;
  }

  /** A successful response with its whole body (valid only during the call). */
  abstract void onSuccess(ByteBuf body);

  /** Ends the op with {@code e}. */
  abstract void onFailure(FerriteException e);

  /** Describes the op for error messages, e.g. "READ of region 1/2 (4096 B)". */
  abstract String describe();

  final boolean isDone() {
    return done;
  }

  /** Ends the op once with a response: an error status carries a message body. */
  final void complete(int status, ByteBuf body) {
    if (done) {
      return;
    }
    ended();
    if (status == ErrorCode.OK.wire()) {
      onSuccess(body);
    } else {
      onFailure(new FerriteException(ErrorCode.fromWire(status), Wire.message(body)));
    }
  }

  /** Marks the op done without a body (after a streamed body ended); returns false if already. */
  final boolean markDone() {
    if (done) {
      return false;
    }
    ended();
    return true;
  }

  /** Ends the op once with {@code e}. */
  final void fail(FerriteException e) {
    if (!done) {
      ended();
      onFailure(e);
    }
  }
}
