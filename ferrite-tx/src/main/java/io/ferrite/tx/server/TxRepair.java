package io.ferrite.tx.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.ServiceContext;
import io.ferrite.tx.ObjectLayout;
import io.ferrite.tx.TxConfig;
import io.ferrite.tx.TxPlacement;
import io.ferrite.tx.TxProtocol;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.locks.LockSupport;

/**
 * Re-replication at a primary and at the copy it fills (docs/TX.md, "Recovery: a new copy"). The
 * master adds a live server to a region as a FILLING copy ({@code TxRepairs}); the primary learns
 * it on its repair thread's tick ({@link #tick}: GET_PLACEMENT of each region it is the primary of,
 * every {@code tx.lock.lease / 4}, 10 to 500 ms) and, on its own fill thread:
 *
 * <ol>
 *   <li>FILL_BEGIN: the target makes an empty copy (replacing one of an older fill);
 *   <li>the target joins the region's backups ({@link TxRegion#beginFill}): every record is
 *       forwarded to it from then on, so nothing that commits later is missed;
 *   <li>FILL_STATE: slab classes, the LOCK records pending here, the decisions taken here (taken
 *       after 2, so a transaction locked or decided later reaches it as a record);
 *   <li>FILL_OBJECTS: every slot up to each slab's bump pointer, its image read from the region and
 *       verified (consistent and unlocked: read again while locked or torn), installed at the
 *       target by version, so an image that races a forwarded write never takes an object back;
 *   <li>END_FILL to the master: the copy becomes a backup (a FILLING copy is never promoted).
 * </ol>
 *
 * A fill whose target stops answering is abandoned (the master drops the target when it is declared
 * dead, and adds another server); one that fails otherwise is begun again next tick.
 */
final class TxRepair {
  private static final System.Logger LOG = System.getLogger(TxRepair.class.getName());

  /** How long a fill waits for a locked object or an unanswering target before it gives up. */
  private static final long PATIENCE_NANOS = 30_000_000_000L;

  private static final int BATCH_BYTES = 32 * 1024;

  private static final int STATE_BYTES = 1 << 20;

  private final TxService service;
  private final ServiceContext context;
  private final Map<Integer, TxRegion> regions;
  private final Map<Integer, TxMirror> mirrors;
  private final long regionSize;
  private final long slabSize;
  private final Duration pause;
  private final ExecutorService filler;
  private final java.util.concurrent.ScheduledExecutorService ticker;
  private final Map<Long, Long> active = new ConcurrentHashMap<>();
  private volatile boolean stopping;

