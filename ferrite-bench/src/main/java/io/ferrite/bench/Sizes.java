package io.ferrite.bench;

/**
 * Byte sizes as they appear in result names: {@code 8B}, {@code 1KiB}, {@code 64KiB}, {@code 1MiB}.
 */
public final class Sizes {
  public static final int KIB = 1 << 10;
  public static final int MIB = 1 << 20;

  private Sizes() {}

  public static String label(long bytes) {
    if (bytes >= MIB && bytes % MIB == 0) {
      return (bytes / MIB) + "MiB";
    }
    if (bytes >= KIB && bytes % KIB == 0) {
      return (bytes / KIB) + "KiB";
    }
    return bytes + "B";
  }

  /** Bandwidth in MiB/s, the one bandwidth unit of every report. */
  public static double mibPerSecond(long bytes, long nanos) {
    return nanos <= 0 ? Double.NaN : (bytes / (double) MIB) / (nanos / 1e9);
  }

  /** The bandwidth unit of every report. */
  public static final String BANDWIDTH_UNIT = "MiB/s";
}
