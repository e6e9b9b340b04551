package io.ferrite.nodes.master;

import static io.ferrite.nodes.master.NodesMasterTree.checkSession;
import static io.ferrite.nodes.master.NodesMasterTree.fail;
import static io.ferrite.nodes.master.NodesMasterTree.now;
import static io.ferrite.nodes.master.NodesMasterTree.reply;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.master.ProvisionalAnswer;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.nodes.NodeInfo;
import io.ferrite.nodes.NodePath;
import io.ferrite.nodes.NodeType;
import io.ferrite.nodes.NodesConfig;
import io.ferrite.nodes.NodesException.Reason;
import io.ferrite.nodes.NodesProtocol;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.NavigableMap;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * The master half of the nodes face: NodeKernel's metadata plane (paper §3.2.1, §4.1) as a {@link
 * MasterExtension}. It serves {@code create}, {@code lookup}, {@code remove}, {@code move} and
 * {@code map} (plus publish, open-for-write, list and abort) on service {@link
 * NodesProtocol#SERVICE}; {@code register} is the kernel's.
 *
 * <p>Unlike Crail: names are real names (no 32-bit hashes), {@code move} is one journaled record
 * applied under the master's lock (a reader finds the node at the old path or the new one, never at
 * neither), a removed node's blocks are freed after a grace period (so a reader that looked the
 * node up just before has time to finish), and a File or KeyValue is invisible until its writer
 * publishes it: if the writer's session ends first, the node and its blocks are dropped.
 */
public final class NodesMaster implements MasterExtension {
  private static final System.Logger LOG = System.getLogger(NodesMaster.class.getName());

  /** The most blocks one MAP may return or allocate. */
  static final int MAX_MAP = 1024;

  private final Namespace ns = new Namespace();
  private final Duration reclaimGrace;
  private MasterContext ctx;
  private final NodesMasterTree tree = new NodesMasterTree(ns);
  private final NodesMasterLost lost = new NodesMasterLost(ns, tree);

  /** The lookup lease given, or null: the master's {@code nodes.lookup.lease}, read at start. */
  private final Duration lookupLease;

  // Made at start (before the master serves, which publishes them to the RPC threads).
  private NodesMasterLeases leases;
  private NodesMasterLookups lookups;
  private NodesMasterWrites writes;
  private NodesMasterReplicas replicas;

  /** How often re-replication looks for missing copies besides when told of a loss. */
  private long replicatePeriodMillis = 200;

  /** Re-replication's period (tests: shorter); before start. */
  public NodesMaster replicatePeriod(Duration period) {
    this.replicatePeriodMillis = Math.max(1, period.toMillis());
    return this;
  }

  /**
   * With the default grace of 2 s before a removed node's blocks are reused, and the lookup lease
   * of the master's configuration ({@code nodes.lookup.lease}, 2 s by default).
   */
  public NodesMaster() {
    this(Duration.ofSeconds(2));
  }

  /** With the lookup lease of the master's configuration ({@code nodes.lookup.lease}). */
  public NodesMaster(Duration reclaimGrace) {
    this.reclaimGrace = reclaimGrace;
    this.lookupLease = null;
  }

  /**
   * @param reclaimGrace how long a removed node's blocks stay untouched
   * @param lookupLease how long a client may answer a lookup from its cache without hearing from
   *     the master: what a dead client can cost a writer (docs/NODES.md, "Leased lookups")
   */
  public NodesMaster(Duration reclaimGrace, Duration lookupLease) {
    this.reclaimGrace = reclaimGrace;
    this.lookupLease = java.util.Objects.requireNonNull(lookupLease, "lookupLease");
  }

  @Override
  public int serviceId() {
    return NodesProtocol.SERVICE;
  }

  @Override
  public String name() {
    return "nodes";
  }

  /** A top-level name of the namespace, visible or still being written (under the lock). */
  @Override
  public boolean holdsName(String kind, String name) {
    return kind.equals(io.ferrite.kernel.proto.PlacementProtocol.NODES)
        && ns.root.children.containsKey(name);
  }

  @Override
  public void apply(ByteBuffer record) {
    ns.apply(record);
  }

  @Override
  public List<byte[]> snapshot() {
    return ns.snapshot();
  }

