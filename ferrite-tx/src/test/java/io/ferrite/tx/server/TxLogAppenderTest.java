package io.ferrite.tx.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.log.OpLog;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tx logs' appender ({@link TxLogAppender}): records queued by many threads to several logs
 * reach each log's file in the order each thread queued them, a flush completes only once every
 * record queued before it is written (and fsynced), and a caller that finds the queue full waits
 * (back-pressure) instead of growing it.
 */
@ExtendWith(SeedExtension.class)
class TxLogAppenderTest {
  @TempDir Path dir;

  /** The txids of a log's DECIDE records, in file order. */
  private static List<Long> decisions(Path file) {
    List<Long> out = new ArrayList<>();
    OpLog l =
        OpLog.open(
            "test",
            file,
            b -> {
              ByteBuffer x = b.duplicate().order(ByteOrder.LITTLE_ENDIAN);
              assertEquals(TxLog.DECIDE, x.get(0));
              out.add(x.getLong(1));
            },
            OpLog.Fsync.DATA);
    l.close();
    return out;
  }

  private TxLog open(int region, TxLogAppender appender) {
    return TxLog.open(
        region,
        dir.resolve("region-" + region + ".log"),
        null,
        new TxLog.Replay(),
        OpLog.Fsync.DATA,
        appender);
  }

  @Test
  void recordsOfManyThreadsReachEachLogInTheirOrderAndAFlushCoversWhatCameBefore(Random random)
      throws Exception {
    int threads = 4;
    int each = 2000 + random.nextInt(2000);
    TxLogAppender appender = new TxLogAppender(1);
    List<TxLog> logs = List.of(open(1, appender), open(2, appender));
    ExecutorService pool =
        Executors.newFixedThreadPool(threads, r -> new Thread(r, "tx-log-appender-test"));
    try {
      // One thread: a flush completes only once its records are written (22 B per DECIDE).
      for (int i = 0; i < 100; i++) {
        logs.get(0).decide(-1L - i, false);
      }
      logs.get(0).flush().get(60, TimeUnit.SECONDS);
      assertEquals(
          100 * 22, logs.get(0).bytes(), "a flush completed before its records were written");
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        long base = (long) t << 32;
        long seed = random.nextLong();
        done.add(
            pool.submit(
                () -> {
                  Random r = new Random(seed);
                  for (int i = 0; i < each; i++) {
                    TxLog l = logs.get(r.nextInt(2));
                    l.decide(base + i, true);
                    if (r.nextInt(64) == 0) {
                      l.flush().join();
                    }
                  }
                  return null;
                }));
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
      for (TxLog l : logs) {
        l.flush().get(60, TimeUnit.SECONDS);
        assertEquals(0, l.queuedNow(), "a flush after the last record leaves none queued");
        assertTrue(l.fsyncs() > 0, "a flush fsyncs");
      }
    } finally {
      pool.shutdownNow();
      for (TxLog l : logs) {
        l.close();
      }
      appender.close();
    }
    int total = 0;
    for (int region : List.of(1, 2)) {
      long[] last = new long[threads];
      java.util.Arrays.fill(last, -1);
      List<Long> ids = decisions(dir.resolve("region-" + region + ".log"));
      for (long id : ids) {
        if (id < 0) {
          continue; // the single thread's records above
        }
        int t = (int) (id >>> 32);
        long i = id & 0xffffffffL;
        assertTrue(
            i > last[t], "region " + region + ": thread " + t + "'s " + i + " after " + last[t]);
        last[t] = i;
      }
      total += (int) ids.stream().filter(id -> id >= 0).count();
    }
    assertEquals(threads * each, total, "every record in one of the logs");
  }

  /**
   * A region whose only copy is this one writes its records on the answering thread ({@code now}):
   * they are in the file while the appender is stuck on another log, where a queued record is not.
   * (A SIGKILL of that one process must not lose a commit it answered.)
   */
  @Test
  void aRecordWrittenNowIsInTheFileWhileTheAppenderIsHeldAndAQueuedOneIsNot() throws Exception {
    TxLogAppender appender = new TxLogAppender(9);
    TxLog held = open(4, appender);
    TxLog alone = open(5, appender);
    try {
      synchronized (held.opLog()) { // the appender's write of log 4 waits for this monitor
        held.decide(0, true);
        Thread t = null;
        for (int i = 0; i < 6000 && (t == null || t.getState() != Thread.State.BLOCKED); i++) {
          Thread.sleep(5);
          t =
              Thread.getAllStackTraces().keySet().stream()
                  .filter(x -> x.getName().equals("tx-log-append-9"))
                  .findFirst()
                  .orElse(null);
        }
        assertEquals(Thread.State.BLOCKED, t.getState(), "the appender never took log 4's record");
        long before = alone.opLog().appended();
        alone.decide(1, true); // queued behind the held write
        assertEquals(before, alone.opLog().appended(), "a queued record was written already");
        alone.decide(2, false, true); // written now
        assertEquals(before + 1, alone.opLog().appended(), "the record was not written now");
      }
    } finally {
      held.close();
      alone.close();
      appender.close();
    }
    assertEquals(List.of(2L, 1L), decisions(dir.resolve("region-5.log")));
  }

