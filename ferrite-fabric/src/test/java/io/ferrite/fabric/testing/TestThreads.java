package io.ferrite.fabric.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A test's background threads, whose failures fail the test: every throwable a thread ends with is
 * kept (the first one is the cause, later ones are suppressed), and {@link #close()} joins every
 * thread and rethrows. Use it in try-with-resources so that a failing foreground still stops and
 * joins the background:
 *
 * <pre>{@code
 * try (TestThreads bg = new TestThreads()) {
 *   bg.start("reader", () -> { while (!done.get()) check(read()); });
 *   ... foreground work ...
 *   done.set(true);
 * }
 * }</pre>
 *
 * A thread that does not end within {@link #JOIN_LIMIT_SECONDS} after {@code close()} is reported
 * as hung (it still runs; the limit keeps a deadlock from hanging the whole build, it is not a
 * performance assertion).
 */
public final class TestThreads implements AutoCloseable {
  /** A body that may throw anything; what it throws fails the test. */
  @FunctionalInterface
  public interface Body {
    void run() throws Exception;
  }

  /** How long {@link #close()} waits for each thread. */
  public static final long JOIN_LIMIT_SECONDS = 120;

  private final List<Thread> threads = new ArrayList<>();
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private final Runnable onFailure;

  public TestThreads() {
    this(() -> {});
  }

  /**
   * @param onFailure run once, on the failing thread, when the first failure happens (e.g. set a
   *     "done" flag so the other threads and the foreground stop early)
   */
  public TestThreads(Runnable onFailure) {
    this.onFailure = onFailure;
  }

  /** Starts {@code body} on a new thread named {@code name}. */
  public synchronized Thread start(String name, Body body) {
    Thread t =
        new Thread(
            () -> {
              try {
                body.run();
              } catch (Throwable e) {
                fail(e);
              }
            },
            name);
    t.setDaemon(true);
    threads.add(t);
    t.start();
    return t;
  }

  private void fail(Throwable e) {
    if (failure.compareAndSet(null, e)) {
      onFailure.run();
    } else {
      synchronized (failure) {
        failure.get().addSuppressed(e);
      }
    }
  }

  /** True once any thread has failed. */
  public boolean failed() {
    return failure.get() != null;
  }

  /**
   * Joins every thread, then throws an {@link AssertionError} caused by the first failure (or
   * naming the threads that did not end).
   */
  @Override
  public void close() {
    join();
  }

  /** What {@link #close()} does, for a test that must see the threads end before it goes on. */
  public void join() {
    List<Thread> all;
    synchronized (this) {
      all = new ArrayList<>(threads);
    }
    List<String> hung = new ArrayList<>();
    for (Thread t : all) {
      try {
        t.join(TimeUnit.SECONDS.toMillis(JOIN_LIMIT_SECONDS));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted while joining " + t.getName(), e);
      }
      if (t.isAlive()) {
        hung.add(t.getName());
      }
    }
    Throwable f = failure.get();
    if (f != null) {
      throw new AssertionError("background thread failed: " + f, f);
    }
    if (!hung.isEmpty()) {
      throw new AssertionError("background threads did not end: " + hung);
    }
  }
}
