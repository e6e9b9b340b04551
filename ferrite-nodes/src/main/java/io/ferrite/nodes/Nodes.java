package io.ferrite.nodes;

import io.ferrite.fabric.Futures;
import io.ferrite.fabric.verify.Checksum64;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.CompletableFuture;

/**
 * The client half of the nodes face: NodeKernel's API (paper Table 2) over a {@link FerriteClient}.
 * Metadata operations are RPCs to the master's nodes service; data moves with one-sided reads and
 * writes straight to the memory servers' blocks.
 *
 * <p>Every operation has an asynchronous form returning a future (failures are values: the future
 * fails with a {@link NodesException} or a kernel {@link io.ferrite.fabric.FerriteException}) and a
 * blocking convenience that throws. Thread-safe; does not own the client.
 */
public final class Nodes {
  private final FerriteClient client;
  private final long blockSize;

  /**
   * Opens connections off the fabrics' I/O threads: a continuation of an RPC runs on the thread
   * that completed it, and connecting there would block that thread's event loop.
   */
  private static final java.util.concurrent.ThreadPoolExecutor CONNECTOR =
      new java.util.concurrent.ThreadPoolExecutor(
          0,
          4,
          30,
          java.util.concurrent.TimeUnit.SECONDS,
          new java.util.concurrent.LinkedBlockingQueue<>(),
          new io.ferrite.fabric.NamedThreadFactory("nodes-connect", true));

  private final java.util.Set<Integer> connected =
      java.util.concurrent.ConcurrentHashMap.newKeySet();

  private final LookupCache cache;
  private final LeaseCache leased;

  /**
   * Counts of this client's lookup cache (leased lookups): answers it gave with no fabric op,
   * lookups it sent to the master, and kept answers it dropped because the master revoked their
   * lease.
   */
  public record CacheCounters(long hits, long misses, long invalidations) {}

  /**
   * The client's ferrite.face.ops{face=nodes} ({@link
   * io.ferrite.kernel.client.ClientOptions#metrics}; meters that do nothing without one).
   */
  private final io.ferrite.kernel.ops.FaceMeters.Op metLookup;

  private final io.ferrite.kernel.ops.FaceMeters.Op metCreate;
  private final io.ferrite.kernel.ops.FaceMeters.Op metPut;
  private final io.ferrite.kernel.ops.FaceMeters.Op metGet;

  /**
   * The cluster's master groups (docs/RESILIENCE.md, "Master groups"): a path's group is its
   * top-level name's, and {@link #byGroup} holds a Nodes over each group's client, made on first
   * use (group 0's is this one). Every public operation on a path first asks {@link #at} which
   * Nodes serves it: this one with one group (no cost but a length check), and for group 0.
   */
  private final io.ferrite.kernel.client.MasterGroups groups;

  private final java.util.concurrent.atomic.AtomicReferenceArray<Nodes> byGroup;

  public Nodes(FerriteClient client) {
    this.client = client;
    this.groups = client.groups();
    this.byGroup = new java.util.concurrent.atomic.AtomicReferenceArray<>(groups.count());
    this.byGroup.set(0, this);
    io.ferrite.kernel.ops.FaceMeters meters =
        io.ferrite.kernel.ops.FaceMeters.of(client.options().metrics(), "nodes");
    this.metLookup = meters.op("lookup");
    this.metCreate = meters.op("create");
    this.metPut = meters.op("put");
    this.metGet = meters.op("get");
    this.cache = new LookupCache(client);
    this.leased = new LeaseCache(client);
    this.blockSize = client.status().blockSize();
    for (io.ferrite.kernel.proto.MemberInfo m : client.members()) {
      if (m.state() == io.ferrite.kernel.proto.ServerState.ALIVE) {
        try {
          client.connection(m.serverId());
          connected.add(m.serverId());
        } catch (RuntimeException e) {
          // Connected on first use instead.
        }
      }
    }
  }

  /**
   * The Nodes that serves {@code path}: the one of the master group that owns its top-level name
   * (placing the name first when {@code place}: a create; a name never placed exists nowhere and is
   * answered by group 0, which does not have it either). The root itself is group 0's.
   */
  private Nodes at(String path, boolean place) {
    if (byGroup.length() == 1) {
      return this;
    }
    List<String> comps = NodePath.parse(path);
    if (comps.isEmpty()) {
      return this;
    }
    return group(top(comps.get(0), place));
  }

  /** The group of top-level name {@code top} (-1 mapped to 0). */
  private int top(String top, boolean place) {
    String kind = io.ferrite.kernel.proto.PlacementProtocol.NODES;
    int g;
    try {
      g = place ? groups.place(kind, top, -1) : groups.find(kind, top);
    } catch (RuntimeException e) {
      throw NodesException.from(e);
    }
    return Math.max(g, 0);
  }

  /** The Nodes of master group {@code g}, made (with that group's session) on first use. */
  private Nodes group(int g) {
    Nodes n = byGroup.get(g);
    if (n == null) {
      synchronized (byGroup) {
        n = byGroup.get(g);
        if (n == null) {
          try {
            n = new Nodes(groups.client(g));
          } catch (RuntimeException e) {
            throw NodesException.from(e);
          }
          byGroup.set(g, n);
        }
      }
    }
    return n;
  }