  /** The lost nodes and their bytes ({@code ferrite status}), empty when none. */
  @Override
  public java.util.Map<String, Long> lost() {
    NodesMasterLost.Summary l = lost.summary();
    long[] under = replicas.underReplicated();
    java.util.Map<String, Long> out = new java.util.LinkedHashMap<>();
    if (l.nodes() > 0) {
      out.put("nodes", l.nodes());
      out.put("bytes", l.bytes());
    }
    if (under[0] > 0) {
      // Copies missing, being made again: ferrite status prints it apart from what was lost.
      out.put(io.ferrite.kernel.proto.ClusterStatus.UNDER_REPLICATED, under[0]);
    }
    return out;
  }

  /**
   * The console's view: visible nodes by type, the bytes of files and key-values, the blocks they
   * hold, open writers, and removed nodes whose blocks wait to be freed. One pass over the nodes
   * (under the metadata lock, once a second while a console is open).
   */
  @Override
  public java.util.Map<String, Object> describe() {
    java.util.Map<String, Long> byType = new java.util.TreeMap<>();
    long bytes = 0;
    long blocks = 0;
    for (Node n : ns.byId.values()) {
      if (n == ns.root || !n.visible || n.detached) {
        continue;
      }
      byType.merge(n.type.label(), 1L, Long::sum);
      if (!n.type.isContainer()) {
        bytes += n.size;
      }
      blocks += n.blocks.size();
    }
    long writers = 0;
    long ephemeral = 0;
    for (java.util.Set<Long> w : ns.bySession.values()) {
      for (Long id : w) {
        Node n = ns.byId.get(id);
        if (n != null && n.type == NodeType.DIRECTORY) {
          ephemeral++; // its owner, not a writer
        } else {
          writers++;
        }
      }
    }
    java.util.Map<String, Object> out = new java.util.LinkedHashMap<>();
    out.put("nodes", byType);
    out.put("bytes", bytes);
    out.put("blocks", blocks);
    out.put("open writers", writers);
    out.put("ephemeral directories", ephemeral);
    out.put("awaiting reclaim", ns.pendingReclaim.size());
    NodesMasterLost.Summary l = lost.summary();
    out.put("lost nodes", l.nodes());
    out.put("lost bytes", l.bytes());
    long[] under = replicas.underReplicated();
    out.put("under-replicated nodes", under[0]);
    out.put("missing copies", under[1]);
    out.put("copies made again", replicas.copied);
    if (l.nodes() > 0) {
      out.put("lost", l.paths());
    }
    return out;
  }

  @Override
  public void start(MasterContext context) {
    this.ctx = context;
    this.meters =
        io.ferrite.kernel.ops.FaceMeters.of(context.metrics(), "nodes")
            .byOpcode(
                java.util.Map.ofEntries(
                    java.util.Map.entry(NodesProtocol.CREATE, "create"),
                    java.util.Map.entry(NodesProtocol.LOOKUP, "lookup"),
                    java.util.Map.entry(NodesProtocol.LOOKUP_VERSIONED, "lookup"),
                    java.util.Map.entry(NodesProtocol.LOOKUP_LEASED, "lookup"),
                    java.util.Map.entry(NodesProtocol.REMOVE, "remove"),
                    java.util.Map.entry(NodesProtocol.MOVE, "move"),
                    java.util.Map.entry(NodesProtocol.MAP, "map"),
                    java.util.Map.entry(NodesProtocol.PUBLISH, "publish"),
                    java.util.Map.entry(NodesProtocol.OPEN_WRITE, "open_write"),
                    java.util.Map.entry(NodesProtocol.LIST, "list"),
                    java.util.Map.entry(NodesProtocol.ABORT, "abort"),
                    java.util.Map.entry(NodesProtocol.WATCH, "watch"),
                    java.util.Map.entry(NodesProtocol.LOST_SUMMARY, "lost_summary")));
    tree.blockSize(context.blockSize());
    leases =
        new NodesMasterLeases(
            lookupLease != null ? lookupLease : NodesConfig.lookupLease(context.config()));
    lookups = new NodesMasterLookups(ns, tree, leases);
    ns.leases = leases;
    leases.recovered(ns.nextId());
    replicas = new NodesMasterReplicas(ns, tree, context, replicatePeriodMillis);
    lost.degraded = replicas::degraded;
    // Before the first provisional CREATE answer can leave (the master waits for this record's
    // fsync before it sends any: MasterService), skip the ids a crash may have forgotten.
    context.mutate(
        m -> {
          m.commit(Namespace.nextId(ns.lastId + Namespace.ID_GAP_PER_START));
          // Losses the kernel journaled while no nodes master heard (before a restart, or before
          // this code): see NodesMasterLost.
          lost.reconcile(m);
          replicas.scan(); // copies lost before this start: made again
          return null;
        });
    try {
      ns.versions.attach(context.createRegion("versions", 8L * LookupVersions.SLOTS));
    } catch (FerriteException e) {
      LOG.log(
          System.Logger.Level.INFO,
          "no version region, clients will not cache lookups: {0}",
          e.getMessage());
    }
    writes = new NodesMasterWrites(ns, tree, context, reclaimGrace);
    // Sessions the journal names as writers or owners but the kernel no longer has (it closed
    // them, but the nodes' records of that end did not reach the journal, or the kernel's state
    // was rebuilt apart from this namespace's): they ended, so what they held goes now, as at
    // their end. A session the kernel still has got a fresh lease at recovery: its client renews
    // it, or it expires and sessionClosed runs. Either way nothing stays owned forever.
    context.mutate(
        m -> {
          for (Long s : List.copyOf(ns.bySession.keySet())) {
            if (!m.sessionOpen(s)) {
              writes.sessionClosed(s, m);
            }
          }
          return null;
        });
  }

