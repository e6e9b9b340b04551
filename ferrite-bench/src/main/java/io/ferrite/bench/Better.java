package io.ferrite.bench;

import java.util.Locale;

/** Which direction of a measured value is an improvement. */
public enum Better {
  /** Throughput, bandwidth: more is better. */
  HIGHER,
  /** Latency: less is better. */
  LOWER;

  /** {@code "higher"} or {@code "lower"}, as written in reports and JSON. */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }
}