  /**
   * The Nodes of the group that holds {@code n}: by its path, which a lookup gives in full. A node
   * id means something only in its group (each group numbers its own nodes), so with several groups
   * a NodeInfo that names a child only ({@link #list} gives those) is refused rather than guessed.
   */
  private Nodes forNode(NodeInfo n) {
    if (byGroup.length() == 1) {
      return this;
    }
    if (!n.path().startsWith("/")) {
      throw new NodesException(
          NodesException.Reason.INVALID_ARGUMENT,
          "node '"
              + n.path()
              + "' (id "
              + n.id()
              + ") names a child only, as list() gives it: with several master groups a node id"
              + " means something only in its group, so open it by its full path");
    }
    return at(n.path(), false);
  }

  /** How many master groups this client spreads its names over (1: one group). */
  public int groupCount() {
    return byGroup.length();
  }

  /** The master group that holds {@code path} (0 for a name never placed, and for the root). */
  public int groupOf(String path) {
    List<String> comps = NodePath.parse(path);
    return byGroup.length() == 1 || comps.isEmpty() ? 0 : top(comps.get(0), false);
  }

  /**
   * Runs a one-sided {@code op} on {@code b}: right here when the connection to its server is open,
   * else after connecting on a connector thread (never on a fabric I/O thread).
   */
  <T> CompletableFuture<T> onBlock(
      BlockRef b, java.util.function.Function<BlockRef, CompletableFuture<T>> op) {
    int id = b.serverId();
    CompletableFuture<T> f =
        connected.contains(id)
            ? op.apply(b)
            : CompletableFuture.runAsync(
                    () -> {
                      client.connection(id);
                      connected.add(id);
                    },
                    CONNECTOR)
                .thenCompose(v -> op.apply(b));
    return f.whenComplete(
        (v, t) -> {
          if (t != null
              && io.ferrite.fabric.FerriteException.unwrap(t).code()
                  == io.ferrite.fabric.ErrorCode.UNAVAILABLE) {
            connected.remove(id);
          }
        });
  }

  CompletableFuture<Void> readBlock(BlockRef b, long offset, ByteBuffer dst) {
    return onBlock(b, x -> client.read(x, offset, dst));
  }

  /**
   * Servers whose copy failed to read with UNAVAILABLE or TIMEOUT -> until when (nanoTime) their
   * copies are tried last: a reader of a replicated File pays a dead server's failure once a
   * second, not once per read.
   */
  private final java.util.concurrent.ConcurrentHashMap<Integer, Long> suspect =
      new java.util.concurrent.ConcurrentHashMap<>();

  private static final long SUSPECT_NANOS = 1_000_000_000L;

  /**
   * Reads {@code dst.remaining()} bytes at {@code offset} of a replicated block from one of its
   * {@code copies}: the first whose server is not suspect, then the others in turn when a read
   * fails (server dead, copy lost: UNAVAILABLE, TIMEOUT, BAD_RKEY, NO_SUCH_REGION, ...). Fails only
   * when every copy failed, with a stale-ref failure if one was (so that the reader asks the master
   * whether the bytes were lost), else the first.
   */
  CompletableFuture<Void> readCopies(List<BlockRef> copies, long offset, ByteBuffer dst) {
    List<BlockRef> order = new ArrayList<>(copies);
    if (!suspect.isEmpty()) {
      long now = System.nanoTime();
      order.sort(
          java.util.Comparator.comparing(
              b -> {
                Long until = suspect.get(b.serverId());
                return until != null && until - now > 0;
              }));
    }
    return readCopy(order, 0, offset, dst, null);
  }

  private CompletableFuture<Void> readCopy(
      List<BlockRef> order, int k, long offset, ByteBuffer dst, Throwable failed) {
    BlockRef b = order.get(k);
    return readBlock(b, offset, dst.duplicate())
        .handle((v, t) -> t)
        .thenCompose(
            t -> {
              if (t == null) {
                return CompletableFuture.completedFuture(null);
              }
              io.ferrite.fabric.FerriteException e = io.ferrite.fabric.FerriteException.unwrap(t);
              if (e.code() == io.ferrite.fabric.ErrorCode.UNAVAILABLE
                  || e.code() == io.ferrite.fabric.ErrorCode.TIMEOUT) {
                suspect.put(b.serverId(), System.nanoTime() + SUSPECT_NANOS);
              }
              Throwable keep = failed == null || staleRef(e) ? e : failed;
              if (k + 1 == order.size()) {
                return CompletableFuture.failedFuture(keep);
              }
              return readCopy(order, k + 1, offset, dst, keep);
            });
  }

  /** A ref the server no longer honours: its region is gone or its rkey was revoked. */
  static boolean staleRef(io.ferrite.fabric.FerriteException e) {
    return e.code() == io.ferrite.fabric.ErrorCode.BAD_RKEY
        || e.code() == io.ferrite.fabric.ErrorCode.NO_SUCH_REGION;
  }

