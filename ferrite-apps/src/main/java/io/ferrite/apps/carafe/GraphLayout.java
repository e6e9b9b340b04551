package io.ferrite.apps.carafe;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * How a Carafe graph lies in RStore (paper §V-B, "Graph Storage Format"): two namespaces, {@code
 * <graph>.vertices} and {@code <graph>.edges}, each with one allocation, the first of its namespace
 * (at address {@code chunkSize}). Little-endian throughout.
 *
 * <pre>
 * vertices allocation:
 *   0       header, HEADER bytes (written last: a graph without its magic is an unfinished import)
 *     +0    magic i64 (MAGIC)
 *     +8    version i32 (VERSION)
 *     +12   flags i32 (F_WEIGHTED, F_UNDIRECTED)
 *     +16   vertex count i64
 *     +24   edge count i64 (stored adjacency entries: an undirected edge counts twice)
 *     +32   vertex record size i32 (VERTEX), +36 edge entry size i32 (EDGE)
 *     +40   imported at, ms since the epoch i64
 *   HEADER + VERTEX * v   vertex v's record, VERTEX bytes:
 *     +0    internal id i64 (= v, the array index)
 *     +8    external id i64 (the id in the imported file)
 *     +16   first edge i64 (index of its adjacency list's first entry in the edges allocation)
 *     +24   degree i32 (out-edges), +28 reserved i32
 *     +32   property area, PROPS bytes: two i64 slots an algorithm keeps its state in (a double
 *           goes in as its raw bits); written back after every superstep
 * edges allocation:
 *   EDGE * e   adjacency entry e: target internal id i32, weight f32 (1.0 when unweighted)
 * </pre>
 *
 * Adjacency lists are stored in vertex order, so the edges of vertices {@code [a, b)} are one
 * contiguous range: {@code [firstEdge(a), firstEdge(b))}. Internal ids are dense, 0 to n - 1, at
 * most {@link #MAX_VERTICES}. Graphs that {@link EdgeListImporter} and {@link RmatGenerator} make
 * number their vertices in ascending external-id order, so the records' external ids are sorted and
 * {@link CarafeGraph#internalId} is a binary search over them.
 */
public final class GraphLayout {
  private GraphLayout() {}

  public static final long MAGIC = 0x3130454641524143L; // "CARAFE01", little-endian
  public static final int VERSION = 1;
  public static final int F_WEIGHTED = 1;
  public static final int F_UNDIRECTED = 2;

  public static final int HEADER = 4096;
  public static final int H_MAGIC = 0;
  public static final int H_VERSION = 8;
  public static final int H_FLAGS = 12;
  public static final int H_VERTICES = 16;
  public static final int H_EDGES = 24;
  public static final int H_VERTEX_SIZE = 32;
  public static final int H_EDGE_SIZE = 36;
  public static final int H_IMPORTED = 40;

  public static final int VERTEX = 48;
  public static final int V_ID = 0;
  public static final int V_EXTERNAL = 8;
  public static final int V_FIRST_EDGE = 16;
  public static final int V_DEGREE = 24;
  public static final int V_PROPS = 32;
  public static final int PROPS = 16;

  public static final int EDGE = 8;
  public static final int E_TARGET = 0;
  public static final int E_WEIGHT = 4;

  /** Internal ids are ints (the edge entries hold them in 4 bytes). */
  public static final long MAX_VERTICES = Integer.MAX_VALUE;

  /** The namespace of {@code graph}'s vertices. */
  public static String verticesNamespace(String graph) {
    return graph + ".vertices";
  }

  /** The namespace of {@code graph}'s adjacency lists. */
  public static String edgesNamespace(String graph) {
    return graph + ".edges";
  }

  /** Byte offset of vertex {@code v}'s record in the vertices allocation. */
  public static long vertexAt(long v) {
    return HEADER + VERTEX * v;
  }

  /** Byte offset of adjacency entry {@code e} in the edges allocation. */
  public static long edgeAt(long e) {
    return EDGE * e;
  }

  /** A little-endian direct buffer of {@code bytes}. */
  public static ByteBuffer le(int bytes) {
    return ByteBuffer.allocateDirect(bytes).order(ByteOrder.LITTLE_ENDIAN);
  }
}
