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
import io.ferrite.tx.TxProtocol;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The tx face's memory-server service: the primary of its tx regions (allocation, and the
 * participant's half of FaRM §3.4's commit: LOCK, COMMIT-PRIMARY, ABORT; and the single-server
 * commit that locks, validates and applies in one step).
 *
 * <h2>A coordinator that dies after LOCK</h2>
 *
 * Each LOCK names a <i>decider</i>: the participant with the lowest server id. The coordinator
 * sends COMMIT to the decider first and to the others only after the decider answered OK; the
 * decider's answer is the transaction's commit point. LOCK carries the new values (as FaRM's LOCK
 * records do), so every participant can finish the transaction without its coordinator. A
 * transaction whose coordinator sent neither COMMIT nor ABORT within {@code tx.lock.lease} of its
 * LOCK is resolved by the participant's reaper: the decider aborts it (and will refuse a late
 * COMMIT: the decision is taken once, under this service's monitor); any other participant asks the
 * decider (OUTCOME) and commits or aborts as told, keeping its locks while the decider has not
 * decided or cannot be reached. So locks never stay held past a lease plus a reaper tick while the
 * decider is up, and the transaction stays atomic. (A dead decider keeps the others' locks until
 * the replication slice's recovery resolves it from the logs: docs/TX.md.)
 */
public final class TxService implements FerriteService {
  /** A transaction locked here, waiting for COMMIT or ABORT. */
  private record Pending(long txid, int decider, List<Write> writes, long deadlineNanos) {}

  /** One write-set entry. */
  record Write(FatPointer ptr, long expected, int kind, byte[] value) {}

  private final Map<Integer, TxRegion> regions = new ConcurrentHashMap<>();
  private final Map<Long, Pending> pending = new HashMap<>();

  /** Decided transactions (true: committed), kept for late messages; bounded, oldest dropped. */
  private final LinkedHashMap<Long, Boolean> outcomes =
      new LinkedHashMap<>() {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
          return size() > 1 << 16;
        }
      };

  private ServiceContext context;
  private long regionSize;
  private long slabSize;
  private int maxSize;
  private Duration lease;
  private Thread reaper;
  private Shipping shipping;
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
    this.shipping = new Shipping(this, TxService.class.getClassLoader());
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
  }

  @Override
  public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
    try {
      return CompletableFuture.completedFuture(dispatch(caller, opcode, request));
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    } catch (IllegalArgumentException e) {
      return CompletableFuture.failedFuture(
          new FerriteException(ErrorCode.INVALID_ARGUMENT, "tx: " + e.getMessage()));
    }
  }

  private ByteBuffer dispatch(RpcContext caller, int opcode, ByteBuffer request) {
    Wire.Reader r = new Wire.Reader(request, "tx request " + opcode);
    Wire.Writer w = new Wire.Writer();
    switch (opcode) {
      case TxProtocol.OPEN_REGION -> {
        int id = r.i32("region");
        r.end();
        RegionRef ref = context.readRef(region(id).memory());
        w.i32(ref.regionId()).i64(ref.rkey()).i64(ref.length());
      }
      case TxProtocol.ALLOC -> {
        int id = r.i32("region");
        int size = r.i32("size");
        r.end();
        long[] slot = region(id).allocate(size);
        w.i64(slot[0]).i64(slot[1]);
      }
      case TxProtocol.LOCK -> {
        long txid = r.i64("txid");
        int decider = r.i32("decider");
        List<Write> writes = writes(r);
        r.end();
        w.u8(lock(txid, decider, writes));
      }
      case TxProtocol.COMMIT -> {
        long txid = r.i64("txid");
        r.end();
        w.u8(commit(txid));
      }
      case TxProtocol.ABORT -> {
        long txid = r.i64("txid");
        r.end();
        abort(txid);
        w.u8(TxProtocol.OK);
      }
      case TxProtocol.COMMIT_LOCAL -> {
        r.i64("txid");
        List<Write> writes = writes(r);
        int n = r.count("reads", 1 << 20);
        List<FatPointer> reads = new ArrayList<>(n);
        List<Long> versions = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          reads.add(FatPointer.readFrom(r));
          versions.add(r.i64("version"));
        }
        r.end();
        w.u8(commitLocal(writes, reads, versions));
      }
      case TxProtocol.SHIP -> {
        String name = r.str("function");
        FatPointer at = FatPointer.readFrom(r);
        byte[] argument = r.bytes("argument");
        r.end();
        Shipping.Outcome o = shipping.run(name, at, argument);
        w.u8(o.status()).bytes(o.output());
      }
      case TxProtocol.OUTCOME -> {
        Permissions.require(caller, Role.SERVER, "tx OUTCOME");
        long txid = r.i64("txid");
        r.end();
        w.u8(outcome(txid));
      }
      default ->
          throw new FerriteException(ErrorCode.UNKNOWN_OPCODE, "tx: unknown opcode " + opcode);
    }
    return w.toBuffer();
  }

  private List<Write> writes(Wire.Reader r) {
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
      region(p.region()).check(p);
      out.add(new Write(p, expected, kind, value));
    }
    return out;
  }

  /**
   * The region {@code id} if this server is its primary: made on first use, after the master's map
   * confirmed the placement.
   *
   * @throws FerriteException MOVED if the master's map names another primary (the caller's map is
   *     stale), NO_SUCH_REGION if the map has no such region
   */
  TxRegion region(int id) {
    TxRegion r = regions.get(id);
    if (r != null) {
      return r;
    }
    ByteBuffer answer =
        context
            .master()
            .connection()
            .callSync(
                TxProtocol.MASTER_SERVICE,
                TxProtocol.GET_REGION,
                new Wire.Writer().i32(id).toBuffer(),
                Duration.ofSeconds(10));
    Wire.Reader a = new Wire.Reader(answer, "tx region placement");
    a.i32("region");
    int primary = a.i32("primary");
    int n = a.count("backups", 64);
    for (int i = 0; i < n; i++) {
      a.i32("backup");
    }
    boolean opened = a.u8("opened") != 0;
    if (primary != context.serverId()) {
      throw new FerriteException(
          ErrorCode.MOVED,
          "tx region " + id + " has primary server " + primary + ", not " + context.serverId());
    }
    synchronized (regions) {
      r = regions.get(id);
      if (r != null) {
        return r;
      }
      if (opened) {
        // Made by an earlier process of this server: its DRAM is gone (no replicas yet).
        throw new FerriteException(
            ErrorCode.DATA_LOST,
            "tx region "
                + id
                + " was lost with server "
                + context.serverId()
                + "'s memory (it restarted; tx regions have no replicas yet)");
      }
      r = new TxRegion(id, context.createRegion("dram", regionSize), slabSize, maxSize);
      // Journaled before any object is allocated in it, so a later process knows it lost them.
      context
          .master()
          .connection()
          .callSync(
              TxProtocol.MASTER_SERVICE,
              TxProtocol.OPENED,
              new Wire.Writer().i32(id).toBuffer(),
              Duration.ofSeconds(10));
      regions.put(id, r);
      return r;
    }
  }

  private int lock(long txid, int decider, List<Write> writes) {
    synchronized (this) {
      if (outcomes.containsKey(txid)) {
        return TxProtocol.ABORTED; // an ABORT (or the reaper) came first: never lock it
      }
      int st = lockAll(writes);
      if (st == TxProtocol.OK) {
        pending.put(txid, new Pending(txid, decider, writes, System.nanoTime() + lease.toNanos()));
      }
      return st;
    }
  }

  /** Locks every write (FaRM §3.4 LOCK: version check and lock bit); all or none. */
  private int lockAll(List<Write> writes) {
    for (int i = 0; i < writes.size(); i++) {
      Write wr = writes.get(i);
      int st = regions.get(wr.ptr().region()).lock(wr.ptr(), wr.expected());
      if (st != TxProtocol.OK) {
        for (int j = 0; j < i; j++) {
          Write u = writes.get(j);
          regions.get(u.ptr().region()).unlock(u.ptr(), u.expected());
        }
        return st;
      }
    }
    return TxProtocol.OK;
  }

  private void applyAll(List<Write> writes) {
    for (Write wr : writes) {
      regions
          .get(wr.ptr().region())
          .apply(wr.ptr(), wr.expected(), wr.kind() == TxProtocol.KIND_FREE, wr.value());
    }
  }

  private synchronized int commit(long txid) {
    Pending t = pending.remove(txid);
    if (t == null) {
      Boolean done = outcomes.get(txid);
      return done != null && done ? TxProtocol.OK : TxProtocol.ABORTED;
    }
    applyAll(t.writes());
    outcomes.put(txid, true);
    return TxProtocol.OK;
  }

  private synchronized void abort(long txid) {
    Pending t = pending.remove(txid);
    if (t != null) {
      for (Write u : t.writes()) {
        regions.get(u.ptr().region()).unlock(u.ptr(), u.expected());
      }
    }
    outcomes.putIfAbsent(txid, false);
  }

  /**
   * The decider's answer about {@code txid}: its decision, PENDING while its lease runs, else it
   * aborts it now (an unknown transaction is recorded aborted, so its late LOCK is refused).
   */
  private synchronized int outcome(long txid) {
    Boolean done = outcomes.get(txid);
    if (done != null) {
      return done ? TxProtocol.OK : TxProtocol.ABORTED;
    }
    Pending t = pending.get(txid);
    if (t != null && System.nanoTime() - t.deadlineNanos() < 0) {
      return TxProtocol.PENDING;
    }
    abort(txid);
    return TxProtocol.ABORTED;
  }

  /**
   * A single-server transaction (FaRM §3.4, single machine transactions: "write set locking and
   * read set validation are local"): the write set is locked, the read set validated against this
   * server's own memory while the locks are held, then the writes applied and unlocked. The instant
   * of validation, with the locks held, is its serialization point; no other server holds any of
   * its objects, so nothing needs one-sided validation.
   */
  int commitLocal(List<Write> writes, List<FatPointer> reads, List<Long> versions) {
    for (FatPointer p : reads) {
      region(p.region()).check(p);
    }
    int st = lockAll(writes);
    if (st != TxProtocol.OK) {
      return st;
    }
    for (int i = 0; i < reads.size(); i++) {
      if (!regions.get(reads.get(i).region()).holds(reads.get(i), versions.get(i))) {
        for (Write u : writes) {
          regions.get(u.ptr().region()).unlock(u.ptr(), u.expected());
        }
        return TxProtocol.CHANGED;
      }
    }
    applyAll(writes);
    return TxProtocol.OK;
  }

  /** The reaper loop: resolves transactions whose lock lease lapsed (see the class comment). */
  private void reap() {
    long tick = Math.max(1, lease.toMillis() / 4);
    while (!stopping) {
      try {
        Thread.sleep(tick);
      } catch (InterruptedException e) {
        return;
      }
      List<Pending> lapsed = new ArrayList<>();
      synchronized (this) {
        long now = System.nanoTime();
        for (Pending t : pending.values()) {
          if (now - t.deadlineNanos() >= 0) {
            lapsed.add(t);
          }
        }
      }
      for (Pending t : lapsed) {
        if (t.decider() == context.serverId()) {
          outcome(t.txid()); // aborts it unless it was decided meanwhile
          continue;
        }
        int answer;
        try {
          ByteBuffer b =
              context
                  .peer(t.decider())
                  .callSync(
                      TxProtocol.SERVER_SERVICE,
                      TxProtocol.OUTCOME,
                      new Wire.Writer().i64(t.txid()).toBuffer(),
                      lease);
          answer = new Wire.Reader(b, "tx outcome").u8("status");
        } catch (FerriteException e) {
          continue; // decider unreachable: keep the locks, ask again next tick
        }
        if (answer == TxProtocol.OK) {
          commit(t.txid());
        } else if (answer == TxProtocol.ABORTED) {
          abort(t.txid());
        }
      }
    }
  }

  /** Locked transactions at this server (tests). */
  synchronized int pendingCount() {
    return pending.size();
  }
}