  CompletableFuture<Void> writeBlock(BlockRef b, long offset, ByteBuffer src) {
    return onBlock(b, x -> client.write(x, offset, src));
  }

  public FerriteClient client() {
    return client;
  }

  public long blockSize() {
    return blockSize;
  }

  CompletableFuture<ByteBuffer> call(int opcode, Wire.Writer body) {
    return client
        .callMaster(NodesProtocol.SERVICE, opcode, body.toBuffer())
        .handle(
            (b, t) -> {
              if (t != null) {
                throw NodesException.from(t);
              }
              return b;
            });
  }

  /**
   * As {@link #callNode}, for a caller that waits anyway: a blocking call (over tcp a small request
   * takes a lane and the caller reads its own answer: {@link FerriteClient#callMasterSync}).
   */
  private NodeInfo callNodeSync(int opcode, Wire.Writer body) {
    ByteBuffer b;
    try {
      b = client.callMasterSync(NodesProtocol.SERVICE, opcode, body.toBuffer());
    } catch (RuntimeException e) {
      throw NodesException.from(e);
    }
    Wire.Reader r = new Wire.Reader(b, "node");
    NodeInfo n = NodesProtocol.readNode(r);
    r.end();
    return n;
  }

  private CompletableFuture<NodeInfo> callNode(int opcode, Wire.Writer body) {
    return call(opcode, body)
        .thenApply(
            b -> {
              Wire.Reader r = new Wire.Reader(b, "node");
              NodeInfo n = NodesProtocol.readNode(r);
              r.end();
              return n;
            });
  }

  private static <T> T join(CompletableFuture<T> f) {
    try {
      return Futures.join(f);
    } catch (RuntimeException e) {
      throw NodesException.from(e);
    }
  }

  // ---------------------------------------------------------------- metadata plane

  /**
   * Creates a container (Directory, Table, Bag), or an empty File/KeyValue left open (internal).
   */
  CompletableFuture<NodeInfo> createAsync(
      String path, NodeType type, CreateOptions o, int preallocate, byte[] inline) {
    NodePath.check(path);
    return callNode(NodesProtocol.CREATE, createRequest(path, type, o, preallocate, inline));
  }

  private Wire.Writer createRequest(
      String path, NodeType type, CreateOptions o, int preallocate, byte[] inline) {
    Wire.Writer w =
        new Wire.Writer()
            .str(path)
            .u8(type.wire())
            .u8(
                (o.enumerable() ? NodesProtocol.FLAG_ENUMERABLE : 0)
                    | (o.ephemeral() ? NodesProtocol.FLAG_EPHEMERAL : 0))
            .str(o.storageClass())
            .str(o.location())
            .i64(client.sessionId())
            .i32(preallocate)
            .u8(inline == null ? 0 : 1);
    if (inline != null) {
      w.bytes(inline);
    }
    if (o.replicas() > 1) {
      w.u8(o.replicas()); // absent for one copy: what a master before replicas reads
    }
    return w;
  }

  /** Creates a Directory, Table or Bag. */
  public CompletableFuture<NodeInfo> createContainerAsync(
      String path, NodeType type, CreateOptions o) {
    Nodes g = at(path, true);
    if (g != this) {
      return g.createContainerAsync(path, type, o);
    }
    metCreate.count();
    if (!type.isContainer()) {
      return CompletableFuture.failedFuture(
          new NodesException(
              NodesException.Reason.WRONG_TYPE,
              "a " + type.label() + " is created with create() or put(), not as a container"));
    }
    return createAsync(path, type, o, 0, null);
  }

  public NodeInfo mkdir(String path) {
    return join(createContainerAsync(path, NodeType.DIRECTORY, CreateOptions.DEFAULT));
  }

  /**
   * Creates an ephemeral Directory: the master removes it, with everything in it, when this
   * client's session ends — {@link #client()} closed, or its session lease expired because this
   * process died or stopped renewing (docs/NODES.md, "Ephemeral directories"). Its parent must
   * exist; {@code ALREADY_EXISTS} if {@code path} does.
   */
  public NodeInfo mkdirEphemeral(String path) {
    return join(
        createContainerAsync(path, NodeType.DIRECTORY, CreateOptions.DEFAULT.withEphemeral()));
  }

  /** Creates {@code path} and missing parents as Directories; an existing directory is fine. */
  public NodeInfo mkdirs(String path) {
    Nodes g = at(path, true);
    if (g != this) {
      return g.mkdirs(path);
    }
    List<String> comps = NodePath.parse(path);
    String at = "";
    NodeInfo last = lookup("/");
    for (String c : comps) {
      at = at + "/" + c;
      try {
        last = mkdir(at);
      } catch (NodesException e) {
        if (e.reason() != NodesException.Reason.ALREADY_EXISTS) {
          throw e;
        }
        last = lookup(at);
        if (last.type() != NodeType.DIRECTORY) {
          throw new NodesException(
              NodesException.Reason.NOT_A_CONTAINER,
              at + " exists and is a " + last.type().label() + ", not a directory");
        }
      }
    }
    return last;
  }

