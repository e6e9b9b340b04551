package io.ferrite.kv.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.config.Threads;
import io.ferrite.kernel.log.OpLog;
import io.ferrite.kernel.ops.FaceMeters;
import io.ferrite.kernel.ops.LogMeters;
import io.ferrite.kernel.proto.Permissions;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.FerriteService;
import io.ferrite.kernel.server.MasterWait;
import io.ferrite.kernel.server.ServiceContext;
import io.ferrite.kv.KvConfig;
import io.ferrite.kv.KvProtocol;
import io.ferrite.kv.TableInfo;
import io.ferrite.kv.TableOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

/**
 * The kv face's memory-server half: hosts the shards placed on this server, each in regions of its
 * own that clients read one-sided, and serves the writes (PUT, DELETE, RESIZE) and layout fetches
 * by RPC (opcodes in {@link KvProtocol}). Shards are created on demand by {@code OPEN_SHARD}, which
 * the client sends after the master's directory placed the table, in the table's layout ({@link
 * PilafShard} or {@link HopscotchShard}); they live in DRAM-tier regions. Writes of durable tables
 * go to the operation log, which is replayed when the server starts.
 */
public final class KvService implements FerriteService {
  private static final System.Logger LOG = System.getLogger(KvService.class.getName());

  private record ShardKey(long tableId, int shard) {}

  private final Map<ShardKey, KvShard> shards = new ConcurrentHashMap<>();

  /**
   * Table id -> the master group that holds the table (docs/RESILIENCE.md, "Master groups"): its
   * shards' regions are registered with that group. Learnt from group 0's placement directory when
   * a shard of the table is first made here ({@link ServiceContext#placement}), or from the log's
   * OPEN_SHARD record at replay; never changes. An entry outlives a dropped table (a few bytes per
   * table ever hosted by this process; ids are random, never reused).
   */
  private final Map<Long, Integer> tableGroups = new ConcurrentHashMap<>();

  private volatile ServiceContext context;
  private volatile OpLog log;
  private ScheduledExecutorService syncer;
  private KvWrites writes;

  /** Whether writes may be applied on their receiving thread ({@code kv.inline.writes}; tests). */
  boolean inlineWrites() {
    return writes.inline();
  }

  /**
   * For tests only: the fsync the logs of services started from now on use (null: a real one).
   * Static because services are found by ServiceLoader; a test sets it before it starts its servers
   * and clears it after.
   */
  static volatile OpLog.Fsync testFsync;

  /** For tests only, like {@link #testFsync}: told of every service started from now on. */
  static volatile java.util.function.Consumer<KvService> testStarted;

  /**
   * Every request holds the read side (they are the only appenders of the log, and append under
   * their shard's lock); a compaction holds the write side, so no write is half applied or half
   * logged while it takes its snapshot, and no shard lock is held by a waiting writer.
   */
  private final ReentrantReadWriteLock requests = new ReentrantReadWriteLock();

  /** The lock every request holds the read side of (tests hold its write side to stall writes). */
  ReentrantReadWriteLock requestLock() {
    return requests;
  }

  /** Held by a compaction from start to end: one at a time (the interval's, a test's). */
  private final Object compacting = new Object();

  /** The log is compacted once it is over this size and twice its size after the last one. */
  private long compactBytes;

  private long compactedBytes;
  private long compactions;

  @Override
  public int id() {
    return KvProtocol.SERVER_SERVICE;
  }

  @Override
  public String name() {
    return "kv";
  }

  /** This server's lease from the master, which replicated shards serve under (docs/KV.md). */
  private KvLease lease;

  /** What this process does if its log held no record at start (set in start). */
  private volatile LostLog lostLog;

  @Override
  public void start(ServiceContext ctx) {
    this.context = ctx;
    // Before the replay: shards of durable replicated tables come back under the lease, and serve
    // only once it checked them against the directory (they may have been moved away meanwhile).
    this.lease = new KvLease(ctx, KvConfig.lease(ctx.config()), this::verifyCopies);
    java.util.function.Consumer<KvService> started = testStarted;
    if (started != null) {
      started.accept(this);
    }
    // Replay before anyone can connect: shards of durable tables come back with their data.
    OpLog.Fsync fsync = testFsync;
    try {
      this.log =
          OpLog.open(
              "kv",
              ctx.directory().resolve("kv.log"),
              this::replay,
              fsync == null ? OpLog.Fsync.DATA : fsync);
    } catch (RuntimeException e) {
      // A record that cannot be replayed (replay): the server does not start, nor does stop() run.
      lease.close();
      throw e;
    }
    for (KvShard s : shards.values()) {
      hook(s);
    }
    lostLog = new LostLog(ctx, replayed == 0, this::durableShardsOf);
    if (lostLog.empty()) {
      // Before anyone can connect: a durable shard the directory lists here came back without
      // its pairs (the log was removed, the disk wiped), and a client's NOT_FOUND must find it
      // declared lost, not open it again, empty (LostLog). Group 0's tables now; another
      // group's before this process makes its first durable shard of that group.
      try {
        MasterWait.untilAnswered(
            LOG,
            () -> "kv: telling master group 0 that the kv log was empty",
            () -> {
              lostLog.report(0);
              return null;
            });
      } catch (RuntimeException e) {
        lease.close();
        log.close();
        throw e;
      }
    }
    registerMeters(ctx);
    compactBytes = KvConfig.logCompactBytes(ctx.config());
    compactedBytes = log.bytes();
    writes =
        new KvWrites(
            new KvWrites.Host() {
              @Override
              public KvShard shard(long tableId, int shard) {
                return KvService.this.shard(tableId, shard);
              }

              @Override
              public java.util.concurrent.locks.Lock requestLock() {
                return requests.readLock();
              }

              @Override
              public boolean requestLockWanted() {
                return requests.hasQueuedThreads();
              }

              @Override
              public OpLog log() {
                return log;
              }
            },
            Math.max(1, ctx.config().serviceThreads()),
            // Whether writes may be applied on the thread that received them (KvWrites); on
            // unless kv.inline.writes is false (for measuring both).
            KvConfig.inlineWrites(ctx.config()));
    // The interval fsync and the compaction check; the group commit of `always` writes has its
    // own thread in the log.
    syncer = Threads.scheduler("kv-log-interval");
    syncer.scheduleWithFixedDelay(this::syncQuietly, 100, 100, TimeUnit.MILLISECONDS);
  }

