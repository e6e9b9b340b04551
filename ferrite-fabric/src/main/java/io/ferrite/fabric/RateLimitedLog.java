package io.ferrite.fabric;

import java.lang.System.Logger.Level;
import java.text.MessageFormat;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * At most one log line per cause per interval, and then one line counting the ones left out: what a
 * server writes about connections it refuses or closes, so that a peer opening hundreds of bad
 * connections (a slowloris, a misconfigured client in a retry loop) costs a few lines, not one or
 * two per connection.
 *
 * <p>The first event of a cause is logged in full and opens a window of {@code interval}; events of
 * that cause inside the window are counted. The first one counted schedules, on the caller's {@code
 * timer} (a server's event loop), the end of the window, which logs {@code summary} with the count
 * ("refused 499 more connection(s) to tcp:host:7100 in the last 10 s: handshake timeout") and
 * closes the window, so the next event is logged in full again. {@link #flush} ends every window
 * now (a server's close). Causes are a small fixed set of literals chosen by the caller (never a
 * peer's address or a length): one window each.
 *
 * <p>Thread-safe; the lock is taken only on these (rare, already failing) paths.
 */
public final class RateLimitedLog {
  /** The default window: one line per cause per 10 s. */
  public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(10);

  private final System.Logger log;
  private final Level level;
  private final long intervalNanos;
  private final String summary;

  /** Open windows by cause. Guarded by this. */
  private final Map<String, Window> windows = new HashMap<>();

  private static final class Window {
    final long startNanos;
    long suppressed;
    boolean endScheduled;

    Window(long startNanos) {
      this.startNanos = startNanos;
    }
  }

  /**
   * @param summary a {@link MessageFormat} pattern for the count line: {@code {0}} the number of
   *     events left out, {@code {1}} the window in seconds, {@code {2}} the cause
   */
  public RateLimitedLog(System.Logger log, Level level, Duration interval, String summary) {
    if (interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException("interval: " + interval + " (expected: > 0)");
    }
    this.log = log;
    this.level = level;
    this.intervalNanos = interval.toNanos();
    this.summary = summary;
  }

  /**
   * Logs {@code pattern} with {@code args} ({@link MessageFormat}, as {@link System.Logger} does)
   * and {@code thrown} (may be null) if no window of {@code cause} is open; counts it otherwise.
   *
   * @param timer where the window's end runs (a server's event loop); if it refuses (shutting
   *     down), the count is logged at once
   */
  public void log(
      ScheduledExecutorService timer,
      String cause,
      Throwable thrown,
      String pattern,
      Object... args) {
    if (!log.isLoggable(level)) {
      return;
    }
    long now = System.nanoTime();
    long endIn = -1;
    boolean emit = false;
    synchronized (this) {
      Window w = windows.get(cause);
      if (w != null && !w.endScheduled && now - w.startNanos >= intervalNanos) {
        windows.remove(cause); // a window nothing was counted in: over, nothing to say
        w = null;
      }
      if (w == null) {
        windows.put(cause, new Window(now));
        emit = true;
      } else {
        w.suppressed++;
        if (!w.endScheduled) {
          w.endScheduled = true;
          endIn = Math.max(0, w.startNanos + intervalNanos - now);
        }
      }
    }
    if (emit) {
      String msg = new MessageFormat(pattern, Locale.ROOT).format(args);
      if (thrown != null) {
        log.log(level, msg, thrown);
      } else {
        log.log(level, msg);
      }
    }
    if (endIn >= 0) {
      try {
        timer.schedule(() -> end(cause), endIn, TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        end(cause);
      }
    }
  }

  /** Ends every open window now, logging the counts (a server's close). */
  public void flush() {
    List<String> causes;
    synchronized (this) {
      causes = new ArrayList<>(windows.keySet());
    }
    causes.forEach(this::end);
  }

  private void end(String cause) {
    long n;
    synchronized (this) {
      Window w = windows.remove(cause);
      if (w == null) {
        return;
      }
      n = w.suppressed;
    }
    if (n > 0) {
      log.log(
          level,
          new MessageFormat(summary, Locale.ROOT)
              .format(
                  new Object[] {
                    Long.toString(n), String.format(Locale.ROOT, "%.0f", intervalNanos / 1e9), cause
                  }));
    }
  }
}