  public NodeInfo createTable(String path, boolean enumerable) {
    CreateOptions o = enumerable ? CreateOptions.DEFAULT : CreateOptions.DEFAULT.nonEnumerable();
    return join(createContainerAsync(path, NodeType.TABLE, o));
  }

  public NodeInfo createBag(String path) {
    return join(createContainerAsync(path, NodeType.BAG, CreateOptions.DEFAULT));
  }

  /**
   * The node at {@code path}. Where gets do not use the master's version words (the master not
   * reached over shm or local), a lookup of a File or KeyValue this client looked up before is
   * answered from its cache while it holds a lease on it, with no fabric op; the master revokes the
   * lease before any change to the node (or an ancestor) is applied, so the answer is never older
   * than a change acknowledged before the call (docs/NODES.md, "Leased lookups").
   */
  public CompletableFuture<NodeInfo> lookupAsync(String path) {
    Nodes g = at(path, false);
    if (g != this) {
      return g.lookupAsync(path);
    }
    metLookup.count();
    if (leasing()) {
      NodeInfo kept = leased.hit(path);
      if (kept != null) {
        return CompletableFuture.completedFuture(kept);
      }
      return lookupLeased(path);
    }
    return lookupAsync(path, NodesProtocol.LOOKUP_BLOCKS);
  }

  /** A lookup that asks the master, never this client's cache (for comparisons). */
  public NodeInfo lookupAtMaster(String path) {
    Nodes g = at(path, false);
    if (g != this) {
      return g.lookupAtMaster(path);
    }
    NodePath.check(path);
    return callNodeSync(
        NodesProtocol.LOOKUP, new Wire.Writer().str(path).i32(NodesProtocol.LOOKUP_BLOCKS));
  }

  /** Whether lookups use leases: on, and gets do not use version words. */
  private boolean leasing() {
    return leased.always || (leased.on && !cache.enabled());
  }

  /** A LOOKUP_LEASED, whose answer the lease cache keeps if the master granted a lease. */
  private CompletableFuture<NodeInfo> lookupLeased(String path) {
    NodePath.check(path);
    // The connection is taken here, on the caller's thread (which may connect); the cache sends
    // its WATCHes on it from the fabric's threads, which must not.
    io.ferrite.fabric.FabricConnection c = client.masterStub().connection();
    long sent = System.nanoTime();
    return c.call(
            NodesProtocol.SERVICE,
            NodesProtocol.LOOKUP_LEASED,
            new Wire.Writer()
                .str(path)
                .i32(NodesProtocol.LOOKUP_BLOCKS)
                .i64(leased.holder())
                .toBuffer(),
            client.rpcTimeout())
        .handle(
            (b, t) -> {
              if (t == null) {
                Wire.Reader r = new Wire.Reader(b, "leased lookup");
                NodeInfo n = NodesProtocol.readNode(r);
                leased.keep(path, n, r, sent, c);
                return CompletableFuture.completedFuture(n);
              }
              io.ferrite.fabric.ErrorCode code =
                  io.ferrite.fabric.FerriteException.unwrap(t).code();
              if (code == io.ferrite.fabric.ErrorCode.UNKNOWN_OPCODE) {
                return lookupAsync(path, NodesProtocol.LOOKUP_BLOCKS); // an older master
              }
              if (code.category() == io.ferrite.fabric.ErrorCategory.UNAVAILABLE
                  || code == io.ferrite.fabric.ErrorCode.TIMEOUT) {
                // The master went away under this connection (a restart, a leader change): ask
                // again through the client, which waits it out (client.master.deadline). The
                // answer is not kept: a lease is granted on a connection of its own.
                return lookupAsync(path, NodesProtocol.LOOKUP_BLOCKS);
              }
              throw NodesException.from(t);
            })
        .thenCompose(f -> f);
  }

  /** This client's lookup cache counts (leased lookups). */
  public CacheCounters cacheCounters() {
    return leased.counters();
  }

  CompletableFuture<NodeInfo> lookupAsync(String path, int blocks) {
    NodePath.check(path);
    return callNode(NodesProtocol.LOOKUP, new Wire.Writer().str(path).i32(blocks));
  }

  /** The node at {@code path}; NOT_FOUND if there is none (or it is still being written). */
  public NodeInfo lookup(String path) {
    return join(lookupAsync(path));
  }

  public boolean exists(String path) {
    try {
      lookup(path);
      return true;
    } catch (NodesException e) {
      if (e.reason() == NodesException.Reason.NOT_FOUND) {
        return false;
      }
      throw e;
    }
  }

  /** Removes a node (a container only when empty, unless {@code recursive}); how many went. */
  public CompletableFuture<Integer> removeAsync(String path, boolean recursive) {
    Nodes g = at(path, false);
    if (g != this) {
      return g.removeAsync(path, recursive);
    }
    NodePath.check(path);
    return call(NodesProtocol.REMOVE, new Wire.Writer().str(path).u8(recursive ? 1 : 0))
        .thenApply(b -> new Wire.Reader(b, "remove").i32("count"));
  }

