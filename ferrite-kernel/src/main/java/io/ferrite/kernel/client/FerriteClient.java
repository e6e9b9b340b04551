package io.ferrite.kernel.client;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.verify.Checksum64;
import io.ferrite.kernel.config.Threads;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.MasterStub;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.RegionInfo;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * A client of one Ferrite cluster: a session with the master (renewed in the background), one
 * connection per memory server shared by all threads (opened lazily, over the fabric chosen per
 * server), and block-level one-sided operations.
 *
 * <h2>Errors and retries</h2>
 *
 * Every failure is a {@link FerriteException} with a code that says whether a retry can help. The
 * client itself retries, with backoff and at most {@link ClientOptions#maxAttempts()} times, only
 * what is safe to repeat: connecting, and reads. Writes, atomics, allocation and RPCs are not
 * retried (a lost answer does not mean the operation did not happen); a connection that fails is
 * dropped and the next operation reconnects.
 *
 * <p>Thread-safe. {@link #close()} closes the session (freeing its session-scoped blocks), every
 * connection and every fabric the client opened.
 */
public final class FerriteClient implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(FerriteClient.class.getName());
  private static final long BASE_BACKOFF_MS = 20;

  private final ClientOptions options;
  private final String masterAddress;
  private final ConnectOptions connectOptions;
  private final Map<String, Fabric> fabrics = new ConcurrentHashMap<>();
  private final Map<Integer, FabricConnection> connections = new ConcurrentHashMap<>();
  private final Map<Integer, MemberInfo> members = new ConcurrentHashMap<>();
  private final Map<Long, RegionInfo> regions = new ConcurrentHashMap<>();
  private final ScheduledThreadPoolExecutor renewer;
  private volatile MasterStub master;
  private volatile String masterFabric = "";
  private volatile long sessionId;
  private volatile boolean closed;

  private FerriteClient(String masterAddress, ClientOptions options) {
    this.options = options;
    this.masterAddress = masterAddress;
    this.connectOptions =
        new ConnectOptions(options.credentials(), options.connectTimeout(), options.opTimeout());
    this.renewer = Threads.scheduler("ferrite-client-session");
  }

  static FerriteClient open(String masterAddress, ClientOptions options) {
    FerriteClient c = new FerriteClient(masterAddress, options);
    try {
      MasterStub m = c.master();
      if (options.session()) {
        MasterStub.Session s = m.openSession(options.clientName(), options.leaseMillis());
        c.sessionId = s.sessionId();
        long period = Math.max(10, s.leaseMillis() / 3);
        c.renewer.scheduleWithFixedDelay(c::renew, period, period, TimeUnit.MILLISECONDS);
      }
      c.refreshMembers();
      return c;
    } catch (RuntimeException e) {
      c.close();
      throw e;
    }
  }

  // ---------------------------------------------------------------- master

  private Fabric fabric(String name) {
    return fabrics.computeIfAbsent(name, n -> options.fabrics().open(n));
  }

  private static String scheme(String address) {
    int i = address.indexOf("://");
    return i < 0 ? "" : address.substring(0, i);
  }

  /** The master connection, reconnected (with retries) if it was lost. */
  private MasterStub master() {
    MasterStub m = master;
    if (m != null && m.connection().isOpen()) {
      return m;
    }
    synchronized (this) {
      m = master;
      if (m != null && m.connection().isOpen()) {
        return m;
      }
      checkOpen();
      FabricConnection c =
          withRetries(
              "connect to the master at " + masterAddress,
              () -> fabric(scheme(masterAddress)).connect(masterAddress, connectOptions));
      masterFabric = scheme(masterAddress);
      m = sameHostMaster(new MasterStub(c, options.rpcTimeout()));
      master = m;
      return m;
    }
  }

  /**
   * The master over shm when it runs on this host and serves shm (and the client may use shm: its
   * fabric is {@code auto} or {@code shm}), else {@code tcp} as it was reached. A master RPC over
   * shm is a ring write and a ring read instead of two trips through the loopback stack (see
   * docs/KERNEL.md); a master that does not know MASTER_INFO, or any failure, keeps tcp.
   */
  private MasterStub sameHostMaster(MasterStub viaAddress) {
    String want = options.fabric();
    if (!(want.equals("auto") || want.equals("shm")) || !scheme(masterAddress).equals("tcp")) {
      return viaAddress;
    }
    try {
      MasterStub.MasterInfo info = viaAddress.masterInfo();
      String shm = info.addresses().get("shm");
      if (shm == null || !info.hostId().equals(options.hostId())) {
        return viaAddress;
      }
      FabricConnection c = fabric("shm").connect(shm, connectOptions);
      viaAddress.connection().close();
      masterFabric = "shm";
      return new MasterStub(c, options.rpcTimeout());
    } catch (FerriteException e) {
      LOG.log(System.Logger.Level.DEBUG, "master stays on {0}: {1}", masterAddress, e.getMessage());
      return viaAddress;
    }
  }

  private void renew() {
    long id = sessionId;
    if (id == 0 || closed) {
      return;
    }
    try {
      Futures.join(master().renewSession(id));
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.SESSION_EXPIRED) {
        LOG.log(
            System.Logger.Level.ERROR,
            "session {0} expired: its session-scoped blocks were freed by the master",
            Long.toHexString(id));
        sessionId = 0;
      } else {
        LOG.log(
            System.Logger.Level.WARNING, "session renewal failed, will retry: {0}", e.getMessage());
      }
    }
  }

  private long session() {
    long id = sessionId;
    if (id == 0) {
      throw new FerriteException(
          ErrorCode.SESSION_EXPIRED,
          options.session()
              ? "this client's session expired; connect again"
              : "this client was opened without a session");
    }
    return id;
  }

  /** The session id (0 if none). */
  public long sessionId() {
    return sessionId;
  }

  // ---------------------------------------------------------------- blocks

  /** Allocates {@code count} session-scoped blocks from any class (dram first). */
  public List<BlockRef> allocate(int count) {
    return allocate(count, "", false, "");
  }

  /**
   * Allocates {@code count} blocks, all or none.
   *
   * @param storageClass the preferred class, or "" for the preference order (dram, disk)
   * @param strict only from {@code storageClass}, never spill to another class
   * @param owner "" for session scope (freed when the session ends); else the persistent owner
   */
  public List<BlockRef> allocate(int count, String storageClass, boolean strict, String owner) {
    return Futures.join(allocateAsync(count, storageClass, strict, owner));
  }

  public CompletableFuture<List<BlockRef>> allocateAsync(
      int count, String storageClass, boolean strict, String owner) {
    return master().allocate(session(), count, storageClass, strict, owner);
  }

  /** Frees blocks (all or none); returns how many. */
  public int free(List<BlockRef> blocks) {
    return Futures.join(master().free(session(), blocks));
  }

  /** The blocks persistently owned by {@code owner}. */
  public List<BlockRef> owned(String owner) {
    return master().owned(session(), owner);
  }

  // ---------------------------------------------------------------- one-sided ops

  private static void checkRange(BlockRef block, long offset, long length) {
    if (offset < 0 || length < 0 || offset > block.length() - length) {
      throw new FerriteException(
          ErrorCode.OUT_OF_BOUNDS,
          "offset: "
              + offset
              + ", length: "
              + length
              + " (expected: 0 <= offset and offset + length <= "
              + block.length()
              + " in "
              + block
              + ")");
    }
  }

  /** Reads {@code dst.remaining()} bytes at {@code offset} within the block. Retried if lost. */
  public CompletableFuture<Void> read(BlockRef block, long offset, ByteBuffer dst) {
    checkRange(block, offset, dst.remaining());
    return chunked(
        dst,
        (slice, at) ->
            onServer(
                block.serverId(),
                true,
                c -> c.read(block.region(), block.offset() + offset + at, slice)));
  }

  /**
   * The largest payload of one op: fabrics bound frames ({@link
   * io.ferrite.fabric.ServerSpec#DEFAULT_MAX_FRAME}), so a longer read or write is sent as several
   * ops on consecutive slices (not atomic as a whole; no read or write is).
   */
  static final int MAX_OP_BYTES = 4 << 20;

  private interface SliceOp {
    CompletableFuture<Void> apply(ByteBuffer slice, long at);
  }

  private static CompletableFuture<Void> chunked(ByteBuffer buf, SliceOp op) {
    int len = buf.remaining();
    if (len <= MAX_OP_BYTES) {
      return op.apply(buf, 0);
    }
    List<CompletableFuture<Void>> parts = new ArrayList<>();
    for (int at = 0; at < len; at += MAX_OP_BYTES) {
      ByteBuffer slice = buf.duplicate();
      slice.position(buf.position() + at).limit(buf.position() + Math.min(len, at + MAX_OP_BYTES));
      parts.add(op.apply(slice, at));
    }
    return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]));
  }

  /** Attempts of {@link #readVerified} before it reports a persistent mismatch. */
  static final int VERIFY_ATTEMPTS = 16;

  /**
   * A self-verifying read (Pilaf §3.3): reads {@code dst.remaining()} bytes at {@code offset} and
   * accepts them only if their {@link Checksum64} equals {@code checksum}. A mismatch (a torn read
   * racing a writer, or bytes that changed since the checksum was taken) is read again, with
   * backoff, up to {@value #VERIFY_ATTEMPTS} times; then the future fails with {@link
   * ErrorCode#CONFLICT} (retryable: the writer may not be done yet).
   */
  public CompletableFuture<Void> readVerified(
      BlockRef block, long offset, ByteBuffer dst, long checksum) {
    CompletableFuture<Void> result = new CompletableFuture<>();
    verifiedAttempt(block, offset, dst, checksum, 1, result);
    return result;
  }

  private void verifiedAttempt(
      BlockRef block,
      long offset,
      ByteBuffer dst,
      long checksum,
      int n,
      CompletableFuture<Void> result) {
    read(block, offset, dst)
        .whenComplete(
            (v, t) -> {
              if (t != null) {
                result.completeExceptionally(FerriteException.unwrap(t));
              } else if (Checksum64.of(dst, dst.position(), dst.remaining()) == checksum) {
                result.complete(null);
              } else if (n >= VERIFY_ATTEMPTS || closed) {
                result.completeExceptionally(
                    new FerriteException(
                        ErrorCode.CONFLICT,
                        "checksum mismatch after "
                            + n
                            + " reads of "
                            + dst.remaining()
                            + " B at offset "
                            + offset
                            + " of "
                            + block
                            + " (torn by a writer that is not done, or the data changed)"));
              } else {
                renewer.schedule(
                    () -> verifiedAttempt(block, offset, dst, checksum, n + 1, result),
                    Math.min(50, 1L << Math.min(n, 6)),
                    TimeUnit.MILLISECONDS);
              }
            });
  }

  /** Writes {@code src.remaining()} bytes at {@code offset} within the block. Not retried. */
  public CompletableFuture<Void> write(BlockRef block, long offset, ByteBuffer src) {
    checkRange(block, offset, src.remaining());
    return chunked(
        src,
        (slice, at) ->
            onServer(
                block.serverId(),
                false,
                c -> c.write(block.region(), block.offset() + offset + at, slice)));
  }

  public CompletableFuture<Long> compareAndSwap(
      BlockRef block, long offset, long expect, long update) {
    checkRange(block, offset, 8);
    return onServer(
        block.serverId(),
        false,
        c -> c.compareAndSwap(block.region(), block.offset() + offset, expect, update));
  }

  public CompletableFuture<Long> fetchAndAdd(BlockRef block, long offset, long delta) {
    checkRange(block, offset, 8);
    return onServer(
        block.serverId(),
        false,
        c -> c.fetchAndAdd(block.region(), block.offset() + offset, delta));
  }

  public void readSync(BlockRef block, long offset, ByteBuffer dst) {
    Futures.join(read(block, offset, dst));
  }

  public void writeSync(BlockRef block, long offset, ByteBuffer src) {
    Futures.join(write(block, offset, src));
  }

  public long compareAndSwapSync(BlockRef block, long offset, long expect, long update) {
    return Futures.join(compareAndSwap(block, offset, expect, update));
  }

  public long fetchAndAddSync(BlockRef block, long offset, long delta) {
    return Futures.join(fetchAndAdd(block, offset, delta));
  }

  /** Calls {@code opcode} of a service hosted by memory server {@code serverId}. Not retried. */
  public CompletableFuture<ByteBuffer> call(
      int serverId, int service, int opcode, ByteBuffer request) {
    return onServer(serverId, false, c -> c.call(service, opcode, request, options.rpcTimeout()));
  }

  /**
   * As {@link #call}, for a caller that waits anyway: through {@link FabricConnection#callSync},
   * where a small request over tcp takes a blocking lane when the connection has nothing in flight,
   * so the caller reads its own answer (no hand-off from the client's event loop). Not retried.
   */
  public ByteBuffer callSync(int serverId, int service, int opcode, ByteBuffer request) {
    return callSyncOn(connection(serverId), serverId, service, opcode, request);
  }

  /** As {@link #callMaster}, blocking, through {@link FabricConnection#callSync}. Not retried. */
  public ByteBuffer callMasterSync(int service, int opcode, ByteBuffer request) {
    return master().connection().callSync(service, opcode, request, options.rpcTimeout());
  }

  private ByteBuffer callSyncOn(
      FabricConnection c, int serverId, int service, int opcode, ByteBuffer request) {
    try {
      return c.callSync(service, opcode, request, options.rpcTimeout());
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.UNAVAILABLE) {
        // As the asynchronous path does: the next call opens a new connection.
        connections.remove(serverId, c);
        c.close();
      }
      throw e;
    }
  }

  /**
   * Calls {@code opcode} of a face's extension service on the master (a {@link
   * io.ferrite.kernel.master.MasterExtension}). Not retried.
   */
  public CompletableFuture<ByteBuffer> callMaster(int service, int opcode, ByteBuffer request) {
    return master().connection().call(service, opcode, request, options.rpcTimeout());
  }

  /**
   * A batch of ops to server {@code serverId}, sent with one flush. Block offsets are the caller's
   * to add ({@code block.offset() + offset}); batches are not retried.
   */
  public Batch batch(int serverId) {
    return connection(serverId).batch();
  }

  // ---------------------------------------------------------------- connections

  /**
   * Runs {@code op} on the connection to {@code serverId}. A connection failure drops the
   * connection; {@code idempotent} ops are then retried with backoff on a new connection.
   */
  private <T> CompletableFuture<T> onServer(
      int serverId, boolean idempotent, Function<FabricConnection, CompletableFuture<T>> op) {
    CompletableFuture<T> result = new CompletableFuture<>();
    attempt(serverId, idempotent, op, 1, result);
    return result;
  }

  private <T> void attempt(
      int serverId,
      boolean idempotent,
      Function<FabricConnection, CompletableFuture<T>> op,
      int n,
      CompletableFuture<T> result) {
    FabricConnection c;
    try {
      c = connection(serverId);
    } catch (FerriteException e) {
      result.completeExceptionally(e);
      return;
    }
    op.apply(c)
        .whenComplete(
            (v, t) -> {
              if (t == null) {
                result.complete(v);
                return;
              }
              FerriteException e = FerriteException.unwrap(t);
              if (e.code() == ErrorCode.UNAVAILABLE) {
                connections.remove(serverId, c);
                c.close();
              }
              if (idempotent && e.retryable() && n < options.maxAttempts() && !closed) {
                renewer.schedule(
                    () -> attempt(serverId, idempotent, op, n + 1, result),
                    BASE_BACKOFF_MS << (n - 1),
                    TimeUnit.MILLISECONDS);
              } else {
                result.completeExceptionally(e);
              }
            });
  }

  /**
   * Tells the open connection to {@code region}'s server, if any, that this client no longer needs
   * the region ({@link FabricConnection#release}: a shm mapping of it is dropped). Opens nothing.
   */
  public void releaseRegion(RegionRef region) {
    FabricConnection c = connections.get(region.serverId());
    if (c != null) {
      c.release(region);
    }
  }

  /** The shared connection to {@code serverId}, opened on first use. */
  public FabricConnection connection(int serverId) {
    FabricConnection c = connections.get(serverId);
    if (c != null && c.isOpen()) {
      return c;
    }
    synchronized (connections) {
      c = connections.get(serverId);
      if (c != null && c.isOpen()) {
        return c;
      }
      checkOpen();
      // Each attempt reads the membership again: a restarted server has new addresses.
      c =
          withRetries(
              "connect to server " + serverId,
              () -> {
                MemberInfo m = member(serverId);
                String fabricName = chooseFabric(m);
                String address = m.addresses().get(fabricName);
                try {
                  return fabric(fabricName).connect(address, connectOptions);
                } catch (FerriteException e) {
                  if (e.retryable()) {
                    members.remove(serverId);
                  }
                  throw new FerriteException(e.code(), address + ": " + e.detail(), e);
                }
              });
      connections.put(serverId, c);
      return c;
    }
  }

  private MemberInfo member(int serverId) {
    MemberInfo m = members.get(serverId);
    if (m == null) {
      refreshMembers();
      m = members.get(serverId);
    }
    if (m == null) {
      throw new FerriteException(ErrorCode.NOT_FOUND, "no memory server " + serverId);
    }
    return m;
  }

  /** Fetches the membership again (addresses change when a server restarts). */
  public List<MemberInfo> refreshMembers() {
    List<MemberInfo> list = master().members();
    for (MemberInfo m : list) {
      members.put(m.serverId(), m);
    }
    return list;
  }

  /**
   * The fabric to reach {@code m}: {@code auto} picks shm for a server on this host that offers it,
   * else tcp, else whatever the server offers; a named fabric must be offered by the server.
   */
  String chooseFabric(MemberInfo m) {
    Map<String, String> a = m.addresses();
    String want = options.fabric();
    if (!want.equals("auto")) {
      if (!a.containsKey(want)) {
        throw new FerriteException(
            ErrorCode.UNSUPPORTED,
            "server "
                + m.serverId()
                + " offers "
                + a.keySet()
                + ", not "
                + want
                + " (client.fabric)");
      }
      return want;
    }
    if (a.containsKey("shm") && m.hostId().equals(options.hostId())) {
      try {
        fabric("shm");
        return "shm";
      } catch (FerriteException e) {
        LOG.log(System.Logger.Level.DEBUG, "shm unavailable, using tcp: {0}", e.getMessage());
      }
    }
    for (String f : List.of("tcp", "local", "shm")) {
      if (a.containsKey(f)) {
        return f;
      }
    }
    throw new FerriteException(
        ErrorCode.UNAVAILABLE, "server " + m.serverId() + " has announced no address yet");
  }

  private <T> T withRetries(String what, java.util.function.Supplier<T> action) {
    FerriteException last = null;
    for (int n = 1; n <= options.maxAttempts(); n++) {
      try {
        return action.get();
      } catch (FerriteException e) {
        last = e;
        if (!e.retryable() || n == options.maxAttempts()) {
          break;
        }
        try {
          Thread.sleep(BASE_BACKOFF_MS << (n - 1));
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          break;
        }
      }
    }
    throw new FerriteException(last.code(), "cannot " + what + ": " + last.detail(), last);
  }

  private void checkOpen() {
    if (closed) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, "client is closed");
    }
  }

  // ---------------------------------------------------------------- region directory

  /**
   * The ref of region {@code regionId} of server {@code serverId}, e.g. a region a hosted service
   * created. Cached; a miss asks the master for the server's regions.
   *
   * @throws FerriteException NO_SUCH_REGION if the master knows no such region
   */
  public RegionInfo region(int serverId, int regionId) {
    long key = ((long) serverId << 32) | (regionId & 0xFFFFFFFFL);
    RegionInfo r = regions.get(key);
    if (r == null) {
      for (RegionInfo ri : master().regions(serverId)) {
        regions.put(((long) serverId << 32) | (ri.ref().regionId() & 0xFFFFFFFFL), ri);
      }
      r = regions.get(key);
    }
    if (r == null) {
      throw new FerriteException(
          ErrorCode.NO_SUCH_REGION, "the master knows no region " + serverId + "/" + regionId);
    }
    return r;
  }

  /** Drops cached region refs of {@code serverId} (after it restarted with new regions). */
  public void forgetRegions(int serverId) {
    regions.keySet().removeIf(k -> (int) (k >>> 32) == serverId);
  }

  // ---------------------------------------------------------------- cluster

  public ClusterStatus status() {
    return master().status();
  }

  public List<MemberInfo> members() {
    return refreshMembers();
  }

  /**
   * The fabric of the master connection ({@code shm}, {@code tcp}, {@code local}; "" before the
   * first connect): over shm and local, one-sided reads of a region the master serves cost a memory
   * access, over tcp a round trip.
   */
  public String masterFabric() {
    master();
    return masterFabric;
  }

  /** The master stub, for admin tools and faces that need master calls of their own. */
  public MasterStub masterStub() {
    return master();
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    renewer.shutdownNow();
    long id = sessionId;
    sessionId = 0;
    MasterStub m = master;
    if (id != 0 && m != null && m.connection().isOpen()) {
      try {
        m.closeSession(id);
      } catch (FerriteException e) {
        LOG.log(System.Logger.Level.DEBUG, "closing session: {0}", e.getMessage());
      }
    }
    List<AutoCloseable> all = new ArrayList<>(connections.values());
    connections.clear();
    if (m != null) {
      all.add(m.connection());
    }
    all.addAll(fabrics.values());
    fabrics.clear();
    for (AutoCloseable c : all) {
      try {
        c.close();
      } catch (Exception e) {
        LOG.log(System.Logger.Level.DEBUG, "closing " + c, e);
      }
    }
  }

  /** The deadline of control RPCs. */
  public Duration rpcTimeout() {
    return options.rpcTimeout();
  }
}