  @Override
  public void stop() {
    if (lease != null) {
      lease.close();
    }
    if (syncer != null) {
      syncer.shutdownNow();
      try {
        // A compaction in progress finishes (or fails whole) before the log closes.
        syncer.awaitTermination(60, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (writes != null) {
      writes.close();
    }
    if (log != null) {
      log.close();
    }
  }

  /** For tests: how many fsyncs the log made. */
  long fsyncs() {
    return log.fsyncs();
  }

  private void syncQuietly() {
    try {
      log.sync();
      long size = log.bytes();
      if (size > compactBytes && size > 2 * compactedBytes) {
        compactLog();
      }
    } catch (FerriteException e) {
      LOG.log(System.Logger.Level.ERROR, "kv log fsync or compaction failed", e);
    }
  }

  /**
   * Rewrites the log as the records that rebuild what this server holds now: for each durable
   * shard, OPEN_SHARD, a RESIZE to its current size, a PUT per pair, and RETIRE and RELEASE for a
   * shard that moved away. Requests wait while those records are written to the new file's page
   * cache (a consistent cut: the log's end then); the fsync of that file and the copy of what
   * writes appended meanwhile run while requests go on ({@link OpLog#beginRewrite}, {@link
   * OpLog#finishRewrite}): replaying the snapshot then those records rebuilds what the old log did,
   * as every record after the cut follows a state the snapshot holds. Returns the log's size after.
   */
  long compactLog() {
    synchronized (compacting) {
      long before;
      int shardCount;
      OpLog.Rewrite rewrite;
      long t0 = System.nanoTime();
      requests.writeLock().lock();
      try {
        before = log.bytes();
        List<Map.Entry<ShardKey, KvShard>> live = new ArrayList<>(shards.entrySet());
        live.sort(
            Comparator.comparingLong((Map.Entry<ShardKey, KvShard> e) -> e.getKey().tableId())
                .thenComparingInt(e -> e.getKey().shard()));
        shardCount = live.size();
        rewrite =
            log.beginRewrite(
                sink -> {
                  for (Map.Entry<ShardKey, KvShard> e : live) {
                    if (durable(e.getValue())) {
                      snapshot(e.getValue(), groupOf(e.getValue().table), sink);
                    }
                  }
                });
      } finally {
        requests.writeLock().unlock();
      }
      long held = System.nanoTime() - t0;
      // Writes go on while the snapshot is fsynced and what they append is copied after it.
      log.finishRewrite(rewrite);
      compactedBytes = log.bytes();
      compactions++;
      LOG.log(
          System.Logger.Level.INFO,
          "kv log compacted: {0} B -> {1} B ({2} shards; requests held {3} ms, {4} ms in all)",
          before,
          compactedBytes,
          shardCount,
          held / 1_000_000,
          (System.nanoTime() - t0) / 1_000_000);
      return compactedBytes;
    }
  }

  /** The records that rebuild {@code s} as it is now (see {@link #compactLog}). */
  private static void snapshot(KvShard s, int group, Consumer<byte[]> sink) {
    synchronized (s) {
      sink.accept(openRecord(s.table, s.shard(), group));
      if (!s.regionsFreed) {
        if (s.slots() != s.options().slotsPerShard()) {
          sink.accept(head(KvProtocol.RESIZE, s).i32(s.slots()).toArray());
        }
        s.forEachPair((k, v) -> sink.accept(head(KvProtocol.PUT, s).bytes(k).bytes(v).toArray()));
      }
      if (s.retiredTo >= 0) {
        sink.accept(head(KvProtocol.RETIRE, s).i32(s.retiredTo).toArray());
      }
      if (s.regionsFreed) {
        sink.accept(head(KvProtocol.RELEASE, s).toArray());
      }
    }
  }

  private static Wire.Writer head(int type, KvShard s) {
    return new Wire.Writer().u8(type).i64(s.tableId()).i32(s.shard());
  }

  /** For tests: how many times the log was compacted since the service started. */
  long compactions() {
    return compactions;
  }

  /** Records replayed so far (at start), for messages. */
  private long replayed;

  /**
   * Replays one record, or refuses to start: a record skipped is acknowledged writes lost, and this
   * server may hold the only copy of its shard (the master may have dropped the others while it was
   * away). Once it serves without them, a client that gets NOT_FOUND opens the shard again, empty,
   * and a repair copies that emptiness to the new backups (Jepsen, int34: an OPEN_SHARD refused
   * NO_SPACE at boot, the master being in an election, lost every pair of the shard).
   *
   * <p>So a record refused because the master cannot be reached (the region it needs takes the
   * place of an empty block-pool region, which only the master can retire) is replayed again, with
   * backoff, until the master answers ({@link MasterWait}). Any other failure (a capacity lowered
   * below what the log holds, a corrupt record) fails the start, naming the record: the operator
   * fixes the cause, and the log, untouched, replays whole. A record that fails changes nothing (a
   * failed create gives back its regions; a failed write or resize leaves the shard as it was), so
   * it is replayed again from its start.
   */
  private void replay(ByteBuffer record) {
    long n = replayed++;
    try {
      MasterWait.untilAnswered(
          LOG,
          () -> "kv log: record " + n + " (" + describe(record) + ")",
          () -> {
            replayOne(record); // reads a slice: the record's own position is untouched
            return null;
          });
    } catch (FerriteException e) {
      if (MasterWait.masterAway(e)) {
        throw e; // interrupted while waiting
      }
      throw new FerriteException(
          e.code(),
          "kv log: record "
              + n
              + " ("
              + describe(record)
              + ") cannot be replayed, so the kv service does not start (it would serve"
              + " without writes it acknowledged): "
              + e.getMessage(),
          e);
    }
  }

  /** A log record in words, for messages: its type, table and shard. */
  private static String describe(ByteBuffer record) {
    try {
      Wire.Reader r = new Wire.Reader(record, "kv log record");
      int type = r.u8("type");
      if (type == KvProtocol.OPEN_SHARD) {
        TableInfo t = TableInfo.read(r);
        return "OPEN_SHARD of shard " + r.i32("shard") + " of table " + t.name();
      }
      long tableId = r.i64("tableId");
      int shard = r.i32("shard");
      return "type " + type + " of shard " + shard + " of table " + Long.toHexString(tableId);
    } catch (RuntimeException unreadable) {
      return record.remaining() + " B, unreadable: " + unreadable.getMessage();
    }
  }

  private void replayOne(ByteBuffer record) {
    Wire.Reader r = new Wire.Reader(record, "kv log record");
    int type = r.u8("type");
    if (type == KvProtocol.OPEN_SHARD) {
      TableInfo t = TableInfo.read(r);
      int shard = r.i32("shard");
      // A record written before tables had groups has none: such a table is group 0's.
      tableGroups.putIfAbsent(t.tableId(), r.remaining() > 0 ? r.i32("group") : 0);
      shards.computeIfAbsent(new ShardKey(t.tableId(), shard), k -> create(t, shard));
      return;
    }
    ShardKey key = new ShardKey(r.i64("tableId"), r.i32("shard"));
    KvShard s = shards.get(key);
    if (type == KvProtocol.DROP_SHARD) {
      KvShard dropped = shards.remove(key);
      if (dropped != null) {
        dropped.drop();
      }
    } else if (s != null && type == KvProtocol.RETIRE) {
      s.retire(r.i32("to"));
    } else if (s != null && type == KvProtocol.RELEASE) {
      s.freeRegions();
    } else if (s != null && type == KvProtocol.PUT) {
      s.put(KvProtocol.MODE_PUT, r.bytes("key"), r.bytes("value"), new byte[0]);
    } else if (s != null && type == KvProtocol.DELETE) {
      s.delete(r.bytes("key"));
    } else if (s != null && type == KvProtocol.RESIZE) {
      s.resize(r.i32("slots"));
    }
  }

  private static boolean durable(KvShard s) {
    return s.options().durability() != TableOptions.Durability.NONE;
  }

  private static boolean durable(TableInfo t) {
    return t.options().durability() != TableOptions.Durability.NONE;
  }

  /** The durable shards held here of master group {@code group}'s tables (for {@link LostLog}). */
  private List<LostLog.Key> durableShardsOf(int group) {
    List<LostLog.Key> out = new ArrayList<>();
    for (Map.Entry<ShardKey, KvShard> e : shards.entrySet()) {
      Integer g = tableGroups.get(e.getKey().tableId());
      if (durable(e.getValue()) && g != null && g == group) {
        out.add(new LostLog.Key(e.getKey().tableId(), e.getKey().shard()));
      }
    }
    return out;
  }

  /** Logs every write of a durable shard, under its lock (so in the order writes apply). */
  private void hook(KvShard s) {
    if (durable(s)) {
      long id = s.tableId();
      int shard = s.shard();
      s.onWrite(
          new KvShard.WriteLog() {
            @Override
            public void put(byte[] key, ByteBuffer value) {
              // Built in one array sized for it, framed (OpLog#appendFramed: the log writes the
              // array as it is): the value copied once, from the request's bytes the extent got.
              int n = value.remaining();
              byte[] rec = new byte[OpLog.FRAME + 13 + 8 + key.length + n];
              ByteBuffer b = ByteBuffer.wrap(rec).order(ByteOrder.LITTLE_ENDIAN);
              b.position(OpLog.FRAME);
              b.put((byte) KvProtocol.PUT).putLong(id).putInt(shard);
              b.putInt(key.length).put(key).putInt(n).put(value.duplicate());
              record(rec);
            }

            @Override
            public void delete(byte[] key) {
              record(
                  new Wire.Writer(OpLog.FRAME + 17 + key.length)
                      .i32(0)
                      .i64(0) // the frame: OpLog#appendFramed fills it
                      .u8(KvProtocol.DELETE)
                      .i64(id)
                      .i32(shard)
                      .bytes(key)
                      .toArray());
            }

            @Override
            public void resize(int slots) {
              log.append(head(KvProtocol.RESIZE).i32(slots).toArray());
            }

            private Wire.Writer head(int type) {
              return new Wire.Writer().u8(type).i64(id).i32(shard);
            }

            /** Appends a framed record now, or to the batch of the part being applied. */
            private void record(byte[] framed) {
              List<byte[]> batch = KvWrites.LOG_BATCH.get();
              if (batch != null) {
                batch.add(framed);
              } else {
                log.appendFramed(framed);
              }
            }
          });
    }
  }

  // ---------------------------------------------------------------- meters

  /** ferrite.face.ops / .latency of the served data ops (set in start, before any request). */
  private FaceMeters.Op metPut;

  private FaceMeters.Op metDelete;
  private FaceMeters.Op metMultiPut;
  private FaceMeters.Op metGet;
  private FaceMeters.Op metOpenShard;

  /**
   * The served operations ({@code face=kv}: put, delete, multi_put timed from arrival to answer,
   * the fsync a durable table waits for included; get, the RPC fallback of a one-sided lookup, and
   * open_shard counted) and the op log's records and fsyncs ({@code log=kv}).
   */
  private void registerMeters(ServiceContext ctx) {
    FaceMeters m = FaceMeters.of(ctx.metrics(), "kv");
    metPut = m.timed("put");
    metDelete = m.timed("delete");
    metMultiPut = m.timed("multi_put");
    metGet = m.timed("get");
    metOpenShard = m.op("open_shard");
    LogMeters.register(ctx.metrics(), "kv", this, s -> s.log.appended(), s -> s.log.fsyncs());
  }

  private FaceMeters.Op meterOf(int opcode) {
    return switch (opcode) {
      case KvProtocol.PUT -> metPut;
      case KvProtocol.DELETE -> metDelete;
      case KvProtocol.MULTI_PUT -> metMultiPut;
      case KvProtocol.GET -> metGet;
      case KvProtocol.OPEN_SHARD -> metOpenShard;
      default -> null;
    };
  }

  /** The start of {@code opcode}'s meters ({@link FaceMeters.Op#start}), 0 if it has none. */
  private long meterStart(int opcode) {
    FaceMeters.Op op = meterOf(opcode);
    return op == null ? 0 : op.start();
  }

  /** {@code f}, counted (and timed) for {@code opcode} once it completes; no stage if done. */
  private CompletableFuture<ByteBuffer> metered(
      int opcode, long start, CompletableFuture<ByteBuffer> f) {
    FaceMeters.Op op = meterOf(opcode);
    if (op == null || f == null) {
      return f;
    }
    if (f.isDone()) {
      op.done(start);
    } else {
      f.whenComplete((v, e) -> op.done(start));
    }
    return f;
  }

  /**
   * Writes (PUT, DELETE, MULTI_PUT) are taken here, on the receiving thread, in the order the
   * connection's requests arrived: applied at once when nothing can block, else queued on their
   * shard in that order ({@link KvWrites}). PING is answered here. Everything else declines to
   * {@link #handle}.
   */
  @Override
  public CompletableFuture<ByteBuffer> handleInline(
      RpcContext caller, int opcode, ByteBuffer request) {
    if (opcode == KvProtocol.PING) {
      // The ceiling of a put: the cheapest RPC to this service, answered where it lands as puts
      // are.
      return CompletableFuture.completedFuture(ByteBuffer.allocate(0));
    }
    if (!KvWrites.isWrite(opcode)) {
      return null;
    }
    long start = meterStart(opcode);
    return metered(opcode, start, write(opcode, request, true));
  }

  /**
   * The name of a shard opcode only servers and the operator may send (moves, drops, the log's
   * compaction), or null for a client's (data ops, OPEN_SHARD, LAYOUT, STATS, RESIZE, PING). None
   * of these is answered inline, so {@link #handle} is the one place that checks.
   */
  private static String serverOnly(int opcode) {
    return switch (opcode) {
      case KvProtocol.DROP_SHARD -> "DROP_SHARD";
      case KvProtocol.FREEZE -> "FREEZE";
      case KvProtocol.EXPORT -> "EXPORT";
      case KvProtocol.CANCEL -> "CANCEL";
      case KvProtocol.RETIRE -> "RETIRE";
      case KvProtocol.IMPORT -> "IMPORT";
      case KvProtocol.SHARDS -> "SHARDS";
      case KvProtocol.RELEASE -> "RELEASE";
      case KvProtocol.COMPACT_LOG -> "COMPACT_LOG";
      case KvProtocol.COPY_PAGE -> "COPY_PAGE";
      case KvProtocol.OPEN_COPY -> "OPEN_COPY";
      default -> null;
    };
  }

  private CompletableFuture<ByteBuffer> write(int opcode, ByteBuffer request, boolean inline) {
    try {
      return writes.submit(opcode, request, inline);
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // The server is stopping (its writers are shut down): to the client that is a server gone,
      // which it waits out (a replicated shard's backup takes over), not an internal error.
      return CompletableFuture.failedFuture(
          new FerriteException(ErrorCode.UNAVAILABLE, "kv server stopping: write not applied"));
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "kv opcode " + opcode + " failed", e);
      return CompletableFuture.failedFuture(
          new FerriteException(ErrorCode.INTERNAL, "kv opcode " + opcode + ": " + e, e));
    }
  }

  @Override
  public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
    long start = meterStart(opcode);
    return metered(opcode, start, serve(caller, opcode, request));
  }

  private CompletableFuture<ByteBuffer> serve(RpcContext caller, int opcode, ByteBuffer request) {
    String serverOnly = serverOnly(opcode);
    if (serverOnly != null && !caller.role().atLeast(Role.SERVER)) {
      return CompletableFuture.failedFuture(
          Permissions.denied(caller, Role.SERVER, "kv " + serverOnly + " (opcode " + opcode + ")"));
    }
    if (KvWrites.isWrite(opcode)) {
      // A fabric that did not offer it inline first: still ordered by the shard's queue.
      return write(opcode, request, false);
    }
    if (opcode == KvProtocol.COMPACT_LOG) {
      // Not under the read side: the compaction takes the write side.
      try {
        new Wire.Reader(request, "kv compact-log request").end();
        long before = log.bytes();
        long after = compactLog();
        return CompletableFuture.completedFuture(
            new Wire.Writer().i64(before).i64(after).toBuffer());
      } catch (FerriteException e) {
        return CompletableFuture.failedFuture(e);
      }
    }
    requests.readLock().lock();
    try {
      // Control operations that logged a record answer after the group commit covers it: no
      // executor thread waits on an fsync either.
      boolean[] flush = new boolean[1];
      ByteBuffer answer = dispatch(opcode, request, flush);
      return flush[0]
          ? log.flush().thenApply(v -> answer)
          : CompletableFuture.completedFuture(answer);
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "kv opcode " + opcode + " failed", e);
      return CompletableFuture.failedFuture(
          new FerriteException(ErrorCode.INTERNAL, "kv opcode " + opcode + ": " + e, e));
    } finally {
      requests.readLock().unlock();
    }
  }