  public int remove(String path, boolean recursive) {
    return join(removeAsync(path, recursive));
  }

  /**
   * Moves {@code src} to {@code dst} atomically; {@code dst} must not exist (a KeyValue may replace
   * one).
   */
  public CompletableFuture<NodeInfo> moveAsync(String src, String dst) {
    NodePath.check(src);
    NodePath.check(dst);
    if (byGroup.length() > 1) {
      List<String> s = NodePath.parse(src);
      List<String> d = NodePath.parse(dst);
      int from = s.isEmpty() ? 0 : top(s.get(0), false);
      int to;
      try {
        to =
            d.isEmpty()
                ? 0
                : groups.place(io.ferrite.kernel.proto.PlacementProtocol.NODES, d.get(0), from);
      } catch (RuntimeException e) {
        return CompletableFuture.failedFuture(NodesException.from(e));
      }
      // A new top-level destination is placed where the source is, so renaming a top-level name
      // to a new one always works; an existing one elsewhere is refused (no atomic move between
      // two journals).
      if (from != to) {
        return CompletableFuture.failedFuture(
            new NodesException(
                NodesException.Reason.INVALID_MOVE,
                "cannot move "
                    + src
                    + " (master group "
                    + from
                    + ") to "
                    + dst
                    + " (master group "
                    + to
                    + "): a move between master groups is not atomic, so it is refused; copy"
                    + " and remove instead"));
      }
      if (from != 0) {
        return group(from).moveAsync(src, dst);
      }
    }
    return callNode(NodesProtocol.MOVE, new Wire.Writer().str(src).str(dst));
  }

  public NodeInfo move(String src, String dst) {
    return join(moveAsync(src, dst));
  }

  /** One page of a container's children after {@code after} (by name). */
  public CompletableFuture<NodesProtocol.Page> listPageAsync(
      String path, String after, int max, boolean withBlocks) {
    Nodes g = at(path, false);
    if (g != this) {
      return g.listPageAsync(path, after, max, withBlocks);
    }
    NodePath.check(path);
    if (byGroup.length() > 1 && NodePath.parse(path).isEmpty()) {
      return rootPage(after, max, withBlocks);
    }
    return call(
            NodesProtocol.LIST,
            new Wire.Writer().str(path).str(after).i32(max).u8(withBlocks ? 1 : 0))
        .thenApply(b -> NodesProtocol.readPage(new Wire.Reader(b, "list")));
  }

  /**
   * A page of the root's children with several groups: each group's root holds the top-level names
   * placed there, so a page is the first {@code max} names after {@code after} of every group's
   * page, merged by name (a name is in one group only). One LIST per group and page.
   */
  private CompletableFuture<NodesProtocol.Page> rootPage(
      String after, int max, boolean withBlocks) {
    List<CompletableFuture<NodesProtocol.Page>> pages = new ArrayList<>();
    for (int i = 0; i < byGroup.length(); i++) {
      Nodes n = group(i);
      pages.add(
          n.call(
                  NodesProtocol.LIST,
                  new Wire.Writer().str("/").str(after).i32(max).u8(withBlocks ? 1 : 0))
              .thenApply(b -> NodesProtocol.readPage(new Wire.Reader(b, "list"))));
    }
    return CompletableFuture.allOf(pages.toArray(new CompletableFuture<?>[0]))
        .thenApply(
            v -> {
              java.util.TreeMap<String, NodeInfo> merged = new java.util.TreeMap<>();
              boolean more = false;
              for (CompletableFuture<NodesProtocol.Page> f : pages) {
                NodesProtocol.Page p = f.join();
                more |= p.more();
                for (NodeInfo e : p.entries()) {
                  merged.put(e.path(), e);
                }
              }
              List<NodeInfo> out = new ArrayList<>(merged.values());
              if (out.size() > max) {
                out = out.subList(0, max);
                more = true;
              }
              return new NodesProtocol.Page(more, List.copyOf(out));
            });
  }

  /**
   * The children of a Directory, Table or Bag in name order, fetched a page at a time ({@value
   * NodesProtocol#MAX_LIST_PAGE} entries per RPC, with type, size and time: no lookup per entry). A
   * non-enumerable Table lists nothing.
   */
  public Iterable<NodeInfo> list(String path) {
    return list(path, false);
  }

  Iterable<NodeInfo> list(String path, boolean withBlocks) {
    NodePath.check(path);
    return () ->
        new Iterator<>() {
          NodesProtocol.Page page =
              join(listPageAsync(path, "", NodesProtocol.MAX_LIST_PAGE, withBlocks));
          int i;

          @Override
          public boolean hasNext() {
            while (i >= page.entries().size() && page.more() && !page.entries().isEmpty()) {
              String after = page.entries().get(page.entries().size() - 1).path();
              page = join(listPageAsync(path, after, NodesProtocol.MAX_LIST_PAGE, withBlocks));
              i = 0;
            }
            return i < page.entries().size();
          }

          @Override
          public NodeInfo next() {
            if (!hasNext()) {
              throw new NoSuchElementException();
            }
            return page.entries().get(i++);
          }
        };
  }

