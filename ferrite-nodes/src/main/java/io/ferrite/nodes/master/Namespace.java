package io.ferrite.nodes.master;

import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.nodes.NodeType;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The namespace: a tree of {@link Node}s keyed by real names, rebuilt from journal records. Every
 * change is a record applied by {@link #apply}; records are deterministic and never fail once
 * accepted (the handlers in {@link NodesMaster} check everything first).
 *
 * <pre>
 * record = type u8 | body
 *  1 CREATE    id i64 | parent i64 | name str | nodeType u8 | flags u8 | class str | location str
 *              | writer i64 | mtime i64 | size i64 | checksum i64 | inline? u8 [bytes]
 *              [| replicas u8]   (flag 8 only)
 *              flags: 1 enumerable, 2 visible, 4 detached (a KeyValue put in progress),
 *              8 replicated (replicas copies of each block); writer: the session holding a
 *              File's or KeyValue's write lease, or an ephemeral Directory's owner (0: none)
 *  2 BLOCKS    id i64 | first i32 | blocks        (appends or overwrites from slot first: a slot
 *              is a copy, block i copy k at i * replicas + k; an overwrite is a re-replicated copy
 *              and clears that slot's lost mark)
 *  3 PUBLISH   id i64 | size i64 | checksum i64 | mtime i64 | release u8 | inline? u8 [bytes]
 *              (visible from now on; a detached KeyValue replaces its parent's child of that name)
 *  4 REMOVE    id i64 | mtime i64                (the whole subtree)
 *  5 MOVE      id i64 | parent i64 | name str | mtime i64
 *  6 WRITER    id i64 | session i64               (0 releases the lease)
 *  7 RECLAIMED id i64                             (its blocks were freed)
 *  8 PENDING   id i64                             (snapshot: removed, blocks not yet freed)
 *  9 TRIM      id i64 | keep i32                  (logical blocks from keep on were freed)
 * 10 NEXT_ID   id i64
 * 11 LOST      id i64 | count i32 | index i32 * (these slots' memory is gone: the kernel declared
 *              their region lost, or a start found them no longer owned; see NodesMasterLost)
 * </pre>
 */
final class Namespace {
  static final int CREATE = 1;
  static final int BLOCKS = 2;
  static final int PUBLISH = 3;
  static final int REMOVE = 4;
  static final int MOVE = 5;
  static final int WRITER = 6;
  static final int RECLAIMED = 7;
  static final int PENDING = 8;
  static final int TRIM = 9;
  static final int NEXT_ID = 10;
  static final int LOST = 11;

  static final int F_ENUMERABLE = 1;
  static final int F_VISIBLE = 2;
  static final int F_DETACHED = 4;
  static final int F_REPLICATED = 8;

  static final long ROOT_ID = 1;

  final Node root = new Node(ROOT_ID, NodeType.DIRECTORY, "", "", true, true, 0, 0);
  final Map<Long, Node> byId = new HashMap<>();

  /** Write leases and ephemeral Directories: session -> ids of nodes it writes or owns. */
  final Map<Long, Set<Long>> bySession = new HashMap<>();

  /** Removed nodes whose blocks are still to be freed -> when they were removed (nanoTime). */
  final Map<Long, Long> pendingReclaim = new LinkedHashMap<>();

  long lastId = ROOT_ID;

  /**
   * Readers that do not hold the master's metadata lock (lookups) take this read lock; {@link
   * #apply} takes the write lock while it changes memory. The metadata lock, held across a
   * mutation's journal fsync, is not needed to read: a lookup waits at most for one record being
   * applied in memory, never for the disk, and sees every record whole.
   */
  final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();

  /**
   * The version words of clients' cached lookups: slots given to nodes here, words bumped by the
   * handlers.
   */
  final LookupVersions versions = new LookupVersions();

  /** The lookup leases clients hold (set by {@link NodesMaster}). */
  NodesMasterLeases leases;

  Namespace() {
    byId.put(ROOT_ID, root);
  }

  // ---------------------------------------------------------------- queries

  /**
   * The visible nodes on the path {@code components}, root excluded (empty for the root itself), or
   * null if there is no such node.
   */
  List<Node> resolveChain(List<String> components) {
    List<Node> chain = new ArrayList<>(components.size());
    Node n = root;
    for (String c : components) {
      if (!n.type.isContainer()) {
        return null;
      }
      n = n.children.get(c);
      if (n == null || !n.visible) {
        return null;
      }
      chain.add(n);
    }
    return chain;
  }

  /** The visible node at {@code components}, or null. */
  Node resolve(List<String> components) {
    Node n = root;
    for (String c : components) {
      if (!n.type.isContainer()) {
        return null;
      }
      n = n.children.get(c);
      if (n == null || !n.visible) {
        return null;
      }
    }
    return n;
  }

  long nextId() {
    return lastId + 1;
  }

  // ---------------------------------------------------------------- records

  static byte[] create(Node n, long parentId) {
    Wire.Writer w =
        new Wire.Writer()
            .u8(CREATE)
            .i64(n.id)
            .i64(parentId)
            .str(n.name)
            .u8(n.type.wire())
            .u8(
                (n.enumerable ? F_ENUMERABLE : 0)
                    | (n.visible ? F_VISIBLE : 0)
                    | (n.detached ? F_DETACHED : 0)
                    | (n.replicas > 1 ? F_REPLICATED : 0))
            .str(n.storageClass)
            .str(n.location)
            .i64(n.writer)
            .i64(n.mtime)
            .i64(n.size)
            .i64(n.checksum);
    inline(w, n.inline);
    if (n.replicas > 1) {
      w.u8(n.replicas);
    }
    return w.toArray();
  }

  static byte[] blocks(long id, int first, List<BlockRef> blocks) {
    Wire.Writer w = new Wire.Writer(32 + blocks.size() * 48).u8(BLOCKS).i64(id).i32(first);
    MasterProtocol.writeBlocks(w, blocks);
    return w.toArray();
  }

  static byte[] publish(
      long id, long size, long checksum, long mtime, boolean release, byte[] inline) {
    Wire.Writer w =
        new Wire.Writer()
            .u8(PUBLISH)
            .i64(id)
            .i64(size)
            .i64(checksum)
            .i64(mtime)
            .u8(release ? 1 : 0);
    inline(w, inline);
    return w.toArray();
  }

  static byte[] remove(long id, long mtime) {
    return new Wire.Writer().u8(REMOVE).i64(id).i64(mtime).toArray();
  }

  static byte[] move(long id, long parent, String name, long mtime) {
    return new Wire.Writer().u8(MOVE).i64(id).i64(parent).str(name).i64(mtime).toArray();
  }

  static byte[] writer(long id, long session) {
    return new Wire.Writer().u8(WRITER).i64(id).i64(session).toArray();
  }

  static byte[] reclaimed(long id) {
    return new Wire.Writer().u8(RECLAIMED).i64(id).toArray();
  }

  /** The record marking blocks {@code indices} of node {@code id} lost. */
  static byte[] lost(long id, java.util.BitSet indices) {
    Wire.Writer w = new Wire.Writer(16 + 4 * indices.cardinality()).u8(LOST).i64(id);
    w.i32(indices.cardinality());
    for (int i = indices.nextSetBit(0); i >= 0; i = indices.nextSetBit(i + 1)) {
      w.i32(i);
    }
    return w.toArray();
  }

  static byte[] trim(long id, int keep) {
    return new Wire.Writer().u8(TRIM).i64(id).i32(keep).toArray();
  }

  private static void inline(Wire.Writer w, byte[] inline) {
    if (inline == null) {
      w.u8(0);
    } else {
      w.u8(1).bytes(inline);
    }
  }

  private static byte[] inline(Wire.Reader r) {
    return r.u8("inline?") == 1 ? r.bytes("inline") : null;
  }

  /** Applies one record, atomically for readers; see the class comment for the layouts. */
  void apply(ByteBuffer record) {
    lock.writeLock().lock();
    try {
      applyLocked(record);
    } finally {
      lock.writeLock().unlock();
    }
  }

  private void applyLocked(ByteBuffer record) {
    Wire.Reader r = new Wire.Reader(record, "nodes record");
    int type = r.u8("type");
    switch (type) {
      case CREATE -> {
        long id = r.i64("id");
        long parentId = r.i64("parent");
        String name = r.str("name");
        NodeType t = NodeType.fromWire(r.u8("nodeType"));
        int flags = r.u8("flags");
        Node n =
            new Node(
                id,
                t,
                r.str("class"),
                r.str("location"),
                (flags & F_ENUMERABLE) != 0,
                (flags & F_VISIBLE) != 0,
                r.i64("writer"),
                r.i64("mtime"));
        n.size = r.i64("size");
        n.checksum = r.i64("checksum");
        n.inline = inline(r);
        if ((flags & F_REPLICATED) != 0) {
          n.replicas = r.u8("replicas");
        }
        n.name = name;
        n.detached = (flags & F_DETACHED) != 0;
        n.slot = versions.assign();
        Node parent = byId.get(parentId);
        n.parent = parent;
        if (!n.detached) {
          Node old = parent.children.put(name, n);
          if (old != null && old != n) {
            removeSubtree(old); // a KeyValue put with its value inline replaces the old one
          }
          parent.mtime = Math.max(parent.mtime, n.mtime);
        }
        byId.put(id, n);
        lastId = Math.max(lastId, id);
        if (n.writer != 0) {
          bySession.computeIfAbsent(n.writer, k -> new HashSet<>()).add(id);
        }
      }
      case BLOCKS -> {
        Node n = byId.get(r.i64("id"));
        int first = r.i32("first");
        List<BlockRef> bs = MasterProtocol.readBlocks(r);
        for (int i = 0; i < bs.size(); i++) {
          int at = first + i;
          if (at < n.blocks.size()) {
            n.blocks.set(at, bs.get(i));
            n.lost.clear(at); // a copy made again (re-replication): this slot holds data again
          } else {
            n.blocks.add(bs.get(i));
          }
        }
      }
      case PUBLISH -> {
        Node n = byId.get(r.i64("id"));
        n.size = r.i64("size");
        n.checksum = r.i64("checksum");
        n.mtime = r.i64("mtime");
        boolean release = r.u8("release") == 1;
        n.inline = inline(r);
        n.visible = true;
        if (release) {
          setWriter(n, 0);
        }
        if (n.detached) {
          n.detached = false;
          Node old = n.parent.children.put(n.name, n);
          if (old != null) {
            removeSubtree(old);
          }
          n.parent.mtime = Math.max(n.parent.mtime, n.mtime);
        }
      }
      case REMOVE -> {
        Node n = byId.get(r.i64("id"));
        long mtime = r.i64("mtime");
        if (!n.detached && n.parent.children.get(n.name) == n) {
          n.parent.children.remove(n.name);
          n.parent.mtime = Math.max(n.parent.mtime, mtime);
        }
        removeSubtree(n);
      }
      case MOVE -> {
        Node n = byId.get(r.i64("id"));
        Node to = byId.get(r.i64("parent"));
        String name = r.str("name");
        long mtime = r.i64("mtime");
        n.parent.children.remove(n.name);
        n.parent.mtime = Math.max(n.parent.mtime, mtime);
        n.parent = to;
        n.name = name;
        Node old = to.children.put(name, n);
        if (old != null && old != n) {
          removeSubtree(old); // a KeyValue moved onto another replaces it
        }
        to.mtime = Math.max(to.mtime, mtime);
      }
      case WRITER -> setWriter(byId.get(r.i64("id")), r.i64("session"));
      case RECLAIMED -> pendingReclaim.remove(r.i64("id"));
      case PENDING -> pendingReclaim.put(r.i64("id"), System.nanoTime());
      case TRIM -> {
        Node n = byId.get(r.i64("id"));
        int keep = r.i32("keep") * n.replicas;
        while (n.blocks.size() > keep) {
          n.blocks.remove(n.blocks.size() - 1);
        }
        n.lost.clear(keep, Math.max(keep, n.lost.length()));
      }
      case LOST -> {
        Node n = byId.get(r.i64("id"));
        int count = r.count("lost", Integer.MAX_VALUE / 4);
        for (int i = 0; i < count; i++) {
          n.lost.set(r.i32("index"));
        }
      }
      case NEXT_ID -> lastId = Math.max(lastId, r.i64("id"));
      default -> throw new IllegalStateException("unknown nodes record type " + type);
    }
    r.end();
  }

  private void setWriter(Node n, long session) {
    if (n.writer != 0) {
      Set<Long> s = bySession.get(n.writer);
      if (s != null) {
        s.remove(n.id);
        if (s.isEmpty()) {
          bySession.remove(n.writer);
        }
      }
    }
    n.writer = session;
    if (session != 0) {
      bySession.computeIfAbsent(session, k -> new HashSet<>()).add(n.id);
    }
  }

  /** Drops {@code top} and its descendants; nodes with blocks wait for reclamation. */
  private void removeSubtree(Node top) {
    ArrayDeque<Node> todo = new ArrayDeque<>();
    todo.add(top);
    long now = System.nanoTime();
    while (!todo.isEmpty()) {
      Node n = todo.poll();
      todo.addAll(n.children.values());
      byId.remove(n.id);
      versions.release(n.slot);
      n.slot = -1;
      setWriter(n, 0);
      if (!n.blocks.isEmpty()) {
        pendingReclaim.put(n.id, now);
      }
    }
  }

  /**
   * Node ids a master start skips: a File's CREATE is answered before its record is durable ({@link
   * io.ferrite.kernel.master.ProvisionalAnswer}), so a crash can forget ids that writers still
   * hold. Each start journals a jump of this many ids past the last one recovered (durable before
   * any provisional answer leaves), so a forgotten id is never handed out again and a stale
   * writer's PUBLISH or MAP can only miss, never land on another node. 2^32 ids per start.
   */
  static final long ID_GAP_PER_START = 1L << 32;

  /** The record that moves the next id past {@code lastId} (see {@link #ID_GAP_PER_START}). */
  static byte[] nextId(long lastId) {
    return new Wire.Writer().u8(NEXT_ID).i64(lastId).toArray();
  }

  /** Records that rebuild this namespace from empty, parents before children. */
  List<byte[]> snapshot() {
    List<byte[]> out = new ArrayList<>();
    out.add(nextId(lastId));
    ArrayDeque<Node> todo = new ArrayDeque<>(root.children.values());
    List<Node> detached = new ArrayList<>();
    for (Node n : byId.values()) {
      if (n.detached && byId.get(n.parent.id) == n.parent) {
        detached.add(n);
      }
    }
    while (!todo.isEmpty()) {
      Node n = todo.poll();
      emit(n, out);
      todo.addAll(n.children.values());
    }
    for (Node n : detached) {
      emit(n, out);
    }
    for (Long id : pendingReclaim.keySet()) {
      out.add(new Wire.Writer().u8(PENDING).i64(id).toArray());
    }
    return out;
  }

  private static void emit(Node n, List<byte[]> out) {
    out.add(create(n, n.parent.id));
    if (!n.blocks.isEmpty()) {
      out.add(blocks(n.id, 0, n.blocks));
    }
    if (!n.lost.isEmpty()) {
      out.add(lost(n.id, n.lost));
    }
  }
}