  TxRepair(
      TxService service,
      ServiceContext context,
      Map<Integer, TxRegion> regions,
      Map<Integer, TxMirror> mirrors,
      long regionSize) {
    this.service = service;
    this.context = context;
    this.regions = regions;
    this.mirrors = mirrors;
    this.regionSize = regionSize;
    this.slabSize = context.config().getSize(TxConfig.SLAB_SIZE);
    this.pause = Duration.ofMillis(Math.max(0, context.config().getInt(TxConfig.FILL_PAUSE)));
    this.filler =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "tx-fill-" + context.serverId());
              t.setDaemon(true);
              return t;
            });
    // Its own thread, not the reaper's: a GET_PLACEMENT the network drops must not hold up the
    // resolution of lapsed locks.
    this.ticker =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "tx-repair-" + context.serverId());
              t.setDaemon(true);
              return t;
            });
    long period =
        Math.max(
            10, Math.min(500, context.config().getDuration(TxConfig.LOCK_LEASE).toMillis() / 4));
    ticker.scheduleWithFixedDelay(
        () -> {
          try {
            tick();
          } catch (FerriteException | java.util.concurrent.CompletionException e) {
            // The master is unreachable: again next tick.
          }
        },
        period,
        period,
        java.util.concurrent.TimeUnit.MILLISECONDS);
  }

  void stop() {
    stopping = true;
    ticker.shutdownNow();
    filler.shutdownNow();
  }

  /** Every tick: each region's placement; a fill begun for each new FILLING copy. */
  void tick() {
    for (TxRegion r : List.copyOf(regions.values())) {
      TxPlacement p = service.placement(r.id());
      if (p.primary() != context.serverId()) {
        // Deposed (declared dead while alive, a backup promoted): stop serving it to RPCs now, not
        // at the next record it forwards. Its one-sided reads stopped when its lease lapsed, and
        // the lease's check retired it before the lease was granted again (docs/TX.md "Leases").
        regions.remove(r.id(), r);
        continue;
      }
      r.placement(p.epoch(), p.backups(), p.filling().keySet());
      p.filling()
          .forEach(
              (target, since) -> {
                long key = ((long) r.id() << 32) | target;
                if (active.putIfAbsent(key, since) == null) {
                  try {
                    filler.execute(
                        () -> {
                          try {
                            fill(r, target, since);
                          } catch (FerriteException e) {
                            LOG.log(
                                System.Logger.Level.INFO,
                                "tx region {0}: fill of server {1} abandoned: {2}",
                                r.id(),
                                target,
                                e.getMessage());
                          } finally {
                            active.remove(key);
                          }
                        });
                  } catch (java.util.concurrent.RejectedExecutionException stopped) {
                    active.remove(key);
                  }
                }
              });
    }
  }

  private void fill(TxRegion r, int target, long since) {
    long began = System.nanoTime();
    long deadline = began + PATIENCE_NANOS;
    send(r, target, TxProtocol.REC_FILL_BEGIN, new Wire.Writer().i64(since).toArray(), deadline);
    r.beginFill(target);
    TxService.FillState st = service.fillState(r.id());
    TxRegion.Layout layout = r.layout();
    // FILL_STATE in messages of about 1 MiB (a frame holds 4 MiB): the slabs and the first LOCK
    // records, then more LOCK records, then the decisions.
    Wire.Writer w = new Wire.Writer().i32(layout.slabs().size());
    layout.slabs().forEach(s -> w.i64(s[0]).i32((int) s[1]));
    List<TxMirror.LockRecord> locks = st.locks();
    int from = 0;
    boolean first = true;
    do {
      Wire.Writer part = new Wire.Writer();
      int n = 0;
      for (int i = from; i < locks.size() && part.size() < STATE_BYTES; i++, n++) {
        part.i64(locks.get(i).txid()).i32(locks.get(i).deciderRegion());
        TxService.writeSet(part, locks.get(i).writes());
      }
      from += n;
      Wire.Writer msg = first ? w : new Wire.Writer().i32(0);
      first = false;
      byte[] head = msg.i32(n).toArray();
      byte[] body = part.toArray();
      boolean last = from >= locks.size();
      byte[] tail =
          last ? decisions(st.decided(), st.pinned()) : new Wire.Writer().i32(0).toArray();
      ByteBuffer all = ByteBuffer.allocate(head.length + body.length + tail.length);
      send(
          r,
          target,
          TxProtocol.REC_FILL_STATE,
          all.put(head).put(body).put(tail).array(),
          deadline);
    } while (from < locks.size());
    int copied = 0;
    List<byte[]> batch = new ArrayList<>();
    int bytes = 0;
    for (long[] s : layout.slabs()) {
      int lines = (int) s[1];
      long size = (long) lines * ObjectLayout.LINE;
      for (long at = s[0]; at + size <= s[2]; at += size) {
        ByteBuffer image = read(r, at, lines, deadline);
        if (image == null) {
          continue; // never written (a promoted copy's slot its old primary never committed)
        }
        byte[] one =
            new Wire.Writer()
                .i64(at)
                .i32(lines)
                .u8(layout.free().contains(at) ? 0 : 1)
                .bytes(image.array())
                .toArray();
        batch.add(one);
        bytes += one.length;
        copied++;
        if (bytes >= BATCH_BYTES || !pause.isZero()) {
          sendObjects(r, target, batch, deadline);
          batch.clear();
          bytes = 0;
          if (!pause.isZero()) {
            LockSupport.parkNanos(pause.toNanos());
          }
        }
      }
    }
    sendObjects(r, target, batch, deadline);
    ByteBuffer answer =
        context
            .master()
            .connection()
            .callSync(
                TxProtocol.MASTER_SERVICE,
                TxProtocol.END_FILL,
                new Wire.Writer()
                    .i32(r.id())
                    .i32(context.serverId())
                    .i32(target)
                    .i64(since)
                    .toBuffer(),
                Duration.ofSeconds(10));
    boolean made = new Wire.Reader(answer, "tx END_FILL").u8("ok") != 0;
    LOG.log(
        System.Logger.Level.INFO,
        "tx region {0}: server {1} filled ({2} slots in {3} ms), {4}",
        r.id(),
        target,
        copied,
        (System.nanoTime() - began) / 1_000_000,
        made ? "now a backup" : "refused by the master (the placement moved on)");
    TxPlacement p = service.placement(r.id());
    r.placement(p.epoch(), p.backups(), p.filling().keySet());
  }

  /**
   * The decisions part of FILL_STATE (the last {@code tx.decisions.kept} and every pinned one, each
   * with the regions it is pinned for: docs/TX.md "Truncation").
   */
  private static byte[] decisions(Map<Long, Boolean> decided, Map<Long, int[]> pinned) {
    Wire.Writer w = new Wire.Writer().i32(decided.size());
    decided.forEach(
        (txid, commit) -> {
          int[] pins = pinned.getOrDefault(txid, TxLog.NO_PINS);
          w.i64(txid).u8(commit ? 1 : 0).i32(pins.length);
          for (int region : pins) {
            w.i32(region);
          }
        });
    return w.toArray();
  }

  private void sendObjects(TxRegion r, int target, List<byte[]> batch, long deadline) {
    if (batch.isEmpty()) {
      return;
    }
    Wire.Writer w = new Wire.Writer().i32(batch.size());
    int len = 4;
    for (byte[] b : batch) {
      len += b.length;
    }
    ByteBuffer body = ByteBuffer.allocate(len).order(ByteOrder.LITTLE_ENDIAN);
    body.put(w.toArray());
    batch.forEach(body::put);
    send(r, target, TxProtocol.REC_FILL_OBJECTS, body.array(), deadline);
  }

  /** A verified, unlocked image of the slot at {@code at}, or null if it was never written. */
  private ByteBuffer read(TxRegion r, long at, int lines, long deadline) {
    ByteBuffer b = ByteBuffer.allocate(lines * ObjectLayout.LINE).order(ByteOrder.LITTLE_ENDIAN);
    for (int attempt = 0; ; attempt++) {
      if (r.memory().getLongAcquire(at) == 0) {
        return null;
      }
      b.clear();
      r.memory().readInto(at, b);
      if (ObjectLayout.verify(b.clear(), lines, b.getLong(ObjectLayout.INCARNATION)) >= 0) {
        return b;
      }
      check(r, deadline, "object at offset " + at + " stayed locked");
      LockSupport.parkNanos(Math.min(1_000_000L, 10_000L << Math.min(attempt, 10)));
    }
  }

  private void check(TxRegion r, long deadline, String what) {
    if (stopping || regions.get(r.id()) != r || System.nanoTime() - deadline > 0) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE,
          "tx region " + r.id() + " fill: " + (stopping ? "stopping" : what + " or deposed"));
    }
  }

  /** Sends one fill record, again every 20 ms until acknowledged, the target dropped, or late. */
  private void send(TxRegion r, int target, int type, byte[] body, long deadline) {
    byte[] head = new Wire.Writer().i32(r.id()).i64(r.epoch()).u8(type).toArray();
    ByteBuffer msg = ByteBuffer.allocate(head.length + body.length).put(head).put(body).flip();
    while (true) {
      try {
        context
            .peer(target)
            .callSync(
                TxProtocol.SERVER_SERVICE,
                TxProtocol.REPLICATE,
                msg.duplicate(),
                Duration.ofSeconds(2));
        return;
      } catch (FerriteException e) {
        check(r, deadline, "server " + target + " did not answer (" + e.getMessage() + ")");
        if (type == TxProtocol.REC_FILL_BEGIN
            ? !stillFilling(r, target, msg.duplicate().order(ByteOrder.LITTLE_ENDIAN).getLong(13))
            : !r.backups().contains(target)) {
          throw new FerriteException(
              ErrorCode.UNAVAILABLE, "tx region " + r.id() + ": fill target dropped by the master");
        }
        LockSupport.parkNanos(20_000_000L);
      }
    }
  }

  /**
   * Whether the master still lists {@code target} as filling {@code r} since {@code since} (true
   * while the master is unreachable: the deadline bounds the wait).
   */
  private boolean stillFilling(TxRegion r, int target, long since) {
    try {
      return service.placement(r.id()).filling().getOrDefault(target, -1L) == since;
    } catch (FerriteException e) {
      return true;
    }
  }

  /** A fill record at its target (REPLICATE, types FILL_BEGIN, FILL_STATE, FILL_OBJECTS). */
  void received(int id, int type, Wire.Reader r) {
    if (type == TxProtocol.REC_FILL_BEGIN) {
      long since = r.i64("since");
      r.end();
      synchronized (regions) {
        TxRegion stale = regions.get(id);
        if (stale != null) {
          // This server was the primary, was declared dead while alive and came back: the master
          // made another server primary and now asks it for a copy. Its region is deposed.
          regions.remove(id, stale);
          LOG.log(
              System.Logger.Level.INFO,
              "tx region {0}: server {1} was deposed; it takes a new copy instead",
              id,
              context.serverId());
        }
        TxMirror old = mirrors.get(id);
        if (old != null && old.since == since) {
          return; // the same fill begun again: what it holds is valid
        }
        TxMirror m =
            new TxMirror(id, context.createRegion("dram", regionSize), slabSize, service.kept());
        m.since = since;
        m.log(service.logs().create(id)); // a fresh log: the fill's images and records go to it
        mirrors.put(id, m);
        if (old != null) {
          old.promote(); // refuses every record from now on; freed
          context.freeRegion(old.memory());
        }
      }
      return;
    }
    TxMirror m = mirrors.get(id);
    if (m == null) {
      throw new FerriteException(
          ErrorCode.DATA_LOST,
          "tx region " + id + ": server " + context.serverId() + " holds no copy being filled");
    }
    boolean ok;
    if (type == TxProtocol.REC_FILL_STATE) {
      int n = r.count("slabs", 1 << 20);
      Map<Long, Integer> slabs = new HashMap<>();
      for (int i = 0; i < n; i++) {
        slabs.put(r.i64("slab"), r.i32("lines"));
      }
      int k = r.count("locks", 1 << 20);
      List<TxMirror.LockRecord> locks = new ArrayList<>(k);
      for (int i = 0; i < k; i++) {
        long txid = r.i64("txid");
        int decider = r.i32("deciderRegion");
        locks.add(new TxMirror.LockRecord(txid, decider, service.writes(r, false)));
      }
      int d = r.count("decided", 1 << 24);
      Map<Long, Boolean> decided = new java.util.LinkedHashMap<>();
      Map<Long, int[]> pinned = new HashMap<>();
      for (int i = 0; i < d; i++) {
        long txid = r.i64("txid");
        decided.put(txid, r.u8("commit") != 0);
        int[] pins = TxLog.readRegions(r);
        if (pins.length > 0) {
          pinned.put(txid, pins);
        }
      }
      r.end();
      ok = m.fillState(slabs, locks, decided, pinned);
    } else if (type == TxProtocol.REC_FILL_OBJECTS) {
      int n = r.count("objects", 1 << 20);
      ok = true;
      for (int i = 0; i < n; i++) {
        long at = r.i64("offset");
        int lines = r.i32("lines");
        boolean live = r.u8("live") != 0;
        byte[] image = r.bytes("image");
        if (lines < 1 || image.length != lines * ObjectLayout.LINE || at < 0 || at % 64 != 0) {
          throw new FerriteException(
              ErrorCode.INVALID_ARGUMENT,
              "tx fill object at " + at + ": " + image.length + " bytes for " + lines + " lines");
        }
        ok &= m.fillObject(at, lines, ByteBuffer.wrap(image), live);
      }
      r.end();
    } else {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "tx region " + id + ": unknown record " + type);
    }
    if (!ok) {
      throw new FerriteException(
          ErrorCode.MOVED, "tx region " + id + ": this copy was replaced or promoted");
    }
  }
}