  /** Result of a MAP: blocks from index {@code first}. */
  record Mapped(int first, List<BlockRef> blocks) {}

  CompletableFuture<Mapped> mapAsync(long id, int index, int count, boolean allocate) {
    return call(
            NodesProtocol.MAP,
            new Wire.Writer()
                .i64(id)
                .i64(client.sessionId())
                .i32(index)
                .i32(count)
                .u8(allocate ? 1 : 0))
        .thenApply(
            b -> {
              Wire.Reader r = new Wire.Reader(b, "map");
              int first = r.i32("first");
              List<BlockRef> bs = MasterProtocol.readBlocks(r);
              r.end();
              return new Mapped(first, bs);
            });
  }

  /** Blocks one {@link #blocks} MAP asks for: the master's limit per MAP. */
  static final int MAP_CHUNK = 1024;

  /**
   * Where a File's or KeyValue's bytes live: the refs of up to {@code count} of its blocks from
   * logical block {@code first} on (fewer at the end of its mapping; none for an inline value);
   * with {@link NodeInfo#replicas} copies, that many refs per block, block by block. Served from
   * the refs {@code node} came with when they cover the range, else one MAP per {@value #MAP_CHUNK}
   * blocks; never allocates. For locality queries, e.g. Hadoop's {@code getFileBlockLocations}:
   * block {@code i} holds bytes {@code [i * blockSize(), (i + 1) * blockSize())}.
   */
  public List<BlockRef> blocks(NodeInfo node, int first, int count) {
    Nodes g = forNode(node);
    if (g != this) {
      return g.blocks(node, first, count);
    }
    if (first < 0 || count < 0) {
      throw new NodesException(
          NodesException.Reason.INVALID_ARGUMENT,
          "blocks first: " + first + ", count: " + count + " (expected: >= 0)");
    }
    if (!node.type().hasData()) {
      throw new NodesException(
          NodesException.Reason.WRONG_TYPE,
          node.path() + " is a " + node.type().label() + ", it has no data blocks");
    }
    int r = node.replicas();
    int end = (int) Math.min((long) first + count, node.blockCount());
    List<BlockRef> out = new ArrayList<>(Math.max(0, end - first) * r);
    int known = node.firstBlock() + node.blocks().size() / r;
    if (first >= node.firstBlock() && end <= known) {
      out.addAll(
          node.blocks().subList((first - node.firstBlock()) * r, (end - node.firstBlock()) * r));
      return out;
    }
    int at = first;
    while (at < end) {
      Mapped m = join(mapAsync(node.id(), at, Math.min(MAP_CHUNK, end - at), false));
      if (m.first() != at || m.blocks().isEmpty()) {
        break; // the node has fewer blocks now (trimmed, or removed and replaced)
      }
      out.addAll(m.blocks());
      at += m.blocks().size() / r;
    }
    return out;
  }

  CompletableFuture<NodeInfo> publishAsync(long id, long size, long checksum, boolean close) {
    return callNode(NodesProtocol.PUBLISH, publishRequest(id, size, checksum, close));
  }

  /** As {@link #publishAsync}, blocking (see {@link #callNodeSync}). */
  NodeInfo publishSync(long id, long size, long checksum, boolean close) {
    return callNodeSync(NodesProtocol.PUBLISH, publishRequest(id, size, checksum, close));
  }

  private Wire.Writer publishRequest(long id, long size, long checksum, boolean close) {
    return new Wire.Writer()
        .i64(id)
        .i64(client.sessionId())
        .i64(size)
        .i64(checksum)
        .u8(close ? 1 : 0);
  }

  CompletableFuture<Void> abortAsync(long id) {
    return call(NodesProtocol.ABORT, new Wire.Writer().i64(id).i64(client.sessionId()))
        .thenApply(b -> null);
  }

  // ---------------------------------------------------------------- data plane

  /**
   * Creates a File (first create wins) open for writing by this client; invisible to others until
   * the writer's first {@link NodeWriter#flush} or {@link NodeWriter#close}. If this client's
   * session ends first, the file is dropped with its blocks.
   */
  public NodeWriter create(String path) {
    return create(path, CreateOptions.DEFAULT);
  }

  public NodeWriter create(String path, CreateOptions o) {
    Nodes g = at(path, true);
    if (g != this) {
      return g.create(path, o);
    }
    NodePath.check(path);
    metCreate.count();
    return new NodeWriter(
        this,
        callNodeSync(NodesProtocol.CREATE, createRequest(path, NodeType.FILE, o, 0, null)),
        0);
  }

  /** Opens an existing File to append to it; WRITE_LOCKED while another writer has it open. */
  public NodeWriter append(String path) {
    Nodes g = at(path, false);
    if (g != this) {
      return g.append(path);
    }
    NodePath.check(path);
    NodeInfo n =
        join(
            callNode(
                NodesProtocol.OPEN_WRITE, new Wire.Writer().str(path).i64(client.sessionId())));
    return new NodeWriter(this, n, n.size());
  }

