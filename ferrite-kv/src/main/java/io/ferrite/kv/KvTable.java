package io.ferrite.kv;

import io.ferrite.fabric.Backoff;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.client.MappedLease;
import io.ferrite.kernel.ops.FaceMeters;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * One kv table, as a client sees it. Thread-safe; share one per table.
 *
 * <h2>Reads are one-sided (Pilaf §3.2–3.3, FaRM §3.5–3.6)</h2>
 *
 * {@link #get}, {@link #contains} and {@link #multiGet} never call the server: they read the
 * shard's table and extents with one-sided reads and verify what they read, the way the table's
 * {@link TableOptions.Layout} prescribes (a {@link LayoutReader}: Pilaf's cuckoo entries and
 * self-verifying pointers, or FaRM's versioned hopscotch buckets read two at a time). A torn copy
 * (a read racing the server's write) fails its verification and the lookup starts again after a
 * short backoff; a copy of an array a resize replaced, a pointer into an extent region the client
 * does not know yet, or an error naming a region, makes the client fetch the layout again (the
 * layout epoch moved).
 *
 * <h2>Writes go to the owning server by RPC</h2>
 *
 * {@link #put}, {@link #putIfAbsent}, {@link #compareAndSet}, {@link #delete} and {@link #resize}
 * are one RPC to the shard's server; they are not retried blindly (a lost answer does not mean the
 * put did not happen). Every operation is linearizable per key.
 *
 * <h2>Pipelined writes</h2>
 *
 * {@link #putAsync}, {@link #deleteAsync} and {@link #multiPutAsync} send the RPC and return: a
 * thread may have many writes in flight, bounded by bandwidth rather than round trips. {@link
 * #multiPut} sends one MULTI_PUT per server carrying all of that server's pairs (as {@link
 * #multiGet} reads one batch per server). Writes of one thread to one key are applied in the order
 * they were issued, also when pipelined: they travel on the one connection to the shard's server,
 * which applies a connection's writes to a shard in arrival order ({@link KvProtocol}). A write the
 * server refused without applying it (BUSY while the shard moves, MOVED, NOT_FOUND after a server
 * restart) is sent again, as by {@link #put}, from a retry thread; such a retry may land after a
 * later write of the same key that was already in flight: while a shard moves, a pipelining writer
 * that needs the order must wait for its writes (the synchronous calls always keep it).
 *
 * <h2>Shards move (re-sharding; docs/KV.md "Moving shards")</h2>
 *
 * The handle caches the table's placement. A write answered {@code BUSY} (the shard is frozen while
 * it moves, or the server is saturated: the write did not happen) is sent again after a backoff; a
 * write or layout fetch answered {@code MOVED} (the shard was retired on that server), or {@code
 * NOT_FOUND} (the server restarted), makes the handle fetch the table from the master again and
 * send it to the shard's server there. A one-sided reader of a retired shard reads {@code MOVED}
 * buckets or entries, fetches the layout, hears {@code MOVED}, and so ends up at the new server.
 * All of this is bounded by {@link #MOVE_DEADLINE_NANOS}.
 */
public final class KvTable {
  /** How long a lookup keeps retrying torn copies before it gives up with CONFLICT. */
  static final long LOOKUP_DEADLINE_NANOS = 10_000_000_000L;

  /**
   * How long a write or a layout fetch waits for a moving shard (frozen, or retired but not yet
   * committed by the master) before it gives up.
   */
  static final long MOVE_DEADLINE_NANOS = 30_000_000_000L;

  private static final Object TORN = LayoutReader.TORN;
  private static final Object STALE = LayoutReader.STALE;
  private static final Object MISS = LayoutReader.MISS;

  private final FerriteClient client;
  private volatile TableInfo info;
  private volatile long placementVersion;
  private final AtomicReferenceArray<ShardLayout> layouts;

  /**
   * The newest layout this handle fetched per shard, never cleared: when a newer one replaces it,
   * the regions it named that the new one does not (a resized-away array; everything of a shard
   * that moved or was dropped) are released on the client's connection, so a shm mapping of them
   * goes away (docs/KV.md "Freeing regions").
   */
  private final AtomicReferenceArray<ShardLayout> known;

  private final AtomicReferenceArray<FabricConnection> connections;
  private final LookupStats stats = new LookupStats();
  private final ExtentHints hints;
  private volatile boolean useHints = true;
  private final LayoutReader reader;

  /**
   * Whether the table keeps more than one copy of a shard (fixed at creation): only then do its
   * one-sided reads over shm check the server's lease word ({@link #checkMappedLease}).
   */
  private final boolean replicated;

  KvTable(FerriteClient client, TableInfo info, long placementVersion) {
    this.client = client;
    this.info = info;
    this.replicated = info.options().replicas() > 1;
    this.placementVersion = placementVersion;
    this.layouts = new AtomicReferenceArray<>(info.options().shards());
    this.known = new AtomicReferenceArray<>(info.options().shards());
    this.connections = new AtomicReferenceArray<>(info.options().shards());
    this.hints = ExtentHints.forTable(info.tableId(), KvConfig.extentHints(client.config()));
    this.reader = LayoutReader.of(this, stats);
    FaceMeters m = FaceMeters.of(client.options().metrics(), "kv");
    this.metGet = m.op("get");
    this.metPut = m.op("put");
    this.metDelete = m.op("delete");
    this.metMultiGet = m.op("multi_get");
    this.metMultiPut = m.op("multi_put");
  }

  /**
   * The client's ferrite.face.ops{face=kv} ({@link io.ferrite.kernel.client.ClientOptions#metrics};
   * meters that do nothing without one): one adder increment per call, batches by their keys.
   */
  private final FaceMeters.Op metGet;

  private final FaceMeters.Op metPut;
  private final FaceMeters.Op metDelete;
  private final FaceMeters.Op metMultiGet;
  private final FaceMeters.Op metMultiPut;

  FerriteClient client() {
    return client;
  }

  /** Where the table's handles last found each key's extent (read alone on the next lookup). */
  ExtentHints extentHints() {
    return hints;
  }

  /** Whether this handle reads hinted extents ({@link KvClient#extentHints}). */
  void extentHints(boolean on) {
    useHints = on;
  }

  /**
   * A lookup by hints reads the table instead, at random, once in this many: a resize leaves the
   * extents current, so a handle whose every key has a hint would otherwise never read a shard's
   * table again, never meet the old array's poison, and keep its old layout (and, over shm, its
   * mapping of the freed array) for good. Over tcp it costs 1/256 of the gets a second round trip.
   */
  static final int TABLE_CHECK_EVERY = 256;

  /** {@link #TABLE_CHECK_EVERY}, or 0 (never: tests that count reads exactly). */
  private volatile int tableCheckEvery = TABLE_CHECK_EVERY;

  /** For tests that count reads exactly: lookups by hints never read the table instead. */
  void neverCheckTheTable() {
    tableCheckEvery = 0;
  }

  /**
   * Whether this lookup (a get, or a whole multiGet) reads hinted extents alone before the table:
   * if hints are on, except once in {@link #TABLE_CHECK_EVERY}, at random.
   */
  boolean hinting() {
    if (!useHints || hints.capacity() == 0) {
      return false;
    }
    int every = tableCheckEvery;
    return every == 0 || ThreadLocalRandom.current().nextInt(every) != 0;
  }

  /** The placement this handle uses (refetched when a shard moved). */
  public TableInfo info() {
    return info;
  }

  /** The directory's placement version of {@link #info()}: the number of moves committed. */
  public long placementVersion() {
    return placementVersion;
  }

  /**
   * Fetches the table from the master again unless another thread already replaced {@code seen};
   * forgets the layouts of shards that now live elsewhere.
   *
   * @throws FerriteException NOT_FOUND if the table was dropped (or dropped and created again)
   */
  void refresh(TableInfo seen) {
    synchronized (this) {
      if (info != seen) {
        return;
      }
      stats.placementFetches.increment();
      ByteBuffer b;
      try {
        b =
            Futures.join(
                client.callMaster(
                    KvProtocol.MASTER_SERVICE,
                    KvProtocol.GET_TABLE,
                    new Wire.Writer().str(seen.name()).toBuffer()));
      } catch (FerriteException e) {
        if (e.code() == ErrorCode.NOT_FOUND) {
          releaseAll(); // the table was dropped: nothing this handle mapped is any use
        }
        throw e;
      }
      Wire.Reader r = new Wire.Reader(b, "kv table");
      TableInfo t = TableInfo.read(r);
      long version = r.i64("version");
      r.end();
      if (t.tableId() != seen.tableId()) {
        releaseAll();
        throw new FerriteException(
            ErrorCode.NOT_FOUND, "kv table " + seen.name() + " was dropped (and created again)");
      }
      // info before the version: a writer that read the version (and sent it as its write's
      // fence) then reads this info or a newer one when it ships (volatile order).
      info = t;
      placementVersion = version;
      for (int i = 0; i < t.servers().length; i++) {
        if (t.servers()[i] != seen.servers()[i]) {
          layouts.set(i, null);
        }
      }
    }
  }

  public String name() {
    return info.name();
  }

  /** Client-side lookup counts of this handle. */
  public LookupStats lookupStats() {
    return stats;
  }

  /** The shard of {@code key}. */
  public int shardOf(byte[] key) {
    return KeyHash.shard(KeyHash.of(key), info.options().shards());
  }

  /**
   * The server of {@code shard}'s primary copy in {@code t}.
   *
   * @throws FerriteException DATA_LOST if the shard was lost (its only copy was in the DRAM of a
   *     server that came back without it, or on a server that came back without its kv log), naming
   *     the table, the shard and, for the second, the server
   */
  static int primary(TableInfo t, int shard) {
    int server = t.servers()[shard];
    if (server < 0) {
      throw lostShard(t, shard);
    }
    return server;
  }

  /** DATA_LOST for shard {@code shard}, lost in {@code t} ({@link TableInfo#lost}). */
  private static FerriteException lostShard(TableInfo t, int shard) {
    int from = t.lostFrom(shard);
    String why =
        from < 0
            ? "its only copy was in the memory of a server that restarted without it (the table"
                + " keeps its other shards; dropping it frees them)"
            : "its only copy was on memory server "
                + from
                + ", which restarted without its kv log: the acknowledged writes in it are gone"
                + " (the table keeps its other shards; drop it and create it again, docs/KV.md"
                + " \"Lost shards\")";
    return new FerriteException(
        ErrorCode.DATA_LOST, "shard " + shard + " of kv table " + t.name() + " was lost: " + why);
  }

  /** The memory server of shard {@code shard}. */
  public int serverOf(int shard) {
    return info.servers()[shard];
  }

  // ------------------------------------------------------------------ argument checks

  private void checkKey(byte[] key) {
    if (key == null) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "key: null (expected: 1 or more bytes)");
    }
    int max = info.options().maxKey();
    if (key.length == 0 || key.length > max) {
      throw new FerriteException(
          key.length == 0 ? ErrorCode.INVALID_ARGUMENT : ErrorCode.TOO_LARGE,
          "key of " + key.length + " B (expected: >= 1 and <= " + max + " B)");
    }
  }

  private void checkValue(byte[] value) {
    if (value == null) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "value: null (expected: 0 or more bytes)");
    }
    int max = info.options().maxValue();
    if (value.length > max) {
      throw new FerriteException(
          ErrorCode.TOO_LARGE, "value of " + value.length + " B (expected: <= " + max + " B)");
    }
  }

  // ------------------------------------------------------------------ layouts

  void openAllShards() {
    for (int i = 0; i < info.options().shards(); i++) {
      layouts.set(i, installed(i, open(i)));
      for (int b : info.backupsOf(i)) {
        openOn(TableInfo.copyServer(b), i);
      }
    }
  }

  /** Opens shard {@code shard}'s copy on server {@code server} (a backup; idempotent). */
  private void openOn(int server, int shard) {
    Wire.Writer w = new Wire.Writer();
    info.write(w);
    w.i32(shard);
    rpcTo(server, KvProtocol.OPEN_SHARD, w.toBuffer());
  }

  /** Forgets every layout and releases every region they named (the table was dropped). */
  private void releaseAll() {
    for (int i = 0; i < known.length(); i++) {
      layouts.set(i, null);
      ShardLayout old = known.getAndSet(i, null);
      if (old != null) {
        client.releaseRegion(old.entries());
        for (RegionRef r : old.extents()) {
          client.releaseRegion(r);
        }
      }
    }
  }

  /**
   * Records {@code l} as the newest layout of {@code shard} and releases the regions of the one it
   * replaces that {@code l} does not name (region ids are never reused by a server process, and a
   * region is compared with its server and rkey). Returns {@code l}.
   */
  private ShardLayout installed(int shard, ShardLayout l) {
    ShardLayout old;
    do {
      old = known.get(shard);
      if (old != null
          && old.entries().serverId() == l.entries().serverId()
          && l.epoch() < old.epoch()) {
        // An older fetch that lost a race with a newer one: it names nothing the newer dropped.
        return l;
      }
    } while (!known.compareAndSet(shard, old, l));
    if (old != null && old != l) {
      Set<RegionRef> now = new HashSet<>(l.extents());
      now.add(l.entries());
      if (!now.contains(old.entries())) {
        client.releaseRegion(old.entries());
      }
      for (RegionRef r : old.extents()) {
        if (!now.contains(r)) {
          client.releaseRegion(r);
        }
      }
    }
    return l;
  }

  private ShardLayout open(int shard) {
    TableInfo t = info;
    Wire.Writer w = new Wire.Writer();
    t.write(w);
    w.i32(shard);
    int server = primary(t, shard);
    return readLayout(server, rpcTo(server, KvProtocol.OPEN_SHARD, w.toBuffer()));
  }

  private static ShardLayout readLayout(int server, ByteBuffer b) {
    Wire.Reader r = new Wire.Reader(b, "kv layout");
    ShardLayout l = ShardLayout.read(r, server);
    r.end();
    return l;
  }

  /**
   * The cached layout of {@code shard}, fetched (or the shard opened) if absent. Public for
   * benchmarks, which read the same regions raw as the ceiling of a get.
   */
  public ShardLayout layout(int shard) {
    ShardLayout l = layouts.get(shard);
    if (l == null) {
      stats.layoutFetches.increment();
      long deadline = 0;
      for (int attempt = 0; ; attempt++) {
        TableInfo t = info;
        int server = primary(t, shard);
        try {
          try {
            // With the placement version: a copy whose fence is newer (one a repair made after its
            // server died: this placement may take it for the primary) answers MOVED.
            l =
                readLayout(
                    server,
                    rpcTo(server, KvProtocol.LAYOUT, ids(shard).i64(placementVersion).toBuffer()));
          } catch (FerriteException e) {
            if (failover(t, shard, e)) {
              // A replicated shard's primary is unreachable: wait for the master's failover.
              long now = System.nanoTime();
              if (deadline == 0) {
                deadline = now + MOVE_DEADLINE_NANOS;
              } else if (now - deadline > 0) {
                throw e;
              }
              stats.failoverWaits.increment();
              failoverBackoff(attempt);
              refresh(t);
              continue;
            }
            if (e.code() != ErrorCode.NOT_FOUND) {
              throw e;
            }
            // The server restarted (its DRAM shards are gone) or never opened this shard; or the
            // shard moved away and the server forgot it (a restart): ask the master first, so a
            // stale handle never opens an empty shard where the table no longer lives.
            refresh(t);
            if (info.servers()[shard] != server) {
              continue;
            }
            l = open(shard);
          }
          break;
        } catch (FerriteException e) {
          if (e.code() != ErrorCode.MOVED) {
            throw e;
          }
          deadline = awaitMove(t, shard, attempt, deadline, e);
        }
      }
      layouts.set(shard, installed(shard, l));
    }
    return l;
  }

  /**
   * After a MOVED answer for {@code shard}: fetches the placement again and, if the master does not
   * name another server yet (the move is being committed), backs off. Returns the deadline.
   */
  private long awaitMove(
      TableInfo seen, int shard, int attempt, long deadline, FerriteException e) {
    long now = System.nanoTime();
    if (deadline == 0) {
      deadline = now + MOVE_DEADLINE_NANOS;
    } else if (now - deadline > 0) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE,
          "shard "
              + shard
              + " of table "
              + seen.name()
              + " is still moving after "
              + MOVE_DEADLINE_NANOS / 1_000_000_000L
              + " s (a move the master has not committed: ferrite kv rebalance finishes it): "
              + e.getMessage(),
          e);
    }
    refresh(seen);
    if (info.servers()[shard] == seen.servers()[shard]) {
      backoff(attempt);
    }
    return deadline;
  }

  private void invalidate(int shard, ShardLayout seen) {
    layouts.compareAndSet(shard, seen, null);
  }

  private Wire.Writer ids(int shard) {
    return new Wire.Writer().i64(info.tableId()).i32(shard);
  }

  /** A PUT's request (KvProtocol), sized up front (no regrowth copies). */
  private Wire.Writer putRequest(int shard, int mode, byte[] key, byte[] value, byte[] expected) {
    Wire.Writer w =
        ids(shard, 21 + key.length + value.length + expected.length)
            .u8(mode)
            .bytes(key)
            .bytes(value)
            .bytes(expected);
    return fenced(w);
  }

  /**
   * A replicated table's PUT and DELETE end with the placement version the writer knows, set at
   * each send ({@link #withVersion}): a shard whose copies a repair is changing refuses older ones
   * (MOVED), so the writer fetches the table and ships to the new copy too.
   */
  private Wire.Writer fenced(Wire.Writer w) {
    return info.options().replicas() > 1 ? w.i64(0) : w;
  }

  /** {@code body} to send now: a fenced write's last 8 bytes set to the current version. */
  private ByteBuffer withVersion(int opcode, Wire.Writer body) {
    ByteBuffer b = body.toBuffer();
    if ((opcode == KvProtocol.PUT || opcode == KvProtocol.DELETE)
        && info.options().replicas() > 1) {
      b.putLong(b.limit() - 8, placementVersion);
    }
    return b;
  }

  /** As {@link #ids(int)}, sized for {@code more} bytes after them (no regrowth copies). */
  private Wire.Writer ids(int shard, int more) {
    return new Wire.Writer(12 + more).i64(info.tableId()).i32(shard);
  }

  private ByteBuffer rpc(int shard, int opcode, ByteBuffer body) {
    return rpcTo(serverOf(shard), opcode, body);
  }

  private ByteBuffer rpcTo(int server, int opcode, ByteBuffer body) {
    // The caller waits anyway: a blocking call (over tcp a lane, the caller reads its answer).
    return client.callSync(server, KvProtocol.SERVER_SERVICE, opcode, body);
  }

  // ------------------------------------------------------------------ one-sided reads

  /** The value of {@code key}, or null. One-sided reads only. */
  public byte[] get(byte[] key) {
    checkKey(key);
    metGet.count();
    Object r = lookup(key);
    return r == MISS ? null : (byte[]) r;
  }

  /** Whether {@code key} is present. One-sided reads only. */
  public boolean contains(byte[] key) {
    return get(key) != null;
  }

  /** The connection to {@code shard}'s server, cached per shard (one map lookup saved per get). */
  private FabricConnection connection(int shard, ShardLayout l) {
    FabricConnection c = connections.get(shard);
    if (c == null || !c.isOpen() || c.remoteId() != l.entries().serverId()) {
      c = client.connection(l.entries().serverId());
      connections.set(shard, c);
    }
    return c;
  }

  private Object lookup(byte[] key) {
    long h = KeyHash.of(key);
    int shard = KeyHash.shard(h, info.options().shards());
    long deadline = 0; // set at the first failed attempt: the common get never reads the clock
    boolean waitsForFailover = false;
    for (int attempt = 0; ; attempt++) {
      ShardLayout l = layout(shard);
      Object r;
      try {
        FabricConnection c = connection(shard, l);
        r = reader.probe(c, l, key, h);
        if (replicated && r != STALE && r != TORN && c.mapsRegions()) {
          checkMappedLease(c, l); // a value or a miss: both were read from the server's memory
        }
      } catch (FerriteException e) {
        TableInfo t = info;
        if (e.code() == ErrorCode.NO_SUCH_REGION
            || e.code() == ErrorCode.BAD_RKEY
            || e.code() == ErrorCode.OUT_OF_BOUNDS) {
          r = STALE;
        } else if (failover(t, shard, e)
            && (deadline == 0 || System.nanoTime() < deadline + FAILOVER_EXTRA_NANOS)) {
          // The primary of a replicated shard is unreachable: ask the master (it promotes a
          // backup once it declares the server DEAD), and read the new primary's layout.
          stats.failoverWaits.increment();
          refresh(t);
          waitsForFailover = true;
          r = STALE;
        } else if (e.retryable() && (deadline == 0 || System.nanoTime() < deadline)) {
          r = TORN;
        } else {
          throw e;
        }
      }
      if (r != STALE && r != TORN) {
        return r;
      }
      if (deadline == 0) {
        deadline = System.nanoTime() + LOOKUP_DEADLINE_NANOS;
      }
      if (r == STALE) {
        invalidate(shard, l);
      } else {
        stats.tornRetries.increment();
      }
      if (System.nanoTime() > deadline + (waitsForFailover ? FAILOVER_EXTRA_NANOS : 0)) {
        throw new FerriteException(
            ErrorCode.CONFLICT,
            "lookup in shard "
                + shard
                + " of table "
                + info.name()
                + " saw torn or stale copies for "
                + attempt
                + " attempts (a writer that never finishes?)");
      }
      if (waitsForFailover) {
        failoverBackoff(attempt);
      } else {
        backoff(attempt);
      }
    }
  }

  /**
   * The lease check of a one-sided read of a replicated shard that ran on this process's own
   * mapping of the server's regions (shm), after the lookup read and verified its data ({@link
   * MappedLease#check}, which says why a value that passes is linearizable): a lapsed lease is the
   * refusal a tcp reader gets, so the caller refetches the table, fails over or waits. Nothing for
   * unreplicated tables or other fabrics.
   */
  static void checkMappedLease(FabricConnection c, ShardLayout l) {
    MappedLease.check(c, l.entries(), ShardLayout.LEASE_OFFSET, "kv", "the shard retired");
  }

  /**
   * How much longer than {@link #LOOKUP_DEADLINE_NANOS} a lookup waits for a replicated shard's
   * failover: the master declares a server DEAD after its heartbeat timeout (seconds), then
   * promotes a backup.
   */
  private static final long FAILOVER_EXTRA_NANOS = MOVE_DEADLINE_NANOS - LOOKUP_DEADLINE_NANOS;

  /** Retrying a torn or stale read, a BUSY or MOVED shard: 4 spins, then 1 us doubling to 1 ms. */
  private static final Backoff BACKOFF =
      Backoff.builder().spins(4).initial(Duration.ofNanos(1_000)).max(Duration.ofMillis(1)).build();

  /**
   * Waiting for a replicated shard's failover (the master declares a dead server DEAD after its
   * heartbeat timeout, seconds): 0.1 ms doubling to 10 ms between fetches of the table, so a
   * waiting writer asks the master at most ~100 times a second and sees the new primary within 10
   * ms of the promotion.
   */
  private static final Backoff FAILOVER =
      Backoff.builder()
          .spins(0)
          .initial(Duration.ofNanos(100_000))
          .max(Duration.ofMillis(10))
          .build();

  private static void failoverBackoff(int attempt) {
    FAILOVER.pause(attempt + 1);
  }

  /** Pauses after failed attempt {@code attempt} (0-based). */
  private static void backoff(int attempt) {
    BACKOFF.pause(attempt + 1);
  }

  /**
   * The values of {@code keys} (null where absent), in order. The layout reads every key's first
   * candidates in rounds of one batch per server (one flush per connection per round: for the
   * hopscotch layout one round settles every inline pair and every miss); keys whose copies were
   * torn or stale, or that need more than the batched rounds, finish through {@link #get}. Each key
   * is linearizable on its own; the call is not atomic across keys.
   */
  public List<byte[]> multiGet(List<byte[]> keys) {
    int n = keys.size();
    metMultiGet.count(n);
    byte[][] out = new byte[n][];
    boolean[] done = new boolean[n];
    long[] hs = new long[n];
    ShardLayout[] ls = new ShardLayout[n];
    int shards = info.options().shards();
    for (int i = 0; i < n; i++) {
      byte[] key = keys.get(i);
      checkKey(key);
      hs[i] = KeyHash.of(key);
      ls[i] = layout(KeyHash.shard(hs[i], shards));
    }
    try {
      reader.multiGet(keys, hs, ls, out, done);
      fenceMapped(ls, done);
    } catch (FerriteException e) {
      if (info.options().replicas() < 2 || !e.retryable()) {
        throw e;
      }
      // A server unreachable while batching (a replicated shard's primary died): the keys not
      // settled go through get, which waits for the failover.
      stats.failoverWaits.increment();
    }
    for (int i = 0; i < n; i++) {
      if (!done[i]) {
        out[i] = get(keys.get(i));
      }
    }
    return Arrays.asList(out);
  }

  /**
   * {@link #checkMappedLease} for a {@link #multiGet}'s batched reads of a replicated table over
   * shm: once per distinct shard layout among the keys it settled, after all of them were read. A
   * shard whose lease word refuses has its keys unsettled again; they go through {@link #get},
   * which fails over.
   */
  private void fenceMapped(ShardLayout[] ls, boolean[] done) {
    if (!replicated) {
      return;
    }
    java.util.IdentityHashMap<ShardLayout, Boolean> lapsed = new java.util.IdentityHashMap<>();
    for (int i = 0; i < ls.length; i++) {
      if (done[i] && lapsed.computeIfAbsent(ls[i], this::mappedLeaseLapsed)) {
        done[i] = false;
      }
    }
  }

  /** Whether {@code l}'s shard is read over shm and its lease word refuses (see above). */
  private boolean mappedLeaseLapsed(ShardLayout l) {
    FabricConnection c = connection(l.shard(), l);
    if (!c.mapsRegions()) {
      return false;
    }
    try {
      checkMappedLease(c, l);
      return false;
    } catch (FerriteException e) {
      if (!leaseLapsed(e)) {
        throw e;
      }
      return true;
    }
  }

  /** The value of {@code key} read by the server (one RPC): the baseline one-sided gets beat. */
  public byte[] getViaRpc(byte[] key) {
    checkKey(key);
    int shard = shardOf(key);
    ByteBuffer b = writeRpc(shard, KvProtocol.GET, ids(shard).bytes(key).i64(placementVersion));
    Wire.Reader r = new Wire.Reader(b, "kv get");
    int status = r.u8("status");
    byte[] v = r.bytes("value");
    r.end();
    return status == KvProtocol.FOUND ? v : null;
  }

  /**
   * An RPC to the kv service of {@code shard}'s server that does nothing with {@code padding} bytes
   * of request: the ceiling a put is measured against.
   */
  public void ping(int shard, byte[] padding) {
    rpc(shard, KvProtocol.PING, ByteBuffer.wrap(padding));
  }

  // ------------------------------------------------------------------ writes (RPC)

  /** Stores {@code value} under {@code key}; returns true if the key was new. */
  public boolean put(byte[] key, byte[] value) {
    return putMode(KvProtocol.MODE_PUT, key, value, new byte[0]) == KvProtocol.CREATED;
  }

  /** Stores {@code value} only if {@code key} is absent; returns whether it did. */
  public boolean putIfAbsent(byte[] key, byte[] value) {
    return putMode(KvProtocol.MODE_PUT_IF_ABSENT, key, value, new byte[0]) == KvProtocol.CREATED;
  }

  /** Replaces the value of {@code key} only if it is {@code expected}; returns whether it did. */
  public boolean compareAndSet(byte[] key, byte[] expected, byte[] update) {
    checkValue(expected);
    return putMode(KvProtocol.MODE_COMPARE_AND_SET, key, update, expected) == KvProtocol.REPLACED;
  }

  /** Removes {@code key}; returns false if it was absent. */
  public boolean delete(byte[] key) {
    checkKey(key);
    metDelete.count();
    int shard = shardOf(key);
    Applied a = written(shard, KvProtocol.DELETE, fenced(ids(shard).bytes(key)));
    ship(shard, a, true, key, NO_BYTES);
    return a.status == KvProtocol.DELETED;
  }

  private static final byte[] NO_BYTES = new byte[0];

  private int putMode(int mode, byte[] key, byte[] value, byte[] expected) {
    checkKey(key);
    metPut.count();
    checkValue(value);
    int shard = shardOf(key);
    Applied a = written(shard, KvProtocol.PUT, putRequest(shard, mode, key, value, expected));
    ship(shard, a, false, key, value);
    return a.status;
  }

  // ------------------------------------------------------------------ replication

  /**
   * A write's answer from the shard's primary: its status and, for a replicated table, the sequence
   * the primary gave it (0: it changed nothing, nothing to ship) and the primary's id.
   */
  private record Applied(int status, long seq, int server) {}

  private Applied written(int shard, int opcode, Wire.Writer body) {
    int[] at = new int[1];
    ByteBuffer b = writeRpc(shard, opcode, body, at);
    return applied(b, at[0]);
  }

  private Applied applied(ByteBuffer b, int server) {
    Wire.Reader r = new Wire.Reader(b, "kv write answer");
    int status = r.u8("status");
    long seq = r.remaining() >= 8 ? r.i64("seq") : 0;
    return new Applied(status, seq, server);
  }

  /**
   * Ships a write the primary applied to every other copy of the shard (docs/KV.md "Replication"):
   * REPLICATE with the primary's sequence, which a copy applies only if it is newer than its key's,
   * so copies converge whatever order concurrent writers ship in. The copies are those the master
   * names now, minus the server that applied it: after a failover that includes the promoted
   * backup. A copy that fails makes the handle ask the master again (a dead server leaves the
   * shard's copies once the master declares it DEAD) and retry, bounded by {@link
   * #MOVE_DEADLINE_NANOS}; the write is acknowledged only once every current copy has it.
   */
  private void ship(int shard, Applied a, boolean delete, byte[] key, byte[] value) {
    if (a.seq == 0) {
      return;
    }
    java.util.Set<Integer> done = new java.util.HashSet<>();
    done.add(a.server);
    long deadline = 0;
    for (int attempt = 0; ; attempt++) {
      // The version before the table (refresh writes the table, then its version): t names at
      // least the copies of the version sent. Read the other way round, a newer version could
      // pass the fence of a copy a repair paged while t misses the repair's new copy.
      long version = placementVersion;
      TableInfo t = info;
      FerriteException failed = null;
      int[] copies = copiesOf(t, shard);
      for (int i = 0; i < copies.length; i++) {
        int server = copies[i];
        if (done.contains(server)) {
          continue;
        }
        try {
          shipTo(server, shard, a.seq, delete, key, value, version);
          done.add(server);
        } catch (FerriteException e) {
          failed = e;
          if (i == 0) {
            // The primary first, when it is not the server that applied the write (the write's
            // primary was deposed): a copy being filled then gets the write only after the primary
            // has it, so if the repair's DROP_SHARD still comes after the write there, its first
            // page comes after it at the primary too, and has it (KvReplicator.copy). Shipped to
            // the copy first, the write could be dropped there and reach the primary past its page.
            break;
          }
        }
      }
      if (failed == null) {
        return;
      }
      long now = System.nanoTime();
      if (deadline == 0) {
        deadline = now + MOVE_DEADLINE_NANOS;
      } else if (now - deadline > 0) {
        throw new FerriteException(
            ErrorCode.UNAVAILABLE,
            "a write to shard "
                + shard
                + " of table "
                + t.name()
                + " was applied at server "
                + a.server
                + " but could not reach every copy of the shard for "
                + MOVE_DEADLINE_NANOS / 1_000_000_000L
                + " s: "
                + failed.getMessage(),
            failed);
      }
      stats.replicaRetries.increment();
      failoverBackoff(attempt); // from ~0.3 ms: a copy that failed is usually a server going away
      refresh(t);
    }
  }

  /** Shard {@code shard}'s copies in {@code t}: its primary, then its backups. */
  private static int[] copiesOf(TableInfo t, int shard) {
    int[] b = t.backupsOf(shard);
    int[] out = new int[1 + b.length];
    out[0] = t.servers()[shard];
    for (int i = 0; i < b.length; i++) {
      out[1 + i] = TableInfo.copyServer(b[i]);
    }
    return out;
  }

  /**
   * A REPLICATE, ending with the placement version whose copies the shipper ships to: fenced like a
   * PUT (docs/KV.md "Repairs"). A write the primary applied but shipped late (its writer stalled;
   * the primary died meanwhile) may reach the promoted copy after a repair paged it into a new copy
   * the writer's placement does not name; the promoted copy refuses it (MOVED), so the writer
   * refetches the table and ships to the new copy too.
   */
  private Wire.Writer replicateRequest(
      int shard, long seq, boolean delete, byte[] key, byte[] value, long version) {
    return ids(shard, 25 + key.length + value.length)
        .i64(seq)
        .u8(delete ? 1 : 0)
        .bytes(key)
        .bytes(value)
        .i64(version);
  }

  /** One REPLICATE to {@code server}; a copy the server does not have yet is opened there first. */
  private void shipTo(
      int server, int shard, long seq, boolean delete, byte[] key, byte[] value, long version) {
    Wire.Writer body = replicateRequest(shard, seq, delete, key, value, version);
    try {
      rpcTo(server, KvProtocol.REPLICATE, body.toBuffer());
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.NOT_FOUND) {
        throw e;
      }
      openOn(server, shard);
      rpcTo(server, KvProtocol.REPLICATE, body.toBuffer());
    }
  }

  /**
   * As {@link #ship}, without waiting on the caller's thread: REPLICATE to every backup at once;
   * anything that fails goes through {@link #ship} on a retry thread.
   */
  private CompletableFuture<Void> shipAsync(
      int shard, Applied a, boolean delete, byte[] key, byte[] value) {
    if (a.seq == 0) {
      return CompletableFuture.completedFuture(null);
    }
    long version = placementVersion; // before the table, as in ship
    TableInfo t = info;
    if (t.servers()[shard] != a.server) {
      // The write's primary was deposed since it answered: the new primary first (see ship).
      return CompletableFuture.runAsync(() -> ship(shard, a, delete, key, value), RETRIES);
    }
    List<CompletableFuture<ByteBuffer>> sent = new ArrayList<>(2);
    for (int server : copiesOf(t, shard)) {
      if (server != a.server) {
        sent.add(
            client.call(
                server,
                KvProtocol.SERVER_SERVICE,
                KvProtocol.REPLICATE,
                replicateRequest(shard, a.seq, delete, key, value, version).toBuffer()));
      }
    }
    return CompletableFuture.allOf(sent.toArray(new CompletableFuture<?>[0]))
        .handle(
            (v, err) ->
                err == null
                    ? CompletableFuture.<Void>completedFuture(null)
                    : CompletableFuture.runAsync(() -> ship(shard, a, delete, key, value), RETRIES))
        .thenCompose(f -> f);
  }

  /**
   * One write RPC, sent again only when the answer says it did not happen: NOT_FOUND (the server
   * has no such shard: it restarted; the master is asked where the shard lives, and it is opened
   * there), BUSY (the shard is frozen while it moves, or the server is saturated: after a backoff)
   * and MOVED (the shard was retired there: to the server the master names now).
   */
  private ByteBuffer writeRpc(int shard, int opcode, Wire.Writer body) {
    return writeRpc(shard, opcode, body, new int[1]);
  }

  /** As above; {@code at[0]} is set to the server that answered. */
  private ByteBuffer writeRpc(int shard, int opcode, Wire.Writer body, int[] at) {
    long deadline = 0;
    boolean reopened = false;
    for (int attempt = 0; ; attempt++) {
      TableInfo t = info;
      int server = primary(t, shard);
      at[0] = server;
      try {
        return rpcTo(server, opcode, withVersion(opcode, body));
      } catch (FerriteException e) {
        if (failover(t, shard, e)) {
          // A replicated shard's primary is unreachable: wait (bounded) for the master to
          // declare it DEAD and promote a backup, then write there. The write is sent again only
          // to another server: one the dead primary may have applied without shipping died with
          // it (it was never acknowledged).
          long now = System.nanoTime();
          if (deadline == 0) {
            deadline = now + MOVE_DEADLINE_NANOS;
          } else if (now - deadline > 0) {
            throw e;
          }
          stats.failoverWaits.increment();
          failoverBackoff(attempt);
          refresh(t);
        } else if (e.code() == ErrorCode.NOT_FOUND && !reopened) {
          // The server has no such shard: it restarted (a none table's, or one never opened
          // there), or the shard moved. The master is asked first: a shard it lists as lost (its
          // server came back without its kv log) answers DATA_LOST, never opened again, empty.
          reopened = true;
          refresh(t);
          if (info.servers()[shard] == server) {
            try {
              layouts.set(shard, installed(shard, open(shard)));
            } catch (FerriteException o) {
              if (o.code() != ErrorCode.MOVED) {
                throw o;
              }
              // The server lost its copy with its log and another took over (KvService): the
              // master names it once it has heard; asked again on the next NOT_FOUND.
              deadline = awaitMove(t, shard, attempt, deadline, o);
              reopened = false;
            }
          }
        } else if (e.code() == ErrorCode.MOVED) {
          deadline = awaitMove(t, shard, attempt, deadline, e);
        } else if (e.code() == ErrorCode.BUSY) {
          long now = System.nanoTime();
          if (deadline == 0) {
            deadline = now + MOVE_DEADLINE_NANOS;
          } else if (now - deadline > 0) {
            throw e;
          }
          stats.busyRetries.increment();
          backoff(attempt);
        } else {
          throw e;
        }
      }
    }
  }

  /**
   * Whether an operation on {@code shard}'s primary that failed with {@code e} should wait for a
   * failover: the table is replicated, the error says the server could not be reached, and the
   * shard has another complete copy to promote.
   *
   * <p>The handle's {@code t} may be stale about that last point: a repair's {@code END_COPY} turns
   * a copy being filled into a full backup and bumps the placement version, but nothing tells a
   * writer that already fetched the table while the copy was being filled (the repair's fence only
   * refuses writers older than its {@code ADD_COPY}). So a handle that sees one complete copy asks
   * the master once before it gives up: a second server death after a repair would otherwise fail
   * every write at once, for good (issue #20, "p50 over 5 kills"). Blocks on that fetch; it costs
   * one master call per failed operation on a shard with a single copy, whose primary is
   * unreachable anyway.
   */
  private boolean failover(TableInfo t, int shard, FerriteException e) {
    if (!unreachable(t, e)) {
      return false;
    }
    if (t.copies(shard) > 1) {
      return true;
    }
    try {
      refresh(t);
    } catch (FerriteException master) {
      e.addSuppressed(master); // the master cannot say either: the caller fails with e
      return false;
    }
    TableInfo now = info;
    // Another primary already (the promotion happened), or a second complete copy to promote; or
    // the server answered that its lease lapsed (docs/KV.md "Leases"): it serves again once the
    // master hears from it, unless the master deposes it first. Both are worth the bounded wait.
    return now.servers()[shard] != t.servers()[shard] || now.copies(shard) > 1 || leaseLapsed(e);
  }

  /**
   * Whether {@code e} is a server's refusal to serve a replicated shard while its lease from the
   * master lapsed ({@link io.ferrite.fabric.MappedRegion#LEASE_LAPSED}): it answered, so it is not
   * gone, unlike a connection that failed with the same code.
   */
  static boolean leaseLapsed(FerriteException e) {
    String m = e.getMessage();
    return e.code() == ErrorCode.UNAVAILABLE
        && m != null
        && m.contains(io.ferrite.fabric.MappedRegion.LEASE_LAPSED);
  }

  /** Whether {@code e} says a replicated table's server could not be reached (never blocks). */
  private static boolean unreachable(TableInfo t, FerriteException e) {
    return t.options().replicas() > 1
        && (e.code() == ErrorCode.UNAVAILABLE
            || e.code() == ErrorCode.TIMEOUT
            || e.code() == ErrorCode.DROPPED);
  }

  // ------------------------------------------------------------------ pipelined writes (RPC)

  /**
   * Where writes refused without being applied (BUSY, MOVED, NOT_FOUND) are sent again, blocking,
   * off the fabric's threads that completed the first attempt. Rarely used (a shard moving, a
   * server restarting): threads are made on demand and die after a minute idle.
   */
  private static final ExecutorService RETRIES =
      new ThreadPoolExecutor(
          0,
          64,
          60,
          TimeUnit.SECONDS,
          new SynchronousQueue<>(),
          r -> {
            Thread t = new Thread(r, "kv-write-retry");
            t.setDaemon(true);
            return t;
          },
          new ThreadPoolExecutor.CallerRunsPolicy());

  /** Whether a write answered {@code e} did not happen and may be sent again. */
  private static boolean redoable(FerriteException e) {
    return e.code() == ErrorCode.BUSY
        || e.code() == ErrorCode.MOVED
        || e.code() == ErrorCode.NOT_FOUND;
  }

  /**
   * As {@link #put}, without waiting: the future completes with whether the key was new once the
   * server applied the put (for an {@code always} table, once it is on disk). Puts of one thread to
   * one key are applied in issue order (class comment).
   */
  public CompletableFuture<Boolean> putAsync(byte[] key, byte[] value) {
    checkKey(key);
    metPut.count();
    checkValue(value);
    int shard = shardOf(key);
    Wire.Writer body = putRequest(shard, KvProtocol.MODE_PUT, key, value, new byte[0]);
    if (info.options().replicas() > 1) {
      return writeRpcAsync(shard, KvProtocol.PUT, body)
          .thenCompose(
              a -> shipAsync(shard, a, false, key, value).thenApply(v -> a.status == CREATED));
    }
    return writeRpcAsync(shard, KvProtocol.PUT, body)
        .thenApply(a -> a.status == KvProtocol.CREATED);
  }

  private static final int CREATED = KvProtocol.CREATED;

  /** As {@link #delete}, without waiting: the future says whether the key was present. */
  public CompletableFuture<Boolean> deleteAsync(byte[] key) {
    checkKey(key);
    metDelete.count();
    int shard = shardOf(key);
    return writeRpcAsync(shard, KvProtocol.DELETE, fenced(ids(shard).bytes(key)))
        .thenCompose(
            a ->
                shipAsync(shard, a, true, key, NO_BYTES)
                    .thenApply(v -> a.status == KvProtocol.DELETED));
  }

  private CompletableFuture<Applied> writeRpcAsync(int shard, int opcode, Wire.Writer body) {
    TableInfo t = info;
    int server = primary(t, shard);
    return client
        .call(server, KvProtocol.SERVER_SERVICE, opcode, withVersion(opcode, body))
        .handle(
            (b, err) -> {
              if (err == null) {
                return CompletableFuture.completedFuture(applied(b, server));
              }
              FerriteException e = FerriteException.unwrap(err);
              // Not failover(): it may fetch the table, and this is a fabric thread. The retry
              // thread's writeRpc decides, as a blocking put does.
              if (!redoable(e) && !unreachable(t, e)) {
                return CompletableFuture.<Applied>failedFuture(e);
              }
              return CompletableFuture.supplyAsync(() -> written(shard, opcode, body), RETRIES);
            })
        .thenCompose(f -> f);
  }

  /**
   * Stores {@code values.get(i)} under {@code keys.get(i)} for every i: one MULTI_PUT per server
   * with all of that server's pairs, sent together, then awaited. Returns, per pair, whether its
   * key was new. Pairs of one key are applied in list order; the call is not atomic across keys (a
   * failure may leave some pairs applied).
   */
  public List<Boolean> multiPut(List<byte[]> keys, List<byte[]> values) {
    return Futures.join(multiPut(keys, values, true));
  }

  /** As {@link #multiPut}, without waiting (pipelined multiPuts keep their order per key). */
  public CompletableFuture<List<Boolean>> multiPutAsync(List<byte[]> keys, List<byte[]> values) {
    return multiPut(keys, values, false);
  }

  /**
   * {@code blocking}: the caller waits for the answers anyway, so the last server's MULTI_PUT is a
   * blocking call on the caller's thread ({@link FerriteClient#callSync}: over tcp a lane when the
   * connection has nothing in flight, which keeps a thread's earlier async writes first), the
   * others are sent before it without waiting. The caller reads its own answer instead of an I/O
   * thread reading it and waking the caller (issue #19: what 16-pair batches of 1 KiB lost to
   * Redis's pipeline).
   */
  private CompletableFuture<List<Boolean>> multiPut(
      List<byte[]> keys, List<byte[]> values, boolean blocking) {
    int n = keys.size();
    metMultiPut.count(n);
    if (values.size() != n) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "values: " + values.size() + " (expected: as many as keys, " + n + ")");
    }
    byte[][] ks = new byte[n][];
    byte[][] vs = new byte[n][];
    int[] shards = new int[n];
    for (int i = 0; i < n; i++) {
      ks[i] = keys.get(i);
      vs[i] = values.get(i);
      checkKey(ks[i]);
      checkValue(vs[i]);
      shards[i] = shardOf(ks[i]);
    }
    TableInfo t = info;
    if (t.options().replicas() > 1) {
      // Each pair is shipped to its shard's backups with its own sequence: pair by pair, all in
      // flight at once (on one connection per primary, so pairs of one key keep list order).
      List<CompletableFuture<Boolean>> each = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        each.add(putAsync(ks[i], vs[i]));
      }
      return CompletableFuture.allOf(each.toArray(new CompletableFuture<?>[0]))
          .thenApply(v -> each.stream().map(CompletableFuture::join).toList());
    }
    boolean[] created = new boolean[n];
    // Pairs by server, in list order; a multiPut touches a few servers.
    List<Integer> servers = new ArrayList<>(2);
    List<List<Integer>> pairs = new ArrayList<>(2);
    for (int i = 0; i < n; i++) {
      int server = primary(t, shards[i]);
      int at = servers.indexOf(server);
      if (at < 0) {
        at = servers.size();
        servers.add(server);
        pairs.add(new ArrayList<>());
      }
      pairs.get(at).add(i);
    }
    List<CompletableFuture<Void>> sent = new ArrayList<>(servers.size());
    for (int s = 0; s < servers.size(); s++) {
      List<Integer> idx = pairs.get(s);
      int bytes = 12;
      for (int i : idx) {
        bytes += 12 + ks[i].length + vs[i].length;
      }
      if (blocking && s == servers.size() - 1) {
        ByteBuffer request = SendBuffers.take(bytes);
        request.putLong(t.tableId()).putInt(idx.size());
        for (int i : idx) {
          request.putInt(shards[i]).putInt(ks[i].length).put(ks[i]);
          request.putInt(vs[i].length).put(vs[i]);
        }
        request.flip();
        ByteBuffer b = null;
        FerriteException err = null;
        try {
          b =
              client.callSync(
                  servers.get(s), KvProtocol.SERVER_SERVICE, KvProtocol.MULTI_PUT, request);
          SendBuffers.give(request);
        } catch (FerriteException e) {
          // The request may still be referenced by a write in flight: not reused.
          err = e;
        }
        sent.add(multiPutAnswer(b, err, idx, ks, vs, created));
        continue;
      }
      Wire.Writer w = new Wire.Writer(bytes).i64(t.tableId()).i32(idx.size());
      for (int i : idx) {
        w.i32(shards[i]).bytes(ks[i]).bytes(vs[i]);
      }
      sent.add(
          client
              .call(servers.get(s), KvProtocol.SERVER_SERVICE, KvProtocol.MULTI_PUT, w.toBuffer())
              .handle((b, err) -> multiPutAnswer(b, err, idx, ks, vs, created))
              .thenCompose(f -> f));
    }
    return CompletableFuture.allOf(sent.toArray(new CompletableFuture<?>[0]))
        .thenApply(
            v -> {
              List<Boolean> out = new ArrayList<>(n);
              for (boolean c : created) {
                out.add(c);
              }
              return out;
            });
  }

  /**
   * Reads one server's MULTI_PUT answer into {@code created}; pairs refused without being applied
   * (or all of them, if the whole call was) are put again one by one on a retry thread.
   */
  private CompletableFuture<Void> multiPutAnswer(
      ByteBuffer b, Throwable err, List<Integer> idx, byte[][] ks, byte[][] vs, boolean[] created) {
    List<Integer> again = new ArrayList<>();
    FerriteException failed = null;
    if (err != null) {
      FerriteException e = FerriteException.unwrap(err);
      if (!redoable(e)) {
        return CompletableFuture.failedFuture(e);
      }
      again.addAll(idx);
    } else {
      Wire.Reader r = new Wire.Reader(b, "kv multiPut");
      int n = r.count("pairs", idx.size());
      if (n != idx.size()) {
        return CompletableFuture.failedFuture(
            new FerriteException(
                ErrorCode.INTERNAL, "multiPut answered " + n + " pairs of " + idx.size()));
      }
      for (int i : idx) {
        int status = r.u8("status");
        if (status == KvProtocol.FAILED) {
          FerriteException e =
              new FerriteException(ErrorCode.fromWire(r.u16("code")), r.str("message"));
          if (redoable(e)) {
            again.add(i);
          } else if (failed == null) {
            failed = e;
          }
        } else {
          created[i] = status == KvProtocol.CREATED;
        }
      }
      r.end();
    }
    if (failed != null) {
      return CompletableFuture.failedFuture(failed);
    }
    if (again.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    return CompletableFuture.runAsync(
        () -> {
          for (int i : again) {
            created[i] = put(ks[i], vs[i]);
          }
        },
        RETRIES);
  }

  /**
   * Grows every shard's table array to at least {@code slotsPerShard} slots, one shard at a time,
   * while readers and writers go on: each server builds the new array, poisons the old one and
   * bumps the layout epoch; readers with the old layout see the poison and fetch the new one.
   *
   * @throws FerriteException NO_SPACE if a shard's keys do not fit (that shard is unchanged)
   */
  public void resize(int slotsPerShard) {
    for (int i = 0; i < info.options().shards(); i++) {
      resizeShard(i, slotsPerShard);
    }
  }

  /**
   * Grows shard {@code shard}'s table array to at least {@code slots} slots (see {@link #resize}).
   */
  public void resizeShard(int shard, int slots) {
    if (shard < 0 || shard >= info.options().shards()) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "shard: " + shard + " (expected: >= 0 and < " + info.options().shards() + ")");
    }
    layout(shard);
    ByteBuffer b = writeRpc(shard, KvProtocol.RESIZE, ids(shard).i32(slots));
    layouts.set(shard, installed(shard, readLayout(serverOf(shard), b)));
  }

  // ------------------------------------------------------------------ stats

  /** Every shard's counts, from its server (DATA_LOST if one was lost). */
  public List<ShardStats> stats() {
    List<ShardStats> out = new ArrayList<>();
    for (int i = 0; i < info.options().shards(); i++) {
      out.add(stats(i));
    }
    return out;
  }

  /**
   * Shard {@code shard}'s counts, from its server.
   *
   * @throws FerriteException DATA_LOST if the shard was lost ({@link TableInfo#lost})
   */
  public ShardStats stats(int shard) {
    layout(shard);
    Wire.Reader r = new Wire.Reader(writeRpc(shard, KvProtocol.STATS, ids(shard)), "kv stats");
    ShardStats s = ShardStats.read(r);
    r.end();
    return s;
  }
}
