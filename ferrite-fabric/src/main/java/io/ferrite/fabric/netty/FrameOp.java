package io.ferrite.fabric.netty;

import io.ferrite.fabric.FerriteException;

/**
 * A client op that is sent as exactly one frame of its own and, if it cannot be sent, simply fails:
 * the common shape of an {@link Outbound} op (RPCs, MAP, RINGS, atomics).
 */
abstract class FrameOp extends ClientOp implements Outbound {
  @Override
  public void sendOn(ClientWriter out) {
    out.frame(this);
  }

  @Override
  public void failUnsent(FerriteException e) {
    fail(e);
  }
}