  /** Opens a File or KeyValue for reading. */
  public NodeReader open(String path) {
    NodeInfo n = lookup(path);
    return open(n);
  }

  public NodeReader open(NodeInfo n) {
    Nodes g = forNode(n);
    if (g != this) {
      return g.open(n);
    }
    if (!n.type().hasData()) {
      throw new NodesException(
          NodesException.Reason.WRONG_TYPE,
          n.path()
              + " is a "
              + n.type().label()
              + (n.type() == NodeType.BAG ? ": use openBag" : ", it has no data"));
    }
    return new NodeReader(this, n);
  }

  /** Reads all files of a Bag as one stream, in name order (paper §3.1). */
  public BagInputStream openBag(String path) {
    Nodes g = at(path, false);
    if (g != this) {
      return g.openBag(path);
    }
    NodeInfo n = lookup(path);
    if (n.type() != NodeType.BAG) {
      throw new NodesException(
          NodesException.Reason.WRONG_TYPE, path + " is a " + n.type().label() + ", not a bag");
    }
    return new BagInputStream(this, path);
  }

  /**
   * Puts a KeyValue (last put wins): the new value replaces the old one atomically when it is
   * complete; a reader sees the old value or the new one, never a mix. Values up to {@value
   * NodesProtocol#MAX_INLINE} B are kept in the master's metadata (one RPC); larger ones go to
   * blocks written one-sided, then published with their checksum.
   */
  public CompletableFuture<NodeInfo> putAsync(String path, ByteBuffer value, CreateOptions o) {
    Nodes g = at(path, true);
    if (g != this) {
      return g.putAsync(path, value, o);
    }
    metPut.count();
    int len = value.remaining();
    if (len <= NodesProtocol.MAX_INLINE) {
      byte[] b = new byte[len];
      value.duplicate().get(b);
      return createAsync(path, NodeType.KEYVALUE, o, 0, b);
    }
    long checksum = Checksum64.of(value, value.position(), len);
    int blocks = (int) ((len + blockSize - 1) / blockSize);
    return createAsync(path, NodeType.KEYVALUE, o, blocks, null)
        .thenCompose(
            n -> {
              List<CompletableFuture<Void>> writes = new ArrayList<>();
              for (int i = 0; i < blocks; i++) {
                ByteBuffer slice = value.duplicate();
                int from = value.position() + (int) (i * blockSize);
                slice.position(from).limit((int) Math.min(value.limit(), from + blockSize));
                writes.add(writeBlock(n.blocks().get(i), 0, slice));
              }
              return CompletableFuture.allOf(writes.toArray(new CompletableFuture<?>[0]))
                  .thenCompose(v -> publishAsync(n.id(), len, checksum, true))
                  .whenComplete(
                      (v, t) -> {
                        if (t != null) {
                          abortAsync(n.id());
                        }
                      });
            })
        .handle(
            (v, t) -> {
              if (t != null) {
                throw NodesException.from(t);
              }
              return v;
            });
  }

  public NodeInfo put(String path, ByteBuffer value) {
    return join(putAsync(path, value, CreateOptions.DEFAULT));
  }

  public NodeInfo put(String path, byte[] value) {
    return put(path, ByteBuffer.wrap(value));
  }

  /** Times a get re-reads a value that changed under it before it reports CHANGED. */
  static final int GET_ATTEMPTS = 8;

  /**
   * Gets a KeyValue's value (or a whole File's data): one lookup, then one-sided reads of its
   * blocks, verified against the value's checksum; a value replaced while it was read is read
   * again.
   *
   * <p>Where the master is reached over shm, the lookup is kept and reused while the master's
   * version words of the path's nodes say it is current ({@link LookupCache}): a get of a small
   * (inline) value is then a few one-sided reads and no RPC at all, and stays linearizable.
   */
  public CompletableFuture<ByteBuffer> getAsync(String path) {
    Nodes g = at(path, false);
    if (g != this) {
      return g.getAsync(path);
    }
    metGet.count();
    return getAttempt(path, 1);
  }

  private CompletableFuture<ByteBuffer> getAttempt(String path, int attempt) {
    boolean caching = !leased.always && cache.enabled();
    NodeInfo kept = caching ? cache.current(path) : null;
    CompletableFuture<NodeInfo> node =
        kept != null
            ? CompletableFuture.completedFuture(kept)
            : caching ? lookupKept(path) : lookupAsync(path);
    return node.thenCompose(n -> value(path, n, attempt))
        .handle(
            (v, t) -> {
              if (t != null) {
                throw NodesException.from(t);
              }
              return v;
            });
  }

  /** A LOOKUP_VERSIONED, whose answer the cache keeps if the master says it may. */
  private CompletableFuture<NodeInfo> lookupKept(String path) {
    NodePath.check(path);
    return client
        .callMaster(
            NodesProtocol.SERVICE,
            NodesProtocol.LOOKUP_VERSIONED,
            new Wire.Writer().str(path).i32(NodesProtocol.LOOKUP_BLOCKS).toBuffer())
        .handle(
            (b, t) -> {
              if (t == null) {
                Wire.Reader r = new Wire.Reader(b, "versioned lookup");
                NodeInfo n = NodesProtocol.readNode(r);
                cache.keep(path, n, r);
                return CompletableFuture.completedFuture(n);
              }
              if (io.ferrite.fabric.FerriteException.unwrap(t).code()
                  == io.ferrite.fabric.ErrorCode.UNKNOWN_OPCODE) {
                cache.unsupported(); // an older master
                return lookupAsync(path, NodesProtocol.LOOKUP_BLOCKS);
              }
              throw NodesException.from(t);
            })
        .thenCompose(f -> f);
  }

