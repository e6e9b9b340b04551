package io.ferrite.nodes.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.nodes.NodeInfo;
import io.ferrite.nodes.NodePath;
import io.ferrite.nodes.NodesException;
import io.ferrite.nodes.NodesException.Reason;
import io.ferrite.nodes.NodesProtocol;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * How the nodes master's handlers see the tree: paths resolved to nodes (with the errors a client
 * gets for a missing node, a parent that is not a container, a session that is not open) and nodes
 * described as {@link NodeInfo} answers. Reads {@link Namespace} under whichever lock its caller
 * holds (the metadata lock in a mutation, the namespace's read lock in a lookup).
 */
final class NodesMasterTree {
  private final Namespace ns;

  NodesMasterTree(Namespace ns) {
    this.ns = ns;
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
    int from = Math.min(first, n.blocks.size());
    int to = (int) Math.min(n.blocks.size(), (long) from + count);
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
        n.writer != 0,
        n.blocks.size(),
        from,
        List.copyOf(n.blocks.subList(from, to)),
        n.inline);
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
