package io.ferrite.fabric.netty;

import io.ferrite.fabric.FerriteException;

/**
 * A user-level op queued for a connection's event loop: one or more {@link ClientOp} frames.
 * Created on the caller's thread, then handed to the event loop, which calls exactly one of the two
 * methods.
 */
interface Outbound {
  /** On the event loop: registers and writes the frame(s) (no flush). */
  void sendOn(ClientHandler handler, long nowNanos);

  /** Fails the op before anything was sent (closed connection, stopped event loop). */
  void failUnsent(FerriteException e);
}
