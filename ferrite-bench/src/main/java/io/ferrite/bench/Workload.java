package io.ferrite.bench;

/**
 * Where the i-th operation of a given size lands: offsets step through a window of the region in
 * cache-line aligned strides and wrap around. The fabric ops and their memcpy ceiling use the same
 * sequence over a window of the same size, so both see the same cache behaviour.
 */
public final class Workload {
  private static final int LINE = 64;
  private final long window;

  /** {@code window} must be at least as large as the largest op. */
  public Workload(long window) {
    if (window < LINE) {
      throw new IllegalArgumentException("window: " + window + " (expected: >= " + LINE + ")");
    }
    this.window = window;
  }

  public long window() {
    return window;
  }

  /** The offset of the {@code i}-th op of {@code size} bytes. */
  public long offset(long i, int size) {
    long stride = (Math.max(size, LINE) + LINE - 1) & -LINE;
    long slots = Math.max(1, window / stride);
    return (i % slots) * stride;
  }
}
