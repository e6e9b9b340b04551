package io.ferrite.kernel.server;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.config.ShmDirectory;
import io.ferrite.kernel.config.Threads;
import io.ferrite.kernel.proto.HostIdentity;
import io.ferrite.kernel.proto.MasterStub;
import io.ferrite.kernel.proto.Permissions;
import io.ferrite.kernel.proto.RegionInfo;
import io.ferrite.kernel.proto.ServerProtocol;
import io.ferrite.kernel.proto.Wire;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * A memory server: lends its DRAM ({@code dram} class, region files under {@code
 * <shm.dir>/ferrite-<cluster>[-<random>]/<name>/}, see {@link ShmDirectory}) and disk ({@code disk}
 * class, under {@code <data.dir>/<name>/disk/}) as regions, serves them with one {@link
 * RegionTable} on every fabric it is given, registers them with the master and heartbeats, and
 * hosts the services of faces.
 *
 * <p>Its id, kept in {@code <data.dir>/<name>/server.id}, survives restarts; so do the region files
 * that survive (see {@link RegionStore}). Locks on its directory and on its dram directory keep two
 * processes (say, two clusters with one id and one server name) from sharing either. A clean {@link
 * #close} deletes the dram region files.
 */
public final class MemoryServer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(MemoryServer.class.getName());

  private final FerriteConfig cfg;
  private final String name;
  private final Path serverDir;
  private final String hostId;
  private final RegionTable table = new RegionTable();
  private final RegionStore store;
  private final Map<Integer, FerriteService> services = new ConcurrentHashMap<>();
  private final List<FerriteService> started = new ArrayList<>();
  private final List<FabricServer> endpoints = new ArrayList<>();
  private final Map<String, String> addresses = new LinkedHashMap<>();
  private final DirLock serverLock;
  private final DirLock dramLock;
  private MasterLink link;

  /** Connections to other memory servers for the services ({@link ServiceContext#peer}). */
  private PeerLinks peers;

  /** The links to master groups 1.. (docs/RESILIENCE.md, "Master groups"); empty for one group. */
  private final List<MasterLink> groupLinks = new ArrayList<>();

  /** The shortest dead timeout a master group told at registration; MAX_VALUE: none yet. */
  private final java.util.concurrent.atomic.AtomicLong masterDeadTimeoutMillis =
      new java.util.concurrent.atomic.AtomicLong(Long.MAX_VALUE);

  /** Which group owns each region (one group: all of them group 0's). */
  private RegionGroups regionGroups;

  /** The server's meters; served over HTTP only with {@code metrics.port >= 0}. */
  private final io.ferrite.kernel.ops.Metrics metrics;

  /** The metrics endpoint, or null when {@code metrics.port} is -1. */
  private io.ferrite.kernel.ops.OpsServer ops;

  private volatile int serverId = -1;

  /** Installs block keys (REGISTER's generations, REVOKE); set in boot before registering. */
  private volatile BlockGrants grants;

  /** This process among the server's lives: the master tells a pause from a restart by it. */
  private final long incarnation = newIncarnation();

  private volatile boolean closed;

  /**
   * After a service frees a region: asks the JVM for a collection, with backoff, while regions this
   * server freed are still mapped, so that their memory comes back in seconds even in a server that
   * allocates too little for the GC to run by itself (the JVM unmaps a released region only once it
   * is unreachable: see {@link MappedRegion#release()}).
   */
  private final ScheduledThreadPoolExecutor reclaimer;

  /** The reclaimer's next delay (ms), 0 when it is idle. Guarded by {@link #reclaimLock}. */
  private long reclaimDelayMillis;

  /**
   * Regions this server freed whose memory the JVM may not have unmapped yet (cleared once the
   * region is collected). Guarded by {@link #reclaimLock}.
   */
  private final List<java.lang.ref.WeakReference<MappedRegion>> freedMapped = new ArrayList<>();

  private final Object reclaimLock = new Object();

  private MemoryServer(FerriteConfig cfg, Path serverDir, Path dramDir) throws IOException {
    this.cfg = cfg;
    this.name = cfg.serverName();
    this.metrics =
        new io.ferrite.kernel.ops.Metrics(
            List.of(
                io.micrometer.core.instrument.Tag.of("process", "server"),
                io.micrometer.core.instrument.Tag.of("server", name)));
    this.serverDir = Secrets.createPrivateDirectories(serverDir);
    this.hostId = HostIdentity.local();
    this.serverLock = DirLock.acquire(serverDir, "server directory");
    try {
      this.dramLock = DirLock.acquire(dramDir, "dram region directory");
    } catch (IOException | RuntimeException e) {
      serverLock.close();
      throw e;
    }
    this.store =
        new RegionStore(
            serverDir,
            Map.of("dram", dramDir, "disk", serverDir.resolve("disk")),
            Map.of("dram", cfg.capacity("dram"), "disk", cfg.capacity("disk")),
            table);
    this.reclaimer = Threads.scheduler("ferrite-server-" + name + "-reclaim");
  }

  /**
   * After {@code freed} was freed (null: after the pool was left short): makes sure a reclaim pass
   * is scheduled ({@link #reclaimer}).
   */
  private void reclaimSoon(MappedRegion freed) {
    synchronized (reclaimLock) {
      if (freed != null) {
        freedMapped.add(new java.lang.ref.WeakReference<>(freed));
      }
      if (reclaimDelayMillis == 0 && !closed) {
        reclaimDelayMillis = 500;
        scheduleReclaim();
      }
    }
  }

  /** Whether a region this server freed may still be mapped; forgets those collected. */
  private boolean freedStillMapped() {
    synchronized (reclaimLock) {
      freedMapped.removeIf(r -> r.get() == null);
      return !freedMapped.isEmpty();
    }
  }

  private void reclaim() {
    if (freedStillMapped()) {
      // The only way to have the JVM unmap a region no op holds any more without a count on
      // every one-sided op: a released region is unreachable once its ops are done. Only this
      // server's frees count: mappings other code in the process released are its business.
      System.gc();
    }
    boolean whole = true;
    if (!closed && serverId >= 0) {
      for (String cls : List.of("dram", "disk")) {
        whole &= regrowPool(cls);
      }
    }
    synchronized (reclaimLock) {
      if (closed || (whole && !freedStillMapped()) || reclaimDelayMillis >= 32_000) {
        reclaimDelayMillis = 0; // done, or something still holds a mapping: the next free retries
        return;
      }
      reclaimDelayMillis *= 2;
      scheduleReclaim();
    }
  }

  private void scheduleReclaim() {
    try {
      reclaimer.schedule(this::reclaim, reclaimDelayMillis, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      reclaimDelayMillis = 0; // the server is closing
    }
  }

  /**
   * Starts a memory server: creates or re-opens its regions, obtains its id from the master at
   * {@code masterAddress} (retrying with backoff until the master answers), starts the services
   * ({@code extraServices} plus those found by {@link ServiceLoader}), serves on each fabric and
   * registers. Returns once registered.
   *
   * @param fabrics the fabrics to serve on; the one named by {@code masterAddress}'s scheme also
   *     reaches the master. The caller keeps ownership of them.
   */
  public static MemoryServer start(
      FerriteConfig cfg,
      Credentials credentials,
      List<Fabric> fabrics,
      String masterAddress,
      List<FerriteService> extraServices) {
    return start(cfg, credentials, fabrics, () -> masterAddress, extraServices);
  }

  /**
   * As {@link #start(FerriteConfig, Credentials, List, String, List)}, asking {@code masterAddress}
   * for the master's address at every (re)connect, for masters that move.
   */
  public static MemoryServer start(
      FerriteConfig cfg,
      Credentials credentials,
      List<Fabric> fabrics,
      Supplier<String> masterAddress,
      List<FerriteService> extraServices) {
    Path serverDir = cfg.dataDir().resolve(cfg.serverName());
    // Checked (owner, mode, no symlink) or created 0700; a random suffix in a shared shm.dir.
    Path dramDir = ShmDirectory.cluster(cfg, cfg.serverName());
    MemoryServer s;
    try {
      s = new MemoryServer(cfg, serverDir, dramDir);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open server directory " + serverDir, e);
    }
    try {
      s.boot(credentials, fabrics, masterAddress, extraServices, dramDir);
      return s;
    } catch (RuntimeException e) {
      s.close();
      throw e;
    }
  }

  private void boot(
      Credentials credentials,
      List<Fabric> fabrics,
      Supplier<String> masterAddressSupplier,
      List<FerriteService> extraServices,
      Path socketDir) {
    String masterAddress = masterAddressSupplier.get();
    try {
      store.recover();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot recover regions of " + serverDir, e);
    }
    long regionSize = cfg.regionSize();
    store.fill("dram", (int) (cfg.capacity("dram") / regionSize), regionSize);
    store.fill("disk", (int) (cfg.capacity("disk") / regionSize), regionSize);
    store.attachBlockKeys(cfg.blockSize());
    grants = new BlockGrants(credentials.secret(), table);

    String scheme = masterAddress.substring(0, Math.max(0, masterAddress.indexOf("://")));
    Fabric toMaster = null;
    for (Fabric f : fabrics) {
      if (f.name().equals(scheme)) {
        toMaster = f;
      }
    }
    if (toMaster == null) {
      throw new FerriteException(
          ErrorCode.UNSUPPORTED,
          "no fabric among the server's to reach the master at " + masterAddress);
    }
    Duration rpc = cfg.rpcTimeout();
    // Servers hold the root but speak to the master as SERVER: the least role that can register.
    ConnectOptions options = new ConnectOptions(credentials.as(Role.SERVER), rpc, rpc);
    // The same SERVER role reaches the other memory servers: their server-only opcodes let it in.
    peers = new PeerLinks(fabrics, options, hostId, () -> link.stub());
    // Several master groups (ferrite://a;b): one link per group, each registering the regions the
    // group owns under the id group 0 gave (a server has one id in every group, so a client's
    // BlockRef names the same server whichever group handed the block out).
    int groupCount = io.ferrite.kernel.client.Ferrite.groups(masterAddress).size();
    regionGroups = new RegionGroups(serverDir, groupCount);
    link =
        new MasterLink(
            toMaster,
            () -> groupAddress(masterAddressSupplier.get(), 0),
            options,
            rpc,
            cfg.heartbeatInterval(),
            m -> register(m, 0),
            id -> {});
    for (int g = 1; g < groupCount; g++) {
      int group = g;
      groupLinks.add(
          new MasterLink(
              toMaster,
              () -> groupAddress(masterAddressSupplier.get(), group),
              options,
              rpc,
              cfg.heartbeatInterval(),
              m -> register(m, group),
              id -> {}));
    }

    int id = readServerId();
    if (id <= 0) {
      // A first registration without regions or addresses, only to obtain an id: the handshake
      // of every fabric announces it, so it must be known before serving.
      id = link.callWithRetry(m -> m.register(-1, name, hostId, Map.of(), List.of()).serverId());
      writeServerId(id);
    } else {
      link.callWithRetry(m -> m); // connected before services start: they may call the master
    }
    serverId = id;
    link.serverId(id);
    for (MasterLink l : groupLinks) {
      l.serverId(id);
    }

    List<FerriteService> all = new ArrayList<>(extraServices);
    for (FerriteService fs : ServiceLoader.load(FerriteService.class)) {
      all.add(fs);
    }
    for (FerriteService fs : all) {
      if (fs.id() < 16 || services.putIfAbsent(fs.id(), fs) != null) {
        throw new FerriteException(
            ErrorCode.CONFLICT,
            "service " + fs.name() + " id " + fs.id() + " (expected: >= 16 and unique)");
      }
    }
    for (FerriteService fs : all) {
      fs.start(new Context(fs));
      started.add(fs);
    }

    RpcHandler dispatch =
        new RpcHandler() {
          @Override
          public CompletableFuture<ByteBuffer> handle(
              RpcContext ctx, int service, int opcode, ByteBuffer request) {
            return dispatch(ctx, service, opcode, request);
          }

          @Override
          public CompletableFuture<ByteBuffer> handleInline(
              RpcContext ctx, int service, int opcode, ByteBuffer request) {
            return dispatchInline(ctx, service, opcode, request);
          }
        };
    // Counted and timed per (service, opcode): ferrite.rpc.requests / ferrite.rpc.latency.
    RpcHandler served =
        io.ferrite.kernel.ops.RpcMeters.wrap(
            dispatch,
            metrics.registry(),
            sid -> {
              FerriteService fs = services.get(sid);
              return fs != null ? fs.name() : sid == ServerProtocol.SERVICE ? "server" : null;
            });
    registerCapacity();
    for (Fabric f : fabrics) {
      ServerSpec spec =
          new ServerSpec(
              id,
              credentials,
              table,
              served,
              cfg.serverHost(),
              cfg.serverPort(),
              socketDir,
              cfg.serviceThreads(),
              1024,
              ServerSpec.DEFAULT_MAX_FRAME);
      FabricServer fsrv = f.serve(spec);
      endpoints.add(fsrv);
      addresses.put(f.name(), Advertised.address(fsrv.address(), masterAddress));
      io.ferrite.kernel.ops.FabricMeters.bind(metrics, f.name(), fsrv.counters());
    }
    link.callWithRetry(
        m -> {
          long sent = System.nanoTime();
          int registered = register(m, 0);
          link.acked(sent);
          return registered;
        });
    link.load(this::load);
    link.start("ferrite-server-" + name + "-master");
    for (int g = 0; g < groupLinks.size(); g++) {
      // Not waited for: a server serves group 0 as soon as it can; the others as they answer.
      groupLinks.get(g).start("ferrite-server-" + name + "-master-group-" + (g + 1), false);
    }
    if (cfg.metricsPort() >= 0) {
      ops =
          io.ferrite.kernel.ops.OpsServer.start(
              cfg.metricsHost(), cfg.metricsPort(), metrics, credentials, "server-" + name);
    }
    LOG.log(
        System.Logger.Level.INFO,
        "memory server {0} ({1}) serving {2} region(s) at {3}",
        id,
        name,
        table.all().size(),
        addresses.values());
  }

  /**
   * {@code ferrite.capacity.bytes{use=total}} per class: what this server lends (its {@code
   * capacity.<class>}). What is in use is the master's to know (blocks are allocated there): its
   * {@code ferrite.capacity.bytes{use=used}} has the cluster's.
   */
  private void registerCapacity() {
    for (String cls : List.of("dram", "disk")) {
      long total = cfg.capacity(cls);
      io.micrometer.core.instrument.Gauge.builder("ferrite.capacity.bytes", () -> total)
          .description("Capacity per storage class (total) and what its services hold")
          .tag("class", cls)
          .tag("use", "total")
          .register(metrics.registry());
    }
    // Each started service's regions per class (kv shards), from the one per-face sum the status
    // uses too; a service that made none reads 0.
    for (String cls : List.of("dram", "disk")) {
      for (FerriteService fs : started) {
        String face = fs.name();
        io.micrometer.core.instrument.Gauge.builder(
                "ferrite.capacity.bytes",
                this,
                s -> s.serviceBytes().getOrDefault(cls, Map.of()).getOrDefault(face, 0L))
            .description("Capacity per storage class (total) and what its services hold")
            .tag("class", cls)
            .tag("use", "service")
            .tag("face", face)
            .register(metrics.registry());
      }
    }
  }

  private static long newIncarnation() {
    long v;
    do {
      v = new java.security.SecureRandom().nextLong();
    } while (v == 0);
    return v;
  }

  /** Random per process, never 0: see {@link MasterStub#register}. */
  public long incarnation() {
    return incarnation;
  }

  /** Of a cluster URI or address list naming groups ({@code a;b}), group {@code g}'s masters. */
  private static String groupAddress(String addresses, int g) {
    List<List<String>> groups = io.ferrite.kernel.client.Ferrite.groups(addresses);
    return String.join(",", groups.get(Math.min(g, groups.size() - 1)));
  }

  /** The link to the master group that owns {@code r}. */
  private MasterLink linkOf(RegionInfo r) {
    int g = regionGroups.groupOf(r);
    return g == 0 ? link : groupLinks.get(g - 1);
  }

  /** Registers with master group {@code group} (0 with one group) the regions it owns. */
  private int register(MasterStub m, int group) {
    List<RegionInfo> all = store.infos(serverId);
    regionGroups.sync(all);
    List<RegionInfo> regions = regionGroups.of(group, all);
    MasterStub.Registration r = m.register(serverId, name, hostId, addresses, regions, incarnation);
    // Before any block key works: the current generation of every block (a restarted server's
    // tables are all zeros until now).
    grants.install(r.serverId(), r.generations());
    if (r.deadTimeoutMillis() > 0) {
      masterDeadTimeoutMillis.accumulateAndGet(r.deadTimeoutMillis(), Math::min);
    }
    if (r.blockSize() != cfg.blockSize()) {
      LOG.log(
          System.Logger.Level.WARNING,
          "master block size {0} differs from this server''s {1}",
          r.blockSize(),
          cfg.blockSize());
    }
    return r.serverId();
  }

  /**
   * Asks the master to forget empty block-pool region {@code r} so that its space can go to a
   * service region ({@link RegionStore#createServiceRegion}): false if it has blocks in use.
   */
  private boolean retire(RegionInfo r) {
    MasterLink owner = linkOf(r);
    try {
      // Through call(): at boot (a service replaying its log) the link has no heartbeat thread
      // yet to replace a lost connection, or one to a master that lost its leadership.
      owner.call(
          m -> {
            m.removeRegion(serverId, r.ref().regionId());
            return null;
          });
      return true;
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.CONFLICT) {
        return false; // blocks in use there: the master keeps it
      }
      if (owner != link && e.retryable()) {
        // Another group's master is away (or its link not up yet: services start, and replay
        // their logs, once group 0 answers): keep this region, and let the store try the next
        // one, which may be a group's that answers. Group 0's failing stops the search (thrown).
        return false;
      }
      throw e;
    }
  }

  private CompletableFuture<ByteBuffer> dispatch(
      RpcContext ctx, int service, int opcode, ByteBuffer request) {
    if (service == ServerProtocol.SERVICE) {
      return kernel(ctx, opcode, request);
    }
    FerriteService s = services.get(service);
    if (s == null) {
      return Futures.failed(
          ErrorCode.UNKNOWN_SERVICE,
          "server "
              + serverId
              + " hosts no service "
              + service
              + " (hosts "
              + services.keySet()
              + ")");
    }
    try {
      return s.handle(ctx, opcode, request);
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    } catch (RuntimeException e) {
      LOG.log(
          System.Logger.Level.ERROR, "service " + s.name() + " opcode " + opcode + " failed", e);
      return Futures.failed(ErrorCode.INTERNAL, s.name() + " opcode " + opcode + ": " + e);
    }
  }

  /**
   * The kernel's own service ({@link ServerProtocol}): the master's REVOKE, which only a server
   * principal (the master) or the root may call: a client could otherwise revoke other clients'
   * blocks.
   */
  private CompletableFuture<ByteBuffer> kernel(RpcContext ctx, int opcode, ByteBuffer request) {
    if (opcode != ServerProtocol.REVOKE) {
      return Futures.failed(
          ErrorCode.UNKNOWN_OPCODE, "server kernel service has no opcode " + opcode);
    }
    try {
      Permissions.require(ctx, Role.SERVER, "server REVOKE (opcode " + opcode + ")");
      grants.revoke(serverId, ServerProtocol.readRevokes(new Wire.Reader(request, "REVOKE")));
      return CompletableFuture.completedFuture(ByteBuffer.allocate(0));
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** {@link FerriteService#handleInline} of the addressed service; null (declined) if none. */
  private CompletableFuture<ByteBuffer> dispatchInline(
      RpcContext ctx, int service, int opcode, ByteBuffer request) {
    FerriteService s = services.get(service);
    if (s == null) {
      return null; // the executor path answers UNKNOWN_SERVICE
    }
    try {
      return s.handleInline(ctx, opcode, request);
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    } catch (RuntimeException e) {
      LOG.log(
          System.Logger.Level.ERROR,
          "service " + s.name() + " opcode " + opcode + " failed inline",
          e);
      return Futures.failed(ErrorCode.INTERNAL, s.name() + " opcode " + opcode + ": " + e);
    }
  }

  private int readServerId() {
    Path p = serverDir.resolve("server.id");
    try {
      if (Files.exists(p)) {
        return Integer.parseInt(Files.readString(p, StandardCharsets.US_ASCII).trim());
      }
    } catch (IOException | NumberFormatException e) {
      LOG.log(System.Logger.Level.WARNING, "ignoring unreadable " + p, e);
    }
    return -1;
  }

  private void writeServerId(int id) {
    Path p = serverDir.resolve("server.id");
    try {
      Path tmp = serverDir.resolve("server.id.tmp");
      Files.writeString(tmp, id + "\n", StandardCharsets.US_ASCII);
      Files.move(tmp, p, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + p, e);
    }
  }

  public int serverId() {
    return serverId;
  }

  /** The server's meters (served at {@code /metrics} when the HTTP endpoint is on). */
  public io.ferrite.kernel.ops.Metrics metrics() {
    return metrics;
  }

  /** The HTTP endpoint, or null when {@code metrics.port} is -1. */
  public io.ferrite.kernel.ops.OpsServer ops() {
    return ops;
  }

  /**
   * Bytes held by service regions per storage class and face (service name), e.g. {@code dram -> kv
   * -> 128 MiB}: the server's own accounting, for the capacity gauge ({@code
   * ferrite.capacity.bytes{use=service,face=..}}). The master's {@code ferrite status} sums the
   * same regions the same way ({@link RegionInfo#serviceBytes}).
   */
  public Map<String, Map<String, Long>> serviceBytes() {
    return store.serviceBytes();
  }

  public String name() {
    return name;
  }

  /** The endpoint per fabric name. */
  public Map<String, String> addresses() {
    return Map.copyOf(addresses);
  }

  public RegionTable regions() {
    return table;
  }

  /**
   * What this server served since it started, as its heartbeats report it to the master (the
   * console's rates): its endpoints' fabric counters and its RPC latency timer, if it has one.
   */
  public io.ferrite.kernel.proto.ServerLoad load() {
    List<io.ferrite.fabric.Counters> counters = new ArrayList<>();
    for (FabricServer e : endpoints) {
      counters.add(e.counters());
    }
    io.ferrite.kernel.ops.console.RpcLatency l =
        io.ferrite.kernel.ops.console.RpcLatency.of(metrics.registry());
    return io.ferrite.kernel.proto.ServerLoad.of(
        counters, l.count(), l.totalNanos(), l.p50Nanos(), l.p99Nanos());
  }

  /** The server's endpoints, e.g. to read their counters. */
  public List<FabricServer> endpoints() {
    return List.copyOf(endpoints);
  }

  /**
   * Gives the space services freed back to the block pool once a whole pool region fits again in
   * {@code cls}'s capacity. Returns whether the pool is whole: false if the file system refused a
   * region (a freed region's memory stays held until every process mapping it lets go: this server
   * after a collection, a shm client after its sweep), and the reclaimer retries. A new pool region
   * gets its block key table and generation 0's keys before the master hears of it (and hands out
   * its blocks).
   */
  private boolean regrowPool(String cls) {
    List<RegionInfo> regrown = store.regrowPool(serverId, cls, cfg.regionSize());
    if (!regrown.isEmpty()) {
      store.attachBlockKeys(cfg.blockSize());
      Map<Integer, int[]> fresh = new HashMap<>();
      for (RegionInfo g : regrown) {
        fresh.put(g.ref().regionId(), new int[(int) (g.ref().length() / cfg.blockSize())]);
      }
      grants.install(serverId, fresh);
    }
    if (!regrown.isEmpty()) {
      regionGroups.sync(store.infos(serverId));
    }
    for (RegionInfo grown : regrown) {
      try {
        linkOf(grown).stub().addRegion(serverId, grown);
      } catch (FerriteException e) {
        LOG.log(
            System.Logger.Level.DEBUG,
            "block-pool region {0} reaches the master with the next registration",
            grown.ref().regionId());
      }
    }
    return !store.poolShort(cls, cfg.regionSize());
  }

  private final class Context implements ServiceContext {
    private final FerriteService service;

    Context(FerriteService service) {
      this.service = service;
    }

    @Override
    public int serverId() {
      return serverId;
    }

    @Override
    public long incarnation() {
      return incarnation;
    }

    @Override
    public FerriteConfig config() {
      return cfg;
    }

    @Override
    public MappedRegion createRegion(String storageClass, long length) {
      return createRegion(storageClass, length, 0);
    }

    @Override
    public MappedRegion createRegion(String storageClass, long length, int group) {
      if (group < 0 || group >= regionGroups.count()) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "master group "
                + group
                + " (expected: >= 0 and < "
                + regionGroups.count()
                + ", the groups this server's URI names)");
      }
      MappedRegion r;
      try {
        r =
            store.createServiceRegion(
                serverId,
                storageClass,
                length,
                service.name(),
                MemoryServer.this::retire,
                id -> regionGroups.assignService(id, group));
      } catch (FerriteException e) {
        if (e.code() == ErrorCode.NO_SPACE) {
          // Pool regions retired for it in vain (not enough came free, or the file system was
          // full): give them back to the pool, now or (file system) from the reclaimer.
          if (!regrowPool(storageClass)) {
            reclaimSoon(null);
          }
        }
        throw e;
      }
      try {
        RegionInfo info = store.info(serverId, r);
        linkOf(info).stub().addRegion(serverId, info);
      } catch (FerriteException e) {
        // Not registered yet, or reconnecting: the next REGISTER lists the region.
        LOG.log(
            System.Logger.Level.DEBUG,
            "region {0} reaches the master with the next registration",
            r);
      }
      return r;
    }

    @Override
    public void freeRegion(MappedRegion region) {
      RegionInfo info = store.freeServiceRegion(serverId, region, service.name());
      MasterLink owner = linkOf(info); // the group it was registered with, before forgetting it
      regionGroups.forgetService(info.ref().regionId());
      reclaimSoon(region);
      try {
        owner.stub().removeRegion(serverId, info.ref().regionId());
      } catch (FerriteException e) {
        // Not registered yet, or reconnecting: the next REGISTER lists the regions without it.
        LOG.log(
            System.Logger.Level.DEBUG,
            "the master forgets region {0} with the next registration",
            info.ref().regionId());
      }
      regrowPool(info.storageClass());
    }

    @Override
    public long[] regionUsage() {
      return store.serviceRegions(service.name());
    }

    @Override
    public RegionRef ref(MappedRegion region) {
      return table.ref(serverId, region.id());
    }

    @Override
    public MasterStub master() {
      return link.stub();
    }

    @Override
    public io.ferrite.fabric.FabricConnection peer(int serverId) {
      if (serverId == MemoryServer.this.serverId) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "server " + serverId + " (expected: another memory server; this is it)");
      }
      return peers.get(serverId);
    }

    @Override
    public io.ferrite.fabric.FabricConnection openPeer(int serverId) {
      return peers.open(serverId);
    }

    @Override
    public MasterStub master(int group) {
      if (group < 0 || group > groupLinks.size()) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "master group "
                + group
                + " (expected: 0.."
                + groupLinks.size()
                + ": server "
                + serverId
                + "'s master URI names "
                + (groupLinks.size() + 1)
                + " group(s))");
      }
      return group == 0 ? link.stub() : groupLinks.get(group - 1).stub();
    }

    @Override
    public int groups() {
      return regionGroups.count();
    }

    @Override
    public int placement(String kind, String name) {
      int groups = regionGroups.count();
      if (groups == 1) {
        return 0;
      }
      // Group 0's placement directory, as a client's MasterGroups.find asks it (FIND is answered
      // inline there): one round trip, which the service keeps for the name's life.
      ByteBuffer b =
          link.stub()
              .callSync(
                  null,
                  io.ferrite.kernel.proto.PlacementProtocol.SERVICE,
                  io.ferrite.kernel.proto.PlacementProtocol.FIND,
                  new Wire.Writer()
                      .str(io.ferrite.kernel.proto.PlacementProtocol.key(kind, name))
                      .toBuffer());
      Wire.Reader r = new Wire.Reader(b, "placement");
      int g = r.i32("group");
      r.end();
      if (g >= groups) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            kind
                + " '"
                + name
                + "' lives in master group "
                + g
                + ", but server "
                + serverId
                + "'s master URI names "
                + groups
                + " group(s): restart it with the cluster's URI");
      }
      return Math.max(g, 0);
    }

    @Override
    public java.util.OptionalLong masterDeadTimeoutMillis() {
      long t = MemoryServer.this.masterDeadTimeoutMillis.get();
      return t == Long.MAX_VALUE ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(t);
    }

    @Override
    public java.util.OptionalLong masterAckSentNanos() {
      // With several master groups each declares this server DEAD on its own (a group-1 table's
      // backup is promoted by group 1): a lease counts from the OLDEST of the groups' newest
      // acknowledgements, so it lapses as soon as any group may have given up on this server.
      java.util.OptionalLong oldest = link.lastAckSentNanos();
      // (groupLinks is filled in the constructor and never changes.)
      for (MasterLink g : groupLinks) {
        java.util.OptionalLong a = g.lastAckSentNanos();
        if (oldest.isEmpty() || a.isEmpty()) {
          return java.util.OptionalLong.empty();
        }
        if (a.getAsLong() - oldest.getAsLong() < 0) {
          oldest = a;
        }
      }
      return oldest;
    }

    @Override
    public io.micrometer.core.instrument.MeterRegistry metrics() {
      return metrics.registry();
    }

    @Override
    public Path directory() {
      Path d = serverDir.resolve("service-" + service.name());
      try {
        return Secrets.createPrivateDirectories(d);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot create " + d, e);
      }
    }
  }

  /**
   * Says goodbye to every group at once (one short-lived thread per further group: one group that
   * cannot be reached must not eat the others' time), all within one deadline.
   */
  private void leave(List<MasterLink> links) {
    Duration bound = cfg.deadTimeout().compareTo(LEAVE_MAX) < 0 ? cfg.deadTimeout() : LEAVE_MAX;
    long deadline = System.nanoTime() + bound.toNanos();
    List<Thread> others = new ArrayList<>();
    for (int g = 1; g < links.size(); g++) {
      MasterLink l = links.get(g);
      Thread t =
          new Thread(() -> l.leave(incarnation, deadline), "ferrite-leave-" + name + "-" + g);
      t.setDaemon(true);
      t.start();
      others.add(t);
    }
    if (!links.isEmpty()) {
      links.get(0).leave(incarnation, deadline);
    }
    for (Thread t : others) {
      try {
        // Each attempt is bounded by the deadline; the slack covers a connect that overruns it.
        t.join(bound.toMillis() + 1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** The longest a clean stop waits for the master to take its goodbye. */
  static final Duration LEAVE_MAX = Duration.ofSeconds(2);

  /**
   * Stops heartbeating, closes the endpoints, tells every master group it registered with that it
   * leaves ({@link MasterLink#leave}: each declares it DEAD at once, so faces fail over now rather
   * than after the dead timeout), stops the services and closes the regions, deleting the dram and
   * service region files. The goodbye waits at most the dead timeout, and {@link #LEAVE_MAX}: past
   * that the master's timeout declares the server DEAD anyway; a master that cannot be reached is
   * logged, and the server stops all the same.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (ops != null) {
      ops.close();
    }
    List<MasterLink> links = new ArrayList<>();
    if (link != null) {
      links.add(link);
    }
    links.addAll(groupLinks);
    for (MasterLink l : links) {
      l.stopHeartbeats();
    }
    // Endpoints close before the goodbye: once the master has declared the server DEAD (a kv
    // backup promoted), this server must not accept a write that the new primary never sees.
    for (FabricServer e : endpoints) {
      try {
        e.close();
      } catch (RuntimeException ex) {
        LOG.log(System.Logger.Level.WARNING, "closing endpoint " + e.address(), ex);
      }
    }
    leave(links);
    for (MasterLink l : links) {
      l.close();
    }
    for (FerriteService s : started) {
      try {
        s.stop();
      } catch (RuntimeException ex) {
        LOG.log(System.Logger.Level.WARNING, "stopping service " + s.name(), ex);
      }
    }
    if (peers != null) {
      peers.close();
    }
    reclaimer.shutdownNow();
    store.close();
    try {
      dramLock.release(true);
      serverLock.release(false);
    } catch (IOException e) {
      LOG.log(System.Logger.Level.WARNING, "releasing the locks of " + serverDir, e);
    }
  }
}
