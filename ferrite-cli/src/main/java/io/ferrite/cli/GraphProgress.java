package io.ferrite.cli;

import io.ferrite.apps.carafe.CarafeGraph;
import java.io.PrintWriter;
import java.util.Locale;

/**
 * Progress of a graph's import phases ({@link CarafeGraph.Progress}) as lines on stderr in the
 * style of rsort's: {@code [graph 1.2s] read 45% (12 of 27 MiB)}. A line when a phase starts, at
 * most one a second while it runs, and one when it ends; nothing with {@code --quiet}.
 */
final class GraphProgress implements CarafeGraph.Progress {
  static final long EVERY_NANOS = 1_000_000_000L;

  private final PrintWriter err;
  private final long start = System.nanoTime();
  private String phase;
  private long phaseStart;
  private long lastEvent = start;
  private long lastLine;
  private boolean ended;

  /** {@code err} null: silent. */
  GraphProgress(PrintWriter err) {
    this.err = err;
  }

  @Override
  public synchronized void report(String phase, long done, long total) {
    if (err == null) {
      return;
    }
    long now = System.nanoTime();
    boolean fresh = !phase.equals(this.phase);
    if (fresh) {
      // A phase may report only its end: it started when the one before it last reported.
      this.phase = phase;
      this.phaseStart = lastEvent;
      this.ended = false;
    }
    lastEvent = now;
    boolean end = done >= total;
    if (ended || (!fresh && !end && now - lastLine < EVERY_NANOS)) {
      return;
    }
    ended = end;
    lastLine = now;
    String amount =
        phase.equals("read")
            ? String.format(Locale.ROOT, "%.1f of %.1f MiB", done / 1048576.0, total / 1048576.0)
            : done + " of " + total;
    String pct = total > 0 ? String.format(Locale.ROOT, "%3d%% ", done * 100 / total) : "";
    String took = end ? String.format(Locale.ROOT, " in %.2f s", (now - phaseStart) / 1e9) : "";
    line(phase + " " + pct + "(" + amount + ")" + took);
  }

  /** A free-form progress line. */
  synchronized void line(String text) {
    lastEvent = System.nanoTime();
    if (err != null) {
      err.printf(Locale.ROOT, "[graph %6.1fs] %s%n", (System.nanoTime() - start) / 1e9, text);
      err.flush();
    }
  }
}
