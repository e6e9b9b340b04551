package io.ferrite.nodes.master;

import static io.ferrite.nodes.master.NodesMasterTree.checkSession;
import static io.ferrite.nodes.master.NodesMasterTree.fail;
import static io.ferrite.nodes.master.NodesMasterTree.now;
import static io.ferrite.nodes.master.NodesMasterTree.reply;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.nodes.NodePath;
import io.ferrite.nodes.NodeType;
import io.ferrite.nodes.NodesException.Reason;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The data blocks of nodes and who may write them: MAP (allocating ahead for the writer), PUBLISH,
 * OPEN_WRITE and ABORT; a writer's lease that ends with its session (an unpublished node is
 * dropped, a published one trimmed to its size); and the blocks of removed nodes, freed after a
 * grace period so that a reader that looked the node up just before can finish.
 */
final class NodesMasterWrites implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(NodesMasterWrites.class.getName());

  private final Namespace ns;
  private final NodesMasterTree tree;
  private final MasterContext ctx;
  private final Duration reclaimGrace;
  private final ScheduledThreadPoolExecutor reclaimer;

  /** Starts the reclaimer. */
  NodesMasterWrites(Namespace ns, NodesMasterTree tree, MasterContext ctx, Duration reclaimGrace) {
    this.ns = ns;
    this.tree = tree;
    this.ctx = ctx;
    this.reclaimGrace = reclaimGrace;
    reclaimer = new ScheduledThreadPoolExecutor(1, new NamedThreadFactory("nodes-reclaim", true));
    long period = Math.max(10, Math.min(200, reclaimGrace.toMillis() / 2));
    reclaimer.scheduleWithFixedDelay(this::reclaim, period, period, TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() {
    reclaimer.shutdownNow();
  }

  /** Nodes removed but whose blocks are not yet freed (for tests). */
  int pendingReclaims() {
    return ctx.mutate(m -> ns.pendingReclaim.size());
  }

  /** Frees the blocks of nodes removed longer than the grace period ago. */
  void reclaim() {
    try {
      ctx.mutate(m -> reclaimRemovedBefore(m, System.nanoTime() - reclaimGrace.toNanos()));
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "reclaiming blocks of removed nodes failed", e);
    }
  }

  /** Frees the blocks of nodes removed before {@code cutoff} (nanoTime); returns how many nodes. */
  private int reclaimRemovedBefore(MasterContext.Mutation m, long cutoff) {
    int n = 0;
    for (Map.Entry<Long, Long> e : List.copyOf(ns.pendingReclaim.entrySet())) {
      if (e.getValue() - cutoff > 0) {
        continue;
      }
      long id = e.getKey();
      List<BlockRef> owned = m.owned(Node.owner(id));
      if (!owned.isEmpty()) {
        m.free(Node.owner(id), owned);
      }
      m.commit(Namespace.reclaimed(id));
      n++;
    }
    return n;
  }

  /**
   * Allocates blocks owned by node {@code id}. When no class has room, the blocks of removed nodes
   * still in their grace period are freed at once and the allocation is tried again: the grace
   * period protects readers of removed nodes (KeyValue gets verify checksums and re-read anyway),
   * but never turns into NO_SPACE.
   */
  List<BlockRef> allocate(
      MasterContext.Mutation m, long session, int count, String cls, String location, long id) {
    try {
      return m.allocate(session, count, cls, false, Node.owner(id), location);
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.NO_SPACE || reclaimRemovedBefore(m, System.nanoTime()) == 0) {
        throw e;
      }
      return m.allocate(session, count, cls, false, Node.owner(id), location);
    }
  }

  /**
   * Allocates {@code count} blocks of node {@code n} (from its logical block {@code at}, for the
   * message): with one copy as {@link #allocate}; with {@code n.replicas} copies, that many refs
   * per block, copy {@code k} of block {@code i} at {@code i * replicas + k}, each copy of a block
   * on another server (the kernel's {@code !} exclusion), all or none. Copy 0 follows the node's
   * location hint; the others go where the exclusion leaves room.
   */
  List<BlockRef> allocate(MasterContext.Mutation m, long session, Node n, int count) {
    int r = n.replicas;
    if (r == 1) {
      return allocate(m, session, count, n.storageClass, n.location, n.id);
    }
    long alive = alive(m);
    if (alive < r) {
      throw fail(
          Reason.NO_SPACE,
          "replicas "
              + r
              + " of "
              + (n.detached ? n.name : n.path())
              + " need "
              + r
              + " ALIVE memory servers, "
              + alive
              + " are ALIVE");
    }
    List<BlockRef> got = new ArrayList<>(count * r);
    BlockRef[][] copies = new BlockRef[count][r];
    try {
      List<BlockRef> first = allocate(m, session, count, n.storageClass, n.location, n.id);
      got.addAll(first);
      for (int i = 0; i < count; i++) {
        copies[i][0] = first.get(i);
      }
      for (int k = 1; k < r; k++) {
        // Blocks whose earlier copies sit on the same servers share one allocation.
        Map<String, List<Integer>> groups = new java.util.LinkedHashMap<>();
        for (int i = 0; i < count; i++) {
          groups.computeIfAbsent(servers(copies[i], k), x -> new ArrayList<>()).add(i);
        }
        for (Map.Entry<String, List<Integer>> g : groups.entrySet()) {
          List<BlockRef> more =
              allocate(m, session, g.getValue().size(), n.storageClass, "!" + g.getKey(), n.id);
          got.addAll(more);
          for (int j = 0; j < more.size(); j++) {
            copies[g.getValue().get(j)][k] = more.get(j);
          }
        }
      }
    } catch (RuntimeException e) {
      if (!got.isEmpty()) {
        m.free(Node.owner(n.id), got);
      }
      throw e;
    }
    List<BlockRef> out = new ArrayList<>(count * r);
    for (BlockRef[] c : copies) {
      out.addAll(java.util.Arrays.asList(c));
    }
    return out;
  }

  /** The server ids of {@code copies[0, k)}, sorted, comma-separated: a kernel exclusion. */
  static String servers(BlockRef[] copies, int k) {
    int[] ids = new int[k];
    for (int j = 0; j < k; j++) {
      ids[j] = copies[j].serverId();
    }
    java.util.Arrays.sort(ids);
    StringBuilder sb = new StringBuilder();
    for (int id : ids) {
      sb.append(sb.length() == 0 ? "" : ",").append(id);
    }
    return sb.toString();
  }

  /** Memory servers the kernel calls ALIVE. */
  static long alive(MasterContext.Mutation m) {
    return m.members().stream()
        .filter(x -> x.state() == io.ferrite.kernel.proto.ServerState.ALIVE)
        .count();
  }

  void sessionClosed(long sessionId, MasterContext.Mutation m) {
    Set<Long> ids = ns.bySession.get(sessionId);
    if (ids == null) {
      return;
    }
    List<Long> visible = new ArrayList<>();
    for (Long id : List.copyOf(ids)) {
      Node n = ns.byId.get(id);
      if (n != null) {
        if (n.visible) {
          visible.add(id);
        }
        release(n, m);
      }
    }
    if (!visible.isEmpty()) {
      // Not a client's call, so nothing to hold back: a cached answer of these nodes may say
      // "writing" (and count blocks past the size) until its holder acknowledges this.
      Set<Long> mine = new java.util.HashSet<>();
      ns.leases
          .invalidate(visible.stream().mapToLong(Long::longValue).toArray(), mine)
          .whenComplete((v, t) -> ns.leases.release(mine));
    }
  }

  /**
   * Ends a write lease: a node never published is dropped, a published one keeps its size. For an
   * ephemeral Directory (its owner is its writer) the lease is the Directory itself: it is removed
   * with its subtree, as a recursive remove is (Files being written inside by other sessions are
   * dropped with it; their writers' next MAP or PUBLISH answers NOT_FOUND), and its blocks are
   * freed after the grace period.
   */
  private void release(Node n, MasterContext.Mutation m) {
    if (n.type == NodeType.DIRECTORY) {
      // Descendants need no bump: every path to them goes through n (as NodesMaster.remove).
      int[] changing = ns.versions.begin(n);
      try {
        m.commit(Namespace.remove(n.id, now()));
      } finally {
        ns.versions.end(changing);
      }
    } else if (!n.visible) {
      m.commit(Namespace.remove(n.id, now()));
    } else {
      m.commit(Namespace.writer(n.id, 0));
      trim(n, m);
    }
  }

  /** Frees blocks past the node's size (allocated ahead by a writer that stopped). */
  private void trim(Node n, MasterContext.Mutation m) {
    long bs = ctx.blockSize();
    int keep = (int) ((n.size + bs - 1) / bs);
    if (n.count() > keep) {
      List<BlockRef> extra = new ArrayList<>();
      for (int i = keep * n.replicas; i < n.blocks.size(); i++) {
        if (!n.lost.get(i)) {
          extra.add(n.blocks.get(i)); // a lost block is no longer this node's to free
        }
      }
      m.commit(Namespace.trim(n.id, keep));
      if (!extra.isEmpty()) {
        m.free(Node.owner(n.id), extra);
      }
    }
  }

  ByteBuffer map(Wire.Reader r) {
    long id = r.i64("id");
    long session = r.i64("session");
    int index = r.i32("index");
    int count = r.i32("count");
    boolean allocate = r.u8("allocate") == 1;
    r.end();
    if (index < 0 || count < 1 || count > NodesMaster.MAX_MAP) {
      throw fail(
          Reason.INVALID_ARGUMENT,
          "map index: "
              + index
              + ", count: "
              + count
              + " (expected: >= 0 and 1 to "
              + NodesMaster.MAX_MAP
              + ")");
    }
    return ctx.mutate(
        m -> {
          Node n = tree.byId(id);
          if (!n.type.hasData()) {
            throw fail(Reason.WRONG_TYPE, "a " + n.type.label() + " has no data blocks");
          }
          if (allocate) {
            if (n.writer != session || session == 0) {
              throw fail(
                  Reason.NOT_WRITER, "this session does not hold the write lease of node " + id);
            }
            checkSession(m, session);
            tree.checkNotLost(n, n.detached ? n.name : n.path());
            int need = index + count - n.count();
            if (need > 0) {
              // The node's block count changes: what a cached lookup of it says.
              long[] entered = ns.leases.enter(n);
              List<BlockRef> got;
              try {
                try {
                  got = allocate(m, session, n, need);
                } catch (FerriteException e) {
                  // The window ahead does not fit: take only what the write at index needs.
                  int least = index + 1 - n.count();
                  if (e.code() != ErrorCode.NO_SPACE || least >= need) {
                    throw e;
                  }
                  got = least <= 0 ? List.of() : allocate(m, session, n, least);
                }
                if (!got.isEmpty()) {
                  m.commit(Namespace.blocks(id, n.blocks.size(), got));
                }
              } finally {
                ns.leases.exit(entered);
              }
            }
          }
          int rep = n.replicas;
          Wire.Writer w = new Wire.Writer(16 + count * rep * 48);
          int from = Math.min(index, n.count());
          int to = (int) Math.min(n.count(), (long) index + count);
          w.i32(from);
          io.ferrite.kernel.proto.MasterProtocol.writeBlocks(
              w, n.blocks.subList(from * rep, to * rep));
          return w.toBuffer();
        });
  }

  ByteBuffer publish(Wire.Reader r) {
    long id = r.i64("id");
    long session = r.i64("session");
    long size = r.i64("size");
    long checksum = r.i64("checksum");
    boolean close = r.u8("close") == 1;
    r.end();
    return ctx.mutate(
        m -> {
          Node n = tree.byId(id);
          if (!n.type.hasData()) {
            // An ephemeral Directory's owner is its writer: it must not publish or close it.
            throw fail(Reason.WRONG_TYPE, "a " + n.type.label() + " has no data to publish");
          }
          if (n.writer != session || session == 0) {
            throw fail(
                Reason.NOT_WRITER, "this session does not hold the write lease of node " + id);
          }
          tree.checkNotLost(n, n.detached ? n.name : n.path());
          long capacity = n.count() * ctx.blockSize();
          if (size < 0 || size > capacity || (n.type == NodeType.FILE && size < n.size)) {
            throw fail(
                Reason.INVALID_ARGUMENT,
                "size: " + size + " (expected: " + n.size + " to " + capacity + ")");
          }
          if (n.detached && ns.byId.get(n.parent.id) != n.parent) {
            m.commit(Namespace.remove(n.id, now()));
            throw fail(Reason.NOT_FOUND, "the table of this keyvalue was removed");
          }
          // Published: n's size and value change; a put's KeyValue replaces the old one.
          Node old = n.detached ? n.parent.children.get(n.name) : null;
          long[] entered = ns.leases.enter(n, old);
          int[] changing = ns.versions.begin(n, old);
          try {
            m.commit(Namespace.publish(id, size, checksum, now(), close, null));
          } finally {
            ns.versions.end(changing);
            ns.leases.exit(entered);
          }
          if (close) {
            trim(n, m);
          }
          return reply(tree.info(n, n.detached ? "" : n.path(), 0, 0));
        });
  }

  ByteBuffer openWrite(Wire.Reader r) {
    String path = r.str("path");
    long session = r.i64("session");
    r.end();
    NodePath.parse(path);
    return ctx.mutate(
        m -> {
          Node n = tree.existing(path);
          if (n.type != NodeType.FILE) {
            throw fail(
                Reason.WRONG_TYPE,
                path
                    + " is a "
                    + n.type.label()
                    + (n.type == NodeType.KEYVALUE
                        ? ": a keyvalue is replaced by a put, not appended to"
                        : ", not a file"));
          }
          if (n.writer != 0) {
            throw fail(Reason.WRITE_LOCKED, path + " is open for writing by another writer");
          }
          tree.checkNotLost(n, path);
          int missing = NodesMasterTree.missingCopies(n, tree.dead);
          if (missing > 0) {
            // An append would write to a copy that is not there; re-replication waits for no
            // writer, so this ends by itself.
            throw fail(
                Reason.WRITE_LOCKED,
                path
                    + " is being re-replicated ("
                    + missing
                    + " of its block copies are missing): try again when fs stat shows none");
          }
          checkSession(m, session);
          long[] entered = ns.leases.enter(n); // its "writing" flag
          try {
            m.commit(Namespace.writer(n.id, session));
          } finally {
            ns.leases.exit(entered);
          }
          long bs = ctx.blockSize();
          return reply(tree.info(n, path, (int) (n.size / bs), 2));
        });
  }

  ByteBuffer abort(Wire.Reader r) {
    long id = r.i64("id");
    long session = r.i64("session");
    r.end();
    return ctx.mutate(
        m -> {
          Node n = ns.byId.get(id);
          if (n != null) {
            if (!n.type.hasData()) {
              // Not a way to end an ephemeral Directory: remove it.
              throw fail(Reason.WRONG_TYPE, "a " + n.type.label() + " has no write to abort");
            }
            if (n.writer != session || session == 0) {
              throw fail(
                  Reason.NOT_WRITER, "this session does not hold the write lease of node " + id);
            }
            long[] entered = ns.leases.enter(n);
            try {
              release(n, m);
            } finally {
              ns.leases.exit(entered);
            }
          }
          return ByteBuffer.allocate(0);
        });
  }
}
