package io.ferrite.kernel.proto;

import java.util.Locale;

/** Parses and prints byte sizes such as {@code 64m}, {@code 1g}, {@code 512k}, {@code 4096}. */
public final class Sizes {
  private Sizes() {}

  /**
   * Parses a size: a number with an optional suffix k, m, g, t (powers of 1024), case-insensitive.
   */
  public static long parse(String s) {
    String t = s.trim().toLowerCase(Locale.ROOT);
    if (t.endsWith("ib")) {
      t = t.substring(0, t.length() - 2);
    } else if (t.endsWith("b")) {
      t = t.substring(0, t.length() - 1);
    }
    long mult = 1;
    if (!t.isEmpty()) {
      switch (t.charAt(t.length() - 1)) {
        case 'k' -> mult = 1L << 10;
        case 'm' -> mult = 1L << 20;
        case 'g' -> mult = 1L << 30;
        case 't' -> mult = 1L << 40;
        default -> mult = 1;
      }
    }
    if (mult != 1) {
      t = t.substring(0, t.length() - 1);
    }
    try {
      long v = Long.parseLong(t.trim());
      if (v < 0) {
        throw new IllegalArgumentException("size: " + s + " (expected: >= 0)");
      }
      return Math.multiplyExact(v, mult);
    } catch (NumberFormatException | ArithmeticException e) {
      throw new IllegalArgumentException(
          "size: '" + s + "' (expected: a number with an optional k, m, g or t suffix)", e);
    }
  }

  /** Prints {@code bytes} with the largest exact-ish binary unit, e.g. {@code 64 MiB}. */
  public static String format(long bytes) {
    String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = bytes;
    int u = 0;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    if (v == Math.rint(v)) {
      return (long) v + " " + units[u];
    }
    return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
  }
}
