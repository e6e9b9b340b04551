package io.ferrite.nodes.master;

import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.proto.BlockRef;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Re-replication: brings every replicated File back to its count of copies after a loss (issue
 * #20). A copy is <i>missing</i> when its slot is marked lost ({@link NodesMasterLost}: its server
 * came back without the region) or its server was declared DEAD. For each missing copy, one job:
 *
 * <ol>
 *   <li>under the metadata lock: pick a surviving copy of the block as the source and allocate a
 *       new block (owner {@code nodes:<id>}, no session) on a server that holds none of the block's
 *       other copies (the kernel's {@code !} exclusion);
 *   <li>outside the lock, on this class's own thread: read the block's published bytes from the
 *       source and write them to the new block, one-sided, over the master's own connections to the
 *       servers ({@link MasterContext#connect});
 *   <li>under the lock: if the slot still holds the same missing copy, journal a BLOCKS record over
 *       it (which clears its lost mark) and free the old block if the node still owns it (a DEAD
 *       server's: quarantined by the kernel until the server is back); else free the new block.
 * </ol>
 *
 * <p><b>Why the master copies</b> (not a memory-server-side service): the master already knows
 * every copy, every server's state and the allocation, and has credentials for every server; a
 * server-side copier would need a connection from each server to every other and a protocol to
 * report back, for the same two one-sided ops. The cost is that the bytes pass through the master
 * (one block at a time, at most {@code blockSize} of heap-free direct buffer): a loss of a whole
 * server re-copies its blocks at the master's NIC rate, not the cluster's.
 *
 * <p><b>Restart.</b> Nothing is journaled beyond the usual records: a lost copy is a LOST mark
 * (replayed), a copy on a DEAD server is found again when the restarted master declares it DEAD; a
 * new block allocated but not yet in its slot when the master stopped is freed at start ({@link
 * NodesMasterLost#reconcile}), and its copy made again.
 *
 * <p><b>Writers.</b> A node with a writer is left until the writer releases it (a copy made from
 * bytes a writer still changes would be stale); while copies are missing, an append is refused
 * ({@code WRITE_LOCKED}, retryable).
 */
final class NodesMasterReplicas implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(NodesMasterReplicas.class.getName());

  private final Namespace ns;
  private final NodesMasterTree tree;
  private final MasterContext ctx;
  private final ScheduledThreadPoolExecutor worker;
  private final AtomicBoolean queued = new AtomicBoolean();

  /** Replicated nodes that may miss copies. Guarded by the metadata lock. */
  private final Set<Long> todo = new LinkedHashSet<>();

  /**
   * Nodes whose last copy failed -> when (nanoTime) to try them again: a source that cannot be read
   * (its server SIGKILLed, not yet DEAD) costs an allocation and a free per try, so not every
   * period. Touched only by the worker thread (in {@link #next}, which it runs).
   */
  private final Map<Long, Long> backoff = new HashMap<>();

  private static final long BACKOFF_NANOS = 500_000_000L;

  /**
   * Servers that registered since their link was opened (a new process, maybe at a new address):
   * the worker drops their link before its next use.
   */
  private final Set<Integer> registered = java.util.concurrent.ConcurrentHashMap.newKeySet();

  /** Connections by server id; touched only by the worker thread. */
  private final Map<Integer, FabricConnection> links = new HashMap<>();

  /** Why the last pass could not allocate (logged once); the worker thread's. */
  private String lastWait;

  /** Copies made again so far (for tests and describe). */
  volatile long copied;

  /** One copy to make: slot {@code slot} of node {@code id}, now {@code old}. */
  private record Job(long id, int slot, BlockRef old, BlockRef source, BlockRef fresh, long len) {}

  NodesMasterReplicas(Namespace ns, NodesMasterTree tree, MasterContext ctx, long periodMillis) {
    this.ns = ns;
    this.tree = tree;
    this.ctx = ctx;
    worker = new ScheduledThreadPoolExecutor(1, new NamedThreadFactory("nodes-replicate", true));
    worker.scheduleWithFixedDelay(this::run, periodMillis, periodMillis, TimeUnit.MILLISECONDS);
  }

  // ------------------------------------------------ under the metadata lock (callbacks, mutations)

  /** A replicated node lost copies (its slots are marked lost). */
  void degraded(long id) {
    todo.add(id);
    kick();
  }

  /** At start: every replicated node with a lost copy. */
  void scan() {
    for (Node n : ns.byId.values()) {
      if (n.replicas > 1 && NodesMasterTree.missingCopies(n, tree.dead) > 0) {
        todo.add(n.id);
      }
    }
    kick();
  }

  /** Server {@code serverId} was declared DEAD: its copies are missing until it is back. */
  void serverDead(int serverId) {
    Set<Integer> dead = new HashSet<>(tree.dead);
    dead.add(serverId);
    tree.dead = Set.copyOf(dead);
    scan();
  }

  /** Server {@code serverId} is ALIVE again: its copies (those it kept) are there again. */
  void serverRegistered(int serverId) {
    registered.add(serverId);
    if (tree.dead.contains(serverId)) {
      Set<Integer> dead = new HashSet<>(tree.dead);
      dead.remove(serverId);
      tree.dead = Set.copyOf(dead);
      scan(); // a block whose every copy was on DEAD servers may have a source again
    }
  }

  /** Replicated nodes with missing copies (visible ones), and the copies. */
  long[] underReplicated() {
    long nodes = 0;
    long copies = 0;
    for (Node n : ns.byId.values()) {
      if (n.replicas > 1 && n.visible && !n.detached) {
        int missing = NodesMasterTree.missingCopies(n, tree.dead);
        if (missing > 0) {
          nodes++;
          copies += missing;
        }
      }
    }
    return new long[] {nodes, copies};
  }

  private void kick() {
    if (queued.compareAndSet(false, true)) {
      try {
        worker.execute(this::run);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        queued.set(false); // closing
      }
    }
  }

  /** The next copy to make, its new block allocated; null when there is none now. */
  private Job next(MasterContext.Mutation m) {
    long bs = ctx.blockSize();
    Set<Integer> dead = tree.dead;
    for (Iterator<Long> it = todo.iterator(); it.hasNext(); ) {
      long id = it.next();
      Node n = ns.byId.get(id);
      if (n == null || n.replicas == 1) {
        it.remove();
        continue;
      }
      if (n.writer != 0) {
        continue; // after its writer releases it (the next period sees it)
      }
      Long retry = backoff.get(id);
      if (retry != null) {
        if (retry - System.nanoTime() > 0) {
          continue;
        }
        backoff.remove(id);
      }
      int r = n.replicas;
      for (int s = 0; s < n.blocks.size(); s++) {
        BlockRef old = n.blocks.get(s);
        if (!n.lost.get(s) && !dead.contains(old.serverId())) {
          continue;
        }
        int i = s / r;
        BlockRef source = null;
        StringBuilder exclude = new StringBuilder("!");
        for (int t = i * r; t < i * r + r; t++) {
          if (t == s) {
            continue;
          }
          BlockRef c = n.blocks.get(t);
          exclude.append(exclude.length() > 1 ? "," : "").append(c.serverId());
          if (source == null && !n.lost.get(t) && !dead.contains(c.serverId())) {
            source = c;
          }
        }
        if (source == null) {
          continue; // every copy gone (lost for good) or on DEAD servers (may come back)
        }
        List<BlockRef> got =
            m.allocate(0, 1, n.storageClass, false, Node.owner(id), exclude.toString());
        long len = Math.max(0, Math.min(bs, n.size - i * bs));
        return new Job(id, s, old, source, got.get(0), len);
      }
      it.remove(); // nothing this pass can make; a server's return or loss brings it back
    }
    return null;
  }

  // ------------------------------------------------------------------ the worker thread

  /** While set, nothing is copied (for tests). */
  volatile boolean paused;

  /** Makes every missing copy it can, one job at a time; never throws (a periodic task). */
  void run() {
    queued.set(false);
    if (paused) {
      return;
    }
    try {
      runJobs();
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "re-replication pass failed, tried again later", e);
    }
  }

  private void runJobs() {
    ByteBuffer buf = null;
    while (true) {
      Job j;
      try {
        j = ctx.mutate(this::next);
      } catch (RuntimeException e) {
        String why = String.valueOf(e.getMessage());
        if (!why.equals(lastWait)) { // once per reason, not once per period
          lastWait = why;
          LOG.log(
              System.Logger.Level.WARNING,
              "re-replication waits: cannot allocate a new copy now: {0}",
              why);
        }
        return; // NO_SPACE, fewer servers than copies: the next period tries again
      }
      lastWait = null;
      if (j == null) {
        return;
      }
      if (buf == null) {
        buf = ByteBuffer.allocateDirect((int) ctx.blockSize());
      }
      try {
        copy(j, buf);
      } catch (RuntimeException e) {
        // A server restarted (new address) or died: connect again next time.
        links.values().forEach(FabricConnection::close);
        links.clear();
        backoff.put(j.id(), System.nanoTime() + BACKOFF_NANOS);
        ctx.mutate(
            m -> {
              freeIfOwned(m, j.id(), j.fresh());
              return null;
            });
        // Usually transient: a server that just registered is ALIVE before it accepts its new
        // regions' keys (BAD_RKEY), a SIGKILLed one is not yet DEAD (UNAVAILABLE).
        LOG.log(
            System.Logger.Level.INFO,
            "re-replication of node {0} slot {1} failed, tried again shortly: {2}",
            j.id(),
            j.slot(),
            String.valueOf(FerriteException.unwrap(e)));
        return;
      }
      ctx.mutate(m -> install(j, m));
    }
  }

  /** Reads the published bytes of the source copy and writes them to the new block. */
  private void copy(Job j, ByteBuffer buf) {
    if (j.len() == 0) {
      return; // a block held ahead, past the size: nothing published in it
    }
    // One-sided ops read and write [position, limit) and leave both as they were.
    buf.clear().limit((int) j.len());
    BlockRef s = j.source();
    link(s.serverId()).readSync(s.region(), s.offset(), buf);
    BlockRef d = j.fresh();
    link(d.serverId()).writeSync(d.region(), d.offset(), buf);
  }

  private FabricConnection link(int serverId) {
    FabricConnection c = links.get(serverId);
    if (c != null && registered.remove(serverId)) {
      c.close();
      c = null;
    }
    if (c == null || !c.isOpen()) {
      c = ctx.connect(serverId);
      links.put(serverId, c);
    }
    return c;
  }

  /** Puts the new copy in its slot if the slot still misses the same copy; else frees it. */
  private Void install(Job j, MasterContext.Mutation m) {
    Node n = ns.byId.get(j.id());
    boolean still =
        n != null
            && n.writer == 0
            && j.slot() < n.blocks.size()
            && n.blocks.get(j.slot()).equals(j.old())
            && (n.lost.get(j.slot()) || tree.dead.contains(j.old().serverId()));
    if (!still) {
      freeIfOwned(m, j.id(), j.fresh());
      return null;
    }
    boolean wasLost = n.lost.get(j.slot());
    // Lookups kept by clients name the old copy: a version bump and a lease revocation make them
    // look again (a read through the old ref would fall back to another copy anyway).
    int[] changing = ns.versions.begin(n);
    try {
      m.commit(Namespace.blocks(n.id, j.slot(), List.of(j.fresh())));
    } finally {
      ns.versions.end(changing);
    }
    if (!wasLost) {
      try {
        m.free(Node.owner(n.id), List.of(j.old())); // a DEAD server's: quarantined until back
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.DEBUG, "old copy {0} not freed: {1}", j.old(), e.getMessage());
      }
    }
    copied++;
    if (ns.leases != null) {
      Set<Long> mine = new HashSet<>();
      ns.leases.invalidate(new long[] {n.id}, mine).whenComplete((v, t) -> ns.leases.release(mine));
    }
    return null;
  }

  /**
   * Frees {@code b} if node {@code id} still owns it: a node removed meanwhile may have had every
   * block it owned freed by the reclaimer already.
   */
  private static void freeIfOwned(MasterContext.Mutation m, long id, BlockRef b) {
    if (m.owned(Node.owner(id)).contains(b)) {
      m.free(Node.owner(id), List.of(b));
    }
  }

  @Override
  public void close() {
    worker.shutdownNow();
    try {
      worker.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (FabricConnection c : links.values()) {
      c.close();
    }
    links.clear();
  }
}