  @Test
  void aCallerThatFindsTheQueueFullWaitsForRoom() throws Exception {
    TxLogAppender appender = new TxLogAppender(2);
    TxLog log = open(3, appender);
    int records = 3 * TxLogAppender.CAPACITY;
    Thread producer =
        new Thread(
            () -> {
              for (int i = 0; i < records; i++) {
                log.decide(i, i % 2 == 0);
              }
            },
            "tx-log-appender-test-producer");
    List<Throwable> failed = new ArrayList<>();
    producer.setUncaughtExceptionHandler((t, e) -> failed.add(e));
    try {
      synchronized (log.opLog()) { // the appender's write waits for this monitor
        producer.start();
        boolean blocked = false;
        for (int i = 0; i < 6000 && !blocked && producer.isAlive(); i++) {
          Thread.sleep(10);
          Thread.State st = producer.getState();
          blocked =
              (st == Thread.State.TIMED_WAITING || st == Thread.State.WAITING)
                  && log.queuedNow() >= TxLogAppender.CAPACITY;
        }
        assertTrue(blocked, "the producer never waited: " + producer.getState());
        assertTrue(producer.isAlive(), "every record was queued while the appender was held");
        long queued = log.queuedNow();
        assertTrue(
            queued <= 2L * TxLogAppender.CAPACITY + 1,
            "queued beyond the bound: " + queued + " (capacity " + TxLogAppender.CAPACITY + ")");
      }
      producer.join(60_000);
      assertFalse(producer.isAlive(), "the producer went on once the appender wrote");
      assertTrue(failed.isEmpty(), "the producer failed: " + failed);
    } finally {
      producer.join(60_000);
      log.close();
      appender.close();
    }
    List<Long> ids = decisions(dir.resolve("region-3.log"));
    assertEquals(records, ids.size());
    for (int i = 0; i < records; i++) {
      assertEquals(i, ids.get(i), "record " + i);
    }
  }

  /**
   * What waits on a mark may queue more than the queue holds (a decision under {@code always}
   * queues its records and the next flush): its future is completed on a thread of its own, never
   * the appender or the log's syncer, so that waits for room the appender makes instead of for
   * itself. (When the appender completed it, the continuation below blocked on the full queue and
   * the commit it stands for never answered: TxLogTest timed out in CI.)
   */
  @Test
  void whatWaitsOnAMarkMayQueueMoreThanTheQueueHolds() throws Exception {
    TxLogAppender appender = new TxLogAppender(4);
    TxLog log = open(6, appender);
    int more = TxLogAppender.CAPACITY + 16;
    try {
      for (boolean fsync : new boolean[] {false, true}) {
        java.util.concurrent.CompletableFuture<String> ranOn =
            new java.util.concurrent.CompletableFuture<>();
        synchronized (log.opLog()) { // held: the mark cannot complete before the continuation is on
          log.decide(fsync ? -2 : -1, true);
          java.util.concurrent.CompletableFuture<Void> mark = fsync ? log.flush() : log.drained();
          assertFalse(mark.isDone(), "the mark completed while the appender was held");
          mark.whenComplete(
              (v, e) -> {
                try {
                  for (int i = 0; i < more; i++) {
                    log.decide(i, true);
                  }
                  String name = Thread.currentThread().getName();
                  // Composed, not joined: a mark's continuation never blocks on a later mark.
                  log.flush().whenComplete((v2, e2) -> ranOn.complete(name));
                } catch (Throwable t) {
                  ranOn.completeExceptionally(t);
                }
              });
        }
        String thread = ranOn.get(60, TimeUnit.SECONDS);
        assertFalse(
            thread.startsWith("tx-log-append") || thread.contains("sync"),
            "a mark completed on " + thread);
      }
    } finally {
      // The appender first: if a continuation holds it in a full queue (the failure this shows),
      // its close makes that put fail, where the log's close would queue behind it for good.
      appender.close();
      log.close();
    }
  }

  /**
   * A checkpoint (the log's write lock held) waits for what was queued before it while a commit's
   * continuation, on the completions thread, waits for that lock to queue its record: the
   * checkpoint's wait is completed by the appender directly, not behind that continuation on the
   * completions thread (there it waited for a thread that waited for it: a deadlock).
   */
  @Test
  void aCheckpointWaitsNotBehindAContinuationThatWaitsForIt() throws Exception {
    TxLogAppender appender = new TxLogAppender(5);
    TxLog log = open(7, appender);
    java.util.concurrent.CompletableFuture<Void> continued =
        new java.util.concurrent.CompletableFuture<>();
    List<Throwable> failed = new java.util.concurrent.CopyOnWriteArrayList<>();
    Thread checkpoint =
        new Thread(
            () -> log.checkpoint(out -> {}), // an empty image: the drain before it is the point
            "tx-log-appender-test-checkpoint");
    checkpoint.setUncaughtExceptionHandler((t, e) -> failed.add(e));
    try {
      synchronized (log.opLog()) { // the appender's write waits for this monitor
        log.decide(1, true);
        log.drained()
            .whenComplete(
                (v, e) -> {
                  try {
                    log.decide(2, true); // the log's read lock: the checkpoint holds it
                    continued.complete(null);
                  } catch (Throwable t) {
                    continued.completeExceptionally(t);
                  }
                });
        checkpoint.start();
        for (int i = 0; i < 6000 && checkpoint.getState() != Thread.State.WAITING; i++) {
          Thread.sleep(5);
        }
        assertEquals(
            Thread.State.WAITING, checkpoint.getState(), "the checkpoint never waited to drain");
      }
      checkpoint.join(60_000);
      assertFalse(checkpoint.isAlive(), "the checkpoint never finished: a deadlock");
      continued.get(60, TimeUnit.SECONDS);
      assertTrue(failed.isEmpty(), "the checkpoint failed: " + failed);
      log.flush().get(60, TimeUnit.SECONDS);
    } finally {
      checkpoint.join(60_000);
      log.close();
      appender.close();
    }
    assertEquals(List.of(1L, 2L), decisions(dir.resolve("region-7.log")), "the checkpointed log");
  }
}
