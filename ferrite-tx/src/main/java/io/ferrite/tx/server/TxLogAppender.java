package io.ferrite.tx.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.NamedThreadFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A memory server's tx-log appender: one named thread ({@code tx-log-append-<server>}) that encodes
 * and writes the records every {@link TxLog} of the server hands it, so a commit's answering thread
 * only queues its record (a commit over shm paid ~6 µs for the encode and the {@code write(2)};
 * docs/TX.md "Measurements").
 *
 * <p><b>Order.</b> One FIFO queue for every log of the server: the records of one log reach its
 * file in the order they were queued, which is the order the old synchronous appends had (a primary
 * queues under the objects' locks, a backup under its copy's monitor). A flush or a drain of a log
 * is queued too ({@link #mark}): its future completes once every item queued before it was written
 * (a flush: then fsynced by the log's syncer, {@code OpLog.flush}).
 *
 * <p><b>Back-pressure.</b> The queue holds at most {@link #CAPACITY} items; a caller that finds it
 * full wakes the appender and blocks until there is room (the old synchronous cost, not unbounded
 * memory).
 *
 * <p><b>Waking.</b> The appender writes what it finds in one write per log per batch ({@code
 * OpLog.appendAll}), then waits {@link #LAG_NANOS} for more (a timed park nobody wakes), then, if
 * the queue is still empty, parks until woken. A caller wakes it (an {@code unpark}, a system call)
 * only when it is in that second sleep, when the queue is half full, or for a mark (a flush: a
 * caller waits for it). So under steady commits the answering thread pays no wake-up, and a record
 * reaches the page cache at most about {@link #LAG_NANOS} after its commit was answered. Dekker on
 * {@link #asleep} and the queue: the appender stores {@code asleep = true} then looks at the queue
 * (its lock), a caller queues (the same lock) then loads {@code asleep}; both are synchronization
 * actions, so at least one sees the other.
 *
 * <p><b>Failures.</b> A write that fails breaks that log ({@link TxLog#broken}): its later records
 * are dropped, its flushes fail, and its later appends are refused at the caller (INTERNAL).
 */
final class TxLogAppender implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(TxLogAppender.class.getName());

  /** Items the queue holds at most. */
  static final int CAPACITY = 4096;

  /** How long the appender waits for more records before it sleeps until woken. */
  static final long LAG_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  /** A queued item: a record ({@code byte[]} body or a write set to encode) or a mark. */
  private record Item(TxLog log, Object what) {}

  /**
   * A flush (fsync after the write) or a drain (the write only) of one log; {@code direct}: its
   * future is completed where the mark is reached (a caller blocks on it and registers nothing).
   */
  private record Mark(boolean fsync, boolean direct, CompletableFuture<Void> done) {}

  private final ArrayBlockingQueue<Item> queue = new ArrayBlockingQueue<>(CAPACITY);
  private final Thread thread;

  /**
   * Where a mark's future is completed: never the appender or the log's syncer. What waits on a
   * mark (a commit's decision under {@code always}, docs/TX.md) queues more records and marks, and
   * {@link #put} blocks while the queue is full: run on the appender, that would wait for itself.
   */
  private final ExecutorService completions;

  /** The appender parks until woken (the queue was empty after its timed wait). */
  private volatile boolean asleep;

  private volatile boolean closed;

  /**
   * For tests only: while set, every appender of this JVM leaves what is queued in its queue (a
   * record a caller only queued is then not in the file when a crash drops the queue).
   */
  static volatile boolean testPaused;

  /** Tests: stopped as by a SIGKILL ({@link #abandon}); guarded by this. */
  private boolean abandoned;

  TxLogAppender(int serverId) {
    thread = new Thread(this::loop, "tx-log-append-" + serverId);
    thread.setDaemon(true);
    completions =
        Executors.newSingleThreadExecutor(new NamedThreadFactory("tx-log-done-" + serverId, true));
    thread.start();
  }

  /** Completes {@code done} as {@code inner} completes, on {@link #completions}. */
  private CompletableFuture<Void> handOff(CompletableFuture<Void> done) {
    CompletableFuture<Void> inner = new CompletableFuture<>();
    inner.whenComplete(
        (v, e) -> {
          Runnable complete =
              () -> {
                if (e == null) {
                  done.complete(null);
                } else {
                  done.completeExceptionally(e);
                }
              };
          try {
            completions.execute(complete);
          } catch (RejectedExecutionException stopped) {
            complete.run(); // stopping: nothing queues any more
          }
        });
    return inner;
  }

  /** Queues a record of {@code log} ({@code byte[]} body, or a {@code List<Write>} to encode). */
  void append(TxLog log, Object record) {
    put(new Item(log, record), false);
  }

  /**
   * A future completed once every item of {@code log} queued before it was written, then (if {@code
   * fsync}) once the log's fsync covered them; failed if the log broke or closed. Completed on
   * {@link #completions}, unless {@code direct}: for a caller that only blocks on it, which must
   * not wait for that thread (it may be in a continuation waiting for a lock the caller holds).
   */
  CompletableFuture<Void> mark(TxLog log, boolean fsync, boolean direct) {
    Mark m = new Mark(fsync, direct, new CompletableFuture<>());
    put(new Item(log, m), true);
    return m.done();
  }

  private void put(Item item, boolean urgent) {
    if (closed) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE, "tx log " + item.log().file() + ": the server is stopping");
    }
    if (!queue.offer(item)) {
      LockSupport.unpark(thread);
      try {
        while (!queue.offer(item, 10, TimeUnit.MILLISECONDS)) {
          if (closed) {
            throw new FerriteException(
                ErrorCode.UNAVAILABLE, "tx log " + item.log().file() + ": the server is stopping");
          }
          LockSupport.unpark(thread);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new FerriteException(
            ErrorCode.UNAVAILABLE, "interrupted queueing to tx log " + item.log().file(), e);
      }
    }
    if (urgent || asleep || queue.size() >= CAPACITY / 2) {
      LockSupport.unpark(thread);
    }
    if (closed && !thread.isAlive()) {
      leftovers(); // queued as the appender stopped: nobody else will write it
    }
  }

  /** Writes what is queued on the calling thread (after the appender stopped). */
  private synchronized void leftovers() {
    List<Item> rest = new ArrayList<>();
    queue.drainTo(rest);
    if (!abandoned) {
      write(rest);
    }
  }

  private void loop() {
    List<Item> batch = new ArrayList<>(CAPACITY);
    boolean waited = false;
    while (true) {
      if (testPaused && !closed) {
        LockSupport.parkNanos(this, LAG_NANOS); // tests: what is queued stays queued
        continue;
      }
      if (queue.drainTo(batch, CAPACITY) > 0) {
        write(batch);
        batch.clear();
        waited = false;
        continue;
      }
      if (closed) {
        return;
      }
      if (!waited) {
        LockSupport.parkNanos(this, LAG_NANOS);
        waited = true;
        continue;
      }
      asleep = true;
      if (queue.isEmpty() && !closed) {
        LockSupport.park(this);
      }
      asleep = false;
      waited = false;
    }
  }

  /** Writes a batch: each log's run of records with one write, marks in their place. */
  private void write(List<Item> batch) {
    List<byte[]> run = new ArrayList<>();
    TxLog runLog = null;
    for (Item it : batch) {
      if (runLog != null && (it.log() != runLog || it.what() instanceof Mark)) {
        runLog.appendNow(run);
        run.clear();
        runLog = null;
      }
      if (it.what() instanceof Mark m) {
        it.log().marked(m.fsync(), m.direct() ? m.done() : handOff(m.done()));
      } else {
        try {
          run.add(it.what() instanceof byte[] b ? b : TxLog.encode(it.what()));
          runLog = it.log();
        } catch (RuntimeException e) {
          LOG.log(System.Logger.Level.ERROR, "tx log " + it.log().file() + ": bad record", e);
          it.log().broke(e);
          it.log().dropped();
        }
      }
    }
    if (runLog != null) {
      runLog.appendNow(run);
    }
  }

  /**
   * Tests: as a SIGKILL leaves it, what is queued is dropped, never written (a record written with
   * {@code write(2)} before it is in the file); then the thread stops. Marks left are failed.
   */
  void abandon() {
    List<Item> rest = new ArrayList<>();
    synchronized (this) {
      abandoned = true;
      closed = true;
      queue.drainTo(rest);
    }
    LockSupport.unpark(thread);
    try {
      thread.join(30_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    queue.drainTo(rest);
    for (Item it : rest) {
      if (it.what() instanceof Mark m) {
        m.done()
            .completeExceptionally(
                new FerriteException(ErrorCode.UNAVAILABLE, "tx log appender abandoned (test)"));
      }
    }
    completions.shutdown();
  }

  /** Writes everything queued, then stops the thread. */
  @Override
  public void close() {
    closed = true;
    LockSupport.unpark(thread);
    try {
      thread.join(30_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (!thread.isAlive()) {
      leftovers();
    }
    completions.shutdown();
  }
}
