package io.ferrite.fabric.netty;

import io.ferrite.fabric.FerriteException;

/**
 * A user-level op to send on a connection: one or more {@link ClientOp} frames. Created on the
 * caller's thread; then exactly one of {@link #sendOn} and {@link #failUnsent} is called.
 */
interface Outbound {
  /**
   * Under the connection's send lock, on the sending thread: numbers, registers and encodes the
   * frame(s) through {@link ClientWriter#frame(ClientOp)}.
   */
  void sendOn(ClientWriter out);

  /** Fails the op before anything was sent (closed connection, stopped event loop). */
  void failUnsent(FerriteException e);

  /** Gives the op an in-flight permit, returned to {@code permits} once the op has ended. */
  void holdPermit(InFlight permits);
}
