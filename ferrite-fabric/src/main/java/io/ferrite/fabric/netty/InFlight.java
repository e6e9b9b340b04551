package io.ferrite.fabric.netty;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.EventExecutorGroup;
import io.netty.util.concurrent.FastThreadLocalThread;
import java.util.concurrent.Semaphore;

/**
 * Client backpressure: a bound on a connection's user-level ops in flight (sent and not yet ended).
 * A caller that finds the bound reached waits for an op to end instead of queueing more bytes
 * without limit. An I/O thread never waits (it is what ends ops): there the bound is exceeded
 * instead, which only callbacks issuing ops can do.
 */
final class InFlight {
  private final Semaphore permits;
  private final int max;
  private final EventExecutorGroup ioThreads;

  InFlight(int max, EventExecutorGroup ioThreads) {
    if (max < 1) {
      throw new IllegalArgumentException("max in flight: " + max + " (expected: >= 1)");
    }
    this.max = max;
    this.permits = new Semaphore(max);
    this.ioThreads = ioThreads;
  }

  /** Takes a permit for {@code op} without waiting; false when none is free. */
  boolean tryAcquire(Outbound op) {
    if (permits.tryAcquire()) {
      op.holdPermit(this);
      return true;
    }
    return false;
  }

  /**
   * Takes a permit for {@code op}, waiting for one if needed, except on an I/O thread, where the op
   * goes without one.
   *
   * @throws FerriteException {@link ErrorCode#UNAVAILABLE} if interrupted while waiting (the
   *     interrupt flag stays set)
   */
  void acquire(Outbound op) {
    if (tryAcquire(op) || onIoThread()) {
      return;
    }
    try {
      permits.acquire();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new FerriteException(
          ErrorCode.UNAVAILABLE, "interrupted waiting for one of " + max + " ops in flight to end");
    }
    op.holdPermit(this);
  }

  /**
   * True when no user-level op holds a permit (a racy snapshot, exact for the calling thread's).
   */
  boolean idle() {
    return permits.availablePermits() == max;
  }

  boolean onIoThread() {
    if (!(Thread.currentThread() instanceof FastThreadLocalThread)) {
      return false; // Netty's I/O threads are all FastThreadLocalThreads (DefaultThreadFactory)
    }
    for (EventExecutor e : ioThreads) {
      if (e.inEventLoop()) {
        return true;
      }
    }
    return false;
  }

  static void release(InFlight permits) {
    if (permits != null) {
      permits.permits.release();
    }
  }
}
