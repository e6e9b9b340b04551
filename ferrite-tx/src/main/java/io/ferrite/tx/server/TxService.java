package io.ferrite.tx.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.proto.Permissions;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.FerriteService;
import io.ferrite.kernel.server.ServiceContext;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.TxConfig;
import io.ferrite.tx.TxPlacement;
import io.ferrite.tx.TxProtocol;
import io.micrometer.core.instrument.Gauge;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The tx face's memory-server service: the primary of its tx regions (allocation, and the
 * participant's half of FaRM §3.4's commit: LOCK, COMMIT-PRIMARY, ABORT; the single-server commit
 * that locks, validates and applies in one step) and the backup of others ({@link TxMirror}).
 *
 * <h2>Replication: primaries forward to their backups</h2>
 *
 * Before a primary answers LOCK OK it has logged the LOCK record (the transaction's writes of the
 * region, its decider region) at every backup of each region written; a single-server commit is
 * forwarded (LOCAL) and acknowledged before it is applied; COMMIT and ABORT are forwarded and
 * acknowledged before the primary applies or unlocks, so a backup's copy of an object is at the
 * version a later LOCK expects. A record to a backup that does not answer is sent again until it
 * answers or the master's map drops it (a server declared dead leaves every placement); a backup
 * that answers MOVED was promoted: this server is no longer the primary. No lock of this service is
 * held while a record is in flight: forwards are asynchronous, the per-transaction state is taken
 * and released around them.
 *
 * <h2>The decider</h2>
 *
 * Each LOCK names a <i>decider region</i>: the lowest region id the transaction writes. Its current
 * primary decides, once: a decision (commit on COMMIT, abort on ABORT or when the lease lapses) is
 * taken by the first {@code putIfAbsent}, forwarded as a DECIDE record to the region's backups, and
 * only once they acknowledged it is it acted on or answered. A transaction whose coordinator went
 * silent for {@code tx.lock.lease} is resolved by the reaper: the decider aborts it; any other
 * participant asks the decider region's current primary (OUTCOME, the master's map) and commits or
 * aborts as told, keeping its locks while it cannot learn. A backup promoted to primary of a
 * decider region answers from the DECIDE records it holds, or decides abort itself when it has none
 * (the old decider never answered COMMIT OK before its backups had the record).
 *
 * <h2>Promotion</h2>
 *
 * A server that learns from the master that it is now the primary of a region it backs (lazily,
 * when asked about the region; eagerly, on the reaper's tick) promotes its copy: the allocator is
 * rebuilt ({@link TxRegion#rebuilt}), the objects of every logged LOCK record are locked again at
 * their expected versions as pending transactions of its own, which the reaper then resolves.
 */
public final class TxService implements FerriteService {
  private static final System.Logger LOG = System.getLogger(TxService.class.getName());

  /** How long a record is sent again to a backup that does not answer, before the op fails. */
  private static final long FORWARD_PATIENCE_NANOS = 30_000_000_000L;

  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(2);

  /** How long the lease's check of one region with the master waits (TxLease). */
  private static final Duration VERIFY_TIMEOUT = Duration.ofMillis(500);

  /** A transaction locked here, waiting for COMMIT or ABORT. */
  private record Pending(long txid, int deciderRegion, List<Write> writes, long deadlineNanos) {}

  /** One write-set entry. */
  record Write(FatPointer ptr, long expected, int kind, byte[] value) {}

  /**
   * A decider's decision: taken once; acted on once {@code replicated} completed. A commit with
   * {@code pins} (the other regions it wrote) is pinned until they resolved it ({@link TxPins}).
   */
  private record Decision(boolean commit, CompletableFuture<Void> replicated, int[] pins) {
    Decision(boolean commit, CompletableFuture<Void> replicated) {
      this(commit, replicated, TxLog.NO_PINS);
    }
  }

  private final Map<Integer, TxRegion> regions = new ConcurrentHashMap<>();
  private final Map<Integer, TxMirror> mirrors = new ConcurrentHashMap<>();
  private TxLease masterLease;

  // Guarded by this (held only for local bookkeeping, never across a call).
  private final Map<Long, Pending> pending = new HashMap<>();
  private Map<Long, Boolean> outcomes;
  private Map<Long, Decision> decisions;

  /**
   * Commit decisions kept beyond the bounded maps until every other region of their transaction
   * resolved them (docs/TX.md "Truncation"); its own monitor.
   */
  private final TxPins pins = new TxPins();

  /** {@code tx.decisions.kept}: how many decisions the bounded maps remember. */
  private int kept;

  /** When truncation last warned of pins past {@link #kept} (its thread only). */
  private long pinsWarnedNanos;

  private ServiceContext context;
  private long regionSize;
  private long slabSize;
  private int maxSize;
  private Duration lease;
  private Thread reaper;
  private Shipping shipping;
  private TxRepair repair;
  private ScheduledExecutorService replicator;

  /** Truncation's thread ({@link #truncate}): its calls never hold up the reaper's work. */
  private ScheduledExecutorService truncator;

  /** Every copy's log on disk ({@code tx.log.sync}; docs/TX.md "Logs on disk"). */
  private TxLogs logs;

  /**
   * {@code tx.log.checkpoint}: a log past this many bytes (and twice its last size) is rewritten.
   */
  private long checkpointBytes;

  private volatile boolean stopping;

  /** For {@link java.util.ServiceLoader}. */
  public TxService() {}

  @Override
  public int id() {
    return TxProtocol.SERVER_SERVICE;
  }

  @Override
  public String name() {
    return "tx";
  }

  @Override
  public void start(ServiceContext context) {
    this.context = context;
    this.regionSize = context.config().getSize(TxConfig.REGION_SIZE);
    this.slabSize = context.config().getSize(TxConfig.SLAB_SIZE);
    this.maxSize = (int) Math.min(context.config().getSize(TxConfig.OBJECT_MAX), 1 << 30);
    this.lease = context.config().getDuration(TxConfig.LOCK_LEASE);
    this.checkpointBytes = context.config().getSize(TxConfig.LOG_CHECKPOINT);
    this.kept = context.config().getInt(TxConfig.DECISIONS_KEPT);
    synchronized (this) {
      this.outcomes = RecentTxids.map(kept);
      this.decisions = RecentTxids.map(kept);
    }
    this.logs =
        new TxLogs(
            context.directory(),
            TxLogs.Sync.parse(context.config().get(TxConfig.LOG_SYNC)),
            context.config().getDuration(TxConfig.LOG_INTERVAL),
            context.serverId(),
            kept);
    Gauge.builder("ferrite.tx.decisions.pinned", pins, TxPins::count)
        .description(
            "commit decisions this tx decider keeps until every other participant region resolved"
                + " them (docs/TX.md Truncation)")
        .register(context.metrics());
    Gauge.builder("ferrite.tx.decisions.pinned.copies", mirrors, ms -> pinnedAtCopies(ms.values()))
        .description("pinned commit decisions held by this server's backup copies of tx regions")
        .register(context.metrics());
    replicator =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "tx-replicate-" + context.serverId());
              t.setDaemon(true);
              return t;
            });
    this.shipping = new Shipping(this, replicator, TxService.class.getClassLoader());
    repair = new TxRepair(this, context, regions, mirrors, regionSize);
    // Regions are served only under the master lease (docs/TX.md "Leases").
    masterLease = new TxLease(context, TxConfig.lease(context.config()), this::verifyRegions);
    truncator =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "tx-truncate-" + context.serverId());
              t.setDaemon(true);
              return t;
            });
    long tick = Math.max(1, lease.toMillis() / 4);
    truncator.scheduleWithFixedDelay(
        () -> {
          try {
            truncate(tick);
          } catch (RuntimeException e) {
            // a master or peer error not caught below: next tick (a task that throws would stop)
            LOG.log(System.Logger.Level.DEBUG, "tx truncation: " + e);
          }
        },
        tick,
        tick,
        TimeUnit.MILLISECONDS);
    reaper = new Thread(this::reap, "tx-reaper-" + context.serverId());
    reaper.setDaemon(true);
    reaper.start();
  }

  @Override
  public void stop() {
    stopping = true;
    if (reaper != null) {
      reaper.interrupt();
    }
    if (replicator != null) {
      replicator.shutdownNow();
    }
    if (truncator != null) {
      truncator.shutdownNow();
    }
    if (repair != null) {
      repair.stop();
    }
    if (masterLease != null) {
      masterLease.close();
    }
    if (logs != null) {
      logs.close();
    }
  }

  @Override
  public CompletableFuture<ByteBuffer> handleInline(
      RpcContext caller, int opcode, ByteBuffer request) {
    if (opcode != TxProtocol.REPLICATE) {
      return servedInline(opcode, request) ? handle(caller, opcode, request) : null;
    }
    // Records are applied in the order the primary's connection delivered them; a copy that does
    // not exist yet (REC_OPEN makes it: a new region file) is left to the service executor.
    int region = request.duplicate().order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt(0);
    if (!mirrors.containsKey(region) && !regions.containsKey(region)
        || request.get(12) == TxProtocol.REC_FILL_BEGIN) {
      return null; // FILL_BEGIN makes a region file too
    }
    return handle(caller, opcode, request);
  }

  /**
   * Whether a commit-protocol request can be served on the thread that received it: every region it
   * touches is held here as primary ({@link #here}: the master is not asked), and each of their
   * backups can be sent a record without waiting (its connection is open: no peer is dialed). What
   * is left is a few CASes and stores under short monitors and, with backups, the records sent
   * (asynchronous: the answer leaves once the backups acknowledged them, from whichever thread read
   * their acknowledgement: on shm this server's ring poller, which polls for the answers of the
   * calls it made, docs/KERNEL.md "shm RPC rings"), never a wait. Otherwise (a region not held yet,
   * a backup to dial) the service executor serves it, as it does a malformed request, whose error
   * it answers. (With backups it used to, always: a hand-off to a dispatch thread, and the backup's
   * answer rung for, on every commit with {@code tx.replicas} 2; docs/TX.md "Measurements".)
   */
  private boolean servedInline(int opcode, ByteBuffer request) {
    try {
      Wire.Reader r = new Wire.Reader(request.duplicate(), "tx request " + opcode);
      switch (opcode) {
        case TxProtocol.LOCK -> {
          // The decider region is only remembered by LOCK (nothing is sent about it), so it may be
          // another server's: a non-decider participant's LOCK is served here too. (It was not,
          // and every two-server commit paid a dispatch-thread hand-off on its second LOCK.)
          r.i64("txid");
          r.i32("deciderRegion");
          return writesHere(r);
        }
        case TxProtocol.COMMIT_LOCAL -> {
          r.i64("txid");
          if (!writesHere(r)) {
            return false;
          }
          int n = r.count("reads", 1 << 20);
          for (int i = 0; i < n; i++) {
            if (!here(FatPointer.readFrom(r).region())) {
              return false;
            }
            r.i64("version");
          }
          return true;
        }
        case TxProtocol.COMMIT, TxProtocol.ABORT -> {
          long txid = r.i64("txid");
          Pending t;
          synchronized (this) {
            t = pending.get(txid);
          }
          if (t == null || (regions.containsKey(t.deciderRegion()) && !here(t.deciderRegion()))) {
            return false; // decided already (rare), or a backup of the decider region to dial
          }
          for (Write w : t.writes()) {
            if (!here(w.ptr().region())) {
              return false;
            }
          }
          return true;
        }
        default -> {
          return false;
        }
      }
    } catch (RuntimeException e) {
      return false;
    }
  }

  private boolean writesHere(Wire.Reader r) {
    int n = r.count("writes", 1 << 20);
    for (int i = 0; i < n; i++) {
      if (!here(FatPointer.readFrom(r).region())) {
        return false;
      }
      r.i64("expectedVersion");
      r.u8("kind");
      r.skipBytes("value");
    }
    return true;
  }

  /** Region {@code id} is held here as primary, with no backup. */
  private boolean alone(int id) {
    TxRegion region = regions.get(id);
    return region != null && region.backups().isEmpty();
  }

  /**
   * Region {@code id} is held here as primary, and each of its backups has an open connection from
   * this server, so its records are sent without dialing ({@link ServiceContext#openPeer}).
   */
  private boolean here(int id) {
    TxRegion region = regions.get(id);
    if (region == null) {
      return false;
    }
    for (int b : region.backups()) {
      if (context.openPeer(b) == null) {
        return false;
      }
    }
    return true;
  }

  @Override
  public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
    try {
      return dispatch(caller, opcode, request);
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    } catch (IllegalArgumentException e) {
      return CompletableFuture.failedFuture(
          new FerriteException(ErrorCode.INVALID_ARGUMENT, "tx: " + e.getMessage()));
    }
  }

  /**
   * Before the master lease is granted again after a lapse (TxLease): drops the regions the master
   * no longer names this server primary of (MOVED to RPCs from now on), then retires every region
   * no longer held, whatever dropped it. Under {@code regions}, as region creation and promotion.
   */
  private void verifyRegions() {
    synchronized (regions) {
      for (TxRegion r : List.copyOf(regions.values())) {
        // A short timeout: the regions serve nothing until this is done, and a lost answer is
        // asked again at the lease's next poll (10 ms) rather than after 10 s.
        if (placement(r.id(), VERIFY_TIMEOUT).primary() != context.serverId()
            && regions.remove(r.id(), r)) {
          LOG.log(
              System.Logger.Level.INFO,
              "tx region {0}: server {1} is no longer its primary (deposed while its lease had"
                  + " lapsed); dropped",
              r.id(),
              context.serverId());
        }
      }
      masterLease.retireAllBut(regions.values());
    }
  }

  /** This server's master lease (tests). */
  TxLease masterLease() {
    return masterLease;
  }

  private static CompletableFuture<ByteBuffer> status(int st) {
    return CompletableFuture.completedFuture(new Wire.Writer().u8(st).toBuffer());
  }

  private CompletableFuture<ByteBuffer> dispatch(
      RpcContext caller, int opcode, ByteBuffer request) {
    Wire.Reader r = new Wire.Reader(request, "tx request " + opcode);
    Wire.Writer w = new Wire.Writer();
    if (TxLease.guards(opcode)) {
      masterLease.check(); // UNAVAILABLE "lease lapsed": the client asks the master (TxLease)
    }
    switch (opcode) {
      case TxProtocol.OPEN_REGION -> {
        int id = r.i32("region");
        r.end();
        RegionRef ref = context.readRef(region(id).memory());
        w.i32(ref.regionId()).i64(ref.rkey()).i64(ref.length());
      }
      case TxProtocol.OPEN_COPY -> {
        int id = r.i32("region");
        r.end();
        TxMirror m = mirrors.get(id);
        if (m == null) {
          throw new FerriteException(
              ErrorCode.NO_SUCH_REGION,
              "tx region " + id + ": server " + context.serverId() + " holds no backup copy");
        }
        RegionRef ref = context.readRef(m.memory());
        w.i32(ref.regionId()).i64(ref.rkey()).i64(ref.length());
      }
      case TxProtocol.ALLOC -> {
        int id = r.i32("region");
        int size = r.i32("size");
        r.end();
        long[] slot = region(id).allocate(size);
        w.i64(slot[0]).i64(slot[1]).i64(slot[2]);
      }
      case TxProtocol.LOCK -> {
        long txid = r.i64("txid");
        int decider = r.i32("deciderRegion");
        List<Write> writes = writes(r, true);
        r.end();
        return lock(txid, decider, writes);
      }
      case TxProtocol.COMMIT -> {
        long txid = r.i64("txid");
        int decider = r.i32("deciderRegion");
        int[] others = TxLog.readRegions(r);
        r.end();
        return commit(txid, decider, others);
      }
      case TxProtocol.ABORT -> {
        long txid = r.i64("txid");
        r.end();
        return abort(txid).thenApply(c -> new Wire.Writer().u8(TxProtocol.OK).toBuffer());
      }
      case TxProtocol.COMMIT_LOCAL -> {
        r.i64("txid");
        List<Write> writes = writes(r, true);
        int n = r.count("reads", 1 << 20);
        List<FatPointer> reads = new ArrayList<>(n);
        List<Long> versions = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          reads.add(FatPointer.readFrom(r));
          versions.add(r.i64("version"));
        }
        r.end();
        return commitLocal(writes, reads, versions);
      }
      case TxProtocol.SHIP -> {
        String name = r.str("function");
        FatPointer at = FatPointer.readFrom(r);
        byte[] argument = r.bytes("argument");
        r.end();
        return shipping
            .run(name, at, argument)
            .thenApply(o -> new Wire.Writer().u8(o.status()).bytes(o.output()).toBuffer());
      }
      case TxProtocol.OUTCOME -> {
        Permissions.require(caller, Role.SERVER, "tx OUTCOME");
        long txid = r.i64("txid");
        int decider = r.i32("deciderRegion");
        r.end();
        return outcome(txid, decider);
      }
      case TxProtocol.UNRESOLVED -> {
        Permissions.require(caller, Role.SERVER, "tx UNRESOLVED");
        int region = r.i32("region");
        List<Long> txids = TxLog.readTxids(r);
        r.end();
        return unresolved(region, txids)
            .thenApply(
                still -> {
                  Wire.Writer a = new Wire.Writer().i32(still.size());
                  still.forEach(a::i64);
                  return a.toBuffer();
                });
      }
      case TxProtocol.REPLICATE -> {
        Permissions.require(caller, Role.SERVER, "tx REPLICATE");
        return replicated(r).thenApply(v -> w.toBuffer());
      }
      default ->
          throw new FerriteException(ErrorCode.UNKNOWN_OPCODE, "tx: unknown opcode " + opcode);
    }
    return CompletableFuture.completedFuture(w.toBuffer());
  }

  List<Write> writes(Wire.Reader r, boolean atPrimary) {
    int n = r.count("writes", 1 << 20);
    List<Write> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      FatPointer p = FatPointer.readFrom(r);
      long expected = r.i64("expectedVersion");
      int kind = r.u8("kind");
      byte[] value = r.bytes("value");
      if ((kind != TxProtocol.KIND_WRITE && kind != TxProtocol.KIND_FREE)
          || value.length > p.size()) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "tx write of "
                + value.length
                + " bytes, kind "
                + kind
                + " to "
                + p
                + " (expected: kind 1 or 2, at most the object's size)");
      }
      if (atPrimary) {
        region(p.region()).check(p);
      }
      out.add(new Write(p, expected, kind, value));
    }
    return out;
  }

  static void writeSet(Wire.Writer w, List<Write> writes) {
    w.i32(writes.size());
    for (Write x : writes) {
      FatPointer.writeTo(w, x.ptr());
      w.i64(x.expected()).u8(x.kind()).bytes(x.value());
    }
  }

  /** The master's placement of region {@code id}, with the copies being filled (GET_PLACEMENT). */
  TxPlacement placement(int id) {
    return placement(id, Duration.ofSeconds(10));
  }

  private TxPlacement placement(int id, Duration timeout) {
    return TxPlacement.read(
        context
            .master()
            .connection()
            .callSync(
                TxProtocol.MASTER_SERVICE,
                TxProtocol.GET_PLACEMENT,
                new Wire.Writer().i32(id).toBuffer(),
                timeout),
        true);
  }

  /**
   * The region {@code id} if this server is its primary: made on first use after the master's map
   * confirmed the placement, or promoted from this server's backup copy.
   *
   * @throws FerriteException MOVED if the master's map names another primary (the caller's map is
   *     stale), NO_SUCH_REGION if the map has no such region, DATA_LOST if this server is its
   *     primary but holds no copy of an opened region
   */
  TxRegion region(int id) {
    TxRegion r = regions.get(id);
    if (r != null) {
      return r;
    }
    TxPlacement p = placement(id);
    if (p.primary() != context.serverId()) {
      throw new FerriteException(
          ErrorCode.MOVED,
          "tx region " + id + " has primary server " + p.primary() + ", not " + context.serverId());
    }
    synchronized (regions) {
      r = regions.get(id);
      if (r != null) {
        return r;
      }
      TxMirror m = mirrors.get(id);
      if (m != null) {
        return promote(m, p, false);
      }
      if (p.opened() && logs.exists(id)) {
        // Every copy is gone but this server's log: the region is rebuilt from it.
        io.ferrite.fabric.MappedRegion memory = context.createRegion("dram", regionSize);
        TxMirror copy;
        try {
          copy = logs.recover(id, memory, slabSize, p.epoch());
        } catch (FerriteException e) { // a corrupt log (named in the message): nothing served
          context.freeRegion(memory);
          throw e;
        }
        return promote(copy, p, true);
      }
      if (p.opened()) {
        // Made by an earlier process of this server (or a copy this server no longer holds).
        throw new FerriteException(
            ErrorCode.DATA_LOST,
            "tx region "
                + id
                + " was lost with server "
                + context.serverId()
                + "'s memory (it restarted, and no backup copy is left)");
      }
      r =
          new TxRegion(
              id,
              context.createRegion("dram", regionSize),
              slabSize,
              maxSize,
              p.epoch(),
              p.backups());
      logs.create(id);
      // The backups make their copies before any object is allocated here.
      try {
        forward(r, TxProtocol.REC_OPEN, new byte[0]).join();
      } catch (CompletionException e) {
        logs.drop(id);
        context.freeRegion(r.memory());
        throw e.getCause() instanceof FerriteException fe ? fe : e;
      }
      // Journaled before any object is allocated in it, so a later process knows it lost them.
      context
          .master()
          .connection()
          .callSync(
              TxProtocol.MASTER_SERVICE,
              TxProtocol.OPENED,
              new Wire.Writer().i32(id).toBuffer(),
              Duration.ofSeconds(10));
      masterLease.attach(r);
      regions.put(id, r);
      return r;
    }
  }

  /**
   * Promotes this server's copy of a region (see the class comment); under {@code regions}. A copy
   * rebuilt {@code fromLog} locks again the objects of the LOCK records its log holds without an
   * outcome (a participant that was not the decider and lost its process before it learnt it) and
   * asks their decider at once (its next reaper tick): no coordinator is waiting on this process's
   * answer any more, and a decider that has not decided yet answers PENDING. A backup's copy gives
   * its pending transactions a fresh lease instead (a live coordinator may still send COMMIT here);
   * if the region has no backup now, their LOCK records go to its log, as a LOCK's would.
   */
  private TxRegion promote(TxMirror m, TxPlacement p, boolean fromLog) {
    TxMirror.Taken taken = m.promote();
    TxRegion r =
        TxRegion.rebuilt(
            m.id(),
            m.memory(),
            slabSize,
            maxSize,
            p.epoch(),
            p.backups(),
            taken.slabLines(),
            taken.live(),
            logs.floor(m.id()));
    TxLog log = logs.get(m.id());
    int relocked = 0;
    synchronized (this) {
      taken
          .decided()
          .forEach(
              (txid, commit) -> {
                decisions.put(txid, new Decision(commit, CompletableFuture.completedFuture(null)));
                outcomes.putIfAbsent(txid, commit);
              });
      // Kept until their regions resolved them, however many decisions follow (asked from the
      // reaper's next tick: docs/TX.md "Truncation").
      long now = System.nanoTime();
      taken.pinned().forEach((txid, regs) -> pins.pin(txid, m.id(), regs, now));
      for (TxMirror.LockRecord rec : taken.locks()) {
        if (lockAll(r, rec.writes()) != TxProtocol.OK) {
          if (fromLog && log != null) {
            log.forget(rec.txid()); // resolved before: its objects were written since
          }
          continue; // a record whose objects moved on: it never held them at the primary
        }
        if (!fromLog
            && log != null
            && p.backups().isEmpty()
            && rec.deciderRegion() != m.id()
            && !regions.containsKey(rec.deciderRegion())) {
          try {
            log.lock(rec.txid(), rec.deciderRegion(), rec.writes());
          } catch (FerriteException e) {
            LOG.log(
                System.Logger.Level.WARNING,
                "tx region " + m.id() + ": LOCK record not logged: " + e.getMessage());
          }
        }
        Pending old = pending.get(rec.txid());
        List<Write> all = new ArrayList<>(rec.writes());
        if (old != null) {
          all.addAll(old.writes());
        }
        // A fresh lease: a live coordinator retrying COMMIT at this promoted copy may still commit.
        long deadline = System.nanoTime() + (fromLog ? 0 : lease.toNanos());
        pending.put(rec.txid(), new Pending(rec.txid(), rec.deciderRegion(), all, deadline));
        relocked++;
      }
    }
    mirrors.remove(m.id());
    masterLease.attach(r);
    regions.put(m.id(), r);
    LOG.log(
        System.Logger.Level.INFO,
        "tx region {0}: server {1} promoted its copy at epoch {2} ({3} pending transactions)",
        m.id(),
        context.serverId(),
        p.epoch(),
        relocked);
    return r;
  }

  // ---- forwarding to backups ----

  /** Forwards one record of region {@code r} to each of its backups; completes when all acked. */
  private CompletableFuture<Void> forward(TxRegion r, int type, byte[] body) {
    List<Integer> backups = r.backups();
    if (backups.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    long deadline = System.nanoTime() + FORWARD_PATIENCE_NANOS;
    CompletableFuture<?>[] all = new CompletableFuture<?>[backups.size()];
    for (int i = 0; i < all.length; i++) {
      CompletableFuture<Void> done = new CompletableFuture<>();
      send(r, backups.get(i), type, body, deadline, done, false);
      all[i] = done;
    }
    return CompletableFuture.allOf(all);
  }

  /** Forwards a {@code type} record per region of {@code writes} but {@code skipRegion}. */
  private CompletableFuture<Void> forwardEach(
      List<Write> writes,
      int skipRegion,
      int type,
      java.util.function.Function<List<Write>, byte[]> body) {
    Map<Integer, List<Write>> byRegion = new TreeMap<>();
    for (Write x : writes) {
      byRegion.computeIfAbsent(x.ptr().region(), k -> new ArrayList<>()).add(x);
    }
    List<CompletableFuture<Void>> all = new ArrayList<>();
    byRegion.forEach(
        (id, ws) -> {
          TxRegion r = regions.get(id);
          if (r != null && id != skipRegion) {
            all.add(forward(r, type, body.apply(ws)));
          }
        });
    return CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0]));
  }

  /**
   * Sends one record to {@code backup} and completes {@code done} once it acknowledged it, sending
   * it again while it does not answer. Never blocks unless {@code mayDial} (the replicator thread):
   * a backup with no open connection is dialed there ({@link ServiceContext#peer} blocks while it
   * connects), since the sender may be an inline handler's thread.
   */
  private void send(
      TxRegion r,
      int backup,
      int type,
      byte[] body,
      long deadline,
      CompletableFuture<Void> done,
      boolean mayDial) {
    boolean deposed = regions.get(r.id()) != r && type != TxProtocol.REC_OPEN;
    if (!r.backups().contains(backup) || deposed) {
      // The master dropped it (declared dead): nothing to wait for; or this server was deposed.
      if (deposed) {
        done.completeExceptionally(deposed(r));
      } else {
        done.complete(null);
      }
      return;
    }
    byte[] head = new Wire.Writer().i32(r.id()).i64(r.epoch()).u8(type).toArray();
    ByteBuffer msg = ByteBuffer.allocate(head.length + body.length).put(head).put(body).flip();
    io.ferrite.fabric.FabricConnection to = context.openPeer(backup);
    if (to == null && !mayDial) {
      try {
        replicator.execute(() -> send(r, backup, type, body, deadline, done, true));
      } catch (java.util.concurrent.RejectedExecutionException stopped) {
        done.completeExceptionally(
            new FerriteException(
                ErrorCode.UNAVAILABLE, "server " + context.serverId() + " is stopping"));
      }
      return;
    }
    CompletableFuture<ByteBuffer> f;
    try {
      f =
          (to != null ? to : context.peer(backup))
              .call(TxProtocol.SERVER_SERVICE, TxProtocol.REPLICATE, msg, CALL_TIMEOUT);
    } catch (FerriteException e) {
      f = CompletableFuture.failedFuture(e);
    }
    f.whenComplete(
        (b, e) -> {
          if (e == null) {
            done.complete(null);
            return;
          }
          Throwable c = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
          if (c instanceof FerriteException fe && fe.code() == ErrorCode.MOVED) {
            regions.remove(r.id(), r); // a backup was promoted: this server is no longer primary
            done.completeExceptionally(deposed(r));
          } else if (stopping || System.nanoTime() - deadline > 0) {
            done.completeExceptionally(
                new FerriteException(
                    ErrorCode.UNAVAILABLE,
                    "tx region "
                        + r.id()
                        + ": backup server "
                        + backup
                        + " did not acknowledge a record: "
                        + c.getMessage()));
          } else {
            try {
              replicator.schedule(
                  () -> {
                    refresh(r);
                    send(r, backup, type, body, deadline, done, true);
                  },
                  20,
                  TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.RejectedExecutionException stopped) {
              done.completeExceptionally(c);
            }
          }
        });
  }

  private FerriteException deposed(TxRegion r) {
    return new FerriteException(
        ErrorCode.MOVED,
        "tx region " + r.id() + ": server " + context.serverId() + " is no longer its primary");
  }

  /** Takes the master's current placement of {@code r} (on the replicator thread). */
  private void refresh(TxRegion r) {
    if (!r.refreshDue()) {
      return;
    }
    try {
      TxPlacement p = placement(r.id());
      if (p.primary() != context.serverId()) {
        regions.remove(r.id(), r);
      } else {
        r.placement(p.epoch(), p.backups(), p.filling().keySet());
      }
    } catch (FerriteException e) {
      // The master is unreachable: keep what we have, send again.
    }
  }

  /**
   * A record from a region's primary (REPLICATE): applied, logged, and acknowledged once the log
   * may answer for it ({@link TxLogs#durable}).
   */
  private CompletableFuture<Void> replicated(Wire.Reader r) {
    int id = r.i32("region");
    long epoch = r.i64("epoch");
    int type = r.u8("record");
    if (type >= TxProtocol.REC_FILL_BEGIN && type <= TxProtocol.REC_FILL_OBJECTS) {
      repair.received(id, type, r);
      return logs.durable(id);
    }
    TxMirror m = mirrors.get(id);
    if (m == null) {
      if (regions.containsKey(id)) {
        throw new FerriteException(
            ErrorCode.MOVED,
            "tx region " + id + ": server " + context.serverId() + " is its primary now");
      }
      if (type != TxProtocol.REC_OPEN) {
        throw new FerriteException(
            ErrorCode.DATA_LOST,
            "tx region "
                + id
                + ": server "
                + context.serverId()
                + " holds no backup copy (it restarted), epoch "
                + epoch);
      }
      synchronized (regions) {
        m = mirrors.get(id);
        if (m == null) {
          m = new TxMirror(id, context.createRegion("dram", regionSize), slabSize, kept);
          m.log(logs.create(id));
          mirrors.put(id, m);
        }
      }
    }
    boolean ok;
    if (type == TxProtocol.REC_DECIDE) {
      long txid = r.i64("txid");
      boolean commit = r.u8("commit") != 0;
      int[] regs = TxLog.readRegions(r);
      r.end();
      ok = m.decide(txid, commit, regs);
    } else if (type == TxProtocol.REC_UNPIN) {
      List<Long> txids = TxLog.readTxids(r);
      r.end();
      ok = m.unpin(txids);
    } else {
      long txid = 0;
      int decider = 0;
      List<Write> ws = List.of();
      if (type == TxProtocol.REC_LOCK) {
        txid = r.i64("txid");
        decider = r.i32("deciderRegion");
        ws = writes(r, false);
      } else if (type == TxProtocol.REC_LOCAL) {
        ws = writes(r, false);
      } else if (type == TxProtocol.REC_COMMIT || type == TxProtocol.REC_ABORT) {
        txid = r.i64("txid");
      }
      r.end();
      ok = m.accept(type, txid, decider, ws);
    }
    if (!ok && mirrors.containsKey(id) && mirrors.get(id) != m) {
      // a copy replaced by a fill (TxRepair) that began after this record: it copies it
      return CompletableFuture.completedFuture(null);
    }
    if (!ok && !regions.containsKey(id)) {
      // Dropped (the master no longer lists this copy), not promoted: MOVED would depose the
      // sender.
      throw new FerriteException(
          ErrorCode.UNAVAILABLE,
          "tx region " + id + ": server " + context.serverId() + " dropped its copy");
    }
    if (!ok) {
      throw new FerriteException(
          ErrorCode.MOVED,
          "tx region " + id + ": server " + context.serverId() + " is its primary now");
    }
    return logs.durable(id);
  }

  // ---- the commit protocol ----

  private CompletableFuture<ByteBuffer> lock(long txid, int deciderRegion, List<Write> writes) {
    Pending t;
    synchronized (this) {
      if (outcomes.containsKey(txid)) {
        return status(TxProtocol.ABORTED); // an ABORT (or the reaper) came first: never lock it
      }
      int st = lockAll(null, writes);
      if (st != TxProtocol.OK) {
        return status(st);
      }
      t = new Pending(txid, deciderRegion, writes, System.nanoTime() + lease.toNanos());
      pending.put(txid, t);
    }
    // A region with no backup (replicas 1) of a participant that is not the decider: its LOCK
    // record goes to this server's own log, written before the answer (under always, fsynced).
    List<Integer> logged;
    try {
      logged = decides(deciderRegion) ? List.of() : logLocks(txid, deciderRegion, writes);
    } catch (RuntimeException e) {
      finish(t, false); // never answered OK: unlock
      return CompletableFuture.failedFuture(e);
    }
    CompletableFuture<Void> onDisk =
        logged.isEmpty()
            ? CompletableFuture.completedFuture(null)
            : CompletableFuture.allOf(
                logged.stream().map(logs::durable).toArray(CompletableFuture<?>[]::new));
    return CompletableFuture.allOf(
            onDisk,
            forwardEach(
                writes,
                -1,
                TxProtocol.REC_LOCK,
                ws -> {
                  Wire.Writer w = new Wire.Writer().i64(txid).i32(deciderRegion);
                  writeSet(w, ws);
                  return w.toArray();
                }))
        .handle(
            (v, e) -> {
              if (e == null) {
                return new Wire.Writer()
                    .u8(TxProtocol.OK)
                    .u8(lockDurable(writes, logged) ? TxProtocol.LOCK_DURABLE : 0)
                    .toBuffer();
              }
              finish(t, false); // never answered OK: unlock, tell the backups
              throw cause(e);
            });
  }

  /**
   * Writes the LOCK record of each region of {@code writes} held here with no backup to its log
   * ({@link TxLog#lock}: {@code write(2)} on this thread); the regions whose record was written. A
   * region whose transaction was aborted here first gets none (and the answer says it is not
   * durable: the coordinator has aborted anyway).
   */
  private List<Integer> logLocks(long txid, int deciderRegion, List<Write> writes) {
    Map<Integer, List<Write>> byRegion = new TreeMap<>();
    for (Write x : writes) {
      byRegion.computeIfAbsent(x.ptr().region(), k -> new ArrayList<>()).add(x);
    }
    List<Integer> out = new ArrayList<>();
    for (Map.Entry<Integer, List<Write>> e : byRegion.entrySet()) {
      TxLog l = logs.get(e.getKey());
      if (alone(e.getKey()) && l != null && l.lock(txid, deciderRegion, e.getValue())) {
        out.add(e.getKey());
      }
    }
    return out;
  }

  /**
   * Whether this LOCK survives the loss of this server's process ({@link TxProtocol#LOCK_DURABLE}):
   * every region of {@code writes} either lists a backup now, after their LOCK records were
   * forwarded (a forward waits for each backup listed until it acknowledges or leaves the list, and
   * a copy added later, a fill, takes the pending LOCK records in its fill's state, so each backup
   * listed holds this LOCK record), or is in {@code logged}: its LOCK record is in this server's
   * own log (written; under always fsynced).
   */
  private boolean lockDurable(List<Write> writes, List<Integer> logged) {
    for (Write w : writes) {
      TxRegion r = regions.get(w.ptr().region());
      if (r == null || (r.backups().isEmpty() && !logged.contains(r.id()))) {
        return false;
      }
    }
    return true;
  }

  private static CompletionException cause(Throwable e) {
    return e instanceof CompletionException ce ? ce : new CompletionException(e);
  }

  /** Locks every write (FaRM §3.4 LOCK: version check and lock bit); all or none. */
  private int lockAll(TxRegion in, List<Write> writes) {
    for (int i = 0; i < writes.size(); i++) {
      Write wr = writes.get(i);
      TxRegion r = in != null ? in : regions.get(wr.ptr().region());
      int st = r.lock(wr.ptr(), wr.expected());
      if (st != TxProtocol.OK) {
        for (int j = 0; j < i; j++) {
          Write u = writes.get(j);
          (in != null ? in : regions.get(u.ptr().region())).unlock(u.ptr(), u.expected());
        }
        return st;
      }
    }
    return TxProtocol.OK;
  }

  /**
   * Applies committed writes to the regions this server is the primary of, each region's logged
   * first (under their object locks: in version order; written now where this is the only copy).
   */
  private void applyAll(List<Write> writes) {
    applyAll(writes, 0);
  }

  /**
   * As {@link #applyAll(List)}, for transaction {@code txid}: a region whose log holds its LOCK
   * record gets a RESOLVED record instead of the write set ({@link TxLogs#logAndApply}).
   */
  private void applyAll(List<Write> writes, long txid) {
    logs.logAndApply(
        writes.stream().filter(w -> regions.containsKey(w.ptr().region())).toList(),
        () -> {
          for (Write wr : writes) {
            TxRegion r = regions.get(wr.ptr().region());
            if (r != null) {
              r.apply(wr.ptr(), wr.expected(), wr.kind() == TxProtocol.KIND_FREE, wr.value());
            }
          }
        },
        this::alone, // an alone region's records are written before the answer, not queued
        -1,
        0,
        txid,
        TxLog.NO_PINS);
  }

  private void unlockAll(List<Write> writes) {
    for (Write u : writes) {
      TxRegion r = regions.get(u.ptr().region());
      if (r != null) {
        r.unlock(u.ptr(), u.expected());
      }
    }
  }

  /** Whether this server is the primary of the decider region (so it decides). */
  private boolean decides(int deciderRegion) {
    return regions.containsKey(deciderRegion);
  }

  private CompletableFuture<ByteBuffer> commit(long txid, int deciderRegion, int[] others) {
    Pending t;
    Boolean done;
    synchronized (this) {
      t = pending.get(txid);
      done = outcomes.get(txid);
    }
    if (t != null && decides(t.deciderRegion())) {
      CompletableFuture<ByteBuffer> alone = commitAlone(t, others);
      if (alone != null) {
        return alone;
      }
    }
    if (decides(deciderRegion) || (t != null && decides(t.deciderRegion()))) {
      // Commit only what is locked here (or was decided before): a decider, promoted or not, that
      // holds no LOCK record of it never answered its LOCK OK, so it decides abort.
      return then(
              decide(txid, deciderRegion, t != null, others),
              c -> t != null ? finish(t, c) : CompletableFuture.completedFuture(c))
          .thenApply(c -> new Wire.Writer().u8(c ? TxProtocol.OK : TxProtocol.ABORTED).toBuffer());
    }
    if (t == null) {
      return status(done != null && done ? TxProtocol.OK : TxProtocol.ABORTED);
    }
    return finish(t, true).thenApply(c -> new Wire.Writer().u8(TxProtocol.OK).toBuffer());
  }

  /**
   * The decider's COMMIT of transaction {@code t} locked here when every region it writes here, the
   * decider region among them, has no backup (replicas 1): the decision is taken, and its DECIDE
   * record and the decider region's write set are written with one {@code write(2)} before the
   * writes are applied and the answer leaves (they were two: the DECIDE record, then the write
   * set). Null when another path applies: a region with backups (its DECIDE record is forwarded
   * first), no log, a decision or outcome already taken. OUTCOME answers PENDING until the records
   * are written (the decision's {@code replicated} completes after), so no participant acts on a
   * decision that is not yet in the decider's log.
   */
  private CompletableFuture<ByteBuffer> commitAlone(Pending t, int[] others) {
    if (!alone(t.deciderRegion()) || logs.get(t.deciderRegion()) == null) {
      return null;
    }
    for (Write w : t.writes()) {
      if (!alone(w.ptr().region())) {
        return null;
      }
    }
    Decision d = new Decision(true, new CompletableFuture<>());
    synchronized (this) {
      if (decisions.containsKey(t.txid())
          || outcomes.containsKey(t.txid())
          || pending.get(t.txid()) != t) {
        return null;
      }
      decisions.put(t.txid(), d);
      pins.pin(t.txid(), t.deciderRegion(), others, System.nanoTime());
      pending.remove(t.txid(), t);
      try {
        logs.logAndApply(
            t.writes(),
            () -> {
              for (Write wr : t.writes()) {
                TxRegion r = regions.get(wr.ptr().region());
                if (r != null) {
                  r.apply(wr.ptr(), wr.expected(), wr.kind() == TxProtocol.KIND_FREE, wr.value());
                }
              }
            },
            this::alone,
            t.deciderRegion(),
            t.txid(),
            others);
      } finally {
        outcomes.put(t.txid(), true);
        d.replicated().complete(null); // applied: the log's error, if any, is the answer
      }
    }
    return logs.durable(t.writes()).thenApply(v -> new Wire.Writer().u8(TxProtocol.OK).toBuffer());
  }

  private CompletableFuture<Boolean> abort(long txid) {
    Pending t;
    synchronized (this) {
      t = pending.get(txid);
      if (t == null) {
        outcomes.putIfAbsent(txid, false);
        return CompletableFuture.completedFuture(false);
      }
    }
    if (decides(t.deciderRegion())) {
      return then(decide(txid, t.deciderRegion(), false, TxLog.NO_PINS), c -> finish(t, c));
    }
    return finish(t, false);
  }

  /**
   * {@code next} after the decision {@code d}: at once, on this thread, when the decision is
   * already replicated (no backups, or an earlier call sent it), else on the thread that read the
   * backups' acknowledgement (on shm this server's ring poller, or a fabric I/O thread). {@code
   * next} forwards records and applies writes, which never waits: a backup with no open connection
   * is dialed on the replicator thread ({@link #send}). (It ran on the finisher thread, a hand-off
   * on every decided commit with backups, from when a forward could dial on its caller's thread.)
   */
  private <T> CompletableFuture<T> then(
      CompletableFuture<Boolean> d,
      java.util.function.Function<Boolean, CompletableFuture<T>> next) {
    return d.thenCompose(next);
  }

  /**
   * The decider's decision about {@code txid}: the first one taken wins (a later COMMIT, ABORT or
   * lease abort gets it), acted on once its DECIDE record is at every backup of the region.
   */
  private CompletableFuture<Boolean> decide(
      long txid, int deciderRegion, boolean commit, int[] others) {
    Decision d;
    boolean mine = false;
    synchronized (this) {
      d = decisions.get(txid);
      if (d == null) {
        Boolean o = outcomes.get(txid);
        if (o == null && pins.pinned(txid)) {
          o = true; // forgotten by the bounded maps, never by its pin
        }
        boolean c = o != null ? o : commit;
        d = new Decision(c, new CompletableFuture<>(), c ? others : TxLog.NO_PINS);
        decisions.put(txid, d);
        if (c) {
          pins.pin(txid, deciderRegion, others, System.nanoTime());
        }
        mine = true;
      } else if (d.replicated().isCompletedExceptionally()) {
        // the same decision, sent again
        d = new Decision(d.commit(), new CompletableFuture<>(), d.pins());
        decisions.put(txid, d);
        mine = true;
      }
    }
    Decision dd = d;
    if (mine) {
      TxRegion r = regions.get(deciderRegion);
      CompletableFuture<Void> sent =
          r == null
              ? CompletableFuture.failedFuture(
                  new FerriteException(
                      ErrorCode.MOVED,
                      "tx region "
                          + deciderRegion
                          + ": server "
                          + context.serverId()
                          + " is not its primary"))
              : forwardDecide(r, txid, d.commit(), d.pins());
      sent.whenComplete(
          (v, e) -> {
            if (e == null) {
              dd.replicated().complete(null);
            } else {
              dd.replicated().completeExceptionally(e);
            }
          });
    }
    return dd.replicated().thenApply(v -> dd.commit());
  }

  /** A DECIDE record: in this copy's log and at every backup of the decider region. */
  private CompletableFuture<Void> forwardDecide(TxRegion r, long txid, boolean commit, int[] regs) {
    TxLog l = logs.get(r.id());
    if (l != null) {
      l.decide(txid, commit, r.backups().isEmpty(), regs);
    }
    Wire.Writer w = new Wire.Writer().i64(txid).u8(commit ? 1 : 0).i32(regs.length);
    for (int x : regs) {
      w.i32(x);
    }
    return CompletableFuture.allOf(
        forward(r, TxProtocol.REC_DECIDE, w.toArray()), logs.durable(r.id()));
  }

  /**
   * Resolves a transaction locked here: COMMIT or ABORT records to the backups of its regions
   * (acknowledged, so a backup's copy is at the version the next LOCK expects), then applies or
   * unlocks, once. A backup that cannot be told keeps the LOCK record and, if promoted, asks the
   * decider: applying here regardless is safe.
   */
  private CompletableFuture<Boolean> finish(Pending t, boolean commit) {
    int skip = decides(t.deciderRegion()) ? t.deciderRegion() : -1; // DECIDE told its backups
    return forwardEach(
            t.writes(),
            skip,
            commit ? TxProtocol.REC_COMMIT : TxProtocol.REC_ABORT,
            ws -> new Wire.Writer().i64(t.txid()).toArray())
        .handle(
            (v, e) -> {
              synchronized (this) {
                if (pending.remove(t.txid(), t)) {
                  if (commit) {
                    applyAll(t.writes(), t.txid());
                  } else {
                    // Its RESOLVED record before the unlock: no later record of these objects
                    // precedes it in the log (TxLog#resolve).
                    if (!decides(t.deciderRegion())) {
                      logs.aborted(t.txid(), t.writes(), this::alone);
                    }
                    unlockAll(t.writes());
                  }
                }
                outcomes.put(t.txid(), commit);
              }
              return commit;
            })
        .thenCompose(
            c ->
                c
                    ? logs.durable(t.writes()).thenApply(v -> c)
                    : CompletableFuture.completedFuture(c));
  }

  /**
   * The decider's answer about {@code txid} (OUTCOME): its decision, PENDING while its lease runs
   * or its decision is on its way to the backups, else it aborts it now (an unknown transaction is
   * decided aborted, so its late LOCK is refused).
   */
  private CompletableFuture<ByteBuffer> outcome(long txid, int deciderRegion) {
    region(deciderRegion); // MOVED if not its primary; promotes this server's copy if it is now
    Decision d;
    Boolean o;
    Pending t;
    synchronized (this) {
      d = decisions.get(txid);
      o = outcomes.get(txid);
      t = pending.get(txid);
    }
    if (d != null && d.replicated().isDone() && !d.replicated().isCompletedExceptionally()) {
      return status(d.commit() ? TxProtocol.OK : TxProtocol.ABORTED);
    }
    if (o != null && d == null) {
      return status(o ? TxProtocol.OK : TxProtocol.ABORTED);
    }
    if (d == null && pins.pinned(txid)) {
      return status(TxProtocol.OK); // forgotten by the bounded maps, kept by its pin
    }
    if (d != null && !d.replicated().isDone()) {
      return status(TxProtocol.PENDING);
    }
    if (t != null && System.nanoTime() - t.deadlineNanos() < 0) {
      return status(TxProtocol.PENDING);
    }
    return then(
            decide(txid, deciderRegion, false, TxLog.NO_PINS),
            c -> t != null ? finish(t, c) : CompletableFuture.completedFuture(c))
        .thenApply(c -> new Wire.Writer().u8(c ? TxProtocol.OK : TxProtocol.ABORTED).toBuffer());
  }

  /**
   * A single-server transaction (FaRM §3.4, single machine transactions: "write set locking and
   * read set validation are local"): the write set is locked, the read set validated against this
   * server's own memory while the locks are held, the writes forwarded to the backups (LOCAL,
   * acknowledged), then applied and unlocked. The instant of validation, with the locks held, is
   * its serialization point; no other server holds any of its objects.
   */
  CompletableFuture<ByteBuffer> commitLocal(
      List<Write> writes, List<FatPointer> reads, List<Long> versions) {
    for (FatPointer p : reads) {
      region(p.region()).check(p);
    }
    int st = lockAll(null, writes);
    if (st != TxProtocol.OK) {
      return status(st);
    }
    for (int i = 0; i < reads.size(); i++) {
      if (!regions.get(reads.get(i).region()).holds(reads.get(i), versions.get(i))) {
        unlockAll(writes);
        return status(TxProtocol.CHANGED);
      }
    }
    return forwardEach(
            writes,
            -1,
            TxProtocol.REC_LOCAL,
            ws -> {
              Wire.Writer w = new Wire.Writer();
              writeSet(w, ws);
              return w.toArray();
            })
        .handle(
            (v, e) -> {
              if (e != null) {
                // Some backup may hold it: its outcome is unknown to the client (see docs/TX.md).
                unlockAll(writes);
                throw cause(e);
              }
              applyAll(writes);
              return new Wire.Writer().u8(TxProtocol.OK).toBuffer();
            })
        .thenCompose(b -> logs.durable(writes).thenApply(v -> b));
  }

  // ---- the reaper ----

  /**
   * The reaper loop: resolves transactions whose lock lease lapsed (see the class comment), and
   * promotes the copies of regions this server is now the primary of.
   */
  private void reap() {
    long tick = Math.max(1, lease.toMillis() / 4);
    while (!stopping) {
      try {
        Thread.sleep(tick);
      } catch (InterruptedException e) {
        return;
      }
      try {
        promoteDue();
        resolveLapsed();
        logs.checkpoints(
            checkpointBytes,
            (id, log) -> {
              TxRegion r = regions.get(id);
              TxMirror m = mirrors.get(id);
              if (r != null) {
                r.checkpoint(log);
              } else if (m != null) {
                m.checkpoint();
              }
            });
      } catch (FerriteException | CompletionException e) {
        // The master or a peer is unreachable: again next tick.
      }
    }
  }

  private void promoteDue() {
    for (TxMirror m : List.copyOf(mirrors.values())) {
      TxPlacement p = placement(m.id());
      if (p.primary() == context.serverId()) {
        region(m.id());
      } else if (!p.backups().contains(context.serverId())
          && !p.filling().containsKey(context.serverId())
          && mirrors.remove(m.id(), m)) {
        // The master dropped this copy (this server was declared dead meanwhile): useless now.
        m.promote();
        context.freeRegion(m.memory());
        logs.drop(m.id());
      }
    }
  }

  private void resolveLapsed() {
    List<Pending> lapsed = new ArrayList<>();
    synchronized (this) {
      long now = System.nanoTime();
      for (Pending t : pending.values()) {
        if (now - t.deadlineNanos() >= 0) {
          lapsed.add(t);
        }
      }
    }
    Map<Integer, Integer> primaries = new HashMap<>();
    for (Pending t : lapsed) {
      if (decides(t.deciderRegion())) {
        then(decide(t.txid(), t.deciderRegion(), false, TxLog.NO_PINS), c -> finish(t, c));
        continue;
      }
      int answer;
      try {
        int decider = primaries.computeIfAbsent(t.deciderRegion(), id -> placement(id).primary());
        if (decider == context.serverId()) {
          region(t.deciderRegion()); // promotes the copy; decided next tick
          continue;
        }
        ByteBuffer b =
            context
                .peer(decider)
                .callSync(
                    TxProtocol.SERVER_SERVICE,
                    TxProtocol.OUTCOME,
                    new Wire.Writer().i64(t.txid()).i32(t.deciderRegion()).toBuffer(),
                    lease);
        answer = new Wire.Reader(b, "tx outcome").u8("status");
      } catch (FerriteException e) {
        continue; // decider unreachable: keep the locks, ask again next tick
      }
      if (answer == TxProtocol.OK) {
        finish(t, true);
      } else if (answer == TxProtocol.ABORTED) {
        finish(t, false);
      }
    }
  }

  // ---- truncation (docs/TX.md "Truncation") ----

  /**
   * Which of {@code txids} region {@code id} (held here as primary: promoted or rebuilt first if
   * the master names this server, else {@code MOVED}) still holds unresolved: a transaction pending
   * here that writes it. The others were applied or dropped under this monitor, their records
   * written or at every backup; the answer leaves once the region's log is durable ({@code always}:
   * fsynced), so a transaction it does not name can no longer be replayed as a LOCK record.
   */
  private CompletableFuture<List<Long>> unresolved(int id, List<Long> txids) {
    region(id);
    List<Long> still = new ArrayList<>();
    synchronized (this) {
      for (long txid : txids) {
        Pending t = pending.get(txid);
        if (t != null && t.writes().stream().anyMatch(w -> w.ptr().region() == id)) {
          still.add(txid);
        }
      }
    }
    return logs.durable(id).thenApply(v -> still);
  }

  /**
   * The decider's half of truncation, on its own thread each reaper tick ({@code tx.lock.lease /
   * 4}): every pin older than a tick is asked about at the current primary of each region it waits
   * for (one UNRESOLVED call per region, every pinned txid in it), and each pin whose regions all
   * answered is released (an UNPIN record to the decider region's log and backups). Asked by the
   * decider, so a coordinator or a participant that dies leaves nothing pinned for good: the
   * region's next primary answers.
   */
  private void truncate(long tickMillis) {
    long now = System.nanoTime();
    Map<Integer, List<Long>> due = pins.due(now - tickMillis * 1_000_000L, 1 << 16);
    Map<Integer, Integer> primaries = new HashMap<>();
    List<Ask> asks = new ArrayList<>();
    // Every region asked at once, then the answers waited for: a region whose primary is down
    // costs one timeout per tick, not one per region.
    for (Map.Entry<Integer, List<Long>> e : due.entrySet()) {
      int region = e.getKey();
      try {
        int primary =
            primaries.computeIfAbsent(region, id -> placement(id, CALL_TIMEOUT).primary());
        CompletableFuture<List<Long>> still;
        if (primary == context.serverId()) {
          still = unresolved(region, e.getValue());
        } else {
          Wire.Writer w = new Wire.Writer().i32(region).i32(e.getValue().size());
          e.getValue().forEach(w::i64);
          still =
              context
                  .peer(primary)
                  .call(
                      TxProtocol.SERVER_SERVICE, TxProtocol.UNRESOLVED, w.toBuffer(), CALL_TIMEOUT)
                  .thenApply(
                      b -> {
                        Wire.Reader r = new Wire.Reader(b, "tx unresolved");
                        List<Long> l = TxLog.readTxids(r);
                        r.end();
                        return l;
                      });
        }
        asks.add(new Ask(region, e.getValue(), still));
      } catch (FerriteException | CompletionException x) {
        // the region's primary cannot be asked now (dead, being promoted): next tick
      }
    }
    for (Ask ask : asks) {
      List<Long> still;
      try {
        still = ask.still().join();
      } catch (FerriteException | CompletionException x) {
        continue; // no answer: next tick
      }
      List<Long> done = new ArrayList<>(ask.txids());
      done.removeAll(new java.util.HashSet<>(still));
      pins.resolved(ask.region(), done).forEach(this::unpin);
    }
    warnIfPinned(now);
  }

  /** One UNRESOLVED question of {@link #truncate}: the txids asked, the ones still unresolved. */
  private record Ask(int region, List<Long> txids, CompletableFuture<List<Long>> still) {}

  /** Released pins of decider region {@code id}: an UNPIN record to its log and its backups. */
  private void unpin(int id, List<Long> txids) {
    TxRegion r = regions.get(id);
    if (r == null) {
      return; // no longer its primary: the one that is holds the pins and asks itself
    }
    TxLog l = logs.get(id);
    if (l != null) {
      l.unpin(txids);
    }
    Wire.Writer w = new Wire.Writer().i32(txids.size());
    txids.forEach(w::i64);
    // Not waited for: a backup that misses it asks again about those pins once promoted.
    forward(r, TxProtocol.REC_UNPIN, w.toArray());
  }

  /**
   * Warns (at most every 10 s) while more decisions are pinned than {@code tx.decisions.kept}:
   * naming the oldest pin and the regions it waits for (a participant region that never answers:
   * its primary down for good, or a region whose every copy was lost).
   */
  private void warnIfPinned(long now) {
    int n = pins.count();
    if (n <= kept || now - pinsWarnedNanos < 10_000_000_000L && pinsWarnedNanos != 0) {
      return;
    }
    TxPins.Pin oldest = pins.oldest();
    if (oldest == null) {
      return;
    }
    pinsWarnedNanos = now;
    LOG.log(
        System.Logger.Level.WARNING,
        "tx server {0}: {1} commit decisions pinned (more than tx.decisions.kept {2}); the oldest,"
            + " pinned {3} ms ago: {4}; its regions have not answered that they resolved it"
            + " (docs/TX.md \"Truncation\")",
        context.serverId(),
        n,
        kept,
        (now - oldest.sinceNanos) / 1_000_000,
        oldest);
  }

  /**
   * What a fill of region {@code id} sends besides objects (TxRepair): the LOCK records of the
   * transactions pending here that write it, and every decision taken here. Taken under this
   * monitor, after the fill's target joined the region's backups, so a transaction locked or
   * decided later is forwarded to it (its forward reads the backups after this monitor).
   */
  synchronized FillState fillState(int id) {
    List<TxMirror.LockRecord> locks = new ArrayList<>();
    for (Pending t : pending.values()) {
      List<Write> ws = t.writes().stream().filter(x -> x.ptr().region() == id).toList();
      if (!ws.isEmpty()) {
        locks.add(new TxMirror.LockRecord(t.txid(), t.deciderRegion(), ws));
      }
    }
    Map<Long, Boolean> decided = new LinkedHashMap<>();
    decisions.forEach((txid, d) -> decided.put(txid, d.commit()));
    Map<Long, int[]> pinned = pins.of(id);
    pinned.keySet().forEach(txid -> decided.putIfAbsent(txid, true));
    return new FillState(locks, decided, pinned);
  }

  record FillState(
      List<TxMirror.LockRecord> locks, Map<Long, Boolean> decided, Map<Long, int[]> pinned) {}

  private static double pinnedAtCopies(java.util.Collection<TxMirror> copies) {
    int n = 0;
    for (TxMirror m : copies) {
      n += m.pinnedCount();
    }
    return n;
  }

  /** {@code tx.decisions.kept}. */
  int kept() {
    return kept;
  }

  /** Commit decisions pinned here (tests; the gauge {@code ferrite.tx.decisions.pinned}). */
  int pinnedCount() {
    return pins.count();
  }

  /** Every copy's log on disk. */
  TxLogs logs() {
    return logs;
  }

  /** Locked transactions at this server (tests). */
  synchronized int pendingCount() {
    return pending.size();
  }
}
