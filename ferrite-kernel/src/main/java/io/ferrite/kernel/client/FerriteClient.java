package io.ferrite.kernel.client;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.verify.Checksum64;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.MasterStub;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.RegionInfo;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A client of one Ferrite cluster: a session with the master (renewed in the background), one
 * connection per memory server shared by all threads (opened lazily, over the fabric chosen per
 * server), and block-level one-sided operations.
 *
 * <p>This class is the facade; each job lives in one class: the session and its renewal ({@link
 * Session}, on a thread of its own), connections, fabric choice and membership ({@link
 * Connections}, connects never holding a lock across a network wait), the data path with its bounds
 * checks ({@link DataOps}), and retries with their backoff ({@link Retry}).
 *
 * <h2>Errors and retries</h2>
 *
 * Every failure is a {@link FerriteException} with a code that says whether a retry can help. The
 * client itself retries, with backoff and at most {@link ClientOptions#maxAttempts()} times, what
 * is safe to repeat: connecting, and reads. Writes, atomics and RPCs to memory servers are not
 * retried (a lost answer does not mean the operation did not happen); a connection that fails is
 * dropped and the next operation reconnects. Calls to the master (allocation, frees, the faces'
 * calls) wait out a master that is unreachable, restarting or not the leader, up to {@link
 * ClientOptions#masterDeadline}, and those that change something carry a request id, so a repeat is
 * never applied twice ({@link MasterCalls}).
 *
 * <p>Thread-safe. {@link #close()} closes the session (freeing its session-scoped blocks), every
 * connection and every fabric the client opened; ops still waiting for a retry or a connect fail
 * with {@link ErrorCode#UNAVAILABLE}.
 */
public final class FerriteClient implements AutoCloseable {
  private final ClientOptions options;
  private final Retry retry;
  private final Connections connections;
  private final DataOps data;
  private final MasterCalls calls;
  private final Map<Long, RegionInfo> regions = new ConcurrentHashMap<>();
  private volatile Session session;
  private volatile boolean closed;

  /** The cluster's master groups: this client alone (group 0) unless the URI named several. */
  private volatile MasterGroups groups = new MasterGroups(this);

  private FerriteClient(String masterAddress, ClientOptions options) {
    this.options = options;
    this.retry = new Retry(options.maxAttempts());
    this.connections = new Connections(masterAddress, options, retry);
    this.data = new DataOps(connections, retry, options.rpcTimeout());
    this.calls = new MasterCalls(connections, retry, options.masterDeadline(), this::sessionId);
  }

  /** The configuration of this client's process ({@link ClientOptions#config()}). */
  public io.ferrite.kernel.config.FerriteConfig config() {
    return options.config();
  }

  static FerriteClient open(String masterAddress, ClientOptions options) {
    FerriteClient c = new FerriteClient(masterAddress, options);
    try {
      // The first connect does not wait out the master (client.master.deadline): a cluster none
      // of whose masters takes a connection is most likely not running, and a person running
      // 'ferrite status' wants to hear that now, not in 15 s. Once connected, every call rides
      // through (the session's open included: a master group electing its leader answers
      // NOT_LEADER, which is waited out).
      c.connections.master();
      c.session = new Session(c.connections, c.calls, options);
      c.refreshMembers();
      return c;
    } catch (RuntimeException e) {
      c.close();
      throw e;
    }
  }

  /** The options the client was opened with (its {@link ClientOptions#metrics}, for faces). */
  public ClientOptions options() {
    return options;
  }

  /** The session id (0 if none). */
  public long sessionId() {
    Session s = session;
    return s == null ? 0 : s.id();
  }

  private long requireSession() {
    Session s = session;
    if (s == null) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, "client is closed");
    }
    return s.require();
  }

  /** The longest one session renewal waits for the master (for tests). */
  Duration renewDeadline() {
    Session s = session;
    return s == null ? Duration.ZERO : s.renewDeadline();
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
    long session = requireSession();
    return calls.withId(
        n ->
            calls.async(
                "allocate " + count + " block(s)",
                m ->
                    calls.withIdsAsync(
                        n, id -> m.allocate(id, session, count, storageClass, strict, owner))));
  }

  /** Frees blocks (all or none); returns how many. */
  public int free(List<BlockRef> blocks) {
    long session = requireSession();
    return Futures.join(
        calls.withId(
            n ->
                calls.async(
                    "free " + blocks.size() + " block(s)",
                    m -> calls.withIdsAsync(n, id -> m.free(id, session, blocks)))));
  }

  /** The blocks persistently owned by {@code owner}. */
  public List<BlockRef> owned(String owner) {
    long session = requireSession();
    return calls.sync("list the blocks of " + owner, m -> m.owned(session, owner));
  }

  // ---------------------------------------------------------------- one-sided ops

  /** The largest payload of one op (see {@link DataOps#MAX_OP_BYTES}). */
  static final int MAX_OP_BYTES = DataOps.MAX_OP_BYTES;

  /** Attempts of {@link #readVerified} before it reports a persistent mismatch. */
  static final int VERIFY_ATTEMPTS = DataOps.VERIFY_ATTEMPTS;

  /** Reads {@code dst.remaining()} bytes at {@code offset} within the block. Retried if lost. */
  public CompletableFuture<Void> read(BlockRef block, long offset, ByteBuffer dst) {
    return data.read(block, offset, dst);
  }

  /**
   * A self-verifying read (Pilaf §3.3): reads {@code dst.remaining()} bytes at {@code offset} and
   * accepts them only if their {@link Checksum64} equals {@code checksum}. A mismatch (a torn read
   * racing a writer, or bytes that changed since the checksum was taken) is read again, with
   * backoff, up to {@value #VERIFY_ATTEMPTS} times; then the future fails with {@link
   * ErrorCode#CONFLICT} (retryable: the writer may not be done yet).
   */
  public CompletableFuture<Void> readVerified(
      BlockRef block, long offset, ByteBuffer dst, long checksum) {
    return data.readVerified(block, offset, dst, checksum);
  }

  /** Writes {@code src.remaining()} bytes at {@code offset} within the block. Not retried. */
  public CompletableFuture<Void> write(BlockRef block, long offset, ByteBuffer src) {
    return data.write(block, offset, src);
  }

  public CompletableFuture<Long> compareAndSwap(
      BlockRef block, long offset, long expect, long update) {
    return data.compareAndSwap(block, offset, expect, update);
  }

  public CompletableFuture<Long> fetchAndAdd(BlockRef block, long offset, long delta) {
    return data.fetchAndAdd(block, offset, delta);
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
    return data.call(serverId, service, opcode, request);
  }

  /**
   * As {@link #call}, for a caller that waits anyway: through {@link FabricConnection#callSync},
   * where a small request over tcp takes a blocking lane when the connection has nothing in flight,
   * so the caller reads its own answer (no hand-off from the client's event loop). Not retried.
   */
  public ByteBuffer callSync(int serverId, int service, int opcode, ByteBuffer request) {
    return data.callSync(serverId, service, opcode, request);
  }

  /**
   * As {@link #callMaster}, blocking, through {@link FabricConnection#callSync}; waits out the
   * master as {@link #callMaster} does.
   */
  public ByteBuffer callMasterSync(int service, int opcode, ByteBuffer request) {
    return calls.callSync(service, opcode, request);
  }

  /**
   * Calls {@code opcode} of a face's extension service on the master (a {@link
   * io.ferrite.kernel.master.MasterExtension}). A master that is unreachable, restarting or not the
   * leader is waited out, up to {@link ClientOptions#masterDeadline}: the call carries a request
   * id, so a repeat after a lost answer gets the first answer rather than running again (see {@link
   * MasterCalls} and docs/KERNEL.md, "Riding through a master restart").
   */
  public CompletableFuture<ByteBuffer> callMaster(int service, int opcode, ByteBuffer request) {
    return calls.call(service, opcode, request);
  }

  /**
   * A batch of ops to server {@code serverId}, sent with one flush. Block offsets are the caller's
   * to add ({@code block.offset() + offset}); batches are not retried.
   */
  public Batch batch(int serverId) {
    return data.batch(serverId);
  }

  // ---------------------------------------------------------------- connections

  /**
   * Tells the open connection to {@code region}'s server, if any, that this client no longer needs
   * the region ({@link FabricConnection#release}: a shm mapping of it is dropped). Opens nothing.
   */
  public void releaseRegion(RegionRef region) {
    connections.release(region);
  }

  /** The shared connection to {@code serverId}, opened on first use. */
  public FabricConnection connection(int serverId) {
    return connections.connection(serverId);
  }

  /** Fetches the membership again (addresses change when a server restarts). */
  public List<MemberInfo> refreshMembers() {
    return calls.sync("list the members", m -> connections.refreshMembers());
  }

  /** See {@link Connections#chooseFabric}. */
  String chooseFabric(MemberInfo m) {
    return connections.chooseFabric(m);
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
      for (RegionInfo ri : calls.sync("list regions", m -> m.regions(serverId))) {
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
    return calls.sync("read the cluster status", MasterStub::status);
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
    return calls.sync("connect to the master", m -> connections.masterFabric());
  }

  /** The master stub, for admin tools and faces that need master calls of their own. */
  public MasterStub masterStub() {
    return calls.sync("connect to the master", m -> m);
  }

  /**
   * The cluster's master groups ({@link Ferrite#groups}): this client is group 0's; a client per
   * other group is opened on first use. A cluster of one group has one, this client.
   */
  public MasterGroups groups() {
    return groups;
  }

  /** Called once by {@link Ferrite#connect} for a URI naming several groups. */
  void attachGroups(List<List<String>> addresses) {
    groups = new MasterGroups(this, addresses, options);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    groups.close(); // the other groups' clients (their sessions, connections); never this one
    Session s = session;
    if (s != null) {
      s.close(); // first: it needs the master connection
    }
    // Connections before retries: an attempt still waiting for its backoff then runs (at once,
    // in retry.close()) into a closed client and fails UNAVAILABLE, rather than starting a connect
    // this thread would wait for.
    connections.close();
    retry.close();
  }

  /** The deadline of control RPCs. */
  public Duration rpcTimeout() {
    return options.rpcTimeout();
  }
}
