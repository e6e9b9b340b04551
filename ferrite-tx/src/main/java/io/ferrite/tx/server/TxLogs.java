package io.ferrite.tx.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.kernel.log.OpLog;
import io.ferrite.tx.server.TxService.Write;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

/**
 * A memory server's tx logs: one {@link TxLog} per region copy it holds (primary or backup), as
 * {@code region-<id>.log} in the tx service's directory, and the {@code tx.log.sync} policy:
 *
 * <ul>
 *   <li>{@code always}: {@link #durable} is the log's group commit: a copy answers (a primary its
 *       commit, a backup its acknowledgement) only once the fsync covering its record completed;
 *   <li>{@code interval}: a named thread asks every log for an fsync each {@code tx.log.interval};
 *       {@link #durable} is complete at once;
 *   <li>{@code none}: never fsynced (the page cache; a clean stop still syncs when it closes).
 * </ul>
 */
final class TxLogs implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(TxLogs.class.getName());
  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  /** {@code tx.log.sync}. */
  enum Sync {
    ALWAYS,
    INTERVAL,
    NONE;

    static Sync parse(String s) {
      return switch (s) {
        case "always" -> ALWAYS;
        case "interval" -> INTERVAL;
        case "none" -> NONE;
        default ->
            throw new FerriteException(
                ErrorCode.INVALID_ARGUMENT,
                "tx.log.sync: " + s + " (expected: always, interval or none)");
      };
    }
  }

  /**
   * For tests only: the fsync the logs of services started from now on use (null: a real one).
   * Static because services are found by ServiceLoader (as {@code KvService.testFsync}).
   */
  static volatile OpLog.Fsync testFsync;

  /**
   * For tests only: services stopped while this is set stop as a SIGKILL leaves their logs: what is
   * queued to the appender is dropped, not written ({@link TxLogAppender#abandon}).
   */
  static volatile boolean testCrashOnClose;

  private final Path dir;
  private final Sync sync;
  private final OpLog.Fsync fsync;
  private final Map<Integer, TxLog> logs = new ConcurrentHashMap<>();

  /** The incarnation floor each recovered region's primary must hand out from. */
  private final Map<Integer, Long> floors = new ConcurrentHashMap<>();

  private final ScheduledExecutorService ticker;

  /** Encodes and writes every log's records off the callers' threads. */
  private final TxLogAppender appender;

  /** How many plain decisions each log (and a copy rebuilt from it) remembers. */
  private final int kept;

  TxLogs(Path dir, Sync sync, Duration interval, int serverId) {
    this(dir, sync, interval, serverId, RecentTxids.DECIDED);
  }

  /** As above, each log remembering its last {@code kept} plain decisions. */
  TxLogs(Path dir, Sync sync, Duration interval, int serverId, int kept) {
    this.kept = kept;
    this.dir = dir;
    this.sync = sync;
    this.appender = new TxLogAppender(serverId);
    OpLog.Fsync f = testFsync;
    this.fsync = f != null ? f : OpLog.Fsync.DATA;
    if (sync == Sync.INTERVAL) {
      ticker =
          Executors.newSingleThreadScheduledExecutor(
              r -> {
                Thread t = new Thread(r, "tx-log-interval-" + serverId);
                t.setDaemon(true);
                return t;
              });
      long nanos = interval.toNanos();
      ticker.scheduleWithFixedDelay(this::flushAll, nanos, nanos, TimeUnit.NANOSECONDS);
    } else {
      ticker = null;
    }
  }

  Sync sync() {
    return sync;
  }

  Path file(int region) {
    return dir.resolve("region-" + region + ".log");
  }

  /** Whether this server has a log of {@code region} on disk. */
  boolean exists(int region) {
    return logs.containsKey(region) || Files.exists(file(region));
  }

  /** The open log of {@code region}, or null. */
  TxLog get(int region) {
    return logs.get(region);
  }

  /** A fresh, empty log for a new copy of {@code region} (a stale file of an old copy goes). */
  TxLog create(int region) {
    drop(region);
    TxLog l = TxLog.open(region, file(region), null, new TxLog.Replay(), fsync, appender, kept);
    logs.put(region, l);
    return l;
  }

  /**
   * Rebuilds {@code region} from its log into {@code memory} (an empty region of the same size):
   * the returned copy, to be promoted like a backup's ({@link TxRegion#rebuilt}). The incarnation
   * floor ({@link #floor}) is set above every incarnation the log names and above {@code (epoch -
   * 1) << 40}, the floor the lost primary used (its epoch was at most {@code epoch}), and logged
   * durably before anything is allocated: an allocation the lost primary handed out but never
   * committed is not in the log, and its fat pointer must never match an object allocated now.
   */
  TxMirror recover(int region, MappedRegion memory, long slabSize, long epoch) {
    TxMirror copy = new TxMirror(region, memory, slabSize, kept);
    TxLog.Replay seen = new TxLog.Replay();
    TxLog l = TxLog.open(region, file(region), copy, seen, fsync, appender, kept);
    long floor = Math.max(seen.maxIncarnation, (epoch - 1) << 40) + 1;
    l.floor(floor);
    floors.put(region, floor);
    logs.put(region, l);
    copy.log(l);
    LOG.log(
        System.Logger.Level.INFO,
        "tx region {0}: rebuilt from its log {1} ({2} records; incarnation floor {3})",
        region,
        file(region),
        seen.records,
        floor);
    return copy;
  }

  /** The incarnation floor of a region recovered here from its log (0 if none). */
  long floor(int region) {
    return floors.getOrDefault(region, 0L);
  }

  /** Closes and deletes the log of a copy this server no longer holds. */
  void drop(int region) {
    TxLog l = logs.remove(region);
    floors.remove(region);
    if (l != null) {
      l.close();
    }
    try {
      Files.deleteIfExists(file(region));
    } catch (IOException e) {
      LOG.log(System.Logger.Level.WARNING, "removing tx log " + file(region), e);
    }
  }

  /**
   * Appends the committed writes of every region of {@code writes} that has a log here, then runs
   * {@code apply}, holding each log's {@link TxLog#shared} side (in region order) throughout: a
   * checkpoint sees the writes logged and applied, or neither.
   *
   * <p>A log that cannot append (its disk failed) does not stop the apply: the writes are committed
   * (the backups hold them, the decider said so) and {@code apply} is what releases their object
   * locks, so memory takes them and the log's error is thrown after, for the caller to answer with
   * (its client learns the outcome is unknown; under {@code always} nothing it waits on is
   * durable). Before this, a failed append left the objects locked for good.
   */
  void logAndApply(List<Write> writes, Runnable apply) {
    logAndApply(writes, apply, region -> false);
  }

  /**
   * As {@link #logAndApply(List, Runnable)}, the records of each region {@code alone} names (its
   * only copy is here) written by this thread before the apply ({@link TxLog#writes(List,
   * boolean)}), the others queued to the appender.
   */
  void logAndApply(List<Write> writes, Runnable apply, java.util.function.IntPredicate alone) {
    logAndApply(writes, apply, alone, -1, 0, TxLog.NO_PINS);
  }

  /**
   * As {@link #logAndApply(List, Runnable, java.util.function.IntPredicate)}, with the commit
   * decision of transaction {@code txid} written in front of region {@code decided}'s write set, in
   * the same {@code write(2)} ({@link TxLog#decideAndWrites}; {@code decided} must be alone).
   */
  void logAndApply(
      List<Write> writes,
      Runnable apply,
      java.util.function.IntPredicate alone,
      int decided,
      long txid,
      int[] pins) {
    logAndApply(writes, apply, alone, decided, txid, 0, pins);
  }

  /**
   * As above; a region whose log holds the LOCK record of transaction {@code resolves} (not 0) gets
   * its RESOLVED commit record instead of the write set ({@link TxLog#resolve}): replay applies the
   * LOCK record's writes.
   */
  void logAndApply(
      List<Write> writes,
      Runnable apply,
      java.util.function.IntPredicate alone,
      int decided,
      long txid,
      long resolves,
      int[] pins) {
    List<Lock> held = new ArrayList<>();
    FerriteException failed = null;
    try {
      for (Map.Entry<Integer, List<Write>> e : byRegion(writes).entrySet()) {
        TxLog l = logs.get(e.getKey());
        if (l != null) {
          Lock k = l.shared();
          k.lock();
          held.add(k);
          try {
            if (e.getKey() == decided) {
              l.decideAndWrites(txid, e.getValue(), pins);
            } else if (resolves == 0 || !l.resolve(resolves, true)) {
              // (with its LOCK record in this log, the small RESOLVED record stands for them)
              l.writes(e.getValue(), alone.test(e.getKey()));
            }
          } catch (FerriteException x) {
            failed = failed == null ? x : failed;
          }
        }
      }
      apply.run();
      if (failed != null) {
        throw failed;
      }
    } finally {
      for (Lock k : held) {
        k.unlock();
      }
    }
  }

  /**
   * An aborted transaction's RESOLVED records, in the logs of {@code writes}' regions that hold its
   * LOCK record (remembered by the others that {@code alone} names, so a LOCK record written late
   * is not written at all). Errors are logged: the abort stands.
   */
  void aborted(long txid, List<Write> writes, java.util.function.IntPredicate alone) {
    for (int id : byRegion(writes).keySet()) {
      TxLog l = logs.get(id);
      if (l != null && alone.test(id)) {
        try {
          l.resolve(txid, false);
        } catch (FerriteException e) {
          LOG.log(System.Logger.Level.WARNING, "tx log " + l.file() + ": " + e.getMessage());
        }
      }
    }
  }

  /**
   * Checkpoints every log past {@code threshold} bytes and twice its size after its last
   * checkpoint, through {@code copy} (the region's or the mirror's image: {@link
   * TxLog#checkpoint}).
   */
  void checkpoints(long threshold, java.util.function.BiConsumer<Integer, TxLog> copy) {
    for (Map.Entry<Integer, TxLog> e : logs.entrySet()) {
      if (e.getValue().checkpointDue(threshold)) {
        copy.accept(e.getKey(), e.getValue());
        CHECKPOINTS.incrementAndGet();
      }
    }
  }

  /** Checkpoints made by every server in this JVM (tests). */
  static final java.util.concurrent.atomic.AtomicLong CHECKPOINTS =
      new java.util.concurrent.atomic.AtomicLong();

  /**
   * Completed when the records appended so far to the logs of {@code writes}' regions may be
   * answered: under {@code always} once they are on disk, else at once.
   */
  CompletableFuture<Void> durable(List<Write> writes) {
    if (sync != Sync.ALWAYS) {
      return DONE;
    }
    List<CompletableFuture<Void>> all = new ArrayList<>();
    for (int id : byRegion(writes).keySet()) {
      all.add(durable(id));
    }
    return all.size() == 1
        ? all.get(0)
        : CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0]));
  }

  /** As above, for one region's log. */
  CompletableFuture<Void> durable(int region) {
    TxLog l = logs.get(region);
    return sync != Sync.ALWAYS || l == null ? DONE : l.flush();
  }

  private static Map<Integer, List<Write>> byRegion(List<Write> writes) {
    Map<Integer, List<Write>> by = new TreeMap<>();
    for (Write x : writes) {
      by.computeIfAbsent(x.ptr().region(), k -> new ArrayList<>()).add(x);
    }
    return by;
  }

  private void flushAll() {
    for (TxLog l : logs.values()) {
      try {
        l.flush();
      } catch (FerriteException e) {
        LOG.log(System.Logger.Level.WARNING, "tx log " + l.file() + ": " + e.getMessage());
      }
    }
  }

  @Override
  public void close() {
    if (ticker != null) {
      ticker.shutdownNow();
    }
    boolean crashed = testCrashOnClose;
    if (crashed) {
      appender.abandon();
    }
    for (TxLog l : List.copyOf(logs.values())) {
      l.close(crashed);
    }
    logs.clear();
    if (!crashed) {
      appender.close();
    }
  }
}
