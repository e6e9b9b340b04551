package io.ferrite.bench;

import java.io.PrintStream;
import java.util.Locale;

/**
 * Progress lines on stderr for runs that take a while: {@code [fabric 12.4s] tcp.read.64KiB
 * latency}. Results go to stdout; progress never does, so stdout can be piped.
 */
public final class Progress {
  private final String suite;
  private final PrintStream out;
  private final long start = System.nanoTime();

  /** {@code out} null means silent. */
  public Progress(String suite, PrintStream out) {
    this.suite = suite;
    this.out = out;
  }

  public static Progress silent() {
    return new Progress("", null);
  }

  public void step(String what) {
    if (out != null) {
      double secs = (System.nanoTime() - start) / 1e9;
      out.printf(Locale.ROOT, "[%s %6.1fs] %s%n", suite, secs, what);
      out.flush();
    }
  }
}