  /**
   * Serves one request; sets {@code flush[0]} when the answer must wait until what it logged is
   * durable.
   */
  private ByteBuffer dispatch(int opcode, ByteBuffer request, boolean[] flush) {
    if (opcode == KvProtocol.PING) {
      return ByteBuffer.allocate(0);
    }
    Wire.Reader r = new Wire.Reader(request, "kv request " + opcode);
    Wire.Writer w = new Wire.Writer();
    switch (opcode) {
      case KvProtocol.OPEN_SHARD, KvProtocol.OPEN_COPY -> {
        TableInfo t = TableInfo.read(r);
        int shard = r.i32("shard");
        long fence = opcode == KvProtocol.OPEN_COPY ? r.i64("version") : 0;
        r.end();
        if (shard < 0 || shard >= t.options().shards()) {
          throw new FerriteException(
              ErrorCode.INVALID_ARGUMENT,
              "shard: " + shard + " (expected: >= 0 and < " + t.options().shards() + ")");
        }
        if (durable(t) && !shards.containsKey(new ShardKey(t.tableId(), shard))) {
          // Never made again, empty, for a client if its pairs were lost with this server's log.
          LostLog.Key k = new LostLog.Key(t.tableId(), shard);
          if (opcode == KvProtocol.OPEN_SHARD) {
            lostLog.beforeOpen(groupOf(t), t.name(), k);
          } else {
            lostLog.madeAgain(groupOf(t), k); // a repair fills a copy here
          }
        }
        KvShard s =
            shards.computeIfAbsent(
                new ShardKey(t.tableId(), shard),
                k -> {
                  KvShard n = create(t, shard);
                  if (durable(n)) {
                    log.append(openRecord(t, shard, groupOf(t)));
                    hook(n);
                  }
                  return n;
                });
        if (opcode == KvProtocol.OPEN_COPY) {
          s.raiseFence(fence); // before the answer: the repair's first REPLICATE follows it
        }
        // Whoever created it: the answer waits until the OPEN_SHARD record is durable.
        flush[0] = durable(s);
        s.checkNotRetired();
        s.layout().write(w);
      }
      case KvProtocol.LAYOUT -> {
        KvShard s = shard(r);
        // The client's placement version (absent from an older client: 0, fenced like any old one).
        long version = r.remaining() >= 8 ? r.i64("version") : 0;
        r.end();
        s.checkNotRetired();
        s.checkLeased();
        s.checkReadFence(version);
        s.layout().write(w);
      }
      case KvProtocol.GET -> {
        KvShard s = shard(r);
        byte[] key = r.bytes("key");
        long version = r.remaining() >= 8 ? r.i64("version") : 0;
        r.end();
        s.checkNotRetired();
        s.checkLeased();
        s.checkReadFence(version);
        byte[] v = s.get(key);
        w.u8(v == null ? KvProtocol.MISSING : KvProtocol.FOUND).bytes(v == null ? new byte[0] : v);
      }
      case KvProtocol.RESIZE -> {
        KvShard s = shard(r);
        int slots = r.i32("slots");
        r.end();
        KvWrites.gated(
            s,
            () -> {
              synchronized (s) {
                s.checkWritable();
                s.resize(slots);
              }
              return null;
            });
        flush[0] = s.options().durability() == TableOptions.Durability.ALWAYS;
        s.layout().write(w);
      }
      case KvProtocol.STATS -> {
        KvShard s = shard(r);
        r.end();
        s.checkNotRetired();
        s.stats().write(w);
      }
      case KvProtocol.DROP_SHARD -> {
        long id = r.i64("tableId");
        int shard = r.i32("shard");
        r.end();
        KvShard s = shards.remove(new ShardKey(id, shard));
        if (s != null && durable(s)) {
          log.append(new Wire.Writer().u8(KvProtocol.DROP_SHARD).i64(id).i32(shard).toArray());
          flush[0] = true;
        }
        if (s != null) {
          // Poisoned, then freed: a racing one-sided reader gets NO_SUCH_REGION (tcp) or reads
          // MOVED from its own mapping of the unlinked file (shm, never truncated: no fault); both
          // fetch the layout and learn the table is gone. Writes that found the shard before it
          // left the map answer NOT_FOUND (checked under the lock).
          KvWrites.gated(
              s,
              () -> {
                s.drop();
                return null;
              });
        }
      }
      case KvProtocol.FREEZE -> {
        KvShard s = shard(r);
        long token = r.i64("token");
        long leaseMillis = r.i64("leaseMillis");
        r.end();
        if (token == 0 || leaseMillis <= 0 || leaseMillis > 600_000) {
          throw new FerriteException(
              ErrorCode.INVALID_ARGUMENT,
              "freeze token "
                  + token
                  + ", lease "
                  + leaseMillis
                  + " ms (expected: token != 0,"
                  + " lease 1..600000 ms)");
        }
        w.i32(KvWrites.gated(s, () -> s.freeze(token, TimeUnit.MILLISECONDS.toNanos(leaseMillis))));
      }
      case KvProtocol.COPY_PAGE -> {
        KvShard s = shard(r);
        long version = r.i64("version");
        long afterHash = r.i64("afterHash");
        byte[] afterKey = r.bytes("afterKey");
        int maxBytes = r.i32("maxBytes");
        r.end();
        List<Object[]> page = KvWrites.gated(s, () -> s.copyPairs(version, afterHash, afterKey));
        // Sorted outside the lock: (hash unsigned, key), the order the repair pages in.
        page.sort(
            Comparator.comparing((Object[] p) -> (Long) p[3], Long::compareUnsigned)
                .thenComparing(p -> (byte[]) p[0], java.util.Arrays::compare));
        int n = 0;
        long bytes = 0;
        while (n < page.size() && (n == 0 || bytes < maxBytes)) {
          Object[] p = page.get(n++);
          bytes += ((byte[]) p[0]).length + ((byte[]) p[1]).length + 16;
        }
        w.u8(n < page.size() ? 1 : 0).i32(n);
        for (int i = 0; i < n; i++) {
          Object[] p = page.get(i);
          w.bytes((byte[]) p[0]).bytes((byte[]) p[1]).i64((Long) p[2]);
        }
      }
      case KvProtocol.EXPORT -> {
        KvShard s = shard(r);
        long token = r.i64("token");
        int from = r.i32("from");
        int maxBytes = r.i32("maxBytes");
        r.end();
        java.util.List<byte[][]> pairs =
            KvWrites.gated(s, () -> s.exportPairs(token, s.frozenLeaseNanos()));
        if (from < 0 || from > pairs.size()) {
          throw new FerriteException(
              ErrorCode.INVALID_ARGUMENT,
              "export from pair " + from + " (expected: 0.." + pairs.size() + ")");
        }
        int to = from;
        long bytes = 0;
        while (to < pairs.size() && (to == from || bytes < maxBytes)) {
          bytes += 8 + pairs.get(to)[0].length + pairs.get(to)[1].length;
          to++;
        }
        w.i32(to == pairs.size() ? -1 : to).i32(s.slots()).i32(to - from);
        for (int i = from; i < to; i++) {
          w.bytes(pairs.get(i)[0]).bytes(pairs.get(i)[1]);
        }
      }
      case KvProtocol.CANCEL -> {
        KvShard s = shard(r);
        long token = r.i64("token");
        r.end();
        w.u8(s.cancel(token) ? 1 : 0);
      }
      case KvProtocol.RETIRE -> {
        KvShard s = shard(r);
        long token = r.i64("token");
        int to = r.i32("to");
        r.end();
        s.gate.lock();
        try {
          synchronized (s) {
            if (s.moveState() != 2) {
              s.checkFrozen(token, s.frozenLeaseNanos());
              if (durable(s)) {
                // Durable before the master commits: a restart replays the shard, then retires it.
                log.append(
                    new Wire.Writer()
                        .u8(KvProtocol.RETIRE)
                        .i64(s.tableId())
                        .i32(s.shard())
                        .i32(to)
                        .toArray());
              }
            }
            s.retire(to);
          }
        } finally {
          s.gate.unlock();
        }
        flush[0] = durable(s);
      }
      case KvProtocol.RELEASE -> {
        KvShard s = shards.get(new ShardKey(r.i64("tableId"), r.i32("shard")));
        int to = r.i32("to");
        r.end();
        w.u8(s != null && KvWrites.gated(s, () -> release(s, to)) ? 1 : 0);
      }
      case KvProtocol.IMPORT -> {
        TableInfo t = TableInfo.read(r);
        int shard = r.i32("shard");
        boolean first = r.u8("first") == 1;
        int slots = r.i32("slots");
        int n = r.count("pairs", 1 << 24);
        if (shard < 0 || shard >= t.options().shards()) {
          throw new FerriteException(
              ErrorCode.INVALID_ARGUMENT,
              "shard: " + shard + " (expected: >= 0 and < " + t.options().shards() + ")");
        }
        ShardKey sk = new ShardKey(t.tableId(), shard);
        KvShard s;
        if (first) {
          s = replaceForImport(t, shard, sk);
          // As large as the source (which may have been resized): its pairs fit as they did there.
          KvShard fresh = s;
          KvWrites.gated(
              fresh,
              () -> {
                fresh.resize(Math.max(slots, fresh.slots()));
                return null;
              });
        } else {
          s = shards.get(sk);
          if (s == null) {
            throw new FerriteException(
                ErrorCode.NOT_FOUND,
                "no import of shard " + shard + " in progress here (it restarted?); start again");
          }
        }
        s.gate.lock();
        try {
          for (int i = 0; i < n; i++) {
            byte[] key = r.bytes("key");
            byte[] value = r.bytes("value");
            s.put(KvProtocol.MODE_PUT, key, value, new byte[0]);
          }
        } finally {
          s.gate.unlock();
        }
        r.end();
        flush[0] = durable(s);
        w.i32(s.stats().count());
      }
      case KvProtocol.SHARDS -> {
        r.end();
        java.util.List<KvShard> all = java.util.List.copyOf(shards.values());
        w.i32(all.size());
        for (KvShard s : all) {
          w.i64(s.tableId()).i32(s.shard()).u8(s.listState()).i32(s.stats().count());
        }
      }
      default ->
          throw new FerriteException(
              ErrorCode.UNKNOWN_OPCODE, "kv service has no opcode " + opcode);
    }
    return w.toBuffer();
  }

