package io.ferrite.apps.carafe;

import java.nio.ByteBuffer;

/**
 * The out-edges of one vertex (paper §V-B: "An EdgeIterator provides a mechanism to iterate
 * through" a vertex's edge list), read from the edge namespace with one-sided reads of up to {@link
 * #PIECE} entries: a vertex of degree d costs ceil(d / PIECE) reads. Cursor style, no boxing:
 *
 * <pre>
 * EdgeIterator it = handle.edges();
 * while (it.next()) {
 *   use(it.target(), it.weight());
 * }
 * </pre>
 *
 * Not thread safe; belongs to its {@link VertexHandle}.
 */
public final class EdgeIterator {
  /** Entries per read: 4 KiB, one small op; larger lists take several. */
  public static final int PIECE = 512;

  private final CarafeGraph graph;
  private final ByteBuffer piece = GraphLayout.le(PIECE * GraphLayout.EDGE);
  private long nextEntry; // the next entry to read from RStore
  private long end;
  private int degree;
  private int inPiece; // entries in the buffer
  private int pos; // the next entry in the buffer
  private int target = -1;
  private float weight = Float.NaN;

  EdgeIterator(CarafeGraph graph) {
    this.graph = graph;
  }

  void reset(long first, int degree) {
    this.nextEntry = first;
    this.end = first + degree;
    this.degree = degree;
    this.inPiece = 0;
    this.pos = 0;
    this.target = -1;
    this.weight = Float.NaN;
  }

  /** Moves to the next edge; false when there is none (then target and weight are undefined). */
  public boolean next() {
    if (pos == inPiece) {
      if (nextEntry == end) {
        return false;
      }
      int k = (int) Math.min(PIECE, end - nextEntry);
      piece.clear().limit(k * GraphLayout.EDGE);
      graph.edgeMapping().readSync(GraphLayout.edgeAt(nextEntry), piece);
      nextEntry += k;
      inPiece = k;
      pos = 0;
    }
    int at = pos++ * GraphLayout.EDGE;
    target = piece.getInt(at + GraphLayout.E_TARGET);
    weight = piece.getFloat(at + GraphLayout.E_WEIGHT);
    return true;
  }

  /** The current edge's target (internal id). */
  public int target() {
    return target;
  }

  /** The current edge's weight (1 in an unweighted graph). */
  public float weight() {
    return weight;
  }

  /** The vertex's out-degree. */
  public int degree() {
    return degree;
  }

  /** Edges not yet returned by {@link #next}. */
  public long remaining() {
    return end - nextEntry + (inPiece - pos);
  }
}