  @Override
  public void stop() {
    if (replicas != null) {
      replicas.close();
    }
    if (writes != null) {
      writes.close();
    }
    if (leases != null) {
      leases.close();
    }
  }

  /** The lookup lease granted to clients (after start; for tests). */
  public Duration lookupLease() {
    return Duration.ofNanos(leases.leaseNanos());
  }

  /** Leases revoked so far, and holders whose lease ran out while a writer waited (for tests). */
  public long[] leaseCounts() {
    return leases.counts();
  }

  /**
   * Nodes this master's start found referencing blocks the kernel no longer gives them, and marked
   * lost (for tests: 0 when every loss was journaled before).
   */
  public int reconciledAtStart() {
    return lost.reconciled;
  }

  /** Nodes removed but whose blocks are not yet freed (for tests). */
  public int pendingReclaims() {
    return writes.pendingReclaims();
  }

  /** Frees the blocks of nodes removed longer than the grace period ago. */
  void reclaim() {
    writes.reclaim();
  }

  @Override
  public void regionsLost(
      int serverId, List<MasterExtension.LostRegion> regions, MasterContext.Mutation m) {
    lost.regionsLost(serverId, regions, m);
  }

  @Override
  public void serverDead(int serverId, MasterContext.Mutation m) {
    replicas.serverDead(serverId);
  }

  @Override
  public void serverRegistered(int serverId, long incarnation, MasterContext.Mutation m) {
    replicas.serverRegistered(serverId);
  }

  /** Holds re-replication (for tests: a loss seen by a master that then restarts). */
  public void pauseReplication(boolean paused) {
    replicas.paused = paused;
  }

  /** Block copies re-replication made so far (for tests). */
  public long copiesMade() {
    return replicas.copied;
  }

  @Override
  public void sessionClosed(long sessionId, MasterContext.Mutation m) {
    writes.sessionClosed(sessionId, m);
  }

