package io.ferrite.fabric.local;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

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
 *   <li><b>hold</b>: the next RPC to one node's service and opcode is taken by the connection (the
 *       caller waits as for any RPC) but reaches the server only when the test releases it, or
 *       never, failing DROPPED, when the test drops it: a message stuck in the network while the
 *       rest of the cluster moves on ({@link Hold}).
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
  private final AtomicReference<Hold> hold = new AtomicReference<>();

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

  /**
   * Holds the next RPC to {@code service}/{@code opcode} of node {@code nodeId} (one RPC; the
   * connection's other RPCs go on) until {@link Hold#release()}. The RPC's deadline still runs: a
   * caller whose deadline passes while it is held sees {@code TIMEOUT}, and the held request is
   * still delivered at the release (a late message). Replaces a hold that caught nothing yet.
   */
  public Hold holdNextRpc(int nodeId, int service, int opcode) {
    Hold h = new Hold(nodeId, service, opcode);
    Hold old = hold.getAndSet(h);
    if (old != null) {
      old.release();
    }
    return h;
  }

  /** Clears every fault; releases a held RPC. */
  public void heal() {
    dropRequests.set(0);
    dropResponses.set(0);
    delay = Duration.ZERO;
    tearReads = false;
    Hold h = hold.getAndSet(null);
    if (h != null) {
      h.release();
    }
  }

  /** The pending hold if this RPC is the one it waits for (taking it: it holds one RPC). */
  Hold takeHold(int nodeId, int service, int opcode) {
    Hold h = hold.get();
    if (h == null || h.nodeId != nodeId || h.service != service || h.opcode != opcode) {
      return null;
    }
    return hold.compareAndSet(h, null) ? h : null;
  }

  /** One RPC held on its way to its server ({@link #holdNextRpc}). */
  public static final class Hold {
    final int nodeId;
    final int service;
    final int opcode;
    private final CountDownLatch caught = new CountDownLatch(1);

    /**
     * Completed by {@link #release()} (true: the held request is delivered) or {@link #drop()}
     * (false: it fails DROPPED without reaching the server).
     */
    final CompletableFuture<Boolean> released = new CompletableFuture<>();

    Hold(int nodeId, int service, int opcode) {
      this.nodeId = nodeId;
      this.service = service;
      this.opcode = opcode;
    }

    void caught() {
      caught.countDown();
    }

    /** Whether an RPC was caught within {@code d}. */
    public boolean awaitCaught(Duration d) throws InterruptedException {
      return caught.await(d.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** Whether an RPC was caught (and is held until {@link #release()}). */
    public boolean isCaught() {
      return caught.getCount() == 0;
    }

    /** Delivers the held RPC to its server (or lets the next matching one through unheld). */
    public void release() {
      released.complete(true);
    }

    /**
     * Fails the held RPC with {@code DROPPED}; it never reaches its server (a request lost in the
     * network). After a {@link #release()}, nothing.
     */
    public void drop() {
      released.complete(false);
    }
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
