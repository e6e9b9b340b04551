package io.ferrite.kernel.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The master's sink in front of its {@link Durability} (the local {@link Journal} or a {@link
 * RaftJournal}): it keeps the record of a call with a request id open until the call's answer is
 * known, so that the answer goes into the same record as the call's first mutation.
 *
 * <p>Why: a retry of a request id that committed a mutation must get the first attempt's answer
 * ({@link RequestIds}). Were the answer a record of its own, written after the mutation's, a master
 * killed between the two would come back knowing the call was applied but not what it answered, and
 * the retry could only fail ("check its effect"). The journal recovers a record whole or not at all
 * (Raft commits an entry whole), so one record for both closes that window.
 *
 * <p>How: {@link #appendHeld} numbers the record (its LSN, published at once in {@link
 * #writtenLsn}, so that an answer that reflects it waits for it) but keeps it in memory, and every
 * later record queues behind it: the log's order is the order the state applied them in. {@link
 * #release} adds the answer's events to the held record and writes, in order, every queued record
 * up to the next one still held. Records without a hold and nothing queued go straight through, as
 * before. A held record stays open only while its handler runs on its thread (microseconds): a
 * handler that goes asynchronous releases its record at once ({@link MasterService}), and its
 * answer then follows as a record of its own.
 *
 * <p>A call that commits several times while its record is held (one mutate block: a create and its
 * blocks) joins them into that record when nothing came between, so the call is recovered whole or
 * not at all; if another record came between, its later mutations follow as records of their own (a
 * crash between them recovers a part of the call, with the answer: as rare as it is, it is the
 * shape any multi-record call had before request ids).
 *
 * <p>Numbering: the inner journal numbers each record it writes, one LSN each; queued records are
 * written one per inner append in LSN order, so the LSN given here is the inner journal's when it
 * is written. {@link #whenDurable} of an LSN still queued waits here until it is written, then on
 * the inner journal.
 *
 * <p>Failure: a queued record the inner journal refuses (an I/O error, a lost leadership) was
 * already applied in memory, so the state is ahead of its journal for good: this sink fails (every
 * later append throws, every wait past what was written fails) and the master must be restarted (a
 * single master) or the core retired (a group's leader).
 *
 * <p>Thread-safety: {@link #append}, {@link #appendHeld} and {@link #release} run under the
 * metadata lock (the {@link MasterState}'s monitor), one at a time; the queue is guarded by it.
 * {@link #writtenLsn}, {@link #durableLsn}, {@link #whenDurable} and {@link #failure} run on any
 * thread: {@code written}, {@code flushed} and {@code failure} are volatile, and {@link #waiters}
 * is guarded by its own monitor, taken after {@code flushed} is stored (see {@link #whenDurable}).
 */
final class HeldRecords implements MasterState.Sink, Durability {
  private final Durability inner;
  private final MasterState.Sink write;

  /** Records numbered but not yet written, in LSN order; guarded by the metadata lock. */
  private final ArrayDeque<Queued> queued = new ArrayDeque<>();

  /** LSN of the last record numbered here (written or queued). */
  private volatile long written;

  /** LSN of the last record handed to the inner journal. */
  private volatile long flushed;

  private volatile FerriteException failure;

  /** Waits for LSNs not yet handed to the inner journal; guarded by itself. */
  private final List<Waiter> waiters = new ArrayList<>();

  private record Waiter(long lsn, CompletableFuture<Void> done) {}

  private static final class Queued {
    final List<MasterEvent> events;
    Object hold;

    Queued(List<MasterEvent> events, Object hold) {
      this.events = new ArrayList<>(events);
      this.hold = hold;
    }
  }

  /**
   * @param inner where records become durable (its LSNs: one per {@code write})
   * @param write appends one record to {@code inner}
   */
  HeldRecords(Durability inner, MasterState.Sink write) {
    this.inner = inner;
    this.write = write;
    this.written = inner.writtenLsn();
    this.flushed = written;
  }

  @Override
  public void append(List<MasterEvent> events) {
    appendHeld(events, null);
  }

  @Override
  public void appendHeld(List<MasterEvent> events, Object hold) {
    // The inner journal's failure too: a record queued here must not be accepted by a journal that
    // refuses (the caller's state then stays unchanged, as with a direct append).
    FerriteException f = failure();
    if (f != null) {
      throw new FerriteException(f.code(), f.detail(), f);
    }
    if (queued.isEmpty() && hold == null) {
      write.append(events); // throws, and the caller's state stays unchanged
      written++;
      flushed = written;
      return;
    }
    if (hold != null) {
      Queued last = queued.peekLast();
      if (last != null && last.hold == hold) {
        // The same call again, nothing in between: one record (its LSN is already numbered).
        last.events.addAll(events);
        return;
      }
      for (Queued q : queued) {
        if (q.hold == hold) {
          hold = null; // held already, others came between: a record of its own, in order
          break;
        }
      }
    }
    queued.add(new Queued(events, hold));
    written++;
  }

  @Override
  public void release(Object hold, List<MasterEvent> answer) {
    Queued mine = null;
    for (Queued q : queued) {
      if (q.hold == hold) {
        mine = q;
        break;
      }
    }
    if (mine == null) {
      if (!answer.isEmpty()) {
        appendHeld(answer, null); // nothing held for it (any more): a record of its own
      }
      return;
    }
    mine.events.addAll(answer);
    mine.hold = null;
    flush();
  }

  /** Whether some record waits for its answer or behind one (a snapshot must wait then). */
  boolean holding() {
    return !queued.isEmpty();
  }

  /** Writes the queued records up to the first one still held. Under the metadata lock. */
  private void flush() {
    long lsn = flushed;
    try {
      while (!queued.isEmpty() && queued.peek().hold == null) {
        write.append(queued.peek().events);
        queued.poll();
        lsn++;
      }
    } catch (RuntimeException e) {
      FerriteException fe = FerriteException.unwrap(e);
      fail(
          new FerriteException(
              fe.code() == ErrorCode.NOT_LEADER ? ErrorCode.NOT_LEADER : ErrorCode.INTERNAL,
              "the master journal refused a record the metadata already holds ("
                  + fe.detail()
                  + "): the master accepts no more mutations until it restarts",
              e));
      throw e;
    } finally {
      flushed = lsn;
    }
    long upTo = lsn;
    List<Waiter> ready = new ArrayList<>();
    synchronized (waiters) {
      waiters.removeIf(
          w -> {
            if (w.lsn <= upTo) {
              ready.add(w);
              return true;
            }
            return false;
          });
    }
    for (Waiter w : ready) {
      chain(inner.whenDurable(w.lsn), w.done);
    }
  }

  private void fail(FerriteException f) {
    failure = f;
    List<Waiter> failed;
    synchronized (waiters) {
      failed = new ArrayList<>(waiters);
      waiters.clear();
    }
    for (Waiter w : failed) {
      w.done.completeExceptionally(f);
    }
  }

  private static void chain(CompletableFuture<Void> from, CompletableFuture<Void> to) {
    from.whenComplete(
        (v, e) -> {
          if (e != null) {
            to.completeExceptionally(e);
          } else {
            to.complete(null);
          }
        });
  }

  @Override
  public long writtenLsn() {
    return written;
  }

  @Override
  public long durableLsn() {
    return inner.durableLsn();
  }

  @Override
  public FerriteException failure() {
    FerriteException f = failure;
    return f != null ? f : inner.failure();
  }

  /**
   * Completes once every record up to {@code lsn} is durable: on the inner journal once it was
   * written there, else once {@link #flush} hands it over. Never blocks. (Memory ordering: flush
   * stores {@code flushed} before it takes the waiters' monitor; a waiter re-checks {@code flushed}
   * under it, so it is either seen by that flush or sees its store.)
   */
  @Override
  public CompletableFuture<Void> whenDurable(long lsn) {
    if (lsn <= flushed) {
      return inner.whenDurable(lsn);
    }
    CompletableFuture<Void> done = new CompletableFuture<>();
    synchronized (waiters) {
      FerriteException f = failure;
      if (f != null) {
        return CompletableFuture.failedFuture(f);
      }
      if (lsn > flushed) {
        waiters.add(new Waiter(lsn, done));
        return done;
      }
    }
    return inner.whenDurable(lsn);
  }
}