  private CompletableFuture<ByteBuffer> value(String path, NodeInfo n, int attempt) {
    if (!n.type().hasData()) {
      throw new NodesException(
          NodesException.Reason.WRONG_TYPE, path + " is a " + n.type().label());
    }
    if (n.inline() != null) {
      return CompletableFuture.completedFuture(ByteBuffer.wrap(n.inline().clone()));
    }
    if (n.size() > Integer.MAX_VALUE - 8) {
      throw new NodesException(
          NodesException.Reason.INVALID_ARGUMENT,
          path + " holds " + n.size() + " B: too large for one buffer, use open()");
    }
    ByteBuffer dst = ByteBuffer.allocate((int) n.size());
    NodeReader reader = new NodeReader(this, n);
    return reader
        .read(0, dst.duplicate())
        .handle(
            (got, t) -> {
              if (t != null) {
                // A value replaced after this lookup has its blocks freed after the master's
                // grace, and a read that comes later finds their rkey revoked: BAD_RKEY or
                // NO_SUCH_REGION (NodeReader answers DATA_LOST instead when the node itself lost
                // them). The value now is another node: look it up again, as for a changed
                // checksum below.
                io.ferrite.fabric.FerriteException e = NodesException.from(t);
                if (!staleRef(e) || attempt >= GET_ATTEMPTS) {
                  throw e;
                }
                cache.forget(path);
                leased.forget(path);
                return getAttempt(path, attempt + 1);
              }
              boolean verified =
                  n.type() != NodeType.KEYVALUE
                      || Checksum64.of(dst, 0, dst.capacity()) == n.checksum();
              if (verified) {
                return CompletableFuture.completedFuture(dst);
              }
              cache.forget(path);
              leased.forget(path);
              if (attempt >= GET_ATTEMPTS) {
                throw new NodesException(
                    NodesException.Reason.CHANGED,
                    path + " changed under " + attempt + " reads in a row");
              }
              return getAttempt(path, attempt + 1);
            })
        .thenCompose(f -> f);
  }

  /**
   * What the master marked lost: nodes whose blocks' memory is gone (docs/NODES.md, "Lost memory"),
   * the bytes of their data lost, and the paths of the first few.
   */
  /**
   * What the master marked lost, and the replicated Files missing copies now ({@code
   * underReplicated} of them, {@code missingCopies} block copies in all; 0 from a master before
   * replicas), which re-replication is making again.
   */
  public record LostSummary(
      long nodes,
      long bytes,
      long blocks,
      List<String> paths,
      long underReplicated,
      long missingCopies) {}

  /** Asks the master what it marked lost (one RPC; with several groups, one per group, summed). */
  public LostSummary lostSummary() {
    if (byGroup.length() > 1) {
      long nodes = 0;
      long bytes = 0;
      long blocks = 0;
      long underReplicated = 0;
      long missingCopies = 0;
      List<String> paths = new ArrayList<>();
      for (int g = 0; g < byGroup.length(); g++) {
        LostSummary one = g == 0 ? lostSummaryHere() : group(g).lostSummary();
        nodes += one.nodes();
        bytes += one.bytes();
        blocks += one.blocks();
        paths.addAll(one.paths());
        underReplicated += one.underReplicated();
        missingCopies += one.missingCopies();
      }
      return new LostSummary(
          nodes, bytes, blocks, List.copyOf(paths), underReplicated, missingCopies);
    }
    return lostSummaryHere();
  }

  private LostSummary lostSummaryHere() {
    ByteBuffer b = join(call(NodesProtocol.LOST_SUMMARY, new Wire.Writer()));
    Wire.Reader r = new Wire.Reader(b, "lost summary");
    long nodes = r.i64("nodes");
    long bytes = r.i64("bytes");
    long blocks = r.i64("blocks");
    int n = r.count("paths", 1 << 16);
    List<String> paths = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      paths.add(r.str("path"));
    }
    long under = r.remaining() > 0 ? r.i64("underReplicated") : 0;
    long missing = r.remaining() > 0 ? r.i64("missingCopies") : 0;
    r.end();
    return new LostSummary(nodes, bytes, blocks, List.copyOf(paths), under, missing);
  }

  /** Lookups the gets of this client keep (for tests). */
  int keptLookups() {
    return cache.size() + leased.size();
  }

  public ByteBuffer get(String path) {
    return join(getAsync(path));
  }

  public byte[] getBytes(String path) {
    ByteBuffer b = get(path);
    byte[] out = new byte[b.remaining()];
    b.get(out);
    return out;
  }
}
