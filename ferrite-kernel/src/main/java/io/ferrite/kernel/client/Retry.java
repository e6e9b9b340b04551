package io.ferrite.kernel.client;

import io.ferrite.fabric.Backoff;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.config.Threads;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Where a client's retries and their backoff live: how many attempts (the options' {@code
 * maxAttempts}), how long between them, and the one thread that fires the delayed ones ({@code
 * ferrite-client-retry-1}).
 *
 * <p>That thread only starts attempts; it must never wait on the network (a connect, an answer), or
 * one silent host would hold back every other retry. Callers keep to that: an attempt that needs a
 * connection not yet open composes on the connect instead of waiting for it (see {@link DataOps}).
 * Session renewal does not run here at all: it has its own thread ({@link Session}).
 */
final class Retry implements AutoCloseable {
  /** Between attempts: 20 ms, each later pause doubles (attempts are bounded, not pauses). */
  static final Backoff BACKOFF =
      Backoff.builder().initial(Duration.ofMillis(20)).max(Duration.ofMillis(20L << 20)).build();

  /** Between two reads of a self-verifying read: 2, 4... 50 ms. */
  static final Backoff VERIFY_BACKOFF =
      Backoff.builder().initial(Duration.ofMillis(2)).max(Duration.ofMillis(50)).build();

  private final int maxAttempts;
  private final ScheduledThreadPoolExecutor timer;

  /** The timer's one thread, set when the timer makes it (for {@link #onRetryThread}). */
  private volatile Thread timerThread;

  private volatile boolean closed;

  Retry(int maxAttempts) {
    this.maxAttempts = maxAttempts;
    ThreadFactory named = Threads.named("ferrite-client-retry");
    this.timer =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = named.newThread(r);
              timerThread = t;
              return t;
            });
    timer.setRemoveOnCancelPolicy(true);
    timer.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
  }

  int maxAttempts() {
    return maxAttempts;
  }

  /** Whether attempt {@code n} (1-based) failing with {@code e} may be followed by another. */
  boolean again(int n, FerriteException e) {
    return e.retryable() && n < maxAttempts && !closed;
  }

  /** Whether the client closed (no attempt is started after that). */
  boolean isClosed() {
    return closed;
  }

  /** The pause after failed attempt {@code n} (1-based): 20, 40, 80 ms... */
  static long backoffMillis(int n) {
    return BACKOFF.delayMillis(n);
  }

  /** The pause after the {@code n}-th mismatching read of a self-verifying read: 2, 4... 50 ms. */
  static long verifyBackoffMillis(int n) {
    return VERIFY_BACKOFF.delayMillis(n);
  }

  /**
   * Runs {@code attempt} on the retry thread after {@code delayMillis}. After {@link #close()} it
   * runs at once on this thread instead, so that it sees the client closed and fails its future
   * rather than leaving it pending forever.
   */
  void later(Runnable attempt, long delayMillis) {
    if (!closed) {
      try {
        timer.schedule(attempt, delayMillis, TimeUnit.MILLISECONDS);
        return;
      } catch (RejectedExecutionException e) {
        // Closed meanwhile: run it now, below.
      }
    }
    attempt.run();
  }

  /** Whether the caller is the retry thread (which must not wait on the network). */
  boolean onRetryThread() {
    return Thread.currentThread() == timerThread;
  }

  /**
   * Runs {@code action} on this thread up to {@link #maxAttempts} times while it fails with a
   * retryable {@link FerriteException}, sleeping the backoff between attempts. For blocking work
   * that owns its thread (a connect on a connect thread), never on the retry thread.
   *
   * @throws FerriteException the last failure, saying what could not be done
   */
  <T> T blocking(String what, Supplier<T> action) {
    FerriteException last = null;
    Backoff.Attempts pauses = BACKOFF.start();
    for (int n = 1; n <= maxAttempts; n++) {
      try {
        return action.get();
      } catch (FerriteException e) {
        last = e;
        if (!e.retryable() || n == maxAttempts || closed) {
          break;
        }
        try {
          pauses.sleep();
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          break;
        }
      }
    }
    throw new FerriteException(last.code(), "cannot " + what + ": " + last.detail(), last);
  }

  /**
   * Stops the retry thread. Attempts still waiting for their delay run now, on this thread: each
   * finds the client closed and fails its future with {@link ErrorCode#UNAVAILABLE}.
   */
  @Override
  public void close() {
    closed = true;
    List<Runnable> waiting = timer.shutdownNow();
    for (Runnable r : waiting) {
      r.run();
    }
  }
}
