package io.ferrite.apps.carafe.pregel;

/**
 * What {@link VertexProgram#compute} can do besides changing its vertex: send messages along the
 * vertex's out-edges (delivered next superstep), vote to halt, and add to the superstep's aggregate
 * (a sum of doubles over all vertices, which the coordinator totals and every vertex reads in the
 * next superstep). One instance per worker.
 */
public final class Context {
  private final Partition p;

  Context(Partition p) {
    this.p = p;
  }

  /** The current superstep, from 0. */
  public int superstep() {
    return p.superstep;
  }

  /** Vertices in the whole graph. */
  public long vertexCount() {
    return p.vertexCount;
  }

  /** The sum of every vertex's {@link #aggregate} in the previous superstep (0 in superstep 0). */
  public double previousAggregate() {
    return p.previousAggregate;
  }

  /** Adds {@code value} to this superstep's aggregate. */
  public void aggregate(double value) {
    p.aggregate += value;
  }

  /** Sends {@code payload} along every out-edge of the vertex (twice along a duplicate edge). */
  public void sendToAllNeighbors(long payload) {
    p.sendAll(payload);
  }

  /** Sends {@code payload} (its raw bits) along every out-edge of the vertex. */
  public void sendToAllNeighbors(double payload) {
    p.sendAll(Double.doubleToRawLongBits(payload));
  }

  /** Sends {@code payload} along out-edge {@code k} of the vertex. */
  public void send(int k, long payload) {
    p.send(p.edge(p.current, k), payload);
  }

  public void send(int k, double payload) {
    send(k, Double.doubleToRawLongBits(payload));
  }

  /** The vertex is done unless a message arrives: it is skipped from the next superstep on. */
  public void voteToHalt() {
    p.halted[p.current] = true;
  }
}
