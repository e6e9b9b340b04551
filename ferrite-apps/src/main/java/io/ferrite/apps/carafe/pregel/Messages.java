package io.ferrite.apps.carafe.pregel;

/**
 * The messages a vertex received (sent to it in the previous superstep); with a {@link
 * VertexProgram.Combiner}, at most one, the fold of them all. A view over the worker's arrays,
 * valid during one {@link VertexProgram#compute} call.
 */
public final class Messages {
  private final Partition p;
  int from;
  int to;

  Messages(Partition p) {
    this.p = p;
  }

  public int count() {
    return to - from;
  }

  /** Payload {@code i} as a long. */
  public long get(int i) {
    check(i);
    return p.message(from + i);
  }

  /** Payload {@code i} as a double (its raw bits). */
  public double getDouble(int i) {
    return Double.longBitsToDouble(get(i));
  }

  private void check(int i) {
    if (i < 0 || i >= to - from) {
      throw new IndexOutOfBoundsException("message " + i + " of " + (to - from));
    }
  }
}
