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

  private final MasterState state;
  private final Journal journal;
  private final int snapshotEvery;
  private final ScheduledThreadPoolExecutor ticker;

  /** Carries revocations to the servers; set once before the master serves. */
  private volatile Revoker revoker;

  private final List<FabricServer> endpoints = new ArrayList<>();
  private final Map<String, String> addresses = new LinkedHashMap<>();
  private volatile boolean closed;

  /** One snapshot at a time, and none while closing; taken before the metadata lock. */
  private final Object snapshotLock = new Object();

  private Path shmSocketDir;

  /** Regions the master serves itself (extensions' {@link MasterContext#createRegion}). */
  private final RegionTable regions = new RegionTable();

  private final SecureRandom rkeys = new SecureRandom();

  /** The master's meters; always kept, served over HTTP only with {@code metrics.port >= 0}. */
  private final io.ferrite.kernel.ops.Metrics metrics =
      new io.ferrite.kernel.ops.Metrics(
          List.of(io.micrometer.core.instrument.Tag.of("process", "master")));

  /** The metrics endpoint and console, or null when {@code metrics.port} is -1. */
  private volatile io.ferrite.kernel.ops.OpsServer ops;

  /** The web console on {@link #ops}, or null when that is off. */
  private volatile io.ferrite.kernel.ops.console.Console console;

  private Master(FerriteConfig cfg, MasterState state, Journal journal) {
    this.state = state;
    this.journal = journal;
    this.snapshotEvery = cfg.snapshotEvery();
    this.ticker = Threads.scheduler("ferrite-master-ticker");
  }

  /**
   * Recovers the metadata from {@code <data.dir>/master}, then serves it on each of {@code fabrics}
   * (binding {@code master.host}:{@code master.port} on tcp). The caller keeps ownership of the
   * fabrics.
   */
  public static Master start(FerriteConfig cfg, Credentials credentials, List<Fabric> fabrics) {
    List<MasterExtension> found = new ArrayList<>();
    ServiceLoader.load(MasterExtension.class).forEach(found::add);
    return start(cfg, credentials, fabrics, found);
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
   * MasterExtension#start}, and serves its RPC service on the master's endpoints.
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
    Path dir = cfg.dataDir().resolve("master");
    try {
      Secrets.createPrivateDirectories(dir);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create master directory " + dir, e);
    }
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
    Journal journal = Journal.open(dir.resolve("journal"), cfg.journalFsync(), fsync, state::apply);
    state.recovered();
    state.sink(journal::append);
    Master m = new Master(cfg, state, journal);
    try {
      for (MasterExtension ext : extensions) {
        ext.start(
            state.contextFor(
                ext,
                (name, length) -> m.createRegion(cfg, dir, name, length),
                cfg,
                m.metrics.registry()));
        LOG.log(
            System.Logger.Level.INFO,
            "master extension {0} (service {1}) started",
            ext.name(),
            ext.serviceId());
      }
      MasterService service = new MasterService(state, journal, HostIdentity.local());
      Map<Integer, String> serviceNames = new java.util.HashMap<>();
      serviceNames.put(io.ferrite.kernel.proto.MasterProtocol.SERVICE, "master");
      for (MasterExtension ext : extensions) {
        serviceNames.put(ext.serviceId(), ext.name());
      }
      io.ferrite.fabric.RpcHandler served =
          io.ferrite.kernel.ops.RpcMeters.wrap(service, m.metrics.registry(), serviceNames::get);
      List<String> faces = new ArrayList<>();
      for (MasterExtension ext : extensions) {
        faces.add(ext.name());
      }
      MasterMeters.register(m.metrics, state, journal, List.of("dram", "disk"), faces);
      m.revoker =
          new Revoker(
              state,
              fabrics,
              new io.ferrite.fabric.ConnectOptions(
                  credentials.as(io.ferrite.fabric.Role.SERVER),
                  cfg.rpcTimeout(),
                  cfg.rpcTimeout()),
              cfg.rpcTimeout());
      service.revoker(m.revoker);
      Revoker rv = m.revoker;
      state.revokeNudge(rv::revokeNow);
      state.connector(rv::open);
      for (Fabric f : fabrics) {
        boolean shm = f.name().equals("shm");
        FabricServer s;
        try {
          ServerSpec spec =
              new ServerSpec(
                  0,
                  credentials,
                  m.regions,
                  served,
                  cfg.masterHost(),
                  cfg.masterPort(),
                  shm ? m.shmDir(cfg) : dir,
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
        m.endpoints.add(s);
        m.addresses.put(f.name(), s.address());
        io.ferrite.kernel.ops.FabricMeters.bind(m.metrics, f.name(), s.counters());
      }
      service.addresses(m.addresses);
      if (cfg.metricsPort() >= 0) {
        m.ops =
            io.ferrite.kernel.ops.OpsServer.start(
                cfg.metricsHost(), cfg.metricsPort(), m.metrics, credentials, "master");
        m.console = m.startConsole(service);
      }
      long period = Math.max(20, Math.min(250, cfg.heartbeatInterval().toMillis() / 2));
      m.ticker.scheduleWithFixedDelay(m::tick, period, period, TimeUnit.MILLISECONDS);
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

  /** The console on {@link #ops}; the servers' heartbeats feed its rates from now on. */
  private io.ferrite.kernel.ops.console.Console startConsole(MasterService service) {
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
                state::status, this::faces, this::addresses),
            board);
    service.loads(board::report);
    return c;
  }

  /**
   * What each installed face's master extension tells of its objects ({@link
   * MasterExtension#describe}), by face name; read under the metadata lock, as {@code apply}
   * changes it. A face whose describe fails shows the failure instead.
   */
  public Map<String, Map<String, Object>> faces() {
    Map<String, Map<String, Object>> out = new LinkedHashMap<>();
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
   * files, and a name no server takes), owner-only and checked ({@link ShmDirectory}). Removed at
   * close, with the cluster's directory if empty.
   */
  private Path shmDir(FerriteConfig cfg) {
    Path d = ShmDirectory.cluster(cfg, ".master");
    shmSocketDir = d;
    return d;
  }

  /**
   * An extension's region: a file in the master's shm directory (tmpfs; the data directory if shm
   * is unusable), registered in the table every endpoint serves.
   */
  private synchronized MasterContext.MasterRegion createRegion(
      FerriteConfig cfg, Path dataDir, String name, long length) {
    Path where;
    try {
      where = shmDir(cfg);
    } catch (RuntimeException e) {
      where = dataDir;
    }
    int id = regions.all().size() + 1;
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
    try {
      if (journal.failure() != null) {
        // A failed fsync stopped the journal: expiries and snapshots would only be refused (and
        // logged) every tick. The failure was logged once; the master waits to be restarted.
        return;
      }
      state.tick();
      Revoker r = revoker;
      if (r != null) {
        r.revokeNow(); // blocks of expired sessions
        r.retry();
      }
      if (journal.recordsSinceSnapshot() >= snapshotEvery) {
        snapshot();
      }
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "master tick failed", e);
    }
  }

  /**
   * Writes a snapshot now and truncates the log. The metadata lock is held only to copy the state
   * and start the next log; the snapshot file is written and fsynced outside it, while mutations go
   * on (see {@link Journal}).
   */
  public void snapshot() {
    synchronized (snapshotLock) {
      long generation;
      List<MasterEvent> events;
      synchronized (state) {
        if (closed) {
          return;
        }
        events = state.snapshotEvents();
        generation = journal.rotate();
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
    GroupCommit.Stats s = journal.stats();
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

  /** The metadata, for in-process inspection (tests, the local command). */
  public MasterState state() {
    return state;
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
    Revoker rv = revoker;
    if (rv != null) {
      rv.close();
    }
    for (MasterExtension ext : state.extensions()) {
      try {
        ext.stop();
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "stopping master extension " + ext.name(), e);
      }
    }
    for (FabricServer s : endpoints) {
      try {
        s.close();
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "closing master endpoint " + s.address(), e);
      }
    }
    synchronized (snapshotLock) {
      synchronized (state) {
        closed = true;
        journal.close();
      }
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
