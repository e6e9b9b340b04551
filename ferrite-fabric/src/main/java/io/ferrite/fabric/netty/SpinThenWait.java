package io.ferrite.fabric.netty;

import io.netty.channel.DefaultSelectStrategyFactory;
import io.netty.channel.SelectStrategy;
import io.netty.channel.SelectStrategyFactory;
import io.netty.util.IntSupplier;

/**
 * An event loop's idle strategy: after the loop last had work it polls without blocking (a {@code
 * epoll_wait} with timeout 0), yielding between polls, for {@code spinNanos}; only then does it
 * block in {@code epoll_wait} as Netty's default strategy does. FaRM's polling threads (Dragojević
 * et al., NSDI'14 §4) with a bound: the loop is awake when the next request of a client's round
 * trips arrives, so it pays no wake-up; an idle loop sleeps after {@code spinNanos}.
 *
 * <h2>Why</h2>
 *
 * A thread blocked in {@code epoll_wait} is woken by the sender's kernel; when its vCPU has halted
 * meanwhile (nothing else to run), that is an inter-processor interrupt to a halted vCPU, which on
 * the 2-vCPU VM this was measured on costs 30–70 µs instead of ~5 µs (the loopback's "slow mode",
 * docs/PERFORMANCE.md). A thread that still polls pays none of it.
 *
 * <h2>Why yield between polls</h2>
 *
 * On 2 cores a poller that does not yield holds a core the client and the dispatch threads need to
 * produce the very message it waits for (docs/KERNEL.md "RPC dispatch": a busy dispatch spinner
 * made shm calls 13 × slower). {@link Thread#yield} gives the core to any runnable thread and
 * returns at once when there is none, which keeps the vCPU from halting.
 *
 * <h2>How it sits in Netty's loop</h2>
 *
 * {@link #calculateStrategy} runs once per loop iteration, told whether tasks are queued. It
 * returns what a non-blocking poll found (the loop then handles those events and runs its tasks) or
 * {@link SelectStrategy#SELECT} (the loop blocks). It never loops itself: a task submitted from
 * another thread while the loop is awake does not write the loop's eventfd (Netty wakes a loop only
 * when it is about to block), so the loop must come round to run it; returning 0 does that. "Work"
 * is a poll that found events, queued tasks, or a return from a blocking wait (an event or a task
 * woke it: the loop handles it right after). Epoll only: NIO's loop counts iterations that found
 * nothing as a selector bug and rebuilds the selector after 512 of them.
 *
 * <p>Not thread-safe: {@link SelectStrategyFactory#newSelectStrategy} makes one per loop, and only
 * that loop's thread calls it.
 */
final class SpinThenWait implements SelectStrategy {
  private final long spinNanos;
  private long lastWorkNanos;
  private boolean waited = true;

  private SpinThenWait(long spinNanos) {
    this.spinNanos = spinNanos;
    this.lastWorkNanos = System.nanoTime();
  }

  /**
   * The factory of a loop group's strategies: Netty's default for {@code spinNanos} 0 (block as
   * soon as there is nothing to do), else one {@link SpinThenWait} per loop.
   */
  static SelectStrategyFactory factory(long spinNanos) {
    if (spinNanos < 0) {
      throw new IllegalArgumentException("spinNanos: " + spinNanos + " (expected: >= 0)");
    }
    return spinNanos == 0
        ? DefaultSelectStrategyFactory.INSTANCE
        : () -> new SpinThenWait(spinNanos);
  }

  @Override
  public int calculateStrategy(IntSupplier selectNow, boolean hasTasks) throws Exception {
    int ready = selectNow.get();
    if (ready > 0 || hasTasks || waited) {
      waited = false;
      lastWorkNanos = System.nanoTime();
      return ready;
    }
    if (System.nanoTime() - lastWorkNanos < spinNanos) {
      Thread.yield();
      return 0;
    }
    waited = true;
    return SelectStrategy.SELECT;
  }
}
