package io.ferrite.fabric.netty;

import io.ferrite.fabric.NamedThreadFactory;
import java.lang.invoke.VarHandle;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.agrona.concurrent.ManyToManyConcurrentArrayQueue;

/**
 * An endpoint's dispatch threads, the "server cores" of blocking RPCs: named, owned threads started
 * with the endpoint and already running when a call arrives (FaRM's dedicated polling threads,
 * Dragojević et al., NSDI'14 §4), fed through one bounded lock-free queue (Agrona's MPMC array
 * queue: any receiving thread offers, any dispatch thread polls).
 *
 * <h2>Idle strategy: at most {@link #maxSpinners} spin, the others park</h2>
 *
 * A thread that finds the queue empty becomes a <i>spinner</i> if fewer than {@code maxSpinners}
 * threads spin: it polls, yielding between looks, for {@code spinNanos}, then parks. Every other
 * idle thread parks at once. A receiving thread that queued a call wakes a parked thread only when
 * nobody spins (the spinner takes it, in well under a microsecond, with no system call); any thread
 * that takes a call and sees more queued wakes a sleeper in turn ({@link #handOn}). So a steady
 * stream of calls (a client's round trips, each arriving within {@code spinNanos} of the last
 * answer) costs no wake-up at all, a burst wakes as many threads as it needs, and an idle endpoint
 * costs no CPU after {@code spinNanos}. On a 2-core machine one spinner is all there is room for:
 * two would hold both cores the I/O thread and the client need.
 *
 * <h2>Memory ordering of the wake-up (Dekker)</h2>
 *
 * A producer offers, then (after a full fence) reads {@link #spinners} and {@link #sleepers}; a
 * thread going to sleep first counts itself in {@link #sleepers} (an atomic increment, a full
 * fence), only then stops counting itself a spinner, and polls once more before it parks. In any
 * interleaving either the producer sees a spinner or a sleeper (and a spinner still polls; a
 * sleeper is woken), or the sleeper's last poll sees the call. A thread is woken by exactly one
 * producer: the waker moves its {@link Worker#state} PARKED to RUNNING with a CAS before unparking.
 *
 * <h2>Bound</h2>
 *
 * At most {@code threads + queue} calls are admitted and not yet handled (queued, or inside {@link
 * Task#run}); {@link #offer} refuses the next at once, which the dispatcher answers BUSY, so a
 * flood costs memory bounded by the queue and an answer per refused call, never a wait.
 */
final class DispatchThreads {
  /** One call waiting for a dispatch thread. */
  interface Task {
    /** Runs the call on a dispatch thread. */
    void run();

    /** The endpoint closed before a thread took the call: answer the caller without running. */
    void abandon();
  }

  private static final int RUNNING = 0;
  private static final int PARKED = 1;

  /** A dispatch thread and its park state; see the class comment. */
  private static final class Worker {
    final AtomicInteger state = new AtomicInteger(RUNNING);
    Thread thread;
  }

  private final ManyToManyConcurrentArrayQueue<Task> queue;
  private final int limit;
  private final long spinNanos;
  private final int maxSpinners;
  private final Worker[] workers;
  private final AtomicInteger admitted = new AtomicInteger();
  private final AtomicInteger spinners = new AtomicInteger();
  private final AtomicInteger sleepers = new AtomicInteger();
  private volatile boolean shutdown;

  /**
   * Starts {@code threads} threads named {@code name-<i>}.
   *
   * @param queue calls admitted beyond those a thread is running
   * @param spinNanos how long an idle spinner polls before it parks (0: park at once)
   */
  DispatchThreads(String name, int threads, int queue, long spinNanos) {
    this.limit = threads + queue;
    this.spinNanos = spinNanos;
    // One spinner per 8 threads: the guidance of ServerSpec (a 64-core endpoint with 32 dispatch
    // threads keeps 4 warm); on the 2-core default, exactly one.
    this.maxSpinners = Math.max(1, threads / 8);
    this.queue = new ManyToManyConcurrentArrayQueue<>(Math.max(2, limit));
    this.workers = new Worker[threads];
    NamedThreadFactory factory = new NamedThreadFactory(name, true);
    for (int i = 0; i < threads; i++) {
      Worker w = new Worker();
      workers[i] = w;
      w.thread = factory.newThread(() -> work(w));
    }
    for (Worker w : workers) {
      w.thread.start();
    }
  }

  /** Threads there are. */
  int threads() {
    return workers.length;
  }

  /** Calls admitted and not yet handled (queued or running); for messages and tests. */
  int admitted() {
    return admitted.get();
  }

  boolean isShutdown() {
    return shutdown;
  }