  /**
   * Frees the regions of {@code s}, retired to server {@code to}, after the master committed its
   * move (the mover says so: it sends RELEASE only after END_MOVE committed, or for a shard the
   * master places elsewhere with no move pending). Until then the retired shard's poison stays
   * readable and its pairs exportable (a pending move is completed from them). The shard stays, a
   * tombstone answering MOVED. Logged for durable tables, so a restart frees them again. Returns
   * whether regions were freed now.
   */
  private boolean release(KvShard s, int to) {
    synchronized (s) {
      if (s.moveState() != 2) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "shard "
                + s.shard()
                + " of table "
                + Long.toHexString(s.tableId())
                + " serves here (expected: a retired shard)");
      }
      if (s.retiredTo != to) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "shard " + s.shard() + " retired to server " + s.retiredTo + " (expected: " + to + ")");
      }
      if (s.regionsFreed) {
        return false;
      }
      if (durable(s)) {
        log.append(
            new Wire.Writer().u8(KvProtocol.RELEASE).i64(s.tableId()).i32(s.shard()).toArray());
      }
      s.freeRegions();
      return true;
    }
  }

  /**
   * A fresh shard for the first IMPORT of a move, replacing what this server holds under the same
   * key: a retired shard (the shard moves back here) or a partial import. A serving shard that the
   * mover's table says lives here is never replaced.
   */
  private KvShard replaceForImport(TableInfo t, int shard, ShardKey sk) {
    if (durable(t)) {
      lostLog.madeAgain(groupOf(t), new LostLog.Key(t.tableId(), shard)); // with its pairs
    }
    synchronized (shards) {
      KvShard old = shards.get(sk);
      if (old != null && old.moveState() != 2 && t.servers()[shard] == context.serverId()) {
        throw new FerriteException(
            ErrorCode.CONFLICT,
            "shard " + shard + " of table " + t.name() + " already serves here; not importing");
      }
      KvShard n = create(t, shard);
      if (durable(n)) {
        if (old != null) {
          log.append(
              new Wire.Writer().u8(KvProtocol.DROP_SHARD).i64(t.tableId()).i32(shard).toArray());
        }
        log.append(openRecord(t, shard, groupOf(t)));
        hook(n);
      }
      shards.put(sk, n);
      if (old != null) {
        // A retired shard (the shard moves back here) or a partial import: nobody reads it any
        // more (readers of a retired one read poison, a partial import was never served).
        KvWrites.gated(
            old,
            () -> {
              old.freeRegions();
              return null;
            });
      }
      return n;
    }
  }

  /** For tests in this package: the shard of table {@code id} here (NOT_FOUND if none). */
  KvShard shardForTest(long id, int shard) {
    return shard(id, shard);
  }

  private KvShard shard(Wire.Reader r) {
    return shard(r.i64("tableId"), r.i32("shard"));
  }

  private KvShard shard(long id, int shard) {
    KvShard s = shards.get(new ShardKey(id, shard));
    if (s == null) {
      FerriteException lost = lostLog.lostOrNull(new LostLog.Key(id, shard));
      if (lost != null) {
        throw lost;
      }
      throw new FerriteException(
          ErrorCode.NOT_FOUND,
          "no shard "
              + shard
              + " of table "
              + Long.toHexString(id)
              + " on server "
              + context.serverId());
    }
    return s;
  }

  private KvShard create(TableInfo t, int shard) {
    ServiceContext ctx = context;
    // A replicated shard, and every region it makes, serves only under the lease (KvLease).
    KvLease l = t.options().replicas() > 1 ? lease : null;
    KvShard s = newShard(ctx, t, shard, groupOf(t), l);
    s.table = t;
    s.lease = l;
    return s;
  }

  /**
   * The master group that holds {@code t}: kept, or asked of group 0's placement directory (one
   * round trip the first time a shard of the table is made here; none with one group).
   */
  private int groupOf(TableInfo t) {
    return tableGroups.computeIfAbsent(
        t.tableId(),
        id -> context.placement(io.ferrite.kernel.proto.PlacementProtocol.KV, t.name()));
  }

  /**
   * The log's OPEN_SHARD record: the table, the shard, and the table's master group (the last added
   * with master groups; replay reads a record without it as group 0's).
   */
  private static byte[] openRecord(TableInfo t, int shard, int group) {
    Wire.Writer rec = new Wire.Writer().u8(KvProtocol.OPEN_SHARD);
    t.write(rec);
    return rec.i32(shard).i32(group).toArray();
  }

  private static KvShard newShard(
      ServiceContext ctx, TableInfo t, int shard, int group, KvLease lease) {
    long extentBytes = (t.options().extentRegionBytes() + 7L) & ~7L;
    // The regions made while the shard is built (its first extent region, then its table): if a
    // later one is refused (NO_SPACE: the capacity is full), the earlier ones are given back
    // here, since no shard will ever own them. Null once the shard is built.
    java.util.concurrent.atomic.AtomicReference<List<MappedRegion>> building =
        new java.util.concurrent.atomic.AtomicReference<>(new ArrayList<>());
    java.util.function.UnaryOperator<MappedRegion> track =
        r -> {
          r.lease(lease); // before any client can learn of the region (null: none)
          List<MappedRegion> b = building.get();
          if (b != null) {
            b.add(r);
          }
          return r;
        };
    KvShard s;
    try {
      s =
          KvShard.create(
              t.tableId(),
              shard,
              t.options(),
              len -> {
                KvWrites.checkNonBlocking();
                MappedRegion r = track.apply(ctx.createRegion("dram", (len + 7L) & ~7L, group));
                if (lease != null) {
                  // The table region carries the lease word for same-host (shm) readers; written
                  // before any client can learn of the region (KvLease "Same-host readers").
                  lease.publish(r);
                }
                return r;
              },
              () -> {
                // Refused on a receiving thread (creating a region may block): the write is
                // queued for a writer thread instead (KvWrites).
                KvWrites.checkNonBlocking();
                return track.apply(ctx.createRegion("dram", extentBytes, group));
              },
              ctx::readRef);
    } catch (RuntimeException e) {
      for (MappedRegion r : building.getAndSet(null)) {
        try {
          if (lease != null) {
            lease.withdraw(r); // never written again once it is freed
          }
          ctx.freeRegion(r);
        } catch (RuntimeException freeFailed) {
          e.addSuppressed(freeFailed);
        }
      }
      throw e;
    }
    building.set(null);
    s.onFree(
        r -> {
          if (lease != null) {
            lease.withdraw(r); // 0, and never written again: freeing may unmap it
          }
          ctx.freeRegion(r);
        });
    return s;
  }

  /**
   * Before the lease is granted again after it lapsed (or first granted after a start): the master
   * may have declared this server DEAD meanwhile, promoted the backups of the shards it was the
   * primary of and dropped it from every backup list. So each replicated copy held here is checked
   * against the directory (one GET_TABLE per table), and a copy the table no longer lists here is
   * retired: poisoned for one-sided readers, MOVED for writers, who then ask the master. A copy
   * still listed (a primary whose shard had no complete backup to promote) serves on. Runs on the
   * lease's thread; throws if the master cannot answer (the lease stays lapsed; tried again).
   */
  private void verifyCopies() {
    Map<Long, List<KvShard>> byTable = new java.util.HashMap<>();
    for (KvShard s : shards.values()) {
      if (s.seqs != null && s.table != null && s.moveState() != 2) {
        byTable.computeIfAbsent(s.tableId(), k -> new ArrayList<>()).add(s);
      }
    }
    int me = context.serverId();
    for (List<KvShard> held : byTable.values()) {
      TableInfo known = held.get(0).table;
      TableInfo now;
      try {
        // The table's own master group (a group-1 table is NOT_FOUND at group 0's).
        Wire.Reader r =
            new Wire.Reader(
                context
                    .master(groupOf(known))
                    .callSync(
                        null,
                        KvProtocol.MASTER_SERVICE,
                        KvProtocol.GET_TABLE,
                        new Wire.Writer().str(known.name()).toBuffer()),
                "kv table");
        now = TableInfo.read(r);
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.NOT_FOUND) {
          throw e;
        }
        now = null; // dropped: nothing here is a copy of it any more
      }
      for (KvShard s : held) {
        int i = s.shard();
        boolean listed = now != null && now.tableId() == s.tableId() && holds(now, i, me);
        if (!listed) {
          int to = now != null && now.tableId() == s.tableId() ? now.servers()[i] : -1;
          LOG.log(
              System.Logger.Level.WARNING,
              "kv: shard {0} of table {1} is no longer a copy here (the master moved it while this"
                  + " server was silent: now at server {2}); retired",
              i,
              known.name(),
              to);
          // Under the requests' read side, as a RETIRE request: a log compaction never sees it
          // half done.
          requests.readLock().lock();
          try {
            KvWrites.gated(
                s,
                () -> {
                  s.retire(Math.max(0, to));
                  return null;
                });
          } finally {
            requests.readLock().unlock();
          }
        }
      }
    }
  }

  /**
   * Whether {@code t} lists server {@code me} as a copy of {@code shard} (full or being filled).
   */
  private static boolean holds(TableInfo t, int shard, int me) {
    if (t.servers()[shard] == me) {
      return true;
    }
    for (int b : t.backupsOf(shard)) {
      if (TableInfo.copyServer(b) == me) {
        return true;
      }
    }
    return false;
  }

  /** For tests: the number of shards hosted here. */
  int shardCount() {
    return shards.size();
  }

  /** For tests: the shards held that are not retired (a retired one only answers MOVED). */
  int liveShardCount() {
    int n = 0;
    for (KvShard s : shards.values()) {
      synchronized (s) {
        n += s.retiredTo < 0 ? 1 : 0;
      }
    }
    return n;
  }
}
