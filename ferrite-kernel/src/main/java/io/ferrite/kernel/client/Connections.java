package io.ferrite.kernel.client;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.config.Threads;
import io.ferrite.kernel.proto.MasterStub;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerState;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * A client's connections: to the master and to each memory server (one per server, shared by all
 * threads, opened on first use), which fabric reaches each, the membership that names their
 * addresses, and the fabrics they run on.
 *
 * <h2>Connecting without a global lock</h2>
 *
 * A connect is a network wait of up to {@code connectTimeout} per attempt, retried with backoff
 * ({@link Retry#blocking}). It runs on a connect thread of its own ({@code
 * ferrite-client-connect-N}, made on demand, gone after 30 s idle), and is published as a future
 * per server (and one for the master): every caller that needs that server while it connects waits
 * on the same future, and no caller that needs another server, the master, or an open connection
 * waits at all. Nothing holds a lock across the wait. A silent host therefore delays only the ops
 * addressed to it.
 *
 * <p>Thread-safe. {@link #close()} closes every connection and every fabric this opened, and fails
 * connects in progress with {@link ErrorCode#UNAVAILABLE}.
 */
final class Connections implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Connections.class.getName());

  /** The key of the master's connect future in {@link #connecting} (server ids are >= 0). */
  private static final int MASTER = -1;

  private final ClientOptions options;

  /** Every master of the group (one for a single master), in the cluster URI's order. */
  private final List<String> masterAddresses;

  /** The master connected now, or the first before any connect (for messages). */
  private volatile String masterAddress;

  /**
   * The leader a master named (MASTER_INFO of a follower, or a NOT_LEADER answer): tried first by
   * the next connect; null when none is known.
   */
  private volatile String leaderHint;

  private final ConnectOptions connectOptions;
  private final Retry retry;
  private final Map<String, Fabric> fabrics = new ConcurrentHashMap<>();
  private final Map<Integer, FabricConnection> open = new ConcurrentHashMap<>();
  private final Map<Integer, CompletableFuture<?>> connecting = new ConcurrentHashMap<>();
  private final Map<Integer, MemberInfo> members = new ConcurrentHashMap<>();
  private final ThreadPoolExecutor connector;
  private volatile MasterStub master;
  private volatile String masterFabric = "";
  private volatile boolean closed;

  /**
   * The client's fabric counters, or null when it does not count ({@link ClientOptions#metrics}).
   */
  private final ClientMeters meters;

  Connections(String masterAddress, ClientOptions options, Retry retry) {
    this.options = options;
    this.masterAddresses = Ferrite.masterAddresses(masterAddress);
    this.masterAddress = masterAddresses.get(0);
    this.retry = retry;
    this.meters = options.metrics() != null ? new ClientMeters(options.metrics()) : null;
    this.connectOptions =
        new ConnectOptions(options.credentials(), options.connectTimeout(), options.opTimeout());
    // A thread per connect in progress (at most one per server, one for the master): a connect
    // blocks its thread for as long as the peer is silent, and must not block another's.
    this.connector =
        new ThreadPoolExecutor(
            0,
            Integer.MAX_VALUE,
            30,
            TimeUnit.SECONDS,
            new SynchronousQueue<>(),
            Threads.named("ferrite-client-connect"));
  }

  /** A new connection over fabric {@code name}, counted when the client counts. */
  private FabricConnection connect(String name, String address) {
    FabricConnection c = fabric(name).connect(address, connectOptions);
    return meters != null ? meters.opened(name, c) : c;
  }

  private Fabric fabric(String name) {
    return fabrics.computeIfAbsent(name, n -> options.fabrics().open(n));
  }

  static String scheme(String address) {
    int i = address.indexOf("://");
    return i < 0 ? "" : address.substring(0, i);
  }

  // ---------------------------------------------------------------- master

  /** The master connection, reconnected (with retries) if it was lost; waits for the connect. */
  MasterStub master() {
    MasterStub m = master;
    if (m != null && m.connection().isOpen()) {
      return m;
    }
    return Futures.join(masterAsync());
  }

  /**
   * The master connection, now if it is open, else once a connect (the one in progress, or a new
   * one) is done. The caller chooses how long to wait: session renewal waits no longer than its own
   * deadline.
   */
  CompletableFuture<MasterStub> masterAsync() {
    MasterStub m = master;
    if (m != null && m.connection().isOpen()) {
      return CompletableFuture.completedFuture(m);
    }
    return connect(
        MASTER,
        () -> {
          FabricConnection c =
              retry.blocking(
                  "connect to the master at " + String.join(",", masterAddresses),
                  this::connectLeader);
          masterFabric = scheme(masterAddress);
          MasterStub stub = sameHostMaster(new MasterStub(c, options.rpcTimeout()));
          MasterStub watched =
              masterAddresses.size() > 1
                  ? new MasterStub(
                      new LeaderWatch(stub.connection(), this::notLeader), options.rpcTimeout())
                  : stub;
          master = watched;
          return watched;
        },
        stub -> stub.connection().close());
  }

  /**
   * A connection to the master that serves: a single master as it is; in a group, the addresses in
   * turn (the leader last named first), asking each its role (MASTER_INFO), and on a follower that
   * names the leader, that leader next. Throws the last failure (retryable: the caller's {@link
   * Retry#blocking} tries again) when none serves now (an election under way).
   */
  private FabricConnection connectLeader() {
    io.ferrite.kernel.proto.LeaderSeek.Found f =
        io.ferrite.kernel.proto.LeaderSeek.seek(
            masterAddresses, leaderHint, a -> connect(scheme(a), a), options.rpcTimeout());
    masterAddress = f.address();
    if (masterAddresses.size() > 1) {
      leaderHint = f.address();
    }
    return f.connection();
  }

  /**
   * A master answered NOT_LEADER: note the leader it named and drop the connection, so the next
   * master call connects to that leader (or asks the group again).
   */
  void notLeader(FerriteException e) {
    leaderHint = MasterStub.leaderNamedIn(e);
    MasterStub m = master;
    if (m != null) {
      master = null;
      m.connection().close();
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
      FabricConnection c = connect("shm", shm);
      viaAddress.connection().close();
      masterFabric = "shm";
      return new MasterStub(c, options.rpcTimeout());
    } catch (FerriteException e) {
      LOG.log(System.Logger.Level.DEBUG, "master stays on {0}: {1}", masterAddress, e.getMessage());
      return viaAddress;
    }
  }

  /**
   * Leaves master {@code m} after it answered {@code e} that says to ask another (NOT_LEADER): its
   * connection is closed if it is still the current one, so the next call connects again.
   */
  void masterFailed(MasterStub m, FerriteException e) {
    if (master == m) {
      LOG.log(System.Logger.Level.DEBUG, "leaving the master: {0}", e.getMessage());
      m.connection().close();
    }
  }

  /**
   * Master {@code m} of a group did not answer in time ({@code TIMEOUT}): it may be cut off from
   * the network, and a cut-off connection stays open and silent (no reset ever comes), so every
   * retry on it would time out again while the rest of the group elects a leader. Its connection is
   * closed if it is still the current one, and it is no longer the first tried, so the next call
   * asks the group (MASTER_INFO) again. A single master keeps its connection: there is no other to
   * ask, and a slow master is better waited for than reconnected to.
   */
  void masterSilent(MasterStub m, FerriteException e) {
    if (masterAddresses.size() > 1 && master == m) {
      LOG.log(System.Logger.Level.DEBUG, "leaving a silent master: {0}", e.getMessage());
      if (masterAddress.equals(leaderHint)) {
        leaderHint = null;
      }
      master = null;
      m.connection().close();
    }
  }

  /** The fabric of the master connection ("" before the first connect). */
  String masterFabric() {
    master();
    return masterFabric;
  }

  // ---------------------------------------------------------------- memory servers

  /** The shared connection to {@code serverId}, opened on first use; waits for the connect. */
  /** The connection to {@code serverId} if one is open now, else null (nothing is started). */
  FabricConnection openNow(int serverId) {
    FabricConnection c = open.get(serverId);
    return c != null && c.isOpen() ? c : null;
  }

  FabricConnection connection(int serverId) {
    FabricConnection c = open.get(serverId);
    if (c != null && c.isOpen()) {
      return c;
    }
    return Futures.join(connectionAsync(serverId));
  }

  /**
   * The connection to {@code serverId}: complete now if it is open, else when the connect in
   * progress (or a new one) is done. Each connect attempt reads the membership again: a restarted
   * server has new addresses.
   */
  CompletableFuture<FabricConnection> connectionAsync(int serverId) {
    FabricConnection c = open.get(serverId);
    if (c != null && c.isOpen()) {
      return CompletableFuture.completedFuture(c);
    }
    return connect(
        serverId,
        () -> {
          FabricConnection fresh =
              retry.blocking("connect to server " + serverId, () -> connectOnce(serverId));
          FabricConnection old = open.put(serverId, fresh);
          if (old != null && old != fresh) {
            old.close();
          }
          return fresh;
        },
        FabricConnection::close);
  }

  private FabricConnection connectOnce(int serverId) {
    MemberInfo m = member(serverId);
    String fabricName = chooseFabric(m);
    String address = m.addresses().get(fabricName);
    try {
      return connect(fabricName, address);
    } catch (FerriteException e) {
      if (e.retryable()) {
        members.remove(serverId);
      }
      // A server the master has DEAD (no heartbeat: stopped, or cut off by the network) says so:
      // the reader learns why, not only that a connect timed out.
      String why =
          m.state() == ServerState.ALIVE
              ? ""
              : "server " + serverId + " (" + m.name() + ") is " + m.state() + " at the master: ";
      throw new FerriteException(e.code(), why + address + ": " + e.detail(), e);
    }
  }

  /**
   * The one connect in progress to {@code key}, started on a connect thread if there is none. The
   * future leaves {@link #connecting} before it completes, so a caller that finds the result
   * already closed starts a new connect rather than joining a finished one.
   */
  @SuppressWarnings("unchecked")
  private <T> CompletableFuture<T> connect(int key, Supplier<T> job, Consumer<T> close) {
    if (closed) {
      return Futures.failed(ErrorCode.UNAVAILABLE, "client is closed");
    }
    CompletableFuture<T> fresh = new CompletableFuture<>();
    CompletableFuture<T> running = (CompletableFuture<T>) connecting.putIfAbsent(key, fresh);
    if (running != null) {
      return running;
    }
    try {
      connector.execute(
          () -> {
            T result = null;
            FerriteException failure = null;
            try {
              result = job.get();
              if (closed) {
                // close() may have missed it: it was not in open yet when close looked.
                close.accept(result);
                failure = new FerriteException(ErrorCode.UNAVAILABLE, "client is closed");
              }
            } catch (FerriteException e) {
              failure =
                  closed ? new FerriteException(ErrorCode.UNAVAILABLE, "client is closed", e) : e;
            } catch (RuntimeException e) {
              failure = new FerriteException(ErrorCode.INTERNAL, String.valueOf(e), e);
            }
            connecting.remove(key, fresh);
            if (failure != null) {
              fresh.completeExceptionally(failure);
            } else {
              fresh.complete(result);
            }
          });
    } catch (RejectedExecutionException e) {
      connecting.remove(key, fresh);
      fresh.completeExceptionally(new FerriteException(ErrorCode.UNAVAILABLE, "client is closed"));
    }
    return fresh;
  }

  /**
   * Drops the connection {@code c} to {@code serverId} after it failed with {@link
   * ErrorCode#UNAVAILABLE}: the next op opens a new one.
   */
  void dropped(int serverId, FabricConnection c) {
    open.remove(serverId, c);
    c.close();
  }

  /** The open connection to {@code serverId}, or null: opens nothing. */
  FabricConnection ifOpen(int serverId) {
    return open.get(serverId);
  }

  /** Tells the open connection to the region's server, if any, that the region is not needed. */
  void release(RegionRef region) {
    FabricConnection c = open.get(region.serverId());
    if (c != null) {
      c.release(region);
    }
  }

  // ---------------------------------------------------------------- membership

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
  List<MemberInfo> refreshMembers() {
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

  /** The master connection if it is open (for closing a session), else null. */
  MasterStub openMaster() {
    MasterStub m = master;
    return m != null && m.connection().isOpen() ? m : null;
  }

  /**
   * Closes every connection and fabric. A connect in progress is interrupted (its thread stops
   * waiting) and its future fails with {@link ErrorCode#UNAVAILABLE}.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    // The waiters first, then the interrupt: a connect that the interrupt ends must not get to
    // report its own failure as the reason.
    for (CompletableFuture<?> f : connecting.values()) {
      f.completeExceptionally(new FerriteException(ErrorCode.UNAVAILABLE, "client is closed"));
    }
    connector.shutdownNow();
    List<AutoCloseable> all = new ArrayList<>(open.values());
    open.clear();
    MasterStub m = master;
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
}
