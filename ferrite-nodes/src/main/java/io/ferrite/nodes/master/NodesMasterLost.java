package io.ferrite.nodes.master;

import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.master.MasterExtension.LostRegion;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.nodes.NodeInfo;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Lost memory in the nodes face: declared by the kernel, never guessed (issue #20).
 *
 * <p>When a memory server comes back without a region (a clean stop or a reboot deletes its DRAM
 * region files; a new process makes new ones), the kernel frees the blocks that were in it and
 * tells every face which blocks it lost, by owner ({@link #regionsLost}). Each node that held one
 * is marked lost with a journaled {@link Namespace#LOST} record naming the block indices: its block
 * refs stay in place (so index {@code i} still means bytes {@code [i * blockSize, (i + 1) *
 * blockSize)}), but they are never read, written or freed again. Readers get the lost byte ranges
 * with every lookup and answer {@code DATA_LOST} for a read that touches one; the ranges that
 * survived still read (a File's blocks are independent one-sided reads, so nothing forbids it; a
 * KeyValue's value is read whole, so any loss makes its get fail). Writes to a lost node (append,
 * MAP with allocation, PUBLISH) answer {@code DATA_LOST}: appending after a hole would publish a
 * file whose middle cannot be read. Removing it works; its surviving blocks are freed by the usual
 * reclamation, which frees what {@link MasterContext.Mutation#owned} lists, so a lost block is
 * never freed twice.
 *
 * <p>A master restart does not hear of a loss journaled before (or before this code existed): at
 * start, {@link #reconcile} compares every node's blocks with what the kernel says the node owns,
 * and marks the difference lost the same way, once.
 *
 * <p>Runs under the master's metadata lock (the kernel's callback, or a mutation): cheap, journals
 * through the mutation, never blocks. Lookup leases on the marked nodes are revoked afterwards,
 * asynchronously (as when a writer's session ends): until their holders hear of it, a cached lookup
 * may still name the old refs; a read through it fails at the server with BAD_RKEY or
 * NO_SUCH_REGION, and the reader then asks the master and answers DATA_LOST (NodeReader).
 */
final class NodesMasterLost {
  private static final System.Logger LOG = System.getLogger(NodesMasterLost.class.getName());

  /** How many lost paths the LOST_SUMMARY answer and the console name at most. */
  static final int MAX_NAMED = 32;

  private static final String OWNER_PREFIX = "nodes:";

  private final Namespace ns;
  private final NodesMasterTree tree;

  /** Told of every replicated node that lost copies (set by the master: re-replication). */
  java.util.function.LongConsumer degraded = id -> {};

  /** Nodes the last {@link #reconcile} marked (for tests; written before the master serves). */
  int reconciled;

  NodesMasterLost(Namespace ns, NodesMasterTree tree) {
    this.ns = ns;
    this.tree = tree;
  }

  /** The kernel's callback: marks the nodes that held {@code lost}'s blocks lost. */
  void regionsLost(int serverId, List<LostRegion> lost, MasterContext.Mutation m) {
    // Owner -> the refs it lost: one set per node, however many regions it spanned.
    Map<Long, Set<BlockRef>> byNode = new java.util.HashMap<>();
    for (LostRegion r : lost) {
      for (Map.Entry<String, List<BlockRef>> e : r.blocksByOwner().entrySet()) {
        long id = idOf(e.getKey());
        if (id > 0) {
          byNode.computeIfAbsent(id, k -> new HashSet<>()).addAll(e.getValue());
        }
      }
    }
    List<Node> marked = new ArrayList<>();
    for (Map.Entry<Long, Set<BlockRef>> e : byNode.entrySet()) {
      Node n = ns.byId.get(e.getKey());
      if (n == null) {
        continue; // removed, awaiting reclaim: the reclaimer frees only what it still owns
      }
      Set<BlockRef> gone = e.getValue();
      if (mark(n, i -> gone.contains(n.blocks.get(i)), m)) {
        if (n.replicas > 1) {
          degraded.accept(n.id); // its other copies stay: re-replication makes these again
        }
        marked.add(n);
      }
    }
    if (!marked.isEmpty()) {
      LOG.log(
          System.Logger.Level.WARNING,
          "server {0} came back without {1} region(s): {2} node(s) lost data or (replicated) block"
              + " copies: {3}",
          serverId,
          lost.size(),
          marked.size(),
          names(marked));
      revokeLeases(marked);
    }
  }

  /**
   * At start: every block a node references that the kernel no longer lists as its owner's is lost
   * (a loss journaled by the kernel before this master's restart, or by a master without this
   * code). Journals one LOST record per node that has newly lost blocks.
   */
  void reconcile(MasterContext.Mutation m) {
    List<Node> marked = new ArrayList<>();
    reconciled = 0;
    for (Node n : List.copyOf(ns.byId.values())) {
      if (n.blocks.isEmpty()) {
        continue;
      }
      List<BlockRef> ownedList = m.owned(Node.owner(n.id));
      Set<BlockRef> owned = new HashSet<>(ownedList);
      if (mark(n, i -> !owned.contains(n.blocks.get(i)), m)) {
        marked.add(n);
      }
      if (ownedList.size() > n.blocks.size() - n.lost.cardinality()) {
        // Owned but not referenced: a new copy allocated by re-replication whose slot the master
        // did not journal before it stopped (NodesMasterReplicas). Freed; the copy is made again.
        Set<BlockRef> used = new HashSet<>(n.blocks);
        List<BlockRef> stray = new ArrayList<>();
        for (BlockRef b : ownedList) {
          if (!used.contains(b)) {
            stray.add(b);
          }
        }
        if (!stray.isEmpty()) {
          m.free(Node.owner(n.id), stray);
        }
      }
    }
    reconciled = marked.size();
    if (!marked.isEmpty()) {
      LOG.log(
          System.Logger.Level.WARNING,
          "{0} node(s) reference blocks the kernel no longer gives them (memory lost before this"
              + " start): marked lost: {1}",
          marked.size(),
          names(marked));
    }
  }

  /** Journals the blocks of {@code n} that {@code gone} says are lost and not yet marked. */
  private boolean mark(Node n, java.util.function.IntPredicate gone, MasterContext.Mutation m) {
    BitSet fresh = new BitSet();
    for (int i = 0; i < n.blocks.size(); i++) {
      if (!n.lost.get(i) && gone.test(i)) {
        fresh.set(i);
      }
    }
    if (fresh.isEmpty()) {
      return false;
    }
    // A reader caching this node's lookup by version word sees it change, and looks it up again.
    int[] changing = ns.versions.begin(n);
    try {
      m.commit(Namespace.lost(n.id, fresh));
    } finally {
      ns.versions.end(changing);
    }
    return true;
  }

  private void revokeLeases(List<Node> marked) {
    if (ns.leases == null) {
      return;
    }
    long[] ids = marked.stream().mapToLong(n -> n.id).toArray();
    Set<Long> mine = new HashSet<>();
    ns.leases.invalidate(ids, mine).whenComplete((v, t) -> ns.leases.release(mine));
  }

  /** The node id of a nodes owner name, or -1 for another face's owner. */
  static long idOf(String owner) {
    if (!owner.startsWith(OWNER_PREFIX)) {
      return -1;
    }
    try {
      return Long.parseLong(owner, OWNER_PREFIX.length(), owner.length(), 10);
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private static List<String> names(List<Node> nodes) {
    List<String> out = new ArrayList<>();
    for (Node n : nodes) {
      if (out.size() == MAX_NAMED) {
        out.add("...");
        break;
      }
      out.add(name(n));
    }
    return out;
  }

  private static String name(Node n) {
    return n.detached ? n.name + " (a keyvalue being put)" : n.path();
  }

  /**
   * Visible lost nodes, their lost bytes of data and blocks, and the paths of up to {@link
   * #MAX_NAMED} (sorted).
   */
  record Summary(long nodes, long bytes, long blocks, List<String> paths) {}

  /** One pass over the nodes (under the metadata lock). */
  Summary summary() {
    long nodes = 0;
    long bytes = 0;
    long blocks = 0;
    List<String> paths = new ArrayList<>();
    for (Node n : ns.byId.values()) {
      if (n.lost.isEmpty() || !n.visible || n.detached) {
        continue; // one being written is dropped when its writer gives up: nothing published lost
      }
      int gone = NodesMasterTree.lostBlocks(n).cardinality();
      if (gone == 0) {
        continue; // copies lost, another copy of every block kept: under-replicated, not lost
      }
      nodes++;
      blocks += gone;
      for (NodeInfo.LostRange r : tree.lostRanges(n)) {
        bytes += r.to() - r.from();
      }
      if (paths.size() < MAX_NAMED) {
        paths.add(name(n));
      }
    }
    java.util.Collections.sort(paths);
    return new Summary(nodes, bytes, blocks, paths);
  }

  /**
   * LOST_SUMMARY: {@code nodes i64 | bytes i64 | blocks i64 | n i32 | path str* | underReplicated
   * i64 | missingCopies i64} ({@code under}: {@link NodesMasterReplicas#underReplicated}).
   */
  ByteBuffer summaryAnswer(long[] under) {
    Summary s = summary();
    Wire.Writer w = new Wire.Writer(80 + 64 * s.paths().size());
    w.i64(s.nodes()).i64(s.bytes()).i64(s.blocks()).i32(s.paths().size());
    for (String p : s.paths()) {
      w.str(p);
    }
    w.i64(under[0]).i64(under[1]);
    return w.toBuffer();
  }
}