  @Override
  public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
    meters.count(opcode);
    if (opcode == NodesProtocol.WATCH) {
      return lookups.handleInline(caller, opcode, request);
    }
    try {
      if (opcode == NodesProtocol.CREATE) {
        return create(new Wire.Reader(request, "nodes opcode " + opcode));
      }
      return CompletableFuture.completedFuture(dispatch(opcode, request));
    } catch (NodesMasterLeases.Held h) {
      // Some client may answer a lookup of a node this mutation changes from its cache: revoke
      // those leases, then run it again (nothing was committed). The request is copied: the
      // fabric may reuse its buffer once this returns.
      ByteBuffer copy = ByteBuffer.allocate(request.remaining());
      copy.put(request.duplicate()).flip();
      Set<Long> mine = new HashSet<>();
      return retry(opcode, copy, h.ids, mine, io.ferrite.kernel.master.RequestScope.current())
          .whenComplete((v, t) -> leases.release(mine));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * Runs a mutation again once the leases on {@code ids} are revoked, on the leases' thread, within
   * the caller's request scope (its request id: the kernel remembers the answer of the mutation for
   * the caller's retries, whichever thread commits it).
   */
  private CompletableFuture<ByteBuffer> retry(
      int opcode,
      ByteBuffer request,
      long[] ids,
      Set<Long> mine,
      io.ferrite.kernel.master.RequestScope scope) {
    return leases
        .invalidate(ids, mine)
        .thenCompose(
            v -> {
              NodesMasterLeases.MINE.set(mine);
              try {
                return CompletableFuture.completedFuture(
                    io.ferrite.kernel.master.RequestScope.within(
                        scope, () -> dispatch(opcode, request.duplicate())));
              } catch (NodesMasterLeases.Held h) {
                return retry(opcode, request, h.ids, mine, scope);
              } catch (RuntimeException e) {
                return CompletableFuture.failedFuture(e);
              } finally {
                NodesMasterLeases.MINE.remove();
              }
            });
  }

  private ByteBuffer dispatch(int opcode, ByteBuffer request) {
    Wire.Reader r = new Wire.Reader(request, "nodes opcode " + opcode);
    return switch (opcode) {
        // Re-run after a lease revocation: the answer waits for the fsync like any other.
      case NodesProtocol.CREATE -> Futures.join(create(r));
      case NodesProtocol.LOOKUP -> lookups.lookup(r);
      case NodesProtocol.LOOKUP_VERSIONED -> lookups.lookupVersioned(r);
      case NodesProtocol.LOOKUP_LEASED -> lookups.lookupLeased(r);
      case NodesProtocol.REMOVE -> remove(r);
      case NodesProtocol.MOVE -> move(r);
      case NodesProtocol.MAP -> writes.map(r);
      case NodesProtocol.PUBLISH -> writes.publish(r);
      case NodesProtocol.OPEN_WRITE -> writes.openWrite(r);
      case NodesProtocol.LIST -> list(r);
      case NodesProtocol.ABORT -> writes.abort(r);
      case NodesProtocol.LOST_SUMMARY -> {
        r.end();
        yield ctx.mutate(m -> lost.summaryAnswer(replicas.underReplicated()));
      }
      default ->
          throw new FerriteException(
              ErrorCode.UNKNOWN_OPCODE, "nodes service has no opcode " + opcode);
    };
  }

  private static boolean published(NodeType type, byte[] inline) {
    return !type.hasData() || inline != null;
  }

  /**
   * CREATE. The answer for a data node created open and empty (no inline value, no preallocated
   * blocks: a user's File create) is a {@link ProvisionalAnswer}: the node is invisible until its
   * PUBLISH, holds no blocks, and its MAPs and PUBLISH are answered only after the fsync that
   * covers this record too, so a create-then-close costs one fsync (see ProvisionalAnswer).
   */
  private CompletableFuture<ByteBuffer> create(Wire.Reader r) {
    String path = r.str("path");
    NodeType type = NodeType.fromWire(r.u8("type"));
    int flags = r.u8("flags");
    String cls = r.str("class");
    String loc = r.str("location");
    long session = r.i64("session");
    int prealloc = r.i32("preallocate");
    byte[] inline = r.u8("inline?") == 1 ? r.bytes("inline") : null;
    int replicas = r.remaining() > 0 ? r.u8("replicas") : 1; // absent from older clients
    r.end();
    List<String> comps = NodePath.parse(path);
    if (replicas < 1 || replicas > NodesProtocol.MAX_REPLICAS) {
      throw fail(
          Reason.INVALID_ARGUMENT,
          "replicas: " + replicas + " (expected: 1 to " + NodesProtocol.MAX_REPLICAS + ")");
    }
    if (replicas > 1 && type != NodeType.FILE) {
      throw fail(
          Reason.INVALID_ARGUMENT,
          "replicas: " + replicas + " for a " + type.label() + " (expected: 1; Files are copied)");
    }
    boolean ephemeral = (flags & NodesProtocol.FLAG_EPHEMERAL) != 0;
    if (ephemeral && type != NodeType.DIRECTORY) {
      throw fail(
          Reason.INVALID_ARGUMENT,
          "ephemeral: a " + type.label() + " (expected: a Directory; only Directories are owned)");
    }
    if (comps.isEmpty()) {
      throw fail(Reason.ALREADY_EXISTS, "/ is the root directory");
    }
    if (prealloc < 0 || prealloc > MAX_MAP) {
      throw fail(
          Reason.INVALID_ARGUMENT,
          "preallocate: " + prealloc + " (expected: 0 to " + MAX_MAP + ")");
    }
    if (inline != null && (type != NodeType.KEYVALUE || inline.length > NodesProtocol.MAX_INLINE)) {
      throw fail(
          Reason.INVALID_ARGUMENT,
          "an inline value is for KeyValues up to " + NodesProtocol.MAX_INLINE + " B");
    }
    String name = comps.get(comps.size() - 1);
    return ctx.mutate(
        m -> {
          Node parent = tree.parentOf(comps, path);
          if (!parent.type.accepts(type)) {
            throw fail(
                Reason.WRONG_CONTAINER,
                "cannot create a "
                    + type.label()
                    + " in "
                    + parent.path()
                    + ": a "
                    + parent.type.label()
                    + " holds "
                    + parent.type.acceptsDescription());
          }
          Node old = parent.children.get(name);
          if (old != null && type != NodeType.KEYVALUE) {
            throw fail(
                Reason.ALREADY_EXISTS,
                path + (old.visible ? " exists" : " is being created by another writer"));
          }
          boolean data = type.hasData();
          if (data || ephemeral) {
            checkSession(m, session);
          }
          if (replicas > 1) {
            long alive = NodesMasterWrites.alive(m);
            if (alive < replicas) {
              throw fail(
                  Reason.INVALID_ARGUMENT,
                  "replicas: "
                      + replicas
                      + " for "
                      + path
                      + " (expected: at most the "
                      + alive
                      + " ALIVE memory servers: each copy of a block goes to another server)");
            }
          }
          // A KeyValue put with its value inline replaces the old one at once.
          long[] entered = ns.leases.enter(published(type, inline) ? old : null);
          long id = ns.nextId();
          boolean published = !data || inline != null;
          Node n =
              new Node(
                  id,
                  type,
                  cls,
                  loc,
                  type != NodeType.TABLE || (flags & NodesProtocol.FLAG_ENUMERABLE) != 0,
                  published,
                  // An ephemeral Directory's owner is kept as its writer: journaled in CREATE,
                  // indexed by session (Namespace.bySession), dropped when the session ends.
                  published && !ephemeral ? 0 : session,
                  now());
          n.replicas = replicas;
          n.name = name;
          n.parent = parent;
          List<BlockRef> blocks;
          try {
            blocks =
                prealloc > 0 && inline == null
                    ? writes.allocate(m, session, n, prealloc)
                    : List.of();
          } catch (RuntimeException e) {
            ns.leases.exit(entered);
            throw e;
          }
          n.detached = type == NodeType.KEYVALUE && !published;
          if (inline != null) {
            n.inline = inline;
            n.size = inline.length;
          }
          int[] changing = ns.versions.begin(published ? old : null);
          try {
            m.commit(Namespace.create(n, parent.id));
            if (!blocks.isEmpty()) {
              m.commit(Namespace.blocks(id, 0, blocks));
            }
          } finally {
            ns.versions.end(changing);
            ns.leases.exit(entered);
          }
          ByteBuffer answer =
              reply(tree.info(ns.byId.get(id), path, 0, NodesProtocol.LOOKUP_BLOCKS + prealloc));
          return !published && blocks.isEmpty()
              ? ProvisionalAnswer.of(answer)
              : CompletableFuture.completedFuture(answer);
        });
  }

  /**
   * LOOKUP and LOOKUP_VERSIONED, while the namespace's lock is free: see {@link
   * NodesMasterLookups}.
   */
  @Override
  public CompletableFuture<ByteBuffer> handleInline(
      RpcContext caller, int opcode, ByteBuffer request) {
    CompletableFuture<ByteBuffer> f = lookups.handleInline(caller, opcode, request);
    if (f != null) {
      meters.count(opcode); // a declined call is counted once, by handle
    }
    return f;
  }

  /**
   * ferrite.face.ops{face=nodes} of the served opcodes (the three lookups as one op); set in start,
   * before any request.
   */
  private io.ferrite.kernel.ops.FaceMeters.ByOpcode meters;

  private ByteBuffer remove(Wire.Reader r) {
    String path = r.str("path");
    boolean recursive = r.u8("recursive") == 1;
    r.end();
    if (NodePath.parse(path).isEmpty()) {
      throw fail(Reason.INVALID_PATH, "the root directory cannot be removed");
    }
    return ctx.mutate(
        m -> {
          Node n = tree.existing(path);
          if (n.type.isContainer() && !n.children.isEmpty() && !recursive) {
            throw fail(
                Reason.NOT_EMPTY,
                path + " is a " + n.type.label() + " with " + n.children.size() + " children");
          }
          int count = count(n);
          // Descendants need no bump: every path to them goes through n.
          long[] entered = ns.leases.enter(n);
          int[] changing = ns.versions.begin(n);
          try {
            m.commit(Namespace.remove(n.id, now()));
          } finally {
            ns.versions.end(changing);
            ns.leases.exit(entered);
          }
          return new Wire.Writer().i32(count).toBuffer();
        });
  }

  private static int count(Node n) {
    int c = 1;
    for (Node k : n.children.values()) {
      c += count(k);
    }
    return c;
  }

  private ByteBuffer move(Wire.Reader r) {
    String src = r.str("src");
    String dst = r.str("dst");
    r.end();
    List<String> sc = NodePath.parse(src);
    List<String> dc = NodePath.parse(dst);
    if (sc.isEmpty() || dc.isEmpty()) {
      throw fail(Reason.INVALID_MOVE, "the root directory cannot be moved or replaced");
    }
    String name = dc.get(dc.size() - 1);
    return ctx.mutate(
        m -> {
          Node n = tree.existing(src);
          Node to = tree.parentOf(dc, dst);
          for (Node a = to; a != null; a = a.parent) {
            if (a == n) {
              throw fail(Reason.INVALID_MOVE, "cannot move " + src + " into itself (" + dst + ")");
            }
          }
          if (!to.type.accepts(n.type)) {
            throw fail(
                Reason.WRONG_CONTAINER,
                "cannot move a "
                    + n.type.label()
                    + " into "
                    + to.path()
                    + ": a "
                    + to.type.label()
                    + " holds "
                    + to.type.acceptsDescription());
          }
          Node old = to.children.get(name);
          if (old == n) {
            return reply(tree.info(n, dst, 0, 0));
          }
          if (old != null
              && !(old.type == NodeType.KEYVALUE && n.type == NodeType.KEYVALUE && old.visible)) {
            throw fail(Reason.ALREADY_EXISTS, dst + " exists");
          }
          long[] entered = ns.leases.enter(n, old);
          int[] changing = ns.versions.begin(n, old);
          try {
            m.commit(Namespace.move(n.id, to.id, name, now()));
          } finally {
            ns.versions.end(changing);
            ns.leases.exit(entered);
          }
          return reply(tree.info(n, dst, 0, 0));
        });
  }

  private ByteBuffer list(Wire.Reader r) {
    String path = r.str("path");
    String after = r.str("after");
    int max = r.i32("max");
    boolean withBlocks = r.u8("blocks") == 1;
    r.end();
    NodePath.parse(path);
    int limit = Math.max(1, Math.min(max, NodesProtocol.MAX_LIST_PAGE));
    return ctx.mutate(
        m -> {
          Node n = tree.existing(path);
          if (!n.type.isContainer()) {
            throw fail(Reason.WRONG_TYPE, path + " is a " + n.type.label() + ", not a container");
          }
          Wire.Writer w = new Wire.Writer(64 * limit);
          if (!n.enumerable) {
            return w.u8(0).i32(0).toBuffer();
          }
          NavigableMap<String, Node> kids = (NavigableMap<String, Node>) n.children;
          Iterator<Node> it =
              (after.isEmpty() ? kids : kids.tailMap(after, false)).values().iterator();
          List<NodeInfo> page = new ArrayList<>();
          while (it.hasNext() && page.size() < limit) {
            Node c = it.next();
            if (c.visible) {
              page.add(tree.info(c, c.name, 0, withBlocks ? MAX_MAP * 64 : 0));
            }
          }
          w.u8(it.hasNext() ? 1 : 0).i32(page.size());
          for (NodeInfo i : page) {
            NodesProtocol.writeNode(w, i);
          }
          return w.toBuffer();
        });
  }
}
