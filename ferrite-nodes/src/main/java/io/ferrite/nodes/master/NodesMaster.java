package io.ferrite.nodes.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.nodes.NodeInfo;
import io.ferrite.nodes.NodePath;
import io.ferrite.nodes.NodeType;
import io.ferrite.nodes.NodesException;
import io.ferrite.nodes.NodesException.Reason;
import io.ferrite.nodes.NodesProtocol;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

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
  private ScheduledThreadPoolExecutor reclaimer;

  /** With the default grace of 2 s before a removed node's blocks are reused. */
  public NodesMaster() {
    this(Duration.ofSeconds(2));
  }

  public NodesMaster(Duration reclaimGrace) {
    this.reclaimGrace = reclaimGrace;
  }

  @Override
  public int serviceId() {
    return NodesProtocol.SERVICE;
  }

  @Override
  public String name() {
    return "nodes";
  }

  @Override
  public void apply(ByteBuffer record) {
    ns.apply(record);
  }

  @Override
  public List<byte[]> snapshot() {
    return ns.snapshot();
  }

  @Override
  public void start(MasterContext context) {
    this.ctx = context;
    try {
      ns.versions.attach(context.createRegion("versions", 8L * LookupVersions.SLOTS));
    } catch (FerriteException e) {
      LOG.log(
          System.Logger.Level.INFO,
          "no version region, clients will not cache lookups: {0}",
          e.getMessage());
    }
    reclaimer = new ScheduledThreadPoolExecutor(1, new NamedThreadFactory("nodes-reclaim", true));
    long period = Math.max(10, Math.min(200, reclaimGrace.toMillis() / 2));
    reclaimer.scheduleWithFixedDelay(this::reclaim, period, period, TimeUnit.MILLISECONDS);
  }

  @Override
  public void stop() {
    if (reclaimer != null) {
      reclaimer.shutdownNow();
    }
  }

  /** Nodes removed but whose blocks are not yet freed (for tests). */
  public int pendingReclaims() {
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
  private List<BlockRef> allocate(
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

  @Override
  public void sessionClosed(long sessionId, MasterContext.Mutation m) {
    Set<Long> ids = ns.bySession.get(sessionId);
    if (ids == null) {
      return;
    }
    for (Long id : List.copyOf(ids)) {
      Node n = ns.byId.get(id);
      if (n != null) {
        release(n, m);
      }
    }
  }

  /** Ends a write lease: a node never published is dropped, a published one keeps its size. */
  private void release(Node n, MasterContext.Mutation m) {
    if (!n.visible) {
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
    if (n.blocks.size() > keep) {
      List<BlockRef> extra = new ArrayList<>(n.blocks.subList(keep, n.blocks.size()));
      m.commit(Namespace.trim(n.id, keep));
      m.free(Node.owner(n.id), extra);
    }
  }

  // ---------------------------------------------------------------- RPC

  @Override
  public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
    try {
      Wire.Reader r = new Wire.Reader(request, "nodes opcode " + opcode);
      ByteBuffer out =
          switch (opcode) {
            case NodesProtocol.CREATE -> create(r);
            case NodesProtocol.LOOKUP -> lookup(r);
            case NodesProtocol.LOOKUP_VERSIONED -> lookupVersioned(r);
            case NodesProtocol.REMOVE -> remove(r);
            case NodesProtocol.MOVE -> move(r);
            case NodesProtocol.MAP -> map(r);
            case NodesProtocol.PUBLISH -> publish(r);
            case NodesProtocol.OPEN_WRITE -> openWrite(r);
            case NodesProtocol.LIST -> list(r);
            case NodesProtocol.ABORT -> abort(r);
            default ->
                throw new FerriteException(
                    ErrorCode.UNKNOWN_OPCODE, "nodes service has no opcode " + opcode);
          };
      return CompletableFuture.completedFuture(out);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  private static long now() {
    return System.currentTimeMillis();
  }

  private static NodesException fail(Reason reason, String message) {
    return new NodesException(reason, message);
  }

  private static ByteBuffer reply(NodeInfo info) {
    Wire.Writer w = new Wire.Writer(128 + info.blocks().size() * 48);
    NodesProtocol.writeNode(w, info);
    return w.toBuffer();
  }

  private NodeInfo info(Node n, String path, int first, int count) {
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
  private Node parentOf(List<String> comps, String path) {
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

  private Node existing(String path) {
    Node n = ns.resolve(NodePath.parse(path));
    if (n == null) {
      throw fail(Reason.NOT_FOUND, "no such node " + path);
    }
    return n;
  }

  private Node byId(long id) {
    Node n = ns.byId.get(id);
    if (n == null) {
      throw fail(Reason.NOT_FOUND, "node " + id + " was removed");
    }
    return n;
  }

  private static void checkSession(MasterContext.Mutation m, long session) {
    if (session == 0 || !m.sessionOpen(session)) {
      throw new FerriteException(
          ErrorCode.SESSION_EXPIRED, "session " + Long.toHexString(session) + " is not open");
    }
  }

  private ByteBuffer create(Wire.Reader r) {
    String path = r.str("path");
    NodeType type = NodeType.fromWire(r.u8("type"));
    int flags = r.u8("flags");
    String cls = r.str("class");
    String loc = r.str("location");
    long session = r.i64("session");
    int prealloc = r.i32("preallocate");
    byte[] inline = r.u8("inline?") == 1 ? r.bytes("inline") : null;
    r.end();
    List<String> comps = NodePath.parse(path);
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
          Node parent = parentOf(comps, path);
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
          if (data) {
            checkSession(m, session);
          }
          long id = ns.nextId();
          List<BlockRef> blocks =
              prealloc > 0 && inline == null
                  ? allocate(m, session, prealloc, cls, loc, id)
                  : List.of();
          boolean published = !data || inline != null;
          Node n =
              new Node(
                  id,
                  type,
                  cls,
                  loc,
                  type != NodeType.TABLE || (flags & NodesProtocol.FLAG_ENUMERABLE) != 0,
                  published,
                  published ? 0 : session,
                  now());
          n.name = name;
          n.parent = parent;
          n.detached = type == NodeType.KEYVALUE && !published;
          if (inline != null) {
            n.inline = inline;
            n.size = inline.length;
          }
          // A KeyValue put with its value inline replaces the old one at once.
          int[] changing = ns.versions.begin(published ? old : null);
          try {
            m.commit(Namespace.create(n, parent.id));
            if (!blocks.isEmpty()) {
              m.commit(Namespace.blocks(id, 0, blocks));
            }
          } finally {
            ns.versions.end(changing);
          }
          return reply(info(ns.byId.get(id), path, 0, NodesProtocol.LOOKUP_BLOCKS + prealloc));
        });
  }

  /**
   * LOOKUP answered on the thread that received it (the shm ring poller, or an I/O thread): it only
   * reads the namespace, under the namespace's read lock, which {@link Namespace#apply} holds only
   * while it changes memory. If that lock is taken or wanted by an apply, the lookup declines and
   * runs on the service executor instead, where it may wait: the receiving thread never does.
   */
  @Override
  public CompletableFuture<ByteBuffer> handleInline(
      RpcContext caller, int opcode, ByteBuffer request) {
    if (opcode != NodesProtocol.LOOKUP && opcode != NodesProtocol.LOOKUP_VERSIONED) {
      return null;
    }
    // hasQueuedThreads: a writer waiting for the lock gets it before more inline readers.
    if (ns.lock.hasQueuedThreads() || !ns.lock.readLock().tryLock()) {
      return null;
    }
    try {
      Wire.Reader r = new Wire.Reader(request, "nodes opcode " + opcode);
      return CompletableFuture.completedFuture(
          opcode == NodesProtocol.LOOKUP ? lookupLocked(r) : lookupVersionedLocked(r));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    } finally {
      ns.lock.readLock().unlock();
    }
  }

  private ByteBuffer lookup(Wire.Reader r) {
    ns.lock.readLock().lock();
    try {
      return lookupLocked(r);
    } finally {
      ns.lock.readLock().unlock();
    }
  }

  private ByteBuffer lookupVersioned(Wire.Reader r) {
    ns.lock.readLock().lock();
    try {
      return lookupVersionedLocked(r);
    } finally {
      ns.lock.readLock().unlock();
    }
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
    List<Node> chain = ns.resolveChain(NodePath.parse(path));
    if (chain == null) {
      throw fail(Reason.NOT_FOUND, "no such node " + path);
    }
    Node n = chain.isEmpty() ? ns.root : chain.get(chain.size() - 1);
    NodeInfo info = info(n, path, 0, Math.max(0, Math.min(count, MAX_MAP)));
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
    return reply(info(existing(path), path, 0, Math.max(0, Math.min(count, MAX_MAP))));
  }

  private ByteBuffer remove(Wire.Reader r) {
    String path = r.str("path");
    boolean recursive = r.u8("recursive") == 1;
    r.end();
    if (NodePath.parse(path).isEmpty()) {
      throw fail(Reason.INVALID_PATH, "the root directory cannot be removed");
    }
    return ctx.mutate(
        m -> {
          Node n = existing(path);
          if (n.type.isContainer() && !n.children.isEmpty() && !recursive) {
            throw fail(
                Reason.NOT_EMPTY,
                path + " is a " + n.type.label() + " with " + n.children.size() + " children");
          }
          int count = count(n);
          // Descendants need no bump: every path to them goes through n.
          int[] changing = ns.versions.begin(n);
          try {
            m.commit(Namespace.remove(n.id, now()));
          } finally {
            ns.versions.end(changing);
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
          Node n = existing(src);
          Node to = parentOf(dc, dst);
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
            return reply(info(n, dst, 0, 0));
          }
          if (old != null
              && !(old.type == NodeType.KEYVALUE && n.type == NodeType.KEYVALUE && old.visible)) {
            throw fail(Reason.ALREADY_EXISTS, dst + " exists");
          }
          int[] changing = ns.versions.begin(n, old);
          try {
            m.commit(Namespace.move(n.id, to.id, name, now()));
          } finally {
            ns.versions.end(changing);
          }
          return reply(info(n, dst, 0, 0));
        });
  }

  private ByteBuffer map(Wire.Reader r) {
    long id = r.i64("id");
    long session = r.i64("session");
    int index = r.i32("index");
    int count = r.i32("count");
    boolean allocate = r.u8("allocate") == 1;
    r.end();
    if (index < 0 || count < 1 || count > MAX_MAP) {
      throw fail(
          Reason.INVALID_ARGUMENT,
          "map index: "
              + index
              + ", count: "
              + count
              + " (expected: >= 0 and 1 to "
              + MAX_MAP
              + ")");
    }
    return ctx.mutate(
        m -> {
          Node n = byId(id);
          if (!n.type.hasData()) {
            throw fail(Reason.WRONG_TYPE, "a " + n.type.label() + " has no data blocks");
          }
          if (allocate) {
            if (n.writer != session || session == 0) {
              throw fail(
                  Reason.NOT_WRITER, "this session does not hold the write lease of node " + id);
            }
            checkSession(m, session);
            int need = index + count - n.blocks.size();
            if (need > 0) {
              List<BlockRef> got;
              try {
                got = allocate(m, session, need, n.storageClass, n.location, id);
              } catch (FerriteException e) {
                // The window ahead does not fit: take only what the write at index needs.
                int least = index + 1 - n.blocks.size();
                if (e.code() != ErrorCode.NO_SPACE || least >= need) {
                  throw e;
                }
                got =
                    least <= 0
                        ? List.of()
                        : allocate(m, session, least, n.storageClass, n.location, id);
              }
              if (!got.isEmpty()) {
                m.commit(Namespace.blocks(id, n.blocks.size(), got));
              }
            }
          }
          Wire.Writer w = new Wire.Writer(16 + count * 48);
          int from = Math.min(index, n.blocks.size());
          int to = (int) Math.min(n.blocks.size(), (long) index + count);
          w.i32(from);
          io.ferrite.kernel.proto.MasterProtocol.writeBlocks(w, n.blocks.subList(from, to));
          return w.toBuffer();
        });
  }

  private ByteBuffer publish(Wire.Reader r) {
    long id = r.i64("id");
    long session = r.i64("session");
    long size = r.i64("size");
    long checksum = r.i64("checksum");
    boolean close = r.u8("close") == 1;
    r.end();
    return ctx.mutate(
        m -> {
          Node n = byId(id);
          if (n.writer != session || session == 0) {
            throw fail(
                Reason.NOT_WRITER, "this session does not hold the write lease of node " + id);
          }
          long capacity = n.blocks.size() * ctx.blockSize();
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
          int[] changing = ns.versions.begin(n, n.detached ? n.parent.children.get(n.name) : null);
          try {
            m.commit(Namespace.publish(id, size, checksum, now(), close, null));
          } finally {
            ns.versions.end(changing);
          }
          if (close) {
            trim(n, m);
          }
          return reply(info(n, n.detached ? "" : n.path(), 0, 0));
        });
  }

  private ByteBuffer openWrite(Wire.Reader r) {
    String path = r.str("path");
    long session = r.i64("session");
    r.end();
    NodePath.parse(path);
    return ctx.mutate(
        m -> {
          Node n = existing(path);
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
          checkSession(m, session);
          m.commit(Namespace.writer(n.id, session));
          long bs = ctx.blockSize();
          return reply(info(n, path, (int) (n.size / bs), 2));
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
          Node n = existing(path);
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
              page.add(info(c, c.name, 0, withBlocks ? MAX_MAP * 64 : 0));
            }
          }
          w.u8(it.hasNext() ? 1 : 0).i32(page.size());
          for (NodeInfo i : page) {
            NodesProtocol.writeNode(w, i);
          }
          return w.toBuffer();
        });
  }

  private ByteBuffer abort(Wire.Reader r) {
    long id = r.i64("id");
    long session = r.i64("session");
    r.end();
    return ctx.mutate(
        m -> {
          Node n = ns.byId.get(id);
          if (n != null) {
            if (n.writer != session || session == 0) {
              throw fail(
                  Reason.NOT_WRITER, "this session does not hold the write lease of node " + id);
            }
            release(n, m);
          }
          return ByteBuffer.allocate(0);
        });
  }
}
