package io.ferrite.nodes.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.nodes.NodeInfo;
import io.ferrite.nodes.NodePath;
import io.ferrite.nodes.NodeType;
import io.ferrite.nodes.NodesException;
import io.ferrite.nodes.NodesException.Reason;
import io.ferrite.nodes.NodesProtocol;
import java.nio.ByteBuffer;
import java.util.BitSet;
import java.util.List;

/**
 * How the nodes master's handlers see the tree: paths resolved to nodes (with the errors a client
 * gets for a missing node, a parent that is not a container, a session that is not open) and nodes
 * described as {@link NodeInfo} answers. Reads {@link Namespace} under whichever lock its caller
 * holds (the metadata lock in a mutation, the namespace's read lock in a lookup).
 */
final class NodesMasterTree {
  private final Namespace ns;

  /** The cluster's block size, set at start (before the master serves, which publishes it). */
  private long blockSize;

  NodesMasterTree(Namespace ns) {
    this.ns = ns;
  }

  void blockSize(long bs) {
    this.blockSize = bs;
  }

  /**
   * The byte ranges of {@code n}'s data in its lost blocks: one per run of lost indices, cut at its
   * size (blocks past it, held ahead by a writer, held no published data).
   */
  List<NodeInfo.LostRange> lostRanges(Node n) {
    if (n.lost.isEmpty()) {
      return List.of();
    }
    BitSet lost = lostBlocks(n);
    List<NodeInfo.LostRange> out = new java.util.ArrayList<>();
    for (int i = lost.nextSetBit(0); i >= 0; ) {
      int end = lost.nextClearBit(i);
      long from = i * blockSize;
      long to = Math.min(n.size, end * blockSize);
      if (from < to) {
        out.add(new NodeInfo.LostRange(from, to));
      }
      i = lost.nextSetBit(end);
    }
    return out;
  }

  /** The logical blocks of {@code n} whose every copy is lost. */
  static BitSet lostBlocks(Node n) {
    if (n.replicas == 1) {
      return n.lost;
    }
    BitSet out = new BitSet();
    for (int s = n.lost.nextSetBit(0); s >= 0; s = n.lost.nextSetBit(s + 1)) {
      int i = s / n.replicas;
      if (n.blockLost(i)) {
        out.set(i);
      }
    }
    return out;
  }

  /**
   * Copies of {@code n}'s blocks that are not there: lost, or on a server in {@code dead} (what
   * re-replication makes again). 0 for a node with one copy: a loss there is {@link #lostRanges}.
   */
  static int missingCopies(Node n, java.util.Set<Integer> dead) {
    if (n.replicas == 1) {
      return 0;
    }
    int missing = 0;
    for (int s = 0; s < n.blocks.size(); s++) {
      if (n.lost.get(s) || dead.contains(n.blocks.get(s).serverId())) {
        missing++;
      }
    }
    return missing;
  }

  /** Servers the master declared DEAD, and not registered since (kept by {@link NodesMaster}). */
  volatile java.util.Set<Integer> dead = java.util.Set.of();

  /**
   * Fails with DATA_LOST when {@code n} has lost blocks (every copy of one, for a replicated node):
   * what a write to it answers.
   */
  void checkNotLost(Node n, String path) {
    if (n.lost.isEmpty() || (n.replicas > 1 && lostBlocks(n).isEmpty())) {
      return;
    }
    List<NodeInfo.LostRange> ranges = lostRanges(n);
    throw fail(
        Reason.DATA_LOST,
        path
            + ": "
            + n.lost.cardinality()
            + " of its blocks were lost ("
            + (ranges.isEmpty() ? "past its size" : ranges.toString())
            + "); it cannot be written: remove it and write it again");
  }

  static long now() {
    return System.currentTimeMillis();
  }

  static NodesException fail(Reason reason, String message) {
    return new NodesException(reason, message);
  }

  static ByteBuffer reply(NodeInfo info) {
    Wire.Writer w = new Wire.Writer(128 + info.blocks().size() * 48);
    NodesProtocol.writeNode(w, info);
    return w.toBuffer();
  }

  static void checkSession(MasterContext.Mutation m, long session) {
    if (session == 0 || !m.sessionOpen(session)) {
      throw new FerriteException(
          ErrorCode.SESSION_EXPIRED, "session " + Long.toHexString(session) + " is not open");
    }
  }

  NodeInfo info(Node n, String path, int first, int count) {
    int r = n.replicas;
    int from = Math.min(first, n.count());
    int to = (int) Math.min(n.count(), (long) from + count);
    return new NodeInfo(
        n.id,
        path,
        n.type,
        n.type.isContainer() ? n.children.size() : n.size,
        n.mtime,
        n.checksum,
        n.storageClass,
        n.location,
        n.enumerable,
        n.writer != 0 && n.type.hasData(), // a Directory's writer is its owner (ephemeral)
        n.count(),
        from,
        List.copyOf(n.blocks.subList(from * r, to * r)),
        n.inline,
        lostBlocks(n).cardinality(),
        lostRanges(n),
        r,
        missingCopies(n, dead),
        n.writer != 0 && n.type == NodeType.DIRECTORY);
  }

  /** The container that {@code comps} (a non-root path) would be created in. */
  Node parentOf(List<String> comps, String path) {
    Node n = ns.root;
    String at = "";
    for (int i = 0; i < comps.size() - 1; i++) {
      at = at + "/" + comps.get(i);
      if (!n.type.isContainer()) {
        throw fail(
            Reason.NOT_A_CONTAINER, n.path() + " is a " + n.type.label() + ", not a container");
      }
      Node c = n.children.get(comps.get(i));
      if (c == null || !c.visible) {
        throw fail(Reason.NOT_FOUND, "no such directory " + at + " (parent of " + path + ")");
      }
      n = c;
    }
    if (!n.type.isContainer()) {
      throw fail(Reason.NOT_A_CONTAINER, at + " is a " + n.type.label() + ", not a container");
    }
    return n;
  }

  Node existing(String path) {
    Node n = ns.resolve(NodePath.parse(path));
    if (n == null) {
      throw fail(Reason.NOT_FOUND, "no such node " + path);
    }
    return n;
  }

  Node byId(long id) {
    Node n = ns.byId.get(id);
    if (n == null) {
      throw fail(Reason.NOT_FOUND, "node " + id + " was removed");
    }
    return n;
  }
}
