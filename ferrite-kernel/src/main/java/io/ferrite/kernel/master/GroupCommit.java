package io.ferrite.kernel.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * The {@link Journal}'s group commit: log sequence numbers, the journal thread that fsyncs batches,
 * and the futures waiting for them.
 *
 * <p>{@link #appended} numbers a record the journal has just written (its LSN: the count of records
 * since open, published in {@link #writtenLsn}). One thread, {@code ferrite-master-journal}, loops:
 * it takes the written LSN, fsyncs the log once (covering every record written before the fsync
 * started), publishes {@link #durableLsn}, and completes the futures of {@link #whenDurable} that
 * it covered. While it fsyncs the next records gather; the next fsync covers them all, so N
 * concurrent mutators share about one fsync per round, with no timer and no added latency for a
 * lone caller. Without fsync there is no thread and durable == written.
 *
 * <p>Memory ordering: an appender writes its record, then stores {@code written} (volatile, under
 * {@link #lock}); the journal thread loads {@code written} under the same lock before it calls
 * fsync, so every record numbered up to that load is in a file before the fsync starts (a {@code
 * write} returns once the page cache holds it, and {@code fsync} flushes every page dirty at its
 * start). It stores {@code durable} (volatile) after the fsync returns, then takes the lock to
 * collect waiters; {@link #whenDurable} re-checks {@code durable} under the lock, so no waiter is
 * missed.
 *
 * <p>Log rotation ({@link #rotated}): the replaced log joins a list the thread fsyncs (its tail)
 * and closes with its next batch, together with the new log and the directory (the new name), so
 * the rotation itself never waits for an fsync.
 *
 * <p>Failure: an fsync that fails (or throws) poisons it for good: after an fsync error Linux may
 * have dropped the dirty pages, so no later fsync can vouch for them. Every waiter not yet covered
 * fails with {@code INTERNAL}, {@link #failure} is set (the journal then refuses appends and
 * snapshots), and every later {@link #whenDurable} past the durable point fails.
 */
final class GroupCommit {
  private static final System.Logger LOG = System.getLogger(GroupCommit.class.getName());

  /** Makes the journal directory's entries durable. */
  @FunctionalInterface
  interface DirectorySync {
    void sync() throws IOException;
  }

  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  private final boolean fsync;
  private final Journal.Fsync fsyncer;
  private final DirectorySync directory;
  private final Supplier<String> name;

  /** LSN of the last record written; stored after its write (see class comment). */
  private volatile long written;

  /** LSN up to which the logs are fsynced; stored by the journal thread after its fsync. */
  private volatile long durable;

  /** Set once when an fsync fails; never cleared. */
  private volatile FerriteException failure;

  /** Statistics, written by the journal thread only (and by close once it has stopped). */
  private volatile long fsyncs;

  private volatile long recordsFsynced;
  private volatile long largestBatch;

  /**
   * Guards {@link #waiters}, {@link #closing}, {@link #current}, {@link #retiring} and {@link
   * #dirDirty}, and orders {@code written}; {@link #work} wakes the thread. Never held across I/O.
   */
  private final ReentrantLock lock = new ReentrantLock();

  private final Condition work = lock.newCondition();
  private final List<Waiter> waiters = new ArrayList<>();
  private boolean closing;
  private FileChannel current;
  private final List<FileChannel> retiring = new ArrayList<>();
  private boolean dirDirty;
  private Thread thread;

  private record Waiter(long lsn, CompletableFuture<Void> done) {}

  /**
   * Counts since open: {@code fsyncs} fsyncs by the journal thread covered {@code recordsFsynced}
   * records, at most {@code largestBatch} at once, out of {@code recordsWritten} appended.
   */
  record Stats(long recordsWritten, long fsyncs, long recordsFsynced, long largestBatch) {}

  /**
   * @param log the log appends go to (its owner keeps writing it; this fsyncs and finally closes
   *     it)
   * @param fsync false: no thread, durable == written, nothing fsynced but at close
   * @param name the log, for messages
   */
  GroupCommit(
      FileChannel log,
      boolean fsync,
      Journal.Fsync fsyncer,
      DirectorySync directory,
      Supplier<String> name) {
    this.current = log;
    this.fsync = fsync;
    this.fsyncer = fsyncer;
    this.directory = directory;
    this.name = name;
    if (fsync) {
      thread = new Thread(this::run, "ferrite-master-journal");
      thread.setDaemon(true);
      thread.start();
    }
  }

  /** Numbers the record just written (one appender at a time: the state lock). */
  void appended() {
    long lsn = written + 1;
    if (!fsync) {
      durable = lsn; // before written: a reader never sees written > durable here
      written = lsn;
      return;
    }
    lock.lock();
    try {
      written = lsn;
      work.signal(); // costs an unpark only if the journal thread is waiting
    } finally {
      lock.unlock();
    }
  }

  /**
   * Appends go to {@code fresh} from now on (called under the state lock, so no append is in
   * flight). The previous log's tail, {@code fresh} and the directory are fsynced with the next
   * batch; without fsync the previous log is closed now.
   */
  void rotated(FileChannel fresh) {
    FileChannel previous;
    lock.lock();
    try {
      previous = current;
      current = fresh;
      if (fsync) {
        retiring.add(previous);
        dirDirty = true;
        previous = null;
      }
    } finally {
      lock.unlock();
    }
    if (previous != null) {
      try {
        previous.close();
      } catch (IOException e) {
        LOG.log(System.Logger.Level.WARNING, "closing the previous journal log", e);
      }
    }
  }

  long writtenLsn() {
    return written;
  }

  long durableLsn() {
    return durable;
  }

  FerriteException failure() {
    return failure;
  }

  Stats stats() {
    return new Stats(written, fsyncs, recordsFsynced, largestBatch);
  }

  /**
   * A future completed once every record up to {@code lsn} is on disk: at once when it already is,
   * otherwise by the journal thread after the fsync that covers it; failed (INTERNAL) if an fsync
   * fails first, UNAVAILABLE if it closes first. Never blocks.
   */
  CompletableFuture<Void> whenDurable(long lsn) {
    if (durable >= lsn) {
      return DONE;
    }
    lock.lock();
    try {
      if (durable >= lsn) {
        return DONE;
      }
      if (failure != null) {
        return CompletableFuture.failedFuture(failure);
      }
      if (closing) {
        return Futures.failed(ErrorCode.UNAVAILABLE, "the master journal is closed");
      }
      CompletableFuture<Void> f = new CompletableFuture<>();
      waiters.add(new Waiter(lsn, f));
      return f;
    } finally {
      lock.unlock();
    }
  }

  /** The journal thread: fsync what was written, release whom it covered, repeat. */
  private void run() {
    List<FileChannel> old = new ArrayList<>();
    while (true) {
      long target;
      FileChannel log;
      boolean newLog;
      lock.lock();
      try {
        while (written == durable && !closing) {
          work.awaitUninterruptibly();
        }
        if (written == durable) {
          return; // closing, and nothing left to make durable
        }
        // Every record up to target is in one of these files already: the retired logs' tails, or
        // the current log (rotated() swaps under this lock, appenders store written under it).
        target = written;
        log = current;
        old.addAll(retiring);
        retiring.clear();
        newLog = dirDirty;
        dirDirty = false;
      } finally {
        lock.unlock();
      }
      try {
        for (FileChannel ch : old) {
          fsyncer.force(ch);
          ch.close();
        }
        old.clear();
        fsyncer.force(log);
        if (newLog) {
          directory.sync(); // the new log's name, before anything in it counts as durable
        }
      } catch (IOException | RuntimeException e) {
        fail(e);
        return;
      }
      long before = durable;
      fsyncs = fsyncs + 1;
      recordsFsynced = recordsFsynced + (target - before);
      largestBatch = Math.max(largestBatch, target - before);
      durable = target;
      release(target);
    }
  }

  /** Completes (outside the lock: they send answers) the waiters up to {@code lsn}. */
  private void release(long lsn) {
    List<CompletableFuture<Void>> done = new ArrayList<>();
    lock.lock();
    try {
      for (int i = waiters.size() - 1; i >= 0; i--) {
        if (waiters.get(i).lsn <= lsn) {
          done.add(waiters.remove(i).done);
        }
      }
    } finally {
      lock.unlock();
    }
    for (int i = done.size() - 1; i >= 0; i--) {
      done.get(i).complete(null);
    }
  }

  private void fail(Throwable e) {
    FerriteException f =
        new FerriteException(
            ErrorCode.INTERNAL,
            "fsync of the master journal "
                + name.get()
                + " failed; records up to "
                + durable
                + " are durable, the master accepts no more mutations and must be restarted: "
                + e,
            e);
    LOG.log(System.Logger.Level.ERROR, f.getMessage(), e);
    List<Waiter> failed;
    lock.lock();
    try {
      failure = f; // under the lock: whenDurable either sees it or its waiter is collected here
      failed = new ArrayList<>(waiters);
      waiters.clear();
    } finally {
      lock.unlock();
    }
    for (Waiter w : failed) {
      w.done.completeExceptionally(f);
    }
  }

  /**
   * Stops the thread once it has made every written record durable (one stuck in an fsync is waited
   * for 10 s, then left), fsyncs and closes the logs. Waiters still pending then complete if the
   * final fsync covers them, else fail. Called with no append in flight.
   */
  void close() throws IOException {
    if (thread != null) {
      lock.lock();
      try {
        closing = true;
        work.signal();
      } finally {
        lock.unlock();
      }
      try {
        thread.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    boolean stuck = thread != null && thread.isAlive();
    List<FileChannel> logs;
    lock.lock();
    try {
      closing = true;
      logs = new ArrayList<>(retiring);
      retiring.clear();
      logs.add(current); // last
    } finally {
      lock.unlock();
    }
    IOException closeError = null;
    if (stuck) {
      // Closing the channel under the stuck fsync makes it fail; nothing more is durable.
      LOG.log(
          System.Logger.Level.WARNING,
          "the master journal thread is stuck in an fsync; closing without it");
      for (FileChannel ch : logs) {
        try {
          ch.close();
        } catch (IOException e) {
          closeError = e;
        }
      }
    } else {
      try {
        for (FileChannel ch : logs) {
          if (ch.isOpen()) {
            if (failure == null) {
              ch.force(true);
            }
            ch.close();
          }
        }
        if (failure == null) {
          durable = written; // every log that held a record is fsynced
        }
      } catch (IOException e) {
        closeError = e;
      }
    }
    List<Waiter> left;
    lock.lock();
    try {
      left = new ArrayList<>(waiters);
      waiters.clear();
    } finally {
      lock.unlock();
    }
    for (Waiter w : left) {
      if (w.lsn <= durable) {
        w.done.complete(null);
      } else {
        w.done.completeExceptionally(
            failure != null
                ? failure
                : new FerriteException(
                    ErrorCode.UNAVAILABLE, "the master journal closed before the fsync"));
      }
    }
    if (closeError != null) {
      throw closeError;
    }
  }
}
