package io.ferrite.kernel.master;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.config.ShmDirectory;
import io.ferrite.kernel.config.Threads;
import io.ferrite.kernel.proto.HostIdentity;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The master process: a {@link MasterState} recovered from and journaled to {@code
 * <data.dir>/master/journal}, served as an RPC-only endpoint (node id 0) on every fabric it is
 * given, and a ticker thread that detects dead servers, expires sessions and takes snapshots.
 */
public final class Master implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Master.class.getName());

  private final FerriteConfig cfg;
  private final Credentials credentials;
  private final List<Fabric> fabrics;
  private final Path dir;
  private final int snapshotEvery;

  /**
   * Records of the last snapshot written or recovered: the next is due no sooner than as many log
   * records later ({@link #snapshotDue}). Written under the metadata lock, read by the ticker.
   */
  private volatile long lastSnapshotRecords;

  private final ScheduledThreadPoolExecutor ticker;
  private final String hostId = HostIdentity.local();

  /** The single master's journal; null in a master group (Raft keeps the log there). */
  private final Journal journal;

  /** The master group's Raft side; null for a single master. */
  private MasterGroup group;

  /**
   * What serves the master's RPCs: the metadata, where its mutations become durable, the RPC
   * service, the revoker and the extensions. A single master has one for its lifetime; in a group
   * only the leader has one (built when it becomes leader and ready, closed when it stops being
   * leader), followers have none and answer NOT_LEADER.
   */
  static final class Core {
    final MasterState state;
    final Durability log;

    /**
     * The state's sink and the service's durability, in front of {@link #log}: holds a call's
     * record open for its answer (see HeldRecords).
     */
    final HeldRecords held;

    final List<MasterExtension> extensions;
    final long term;
    final List<Integer> regionIds = new ArrayList<>();
    MasterService service;
    Revoker revoker;

    /**
     * @param write appends one record to {@code log}
     */
    Core(
        MasterState state,
        Durability log,
        MasterState.Sink write,
        List<MasterExtension> extensions,
        long term) {
      this.state = state;
      this.log = log;
      this.held = new HeldRecords(log, write);
      state.sink(held);
      this.extensions = extensions;
      this.term = term;
    }
  }

  private volatile Core core;

  /** The RPC handler on every endpoint: the core's service, or NOT_LEADER without one. */
  private final Front front = new Front();

  private final List<FabricServer> endpoints = new ArrayList<>();
  private final Map<String, String> addresses = new LinkedHashMap<>();
  private volatile boolean closed;

  /** One snapshot at a time, and none while closing; taken before the metadata lock. */
  private final Object snapshotLock = new Object();

  private Path shmSocketDir;

  /** Regions the master serves itself (extensions' {@link MasterContext#createRegion}). */
  private final RegionTable regions = new RegionTable();

  /** Ids of {@link #regions}: never reused (a new leader's regions get new ones). */
  private int lastRegionId;

  private final SecureRandom rkeys = new SecureRandom();

  /** The master's meters; always kept, served over HTTP only with {@code metrics.port >= 0}. */
  private final io.ferrite.kernel.ops.Metrics metrics =
      new io.ferrite.kernel.ops.Metrics(
          List.of(io.micrometer.core.instrument.Tag.of("process", "master")));

  /** The metrics endpoint and console, or null when {@code metrics.port} is -1. */
  private volatile io.ferrite.kernel.ops.OpsServer ops;

  /** The web console on {@link #ops}, or null when that is off. */
  private volatile io.ferrite.kernel.ops.console.Console console;

  private Master(
      FerriteConfig cfg, Credentials credentials, List<Fabric> fabrics, Journal journal) {
    this.cfg = cfg;
    this.credentials = credentials;
    this.fabrics = List.copyOf(fabrics);
    this.dir = cfg.dataDir().resolve("master");
    this.journal = journal;
    this.snapshotEvery = cfg.snapshotEvery();
    this.lastSnapshotRecords = journal == null ? 0 : journal.recovery().snapshotRecords();
    this.ticker = Threads.scheduler("ferrite-master-ticker");
  }

  /**
   * Recovers the metadata from {@code <data.dir>/master}, then serves it on each of {@code fabrics}
   * (binding {@code master.host}:{@code master.port} on tcp). The caller keeps ownership of the
   * fabrics. With {@code master.peers} set, this master is one of a Raft group (see {@link
   * #startGroup}); the extensions are found with {@link ServiceLoader}, fresh instances for each
   * state it builds.
   */
  public static Master start(FerriteConfig cfg, Credentials credentials, List<Fabric> fabrics) {
    if (!cfg.masterPeers().isEmpty()) {
      return startGroup(cfg, credentials, fabrics, Master::discovered);
    }
    return start(cfg, credentials, fabrics, discovered());
  }

  private static List<MasterExtension> discovered() {
    List<MasterExtension> found = new ArrayList<>();
    ServiceLoader.load(MasterExtension.class).forEach(found::add);
    return found;
  }

  /**
   * Starts one master of the Raft group {@code master.peers} names ({@code master.id} is this one):
   * its Raft server (Apache Ratis, NETTY, storage in {@code <data.dir>/master/raft}) and its
   * endpoints. While it follows it answers every opcode but MASTER_INFO with NOT_LEADER, naming the
   * leader; when it becomes leader (and Ratis says the leader is ready: everything committed before
   * its term is applied), it builds its serving state from the committed one, starts the extensions
   * and serves, every server UNKNOWN until it heartbeats (as after a restart). It stops serving
   * (the state is thrown away) as soon as it is no longer leader or a mutation fails to commit.
   * {@code extensions} makes fresh instances: one set for the committed state, one for each
   * leadership stint. See docs/RESILIENCE.md.
   */
  public static Master startGroup(
      FerriteConfig cfg,
      Credentials credentials,
      List<Fabric> fabrics,
      java.util.function.Supplier<List<MasterExtension>> extensions) {
    if (cfg.masterPeers().isEmpty()) {
      throw new IllegalArgumentException(
          FerriteConfig.MASTER_PEERS + " is empty: a single master uses Master.start");
    }
    if (cfg.masterId() < 1) {
      throw new IllegalArgumentException(
          FerriteConfig.MASTER_ID
              + ": "
              + cfg.masterId()
              + " (expected: 1 to "
              + cfg.masterPeers().size()
              + ", this master's place in "
              + FerriteConfig.MASTER_PEERS
              + ")");
    }
    Master m = new Master(cfg, credentials, fabrics, null);
    try {
      Secrets.createPrivateDirectories(m.dir);
      m.group =
          new MasterGroup(
              cfg, m.dir, () -> newState(cfg, credentials, extensions.get()), m, extensions);
      List<String> names = new ArrayList<>();
      Map<Integer, String> serviceNames = new java.util.HashMap<>();
      serviceNames.put(io.ferrite.kernel.proto.MasterProtocol.SERVICE, "master");
      for (MasterExtension ext : extensions.get()) {
        serviceNames.put(ext.serviceId(), ext.name());
        names.add(ext.name());
      }
      m.serve(serviceNames);
      m.group.start();
    } catch (IOException e) {
      m.close();
      throw new UncheckedIOException("cannot start the master group member in " + m.dir, e);
    } catch (RuntimeException e) {
      m.close();
      throw e;
    }
    LOG.log(
        System.Logger.Level.INFO,
        "master {0} of the group of cluster {1} listening at {2}",
        cfg.masterId(),
        cfg.clusterId(),
        m.addresses.values());
    return m;
  }

  /** A state with {@code extensions} installed, empty. */
  static MasterState newState(
      FerriteConfig cfg, Credentials credentials, List<MasterExtension> extensions) {
    MasterState state =
        new MasterState(
            cfg.clusterId(),
            cfg.blockSize(),
            cfg.deadTimeout().toMillis(),
            (int) cfg.sessionLease().toMillis(),
            (int) cfg.heartbeatInterval().toMillis(),
            () -> System.nanoTime() / 1_000_000,
            new SecureRandom());
    for (MasterExtension ext : extensions) {
      state.registerExtension(ext);
    }
    state.blockKeys(new io.ferrite.kernel.proto.BlockKeyMint(credentials.secret()));
    return state;
  }

  /**
   * Repairs the journal under {@code cfg}'s data directory before a start, as an operator asked
   * ({@code ferrite master --repair-journal}): cuts it at a corrupt record that {@link #start}
   * refuses ({@link JournalCorruptException}). Returns one line per file cut, saying what was
   * dropped; empty if nothing needed it. Run it only while no master runs on that directory.
   */
  public static List<String> repairJournal(FerriteConfig cfg) {
    Path dir = cfg.dataDir().resolve("master").resolve("journal");
    try {
      return Journal.repair(dir);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot repair the master journal in " + dir, e);
    }
  }

  /**
   * Like {@link #start(FerriteConfig, Credentials, List)} with exactly {@code extensions} installed
   * (no {@link ServiceLoader} discovery): each gets its records replayed, then {@link
   * MasterExtension#start}, and serves its RPC service on the master's endpoints. A single master
   * only (a group needs fresh instances per state: {@link #startGroup}).
   */
  public static Master start(
      FerriteConfig cfg,
      Credentials credentials,
      List<Fabric> fabrics,
      List<MasterExtension> extensions) {
    return start(cfg, credentials, fabrics, extensions, Journal.FORCE);
  }

  /**
   * As {@link #start(FerriteConfig, Credentials, List, List)}, fsyncing the journal with {@code
   * fsync}.
   */
  static Master start(
      FerriteConfig cfg,
      Credentials credentials,
      List<Fabric> fabrics,
      List<MasterExtension> extensions,
      Journal.Fsync fsync) {
    if (!cfg.masterPeers().isEmpty()) {
      throw new IllegalArgumentException(
          FerriteConfig.MASTER_PEERS
              + " is set: a master group is started with Master.start(cfg, credentials, fabrics)"
              + " or Master.startGroup");
    }
    Path dir = cfg.dataDir().resolve("master");
    try {
      Secrets.createPrivateDirectories(dir);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create master directory " + dir, e);
    }
    MasterState state = newState(cfg, credentials, extensions);
    Journal journal = Journal.open(dir.resolve("journal"), cfg.journalFsync(), fsync, state::apply);
    state.recovered();
    Master m = new Master(cfg, credentials, fabrics, journal);
    try {
      Core c = new Core(state, journal, journal::append, List.copyOf(extensions), 0);
      m.startCore(c);
      Map<Integer, String> serviceNames = new java.util.HashMap<>();
      serviceNames.put(io.ferrite.kernel.proto.MasterProtocol.SERVICE, "master");
      List<String> faces = new ArrayList<>();
      for (MasterExtension ext : extensions) {
        serviceNames.put(ext.serviceId(), ext.name());
        faces.add(ext.name());
      }
      MasterMeters.register(m.metrics, state, journal, List.of("dram", "disk"), faces);
      m.core = c;
      m.serve(serviceNames);
    } catch (RuntimeException e) {
      m.close();
      throw e;
    }
    LOG.log(
        System.Logger.Level.INFO,
        "master of cluster {0} serving at {1}",
        cfg.clusterId(),
        m.addresses.values());
    return m;
  }

  /**
   * Starts {@code c}'s extensions (they may mutate: their records go to {@code c.log}), its RPC
   * service and its revoker. Not yet visible to the endpoints: the caller publishes it.
   */
  void startCore(Core c) {
    for (MasterExtension ext : c.extensions) {
      ext.start(
          c.state.contextFor(
              ext, (name, length) -> createRegion(c, name, length), cfg, metrics.registry()));
      LOG.log(
          System.Logger.Level.INFO,
          "master extension {0} (service {1}) started",
          ext.name(),
          ext.serviceId());
    }
    MasterService service = new MasterService(c.state, c.held, hostId);
    c.revoker =
        new Revoker(
            c.state,
            fabrics,
            new io.ferrite.fabric.ConnectOptions(
                credentials.as(io.ferrite.fabric.Role.SERVER), cfg.rpcTimeout(), cfg.rpcTimeout()),
            cfg.rpcTimeout());
    service.revoker(c.revoker);
    Revoker rv = c.revoker;
    c.state.revokeNudge(rv::revokeNow);
    c.state.connector(rv::open);
    service.addresses(addresses);
    c.service = service;
  }

  /** Publishes {@code c}: the endpoints serve it from now on (a group's new leader). */
  void publish(Core c) {
    c.service.addresses(addresses);
    Board b = board;
    if (b != null) {
      c.service.loads(b.board::report);
    }
    core = c;
  }

  /** Stops serving {@code c} if it is the current core, and closes it (a leader stepping down). */
  void retire(Core c) {
    if (core == c) {
      core = null;
    }
    closeCore(c);
  }

  /** The core being served, or null (a follower). */
  Core core() {
    return core;
  }

  private void closeCore(Core c) {
    Revoker rv = c.revoker;
    if (rv != null) {
      rv.close();
    }
    for (MasterExtension ext : c.extensions) {
      try {
        ext.stop();
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "stopping master extension " + ext.name(), e);
      }
    }
    if (c.log instanceof RaftJournal rj) {
      rj.close();
    }
    synchronized (this) {
      for (int id : c.regionIds) {
        io.ferrite.fabric.MappedRegion r = regions.deregister(id);
        if (r != null) {
          r.closeAndDelete();
        }
      }
      c.regionIds.clear();
    }
  }

  /**
   * What every endpoint serves: MASTER_INFO itself (inline; in a group it says the role, the term
   * and the leader), everything else through the core's {@link MasterService}, or NOT_LEADER when
   * there is none (a follower, or a leader not serving yet), naming the leader when known.
   */
  private final class Front implements io.ferrite.fabric.RpcHandler {
    @Override
    public java.util.concurrent.CompletableFuture<java.nio.ByteBuffer> handleInline(
        io.ferrite.fabric.RpcContext ctx, int service, int opcode, java.nio.ByteBuffer request) {
      if (service == io.ferrite.kernel.proto.MasterProtocol.SERVICE
          && opcode == io.ferrite.kernel.proto.MasterProtocol.MASTER_INFO) {
        return masterInfo(request);
      }
      Core c = core;
      return c == null ? notLeader() : c.service.handleInline(ctx, service, opcode, request);
    }

    @Override
    public java.util.concurrent.CompletableFuture<java.nio.ByteBuffer> handle(
        io.ferrite.fabric.RpcContext ctx, int service, int opcode, java.nio.ByteBuffer request) {
      Core c = core;
      return c == null ? notLeader() : c.service.handle(ctx, service, opcode, request);
    }
  }

  private java.util.concurrent.CompletableFuture<java.nio.ByteBuffer> notLeader() {
    return io.ferrite.fabric.Futures.failed(
        io.ferrite.fabric.ErrorCode.NOT_LEADER,
        group != null ? group.notLeaderMessage() : "the master is not serving (closing)");
  }

  /**
   * MASTER_INFO: host identity and address per fabric; a group member appends its role (u8: 1
   * leader, 2 follower, 3 candidate), the term (u64), the leader's client address (str, "" if
   * unknown) and its own place in the group (i32). A single master appends nothing (the answer
   * older readers know).
   */
  private java.util.concurrent.CompletableFuture<java.nio.ByteBuffer> masterInfo(
      java.nio.ByteBuffer request) {
    try {
      new io.ferrite.kernel.proto.Wire.Reader(request, "master-info request").end();
    } catch (io.ferrite.fabric.FerriteException e) {
      return java.util.concurrent.CompletableFuture.failedFuture(e);
    }
    io.ferrite.kernel.proto.Wire.Writer w = new io.ferrite.kernel.proto.Wire.Writer(64);
    w.str(hostId);
    io.ferrite.kernel.proto.MasterProtocol.writeAddresses(w, addresses);
    if (group != null) {
      String role = role();
      w.u8(
          switch (role) {
            case "leader" -> io.ferrite.kernel.proto.MasterStub.ROLE_LEADER;
            case "follower" -> io.ferrite.kernel.proto.MasterStub.ROLE_FOLLOWER;
            default -> io.ferrite.kernel.proto.MasterStub.ROLE_CANDIDATE;
          });
      w.i64(group.term());
      w.str(group.leaderAddress());
      w.i32(cfg.masterId());
      w.i64(group.appliedIndex());
    }
    return java.util.concurrent.CompletableFuture.completedFuture(w.toBuffer());
  }

  /** The console's board, once the console runs. */
  private record Board(io.ferrite.kernel.ops.console.LoadBoard board) {}

  private volatile Board board;

  /** Binds the endpoints (serving {@link #front}), the metrics, the console and the ticker. */
  private void serve(Map<Integer, String> serviceNames) {
    // Request ids outermost: the meters see (and count) the call a REQUEST carries; the ids are
    // looked up in the core being served (none on a follower: the call goes on to NOT_LEADER).
    io.ferrite.fabric.RpcHandler served =
        new RequestIds(
            io.ferrite.kernel.ops.RpcMeters.wrap(front, metrics.registry(), serviceNames::get),
            () -> core);
    for (Fabric f : fabrics) {
      boolean shm = f.name().equals("shm");
      FabricServer s;
      try {
        ServerSpec spec =
            new ServerSpec(
                0,
                credentials,
                regions,
                served,
                cfg.masterHost(),
                cfg.masterPort(),
                shm ? shmDir(cfg) : dir,
                cfg.serviceThreads(),
                1024,
                ServerSpec.DEFAULT_MAX_FRAME);
        s = f.serve(spec);
      } catch (RuntimeException e) {
        if (!shm) {
          throw e;
        }
        // shm only saves same-host clients time: without it they reach the master over tcp.
        LOG.log(
            System.Logger.Level.WARNING,
            "master not serving shm (same-host clients use tcp): {0}",
            e.getMessage());
        continue;
      }
      endpoints.add(s);
      addresses.put(f.name(), s.address());
      io.ferrite.kernel.ops.FabricMeters.bind(metrics, f.name(), s.counters());
    }
    Core c = core;
    if (c != null) {
      c.service.addresses(addresses);
    }
    if (cfg.metricsPort() >= 0) {
      ops =
          io.ferrite.kernel.ops.OpsServer.start(
              cfg.metricsHost(), cfg.metricsPort(), metrics, credentials, "master");
      console = startConsole();
    }
    long period = Math.max(20, Math.min(250, cfg.heartbeatInterval().toMillis() / 2));
    ticker.scheduleWithFixedDelay(this::tick, period, period, TimeUnit.MILLISECONDS);
  }

  /** The console on {@link #ops}; the servers' heartbeats feed its rates from now on. */
  private io.ferrite.kernel.ops.console.Console startConsole() {
    io.ferrite.kernel.ops.console.LoadBoard board =
        new io.ferrite.kernel.ops.console.LoadBoard(
            () -> {
              List<io.ferrite.fabric.Counters> c = new ArrayList<>();
              for (FabricServer e : endpoints) {
                c.add(e.counters());
              }
              return io.ferrite.kernel.proto.ServerLoad.of(c, 0, 0, -1, -1);
            },
            () -> io.ferrite.kernel.ops.console.RpcLatency.of(metrics.registry()),
            System::nanoTime,
            System::currentTimeMillis);
    io.ferrite.kernel.ops.console.Console c =
        io.ferrite.kernel.ops.console.Console.start(
            ops,
            new io.ferrite.kernel.ops.console.Console.Source(
                () -> serving().state.status(), this::faces, this::addresses),
            board);
    this.board = new Board(board);
    Core now = core;
    if (now != null) {
      now.service.loads(board::report);
    }
    return c;
  }

  /**
   * What each installed face's master extension tells of its objects ({@link
   * MasterExtension#describe}), by face name; read under the metadata lock, as {@code apply}
   * changes it. A face whose describe fails shows the failure instead.
   */
  public Map<String, Map<String, Object>> faces() {
    Map<String, Map<String, Object>> out = new LinkedHashMap<>();
    MasterState state = serving().state;
    synchronized (state) {
      for (MasterExtension ext : state.extensions()) {
        try {
          out.put(ext.name(), ext.describe());
        } catch (RuntimeException e) {
          out.put(ext.name(), Map.of("error", String.valueOf(e)));
        }
      }
    }
    return out;
  }

  /**
   * Where the master's shm socket and RPC ring files live: {@code
   * <shm.dir>/ferrite-<cluster.id>[-<random>]/.master} (tmpfs, beside the memory servers' region
   * files, and a name no server takes), owner-only and checked ({@link ShmDirectory}); {@code
   * .master-<id>} for a member of a master group, whose other members may run on the same host
   * (each binds its own socket: one shared path would send a same-host client to whichever bound it
   * last). Removed at close, with the cluster's directory if empty.
   */
  private Path shmDir(FerriteConfig cfg) {
    Path d =
        ShmDirectory.cluster(
            cfg, cfg.masterPeers().isEmpty() ? ".master" : ".master-" + cfg.masterId());
    shmSocketDir = d;
    return d;
  }

  /**
   * An extension's region: a file in the master's shm directory (tmpfs; the data directory if shm
   * is unusable), registered in the table every endpoint serves.
   */
  private synchronized MasterContext.MasterRegion createRegion(Core c, String name, long length) {
    Path where;
    try {
      where = shmDir(cfg);
    } catch (RuntimeException e) {
      where = dir;
    }
    int id = ++lastRegionId;
    c.regionIds.add(id);
    Path file = where.resolve("region-" + id + "-" + name);
    try {
      java.nio.file.Files.deleteIfExists(file); // left by a master that was killed
    } catch (IOException e) {
      throw new UncheckedIOException("cannot replace " + file, e);
    }
    io.ferrite.fabric.MappedRegion r =
        io.ferrite.fabric.MappedRegion.create(file, id, length, rkeys.nextLong());
    regions.register(r);
    // Clients only read it: they get the read key, which cannot write (PERMISSION_DENIED).
    return new MasterContext.MasterRegion(r, regions.readRef(0, id));
  }

  private void tick() {
    Core c = core;
    if (c == null) {
      return; // a follower: the leader ticks
    }
    try {
      MasterState state = c.state;
      if (c.held.failure() != null) {
        // A failed fsync stopped the journal: expiries and snapshots would only be refused (and
        // logged) every tick. The failure was logged once; the master waits to be restarted.
        return;
      }
      state.tick();
      Revoker r = c.revoker;
      if (r != null) {
        r.revokeNow(); // blocks of expired sessions
        r.retry();
      }
      if (journal != null
          && snapshotDue(journal.recordsSinceSnapshot(), snapshotEvery, lastSnapshotRecords)) {
        snapshot();
      }
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "master tick failed", e);
    }
  }

  /**
   * Whether the single master's journal is due a snapshot: {@code every} records since the last
   * one, and at least as many as that snapshot held. A snapshot writes the whole state (and copies
   * it under the metadata lock), so with a fixed interval its cost per mutation grew with the
   * state: 16 threads' fsynced File creates lost 20–30% to snapshots every 10 000 records of a
   * state of tens of thousands of Files (docs/PERFORMANCE.md, "Write path", 2026-11-27 branch
   * {@code rpcceil}). Waiting until the log is as long as the last snapshot makes a snapshot cost
   * O(1) per record, and recovery replays at most the state's size again: Redis's rewrite of its
   * append-only file when it has grown by 100 % ({@code auto-aof-rewrite-percentage 100}).
   */
  static boolean snapshotDue(long recordsSinceSnapshot, int every, long lastSnapshotRecords) {
    return recordsSinceSnapshot >= Math.max(every, lastSnapshotRecords);
  }

  /**
   * Writes a snapshot now and truncates the log. The metadata lock is held only to copy the state
   * and start the next log; the snapshot file is written and fsynced outside it, while mutations go
   * on (see {@link Journal}).
   */
  public void snapshot() {
    if (group != null) {
      group.snapshot();
      return;
    }
    Core c = core;
    MasterState state = c.state;
    synchronized (snapshotLock) {
      long generation = -1;
      List<MasterEvent> events = null;
      // A record held for its answer is applied but not yet in the log: a snapshot then would hold
      // its effect, and the log after it the record again. Holds last while a handler runs (about
      // microseconds), and are released under the metadata lock: wait for a moment without any.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (events == null) {
        synchronized (state) {
          if (closed) {
            return;
          }
          if (!c.held.holding()) {
            events = state.snapshotEvents();
            generation = journal.rotate();
            lastSnapshotRecords = events.size();
          }
        }
        if (events == null) {
          if (System.nanoTime() - deadline > 0) {
            throw new io.ferrite.fabric.FerriteException(
                io.ferrite.fabric.ErrorCode.UNAVAILABLE,
                "no snapshot: the journal always had a call's record held for its answer for 10 s");
          }
          java.util.concurrent.locks.LockSupport.parkNanos(50_000);
        }
      }
      journal.writeSnapshot(generation, events);
    }
  }

  /**
   * How the journal's group commit is doing: records written, fsyncs, records they covered, the
   * largest batch. With N concurrent mutators and fsync on, fsyncs stay far below records; without
   * fsync there are none.
   */
  public JournalStats journalStats() {
    Core c = core;
    GroupCommit.Stats s =
        journal != null
            ? journal.stats()
            : c != null && c.log instanceof RaftJournal rj
                ? rj.stats()
                : new GroupCommit.Stats(0, 0, 0, 0);
    return new JournalStats(s.recordsWritten(), s.fsyncs(), s.recordsFsynced(), s.largestBatch());
  }

  /**
   * Counts since the master started: {@code recordsWritten} journal records appended, {@code
   * fsyncs} fsyncs of the log by the journal thread, covering {@code recordsFsynced} records, at
   * most {@code largestBatch} at once.
   */
  public record JournalStats(
      long recordsWritten, long fsyncs, long recordsFsynced, long largestBatch) {}

  /** The journal, for tests of group commit. */
  Journal journal() {
    return journal;
  }

  /** The group's Raft side, or null (tests). */
  MasterGroup group() {
    return group;
  }

  /**
   * The metadata, for in-process inspection (tests, the local command): the serving state, or in a
   * group's follower the committed one (read it under its lock).
   */
  public MasterState state() {
    Core c = core;
    return c != null ? c.state : group != null ? group.committed() : null;
  }

  /** The core serving now, or NOT_LEADER. */
  private Core serving() {
    Core c = core;
    if (c == null) {
      throw new io.ferrite.fabric.FerriteException(
          io.ferrite.fabric.ErrorCode.NOT_LEADER, group.notLeaderMessage());
    }
    return c;
  }

  /**
   * This master's role: {@code single} (no group), {@code leader} (serving), {@code follower}, or
   * {@code candidate} (an election is under way, or a leader not serving yet).
   */
  public String role() {
    if (group == null) {
      return "single";
    }
    return core != null ? "leader" : group.role();
  }

  /** The Raft term (0 for a single master). */
  public long term() {
    return group == null ? 0 : group.term();
  }

  /** The client address of the group's leader as far as this master knows ("" if unknown). */
  public String leaderAddress() {
    return group == null ? addresses.getOrDefault("tcp", "") : group.leaderAddress();
  }

  /** The master's meters (served at {@code /metrics} when the HTTP endpoint is on). */
  public io.ferrite.kernel.ops.Metrics metrics() {
    return metrics;
  }

  /** The web console (served on {@link #ops}), or null when {@code metrics.port} is -1. */
  public io.ferrite.kernel.ops.console.Console console() {
    return console;
  }

  /**
   * The HTTP endpoint ({@code /metrics}, {@code /health}, the console), or null when {@code
   * metrics.port} is -1.
   */
  public io.ferrite.kernel.ops.OpsServer ops() {
    return ops;
  }

  /** The endpoints the master serves on, one per fabric (for status and tests). */
  public List<FabricServer> endpoints() {
    return List.copyOf(endpoints);
  }

  /** The endpoint per fabric name, e.g. {@code tcp -> tcp://127.0.0.1:7100}. */
  public Map<String, String> addresses() {
    return Map.copyOf(addresses);
  }

  /** What the journal recovered at start. */
  public String recoverySummary() {
    if (journal == null) {
      return "master group member " + cfg.masterId() + ": " + group.summary();
    }
    Journal.Recovery r = journal.recovery();
    return "generation "
        + r.generation()
        + ": "
        + r.snapshotRecords()
        + " snapshot + "
        + r.logRecords()
        + " log records"
        + (r.droppedBytes() > 0 ? ", dropped a torn tail of " + r.droppedBytes() + " B" : "");
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    io.ferrite.kernel.ops.console.Console con = console;
    if (con != null) {
      con.close();
    }
    io.ferrite.kernel.ops.OpsServer o = ops;
    if (o != null) {
      o.close();
    }
    ticker.shutdownNow();
    MasterGroup g = group;
    if (g != null) {
      g.close(); // no new core from here on
    }
    Core c = core;
    core = null;
    if (c != null) {
      closeCore(c);
    }
    for (FabricServer s : endpoints) {
      try {
        s.close();
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "closing master endpoint " + s.address(), e);
      }
    }
    synchronized (snapshotLock) {
      if (c != null) {
        synchronized (c.state) {
          closed = true;
          if (journal != null) {
            journal.close();
          }
        }
      }
      closed = true;
    }
    for (io.ferrite.fabric.MappedRegion r : regions.all()) {
      r.closeAndDelete();
    }
    if (shmSocketDir != null) {
      removeIfEmpty(shmSocketDir);
      removeIfEmpty(shmSocketDir.getParent());
    }
  }

  private static void removeIfEmpty(Path d) {
    try {
      java.nio.file.Files.deleteIfExists(d);
    } catch (IOException e) {
      // Not empty (a memory server's directory, a file left behind): keep it.
    }
  }
}
