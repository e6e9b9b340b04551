package io.ferrite.fabric.local;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Faults the local fabric injects, set by tests while ops run. Thread-safe. Each fault is a wrapper
 * around the real op (the op either runs exactly as on a healthy fabric or is altered as
 * described), never a mock.
 *
 * <ul>
 *   <li><b>drop requests</b>: the next N ops (or RPCs) fail with {@code DROPPED} without running.
 *   <li><b>drop responses</b>: the next N ops run on the server, but the answer is lost: the caller
 *       sees {@code DROPPED} though the op took effect (what a lost reply does on a real network).
 *   <li><b>delay</b>: every op completes after the delay, on the fabric's scheduler thread.
 *   <li><b>tear reads</b>: a read copies the first half of its range, waits until some write lands
 *       on the same region (bounded by {@link #tearWait()}), then copies the second half: a racing
 *       write is then guaranteed to tear it, deterministically.
 * </ul>
 *
 * Killing a server is {@link LocalNetwork#kill(String)}.
 */
public final class LocalFaults {
  private final AtomicInteger dropRequests = new AtomicInteger();
  private final AtomicInteger dropResponses = new AtomicInteger();
  private volatile Duration delay = Duration.ZERO;
  private volatile boolean tearReads;
  private volatile Duration tearWait = Duration.ofMillis(50);

  public void dropNextRequests(int n) {
    dropRequests.set(n);
  }

  public void dropNextResponses(int n) {
    dropResponses.set(n);
  }

  public void delay(Duration d) {
    delay = d;
  }

  public Duration delay() {
    return delay;
  }

  public void tearReads(boolean on) {
    tearReads = on;
  }

  public boolean tearReads() {
    return tearReads;
  }

  public void tearWait(Duration d) {
    tearWait = d;
  }

  public Duration tearWait() {
    return tearWait;
  }

  /** Clears every fault. */
  public void heal() {
    dropRequests.set(0);
    dropResponses.set(0);
    delay = Duration.ZERO;
    tearReads = false;
  }

  boolean takeDropRequest() {
    return take(dropRequests);
  }

  boolean takeDropResponse() {
    return take(dropResponses);
  }

  private static boolean take(AtomicInteger n) {
    while (true) {
      int v = n.get();
      if (v <= 0) {
        return false;
      }
      if (n.compareAndSet(v, v - 1)) {
        return true;
      }
    }
  }
}
