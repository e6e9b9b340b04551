package io.ferrite.apps.carafe;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.nio.ByteBuffer;

/**
 * One vertex of a stored graph for online exploration (paper §V-B, "Online Graph Exploration": "A
 * VertexHandle is initiated by passing a vertex id to the CarafeGraph"). {@link CarafeGraph#vertex}
 * reads the vertex's 48-byte record with one one-sided read through the graph's mapping of its
 * vertex namespace; {@link #edges} iterates its adjacency list with one-sided reads of the edge
 * namespace, a piece at a time. Nothing is cached beyond the record and the current piece: every
 * vertex visited is a read through the fabric.
 *
 * <p>A handle can be moved to another vertex ({@link #moveTo}) to reuse its buffers: an explorer
 * that visits millions of vertices (Dijkstra) allocates nothing per vertex. Not thread safe: one
 * handle per thread. {@link #close} (or {@link #unmap}) releases it; the graph's mappings stay
 * until {@link CarafeGraph#close}.
 */
public final class VertexHandle implements AutoCloseable {
  private final CarafeGraph graph;
  private final ByteBuffer record = GraphLayout.le(GraphLayout.VERTEX);
  private final EdgeIterator edges;
  private long id = -1;
  private long externalId;
  private long firstEdge;
  private int degree;
  private boolean closed;

  VertexHandle(CarafeGraph graph) {
    this.graph = graph;
    this.edges = new EdgeIterator(graph);
  }

  /**
   * Reads vertex {@code internalId}'s record (one read of {@link GraphLayout#VERTEX} bytes) and
   * points this handle at it; its edge iterator is reset.
   *
   * @throws FerriteException OUT_OF_BOUNDS for an id outside {@code [0, vertexCount)}
   */
  public VertexHandle moveTo(long internalId) {
    checkOpen();
    if (internalId < 0 || internalId >= graph.vertexCount()) {
      throw new FerriteException(
          ErrorCode.OUT_OF_BOUNDS,
          "vertex " + internalId + " (expected: 0 to " + (graph.vertexCount() - 1) + ")");
    }
    graph.vertexMapping().readSync(GraphLayout.VERTEX * internalId, record.clear());
    long stored = record.getLong(GraphLayout.V_ID);
    if (stored != internalId) {
      throw new FerriteException(
          ErrorCode.INTERNAL,
          graph + ": the record of vertex " + internalId + " says it is vertex " + stored);
    }
    id = internalId;
    externalId = record.getLong(GraphLayout.V_EXTERNAL);
    firstEdge = record.getLong(GraphLayout.V_FIRST_EDGE);
    degree = record.getInt(GraphLayout.V_DEGREE);
    edges.reset(firstEdge, degree);
    return this;
  }

  public long internalId() {
    return id;
  }

  /** The id the graph's file gave the vertex. */
  public long externalId() {
    return externalId;
  }

  /** Index of the first entry of its adjacency list in the edge namespace. */
  public long firstEdge() {
    return firstEdge;
  }

  /** Out-edges (adjacency entries). */
  public int degree() {
    return degree;
  }

  /** Property slot {@code slot} (0 or 1) as read with the record. */
  public long property(int slot) {
    return record.getLong(GraphLayout.V_PROPS + 8 * checkSlot(slot));
  }

  /**
   * Writes property slot {@code slot} of this vertex in RStore (one 8-byte one-sided write) and in
   * this handle. Graphs are otherwise immutable; the slots are an algorithm's state.
   */
  public void writeProperty(int slot, long value) {
    checkOpen();
    int at = GraphLayout.V_PROPS + 8 * checkSlot(slot);
    ByteBuffer b = GraphLayout.le(8).putLong(0, value);
    graph.vertexMapping().writeSync(GraphLayout.VERTEX * id + at, b);
    record.putLong(at, value);
  }

  private static int checkSlot(int slot) {
    if (slot < 0 || slot >= GraphLayout.PROPS / 8) {
      throw new FerriteException(
          ErrorCode.OUT_OF_BOUNDS,
          "property slot " + slot + " (expected: 0 to " + (GraphLayout.PROPS / 8 - 1) + ")");
    }
    return slot;
  }

  /**
   * The iterator over this vertex's out-edges, rewound to the first (the handle's one iterator:
   * moving the handle resets it).
   */
  public EdgeIterator edges() {
    checkOpen();
    edges.reset(firstEdge, degree);
    return edges;
  }

  /** Same as {@link #close}: the paper's unmap. */
  public void unmap() {
    close();
  }

  /** Releases the handle; any further use fails. Idempotent. */
  @Override
  public void close() {
    closed = true;
  }

  private void checkOpen() {
    if (closed) {
      throw new FerriteException(ErrorCode.INVALID_ARGUMENT, "vertex handle is closed");
    }
  }

  @Override
  public String toString() {
    return "vertex " + id + " (external " + externalId + ", degree " + degree + ") of " + graph;
  }
}
