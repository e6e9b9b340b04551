package io.ferrite.nodes.master;

import static io.ferrite.nodes.master.NodesMasterTree.fail;
import static io.ferrite.nodes.master.NodesMasterTree.reply;

import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.nodes.NodeInfo;
import io.ferrite.nodes.NodePath;
import io.ferrite.nodes.NodesException.Reason;
import io.ferrite.nodes.NodesProtocol;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The nodes master's read path: LOOKUP and LOOKUP_VERSIONED under the namespace's read lock, not
 * the metadata lock, answered inline on the receiving thread while that lock is free (see {@link
 * #handleInline}) and on the service executor otherwise.
 */
final class NodesMasterLookups {
  private final Namespace ns;
  private final NodesMasterTree tree;
  private final NodesMasterLeases leases;

  NodesMasterLookups(Namespace ns, NodesMasterTree tree, NodesMasterLeases leases) {
    this.ns = ns;
    this.tree = tree;
    this.leases = leases;
  }

  /**
   * LOOKUP answered on the thread that received it (the shm ring poller, or an I/O thread): it only
   * reads the namespace, under the namespace's read lock, which {@link Namespace#apply} holds only
   * while it changes memory. If that lock is taken or wanted by an apply, the lookup declines and
   * runs on the service executor instead, where it may wait: the receiving thread never does.
   */
  CompletableFuture<ByteBuffer> handleInline(RpcContext caller, int opcode, ByteBuffer request) {
    if (opcode == NodesProtocol.WATCH) {
      // Never waits: parks the answer, which a revocation or a timer completes.
      try {
        Wire.Reader r = new Wire.Reader(request, "nodes watch");
        long holder = r.i64("holder");
        long epoch = r.i64("epoch");
        long acked = r.i64("acked");
        long hold = r.i64("hold");
        r.end();
        return leases.watch(holder, epoch, acked, hold);
      } catch (RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
    }
    if (opcode != NodesProtocol.LOOKUP
        && opcode != NodesProtocol.LOOKUP_VERSIONED
        && opcode != NodesProtocol.LOOKUP_LEASED) {
      return null;
    }
    // hasQueuedThreads: a writer waiting for the lock gets it before more inline readers.
    if (ns.lock.hasQueuedThreads() || !ns.lock.readLock().tryLock()) {
      return null;
    }
    try {
      Wire.Reader r = new Wire.Reader(request, "nodes opcode " + opcode);
      return CompletableFuture.completedFuture(
          switch (opcode) {
            case NodesProtocol.LOOKUP -> lookupLocked(r);
            case NodesProtocol.LOOKUP_LEASED -> lookupLeasedLocked(r);
            default -> lookupVersionedLocked(r);
          });
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    } finally {
      ns.lock.readLock().unlock();
    }
  }

  ByteBuffer lookup(Wire.Reader r) {
    ns.lock.readLock().lock();
    try {
      return lookupLocked(r);
    } finally {
      ns.lock.readLock().unlock();
    }
  }

  ByteBuffer lookupVersioned(Wire.Reader r) {
    ns.lock.readLock().lock();
    try {
      return lookupVersionedLocked(r);
    } finally {
      ns.lock.readLock().unlock();
    }
  }

  ByteBuffer lookupLeased(Wire.Reader r) {
    ns.lock.readLock().lock();
    try {
      return lookupLeasedLocked(r);
    } finally {
      ns.lock.readLock().unlock();
    }
  }

  /**
   * The nodes of {@code path} below the root (the root's path: none); NOT_FOUND if there is none.
   */
  private List<Node> chain(String path) {
    List<Node> chain = ns.resolveChain(NodePath.parse(path));
    if (chain == null) {
      throw fail(Reason.NOT_FOUND, "no such node " + path);
    }
    return chain;
  }

  /** The answer for the last node of {@code chain}, with up to {@code count} block refs. */
  private NodeInfo info(List<Node> chain, String path, int count) {
    Node n = chain.isEmpty() ? ns.root : chain.get(chain.size() - 1);
    return tree.info(n, path, 0, Math.max(0, Math.min(count, NodesMaster.MAX_MAP)));
  }

  /**
   * A lookup plus a lease on its answer for the asking holder ({@link NodesMasterLeases}): granted
   * under the namespace's read lock with the nodes read, so no change is applied between the read
   * and the grant, and a change that starts later finds the lease. Containers are answered but not
   * leased: their size (children) changes with every create in them.
   */
  private ByteBuffer lookupLeasedLocked(Wire.Reader r) {
    String path = r.str("path");
    int count = r.i32("blocks");
    long holder = r.i64("holder");
    r.end();
    List<Node> chain = chain(path);
    NodeInfo info = info(chain, path, count);
    NodesMasterLeases.Grant g = leases.grant(holder, chain, !info.type().isContainer());
    Wire.Writer w = new Wire.Writer(160 + info.blocks().size() * 48 + chain.size() * 8);
    NodesProtocol.writeNode(w, info);
    w.i64(g.epoch()).i64(g.seq()).i64(g.leaseNanos());
    if (g.leaseNanos() == 0) {
      return w.i32(0).toBuffer();
    }
    w.i32(chain.size());
    for (Node c : chain) {
      w.i64(c.id);
    }
    return w.toBuffer();
  }

  /**
   * A lookup plus what a client needs to reuse its answer ({@link LookupVersions}): the words of
   * the nodes on the path, read under the namespace's read lock together with the nodes themselves.
   * Not cacheable when a word is odd (a change to that node is committing) or a node has no slot.
   */
  private ByteBuffer lookupVersionedLocked(Wire.Reader r) {
    String path = r.str("path");
    int count = r.i32("blocks");
    r.end();
    List<Node> chain = chain(path);
    NodeInfo info = info(chain, path, count);
    io.ferrite.fabric.RegionRef ref = ns.versions.ref();
    long[] words = new long[chain.size()];
    boolean cacheable = ref != null && !chain.isEmpty();
    for (int i = 0; i < chain.size() && cacheable; i++) {
      words[i] = ns.versions.read(chain.get(i).slot);
      cacheable = (words[i] & 1) == 0;
    }
    Wire.Writer w = new Wire.Writer(160 + info.blocks().size() * 48 + chain.size() * 12);
    NodesProtocol.writeNode(w, info);
    if (!cacheable) {
      return w.u8(0).toBuffer();
    }
    w.u8(1).i32(ref.regionId()).i64(ref.rkey()).i64(ref.length()).i32(chain.size());
    for (int i = 0; i < chain.size(); i++) {
      w.i32(chain.get(i).slot).i64(words[i]);
    }
    return w.toBuffer();
  }

  /**
   * Under the namespace's read lock (not the metadata lock: see {@link Namespace#lock}). A lookup
   * is linearizable at that lock: every change is one record applied under the write lock, and a
   * mutation that writes several (create then blocks; publish then trim) makes the node visible, or
   * replaces it, in exactly one of them.
   */
  private ByteBuffer lookupLocked(Wire.Reader r) {
    String path = r.str("path");
    int count = r.i32("blocks");
    r.end();
    NodePath.parse(path);
    return reply(
        tree.info(tree.existing(path), path, 0, Math.max(0, Math.min(count, NodesMaster.MAX_MAP))));
  }
}
