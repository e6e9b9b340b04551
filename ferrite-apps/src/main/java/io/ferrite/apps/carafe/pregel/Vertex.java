package io.ferrite.apps.carafe.pregel;

/**
 * The vertex {@link VertexProgram#compute} runs on: a cursor over the partition's arrays, moved
 * from vertex to vertex by the worker (one instance per worker; do not keep it).
 */
public final class Vertex {
  private final Partition p;
  int local;

  Vertex(Partition p) {
    this.p = p;
  }

  /** The internal id (0 to n - 1). */
  public long id() {
    return p.first + local;
  }

  /** Out-edges. */
  public int degree() {
    return p.off[local + 1] - p.off[local];
  }

  /** The internal id of out-edge {@code k}'s target, {@code 0 <= k < degree()}. */
  public int target(int k) {
    return p.targets[p.edge(local, k)];
  }

  /** Out-edge {@code k}'s weight (1 in an unweighted graph). */
  public float weight(int k) {
    int e = p.edge(local, k);
    return p.weights == null ? 1f : p.weights[e];
  }

  /** State slot 0: the result. */
  public long value() {
    return p.value0[local];
  }

  public void value(long value) {
    p.value0[local] = value;
  }

  /** Slot 0 as a double (its raw bits). */
  public double doubleValue() {
    return Double.longBitsToDouble(p.value0[local]);
  }

  public void doubleValue(double value) {
    p.value0[local] = Double.doubleToRawLongBits(value);
  }

  /** State slot 1: scratch for the program. */
  public long value1() {
    return p.value1[local];
  }

  public void value1(long value) {
    p.value1[local] = value;
  }
}