  /**
   * Queues {@code t} for a dispatch thread; false, at once, when {@code threads + queue} calls are
   * admitted already or the endpoint is closing. Any thread.
   */
  boolean offer(Task t) {
    if (shutdown) {
      return false;
    }
    if (admitted.incrementAndGet() > limit) {
      admitted.decrementAndGet();
      return false;
    }
    // Cannot fail: admitted <= limit <= the queue's capacity.
    queue.offer(t);
    // Dekker with a sleeper (class comment): the offer is visible before the counts are read.
    VarHandle.fullFence();
    if (spinners.get() == 0 && sleepers.get() > 0) {
      wakeOne();
    }
    return true;
  }

  private void wakeOne() {
    for (Worker w : workers) {
      if (w.state.get() == PARKED && w.state.compareAndSet(PARKED, RUNNING)) {
        sleepers.decrementAndGet();
        LockSupport.unpark(w.thread);
        return;
      }
    }
  }

  // ---- a dispatch thread

  private void work(Worker me) {
    for (; ; ) {
      Task t = queue.poll();
      if (t == null) {
        if (shutdown) {
          return;
        }
        t = idle(me);
        if (t == null) {
          continue;
        }
      }
      handOn();
      run(t);
    }
  }

  /**
   * Called by a thread that took a call and is about to be busy with it: if more are queued, nobody
   * spins and somebody sleeps, wakes one. This covers a burst (a spinner took the first call, the
   * second came while it still counted as a spinner, so its producer woke nobody) and a wake-up
   * spent on the wrong thread: a producer may move a parking thread to RUNNING just after that
   * thread's last look found another call; the woken thread runs that call, and without this the
   * producer's own call would wait for a thread that nobody wakes (seen: DispatchThreadsTest's
   * bound test hung with one call queued, one thread parked and the other busy).
   */
  private void handOn() {
    if (!queue.isEmpty() && spinners.get() == 0 && sleepers.get() > 0) {
      wakeOne();
    }
  }

  private void run(Task t) {
    try {
      t.run();
    } finally {
      admitted.decrementAndGet();
    }
  }

  /** Spins (if a spinner's place is free) then parks; a call found on the way, or null. */
  private Task idle(Worker me) {
    boolean spinner = false;
    int s = spinners.get();
    while (s < maxSpinners) {
      if (spinners.compareAndSet(s, s + 1)) {
        spinner = true;
        break;
      }
      s = spinners.get();
    }
    if (spinner) {
      long start = System.nanoTime();
      do {
        Task t = queue.poll();
        if (t != null) {
          spinners.decrementAndGet(); // before work() hands on: it reads spinners
          return t;
        }
        // Not Thread.onSpinWait: measured on 2 loaded vCPUs, a thread that busy-spins holds the
        // core the client and the ring poller need to send the very call it waits for (shm empty
        // call p50 34 us with 30 us of busy spin, 124 us with 100 us); yielding between looks
        // gives the core to them, and costs one system call when nobody else wants it (2.6 us).
        // A few microseconds of busy spin first did not help either (tcp the same, shm empty
        // call p50 5.4 to 6.7 us with 3 us, 12 to 15 us with 10 us).
        Thread.yield();
      } while (System.nanoTime() - start < spinNanos && !shutdown);
    }
    return park(me, spinner);
  }

  /**
   * Counts this thread a sleeper (before it stops counting as a spinner: a producer always sees one
   * or the other), polls once more, and parks until a producer moves its state to RUNNING.
   */
  private Task park(Worker me, boolean wasSpinner) {
    me.state.set(PARKED);
    sleepers.incrementAndGet();
    if (wasSpinner) {
      spinners.decrementAndGet();
    }
    for (; ; ) {
      Task t = queue.poll();
      if (t != null || shutdown) {
        if (me.state.compareAndSet(PARKED, RUNNING)) {
          sleepers.decrementAndGet();
        }
        // else a producer woke this thread meanwhile (and counted it out); its permit makes one
        // later park return at once, which the loops above tolerate.
        return t;
      }
      if (me.state.get() != PARKED) {
        return null; // woken: the caller polls
      }
      LockSupport.park(this);
    }
  }

  /**
   * Stops taking calls, lets the threads finish what is queued (at most {@code waitMillis}), and
   * abandons what no thread took. Idempotent.
   */
  void shutdown(long waitMillis) {
    shutdown = true;
    for (Worker w : workers) {
      LockSupport.unpark(w.thread);
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMillis);
    for (Worker w : workers) {
      long left = deadline - System.nanoTime();
      if (left <= 0 || w.thread == Thread.currentThread()) {
        continue;
      }
      try {
        w.thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    for (Worker w : workers) {
      if (w.thread.isAlive()) {
        w.thread.interrupt(); // a handler blocked past the grace period
      }
    }
    // Offered after the threads' last look (a race with shutdown), or left by stuck threads.
    Task t;
    while ((t = queue.poll()) != null) {
      admitted.decrementAndGet();
      t.abandon();
    }
  }
}
