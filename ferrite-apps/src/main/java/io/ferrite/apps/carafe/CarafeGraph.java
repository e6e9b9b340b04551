package io.ferrite.apps.carafe;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.memory.Mapping;
import io.ferrite.memory.MemoryFlags;
import io.ferrite.memory.Namespace;
import io.ferrite.memory.RAddress;
import io.ferrite.memory.RStore;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * A graph stored in RStore (paper §V-B: "a CarafeGraph class that contains high-level pertinent
 * information about the graph and the associated RStore metadata about vertex and edge
 * namespaces"), laid out as {@link GraphLayout} says. {@link #create} writes one from a {@link
 * Csr}; {@link #open} reads its header; {@link #vertices(long, long)} and {@link #edges(long,
 * long)} give raddresses of ranges that a reader maps. Immutable (Carafe's graphs are, like the
 * paper's); thread safe.
 *
 * <p>Online exploration ({@link #vertex}, {@link #internalId}) goes through one mapping of each
 * namespace per graph object, made on first use and kept until {@link #close}: mapping per vertex
 * would cost two RPCs to the master (map, unmap) per vertex, where a vertex visit should cost
 * one-sided reads only. While those mappings are open the graph cannot be deleted (CONFLICT), so
 * close the graph before {@link #delete}.
 */
public final class CarafeGraph implements AutoCloseable {
  /** Bytes per write while a graph is stored: large one-sided writes, two in flight. */
  static final int PIECE = 16 << 20;

  /** Progress of a long step: {@code done} of {@code total} units of {@code phase}. */
  @FunctionalInterface
  public interface Progress {
    Progress NONE = (phase, done, total) -> {};

    void report(String phase, long done, long total);
  }

  private final RStore store;
  private final String name;
  private final Namespace vertexNs;
  private final Namespace edgeNs;
  private final long vertexCount;
  private final long edgeCount;
  private final int flags;
  private final long importedMillis;

  /** The exploration mappings; made under {@code this}'s lock, volatile for the lock-free read. */
  private volatile Mapping vertexMap;

  private volatile Mapping edgeMap;

  private CarafeGraph(
      RStore store,
      String name,
      Namespace vertexNs,
      Namespace edgeNs,
      long vertexCount,
      long edgeCount,
      int flags,
      long importedMillis) {
    this.store = store;
    this.name = name;
    this.vertexNs = vertexNs;
    this.edgeNs = edgeNs;
    this.vertexCount = vertexCount;
    this.edgeCount = edgeCount;
    this.flags = flags;
    this.importedMillis = importedMillis;
  }

  public RStore store() {
    return store;
  }

  public String name() {
    return name;
  }

  public long vertexCount() {
    return vertexCount;
  }

  /** Stored adjacency entries (an undirected edge counts twice). */
  public long edgeCount() {
    return edgeCount;
  }

  public boolean weighted() {
    return (flags & GraphLayout.F_WEIGHTED) != 0;
  }

  public boolean undirected() {
    return (flags & GraphLayout.F_UNDIRECTED) != 0;
  }

  public long importedMillis() {
    return importedMillis;
  }

  /** Bytes the graph holds in RStore (header, vertex records, adjacency entries). */
  public long bytes() {
    return GraphLayout.vertexAt(vertexCount) + GraphLayout.edgeAt(edgeCount);
  }

  /**
   * The records of vertices {@code [first, first + count)} (byte 0 of the range = {@code first}'s
   * record), to map.
   */
  public RAddress vertices(long first, long count) {
    checkRange("vertices", first, count, vertexCount);
    return RAddress.init(
        vertexNs,
        vertexNs.chunkSize() + GraphLayout.vertexAt(first),
        Math.max(1, count) * GraphLayout.VERTEX);
  }

  /**
   * Adjacency entries {@code [first, first + count)} (byte 0 = entry {@code first}), to map; at
   * least one entry's bytes even when {@code count} is 0 (the allocation is never empty).
   */
  public RAddress edges(long first, long count) {
    checkRange("edges", first, count, edgeCount);
    long bytes = Math.max(1, count) * GraphLayout.EDGE;
    long at = GraphLayout.edgeAt(Math.min(first, Math.max(0, edgeCount - 1)));
    return RAddress.init(edgeNs, edgeNs.chunkSize() + at, bytes);
  }

  /**
   * A handle on vertex {@code internalId}, its record read (one one-sided read). Reuse it with
   * {@link VertexHandle#moveTo} to visit more vertices without allocating.
   *
   * @throws FerriteException OUT_OF_BOUNDS for an id outside {@code [0, vertexCount)}
   */
  public VertexHandle vertex(long internalId) {
    return new VertexHandle(this).moveTo(internalId);
  }

  /** Vertices whose records {@link #internalId} reads in one go, once the search is that narrow. */
  static final int SCAN = 256;

  /**
   * The internal id of the vertex the graph's file calls {@code externalId}, or -1 if there is
   * none: a binary search over the records' external ids, which are ascending in graphs that {@link
   * EdgeListImporter} and {@link RmatGenerator} make (a {@link Csr} with other ids gives an
   * undefined answer). Costs about log2(n / {@link #SCAN}) 8-byte reads, then one read of at most
   * {@link #SCAN} records.
   */
  public long internalId(long externalId) {
    Mapping vm = vertexMapping();
    ByteBuffer one = GraphLayout.le(8);
    long lo = 0;
    long hi = vertexCount; // the answer, if any, is in [lo, hi)
    while (hi - lo > SCAN) {
      long mid = (lo + hi) >>> 1;
      vm.readSync(GraphLayout.VERTEX * mid + GraphLayout.V_EXTERNAL, one.clear());
      long ext = one.getLong(0);
      if (ext == externalId) {
        return mid;
      } else if (ext < externalId) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (hi == lo) {
      return -1;
    }
    ByteBuffer records = GraphLayout.le((int) (hi - lo) * GraphLayout.VERTEX);
    vm.readSync(GraphLayout.VERTEX * lo, records);
    for (int i = 0; i < hi - lo; i++) {
      if (records.getLong(i * GraphLayout.VERTEX + GraphLayout.V_EXTERNAL) == externalId) {
        return lo + i;
      }
    }
    return -1;
  }

  /** The mapping of all vertex records (byte 0 = vertex 0's record), made on first use. */
  Mapping vertexMapping() {
    Mapping m = vertexMap;
    if (m == null) {
      synchronized (this) {
        m = vertexMap;
        if (m == null) {
          m = vertices(0, vertexCount).map(MemoryFlags.MAP_NO_BUFFER);
          vertexMap = m;
        }
      }
    }
    return m;
  }

  /** The mapping of all adjacency entries (byte 0 = entry 0), made on first use. */
  Mapping edgeMapping() {
    Mapping m = edgeMap;
    if (m == null) {
      synchronized (this) {
        m = edgeMap;
        if (m == null) {
          m = edges(0, edgeCount).map(MemoryFlags.MAP_NO_BUFFER);
          edgeMap = m;
        }
      }
    }
    return m;
  }

  /**
   * Unmaps the exploration mappings, if any (the next exploration maps again). Handles in use on
   * other threads must be done first. Idempotent.
   */
  @Override
  public synchronized void close() {
    Mapping v = vertexMap;
    Mapping e = edgeMap;
    vertexMap = null;
    edgeMap = null;
    try {
      if (v != null) {
        v.unmap();
      }
    } finally {
      if (e != null) {
        e.unmap();
      }
    }
  }

  private static void checkRange(String what, long first, long count, long size) {
    if (first < 0 || count < 0 || first > size - count) {
      throw new FerriteException(
          ErrorCode.OUT_OF_BOUNDS,
          what + " [" + first + ", " + (first + count) + ") (expected: inside [0, " + size + "))");
    }
  }

  /**
   * Stores {@code csr} as graph {@code name}: creates its two namespaces, reserves and allocates
   * their memory, writes the vertex records and adjacency lists in large one-sided writes, and the
   * header last. On any failure both namespaces are deleted again.
   *
   * @throws FerriteException CONFLICT if a graph (either namespace) of that name exists,
   *     INVALID_ARGUMENT for a malformed csr or name, NO_SPACE if the cluster is too small
   */
  public static CarafeGraph create(RStore store, String name, Csr csr, Progress progress) {
    csr.check();
    checkName(name);
    Namespace vns = createNs(store, GraphLayout.verticesNamespace(name), name);
    Namespace ens;
    try {
      ens = createNs(store, GraphLayout.edgesNamespace(name), name);
    } catch (RuntimeException e) {
      deleteQuietly(store, vns.name());
      throw e;
    }
    try {
      int n = csr.vertices();
      long m = csr.edges();
      long vbytes = GraphLayout.vertexAt(n);
      long ebytes = Math.max(GraphLayout.EDGE, GraphLayout.edgeAt(m));
      vns.reserve(vbytes);
      ens.reserve(ebytes);
      RAddress va = allocFirst(vns, vbytes);
      RAddress ea = allocFirst(ens, ebytes);
      try (Mapping vm = va.map(MemoryFlags.MAP_NO_BUFFER);
          Mapping em = ea.map(MemoryFlags.MAP_NO_BUFFER)) {
        writeVertices(vm, csr, progress);
        writeEdges(em, csr, progress);
        ByteBuffer h = GraphLayout.le(GraphLayout.HEADER);
        int flags =
            (csr.weights() != null ? GraphLayout.F_WEIGHTED : 0)
                | (csr.undirected() ? GraphLayout.F_UNDIRECTED : 0);
        long now = System.currentTimeMillis();
        h.putInt(GraphLayout.H_VERSION, GraphLayout.VERSION)
            .putInt(GraphLayout.H_FLAGS, flags)
            .putLong(GraphLayout.H_VERTICES, n)
            .putLong(GraphLayout.H_EDGES, m)
            .putInt(GraphLayout.H_VERTEX_SIZE, GraphLayout.VERTEX)
            .putInt(GraphLayout.H_EDGE_SIZE, GraphLayout.EDGE)
            .putLong(GraphLayout.H_IMPORTED, now);
        vm.writeSync(0, h);
        // The magic last: a reader that finds it finds everything before it.
        ByteBuffer magic = GraphLayout.le(8).putLong(0, GraphLayout.MAGIC);
        vm.writeSync(GraphLayout.H_MAGIC, magic);
        return new CarafeGraph(store, name, vns, ens, n, m, flags, now);
      }
    } catch (RuntimeException e) {
      deleteQuietly(store, vns.name());
      deleteQuietly(store, ens.name());
      throw e;
    }
  }

  private static void checkName(String name) {
    if (name == null
        || name.isEmpty()
        || name.length() > 200
        || name.chars().anyMatch(Character::isISOControl)) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "graph name: '" + name + "' (expected: 1 to 200 characters, no control characters)");
    }
  }

  private static Namespace createNs(RStore store, String ns, String graph) {
    try {
      return store.createNamespace(ns);
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.CONFLICT) {
        throw new FerriteException(
            ErrorCode.CONFLICT,
            "graph '"
                + graph
                + "' exists (namespace '"
                + ns
                + "'): delete it first ('ferrite graph delete "
                + graph
                + "') or choose another name",
            e);
      }
      throw e;
    }
  }

  /** The namespace's first allocation, which {@link #open} finds at address {@code chunkSize}. */
  private static RAddress allocFirst(Namespace ns, long bytes) {
    RAddress a = ns.alloc(bytes, MemoryFlags.ALLOC_DEFAULT);
    if (a.address() != ns.chunkSize()) {
      throw new FerriteException(
          ErrorCode.INTERNAL,
          "the first allocation of "
              + ns
              + " is at 0x"
              + Long.toHexString(a.address())
              + " (expected: 0x"
              + Long.toHexString(ns.chunkSize())
              + ")");
    }
    return a;
  }

  private static void writeVertices(Mapping vm, Csr csr, Progress progress) {
    int n = csr.vertices();
    int perPiece = PIECE / GraphLayout.VERTEX;
    Pieces out = new Pieces(vm, GraphLayout.HEADER, perPiece * GraphLayout.VERTEX);
    for (int v0 = 0; v0 < n; v0 += perPiece) {
      int v1 = (int) Math.min(n, (long) v0 + perPiece);
      ByteBuffer b = out.next();
      for (int v = v0; v < v1; v++) {
        int at = (v - v0) * GraphLayout.VERTEX;
        b.putLong(at + GraphLayout.V_ID, v)
            .putLong(at + GraphLayout.V_EXTERNAL, csr.externalIds()[v])
            .putLong(at + GraphLayout.V_FIRST_EDGE, csr.firstEdge()[v])
            .putInt(at + GraphLayout.V_DEGREE, csr.degree(v))
            .putInt(at + GraphLayout.V_DEGREE + 4, 0)
            .putLong(at + GraphLayout.V_PROPS, 0)
            .putLong(at + GraphLayout.V_PROPS + 8, 0);
      }
      out.write((v1 - v0) * GraphLayout.VERTEX);
      progress.report("vertices", v1, n);
    }
    out.finish();
  }

  private static void writeEdges(Mapping em, Csr csr, Progress progress) {
    long m = csr.edges();
    int perPiece = PIECE / GraphLayout.EDGE;
    Pieces out = new Pieces(em, 0, perPiece * GraphLayout.EDGE);
    int[] t = csr.targets();
    float[] w = csr.weights();
    for (long e0 = 0; e0 < m; e0 += perPiece) {
      int e1 = (int) Math.min(m, e0 + perPiece);
      ByteBuffer b = out.next();
      for (int e = (int) e0; e < e1; e++) {
        int at = (int) (e - e0) * GraphLayout.EDGE;
        b.putInt(at + GraphLayout.E_TARGET, t[e])
            .putFloat(at + GraphLayout.E_WEIGHT, w == null ? 1f : w[e]);
      }
      out.write((int) (e1 - e0) * GraphLayout.EDGE);
      progress.report("edges", e1, m);
    }
    out.finish();
  }

  /** Sequential writes of pieces through two buffers: one fills while the other is written. */
  private static final class Pieces {
    private final Mapping mapping;
    private final ByteBuffer[] buffers = new ByteBuffer[2];
    private final CompletableFuture<?>[] pending = new CompletableFuture<?>[2];
    private long offset;
    private int current = 1;

    Pieces(Mapping mapping, long offset, int pieceBytes) {
      this.mapping = mapping;
      this.offset = offset;
      buffers[0] = GraphLayout.le(pieceBytes);
      buffers[1] = GraphLayout.le(pieceBytes);
    }

    /** The next buffer to fill (its previous write finished). */
    ByteBuffer next() {
      current ^= 1;
      if (pending[current] != null) {
        Futures.join(pending[current]);
        pending[current] = null;
      }
      return buffers[current].clear();
    }

    /** Writes the first {@code bytes} of the buffer {@link #next} gave. */
    void write(int bytes) {
      pending[current] = mapping.write(offset, buffers[current].slice(0, bytes));
      offset += bytes;
    }

    void finish() {
      for (int i = 0; i < 2; i++) {
        if (pending[i] != null) {
          Futures.join(pending[i]);
          pending[i] = null;
        }
      }
    }
  }

  /**
   * Opens graph {@code name}: joins its namespaces and reads its header.
   *
   * @throws FerriteException NOT_FOUND if there is no such graph, CONFLICT if its import did not
   *     finish (no magic), UNSUPPORTED for a layout version this build does not read
   */
  public static CarafeGraph open(RStore store, String name) {
    checkName(name);
    Namespace vns;
    Namespace ens;
    try {
      vns = store.joinNamespace(GraphLayout.verticesNamespace(name));
      ens = store.joinNamespace(GraphLayout.edgesNamespace(name));
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.NOT_FOUND) {
        throw new FerriteException(
            ErrorCode.NOT_FOUND,
            "no graph '" + name + "' (import or generate one: 'ferrite graph --help')",
            e);
      }
      throw e;
    }
    ByteBuffer h = GraphLayout.le(GraphLayout.HEADER);
    try (Mapping hm =
        RAddress.init(vns, vns.chunkSize(), GraphLayout.HEADER).map(MemoryFlags.MAP_NO_BUFFER)) {
      hm.readSync(0, h);
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.NOT_FOUND) {
        throw incomplete(name, e);
      }
      throw e;
    }
    if (h.getLong(GraphLayout.H_MAGIC) != GraphLayout.MAGIC) {
      throw incomplete(name, null);
    }
    int version = h.getInt(GraphLayout.H_VERSION);
    if (version != GraphLayout.VERSION
        || h.getInt(GraphLayout.H_VERTEX_SIZE) != GraphLayout.VERTEX
        || h.getInt(GraphLayout.H_EDGE_SIZE) != GraphLayout.EDGE) {
      throw new FerriteException(
          ErrorCode.UNSUPPORTED,
          "graph '"
              + name
              + "' has layout version "
              + version
              + " (this build reads version "
              + GraphLayout.VERSION
              + ")");
    }
    return new CarafeGraph(
        store,
        name,
        vns,
        ens,
        h.getLong(GraphLayout.H_VERTICES),
        h.getLong(GraphLayout.H_EDGES),
        h.getInt(GraphLayout.H_FLAGS),
        h.getLong(GraphLayout.H_IMPORTED));
  }

  private static FerriteException incomplete(String name, Throwable cause) {
    return new FerriteException(
        ErrorCode.CONFLICT,
        "graph '"
            + name
            + "' is incomplete (its import did not finish): delete it ('ferrite graph delete "
            + name
            + "') and import it again",
        cause);
  }

  /**
   * Deletes graph {@code name} (both namespaces; whichever exists, so an unfinished import goes
   * too).
   *
   * @return whether anything was deleted
   * @throws FerriteException CONFLICT while any part of it is mapped
   */
  public static boolean delete(RStore store, String name) {
    checkName(name);
    boolean any = false;
    for (String ns :
        new String[] {GraphLayout.verticesNamespace(name), GraphLayout.edgesNamespace(name)}) {
      try {
        store.deleteNamespace(ns);
        any = true;
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.NOT_FOUND) {
          throw e;
        }
      }
    }
    return any;
  }

  private static void deleteQuietly(RStore store, String ns) {
    try {
      store.deleteNamespace(ns);
    } catch (RuntimeException e) {
      // Cleanup after a failure: the first failure is the one to report.
    }
  }

  @Override
  public String toString() {
    return "graph '"
        + name
        + "' ("
        + vertexCount
        + " vertices, "
        + edgeCount
        + " edges"
        + (undirected() ? ", undirected" : "")
        + (weighted() ? ", weighted" : "")
        + ")";
  }
}
