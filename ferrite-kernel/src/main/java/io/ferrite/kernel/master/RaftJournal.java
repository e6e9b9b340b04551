package io.ferrite.kernel.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientAsynchronousProtocol;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;

/**
 * A master group leader's journal: the records of its mutations (each one's group of {@link
 * MasterEvent}s, the body {@link Journal} writes) go to the local Raft server in the order the
 * leader applied them, several consecutive records to one Raft log entry. Durable means committed
 * by Raft: on the disks of a majority (Ratis fsyncs its log unless {@code journal.fsync=false}).
 *
 * <pre>
 * entry = stint u64 | from u64 | to u64 | body     (little-endian;
 *         body = Journal.encodeGroup of the events of records from..to, in order)
 * </pre>
 *
 * {@code stint} is drawn at random for each leadership stint (each core the leader builds); records
 * are numbered by LSN from 1 in each stint, and an entry holds records {@code from..to} ({@code
 * from == to}: one record, possibly empty), so {@link MasterStateMachine} can check that the Raft
 * log holds them in the order the leader applied them.
 *
 * <p><b>Batching, like {@link GroupCommit}.</b> {@link #append} (under the metadata lock) only
 * queues the record; one submitter thread ({@code ferrite-master-raft-submit}) takes everything
 * queued and submits it as one entry, then the next batch. Submitting appends the entry to the
 * leader's log on the submitter thread ({@link #submitTo}). When that was done under the metadata
 * lock for every mutation (and through Ratis's client executor), it bounded the leader to one
 * mutation per hand-off (measured 0.8 to 2.3 ms each on a loaded 2-core machine). Now the lock is
 * held only to queue, and Raft's per-entry costs (log write, apply, the commit reply, on every
 * master) are paid once per batch. One thread submits, so entries reach the log in LSN order.
 *
 * <p>{@link #durableLsn} is the longest prefix of LSNs whose entries Raft committed and applied.
 * Replies come back on Ratis threads, possibly out of order; the prefix is what counts. A
 * submission that fails (the leader lost its leadership, Ratis refused it) leaves the leader's
 * state holding mutations that may never commit, so this journal fails for good ({@link #failure},
 * NOT_LEADER): every answer still waiting fails, every later mutation is refused, records still
 * queued are dropped, and {@code onFailure} tells the master to throw its state away and rebuild it
 * from the committed state.
 *
 * <p>Thread-safety: {@link #append} under the master's metadata lock (one at a time); the rest from
 * any thread. Nothing here blocks but the submitter thread.
 */
final class RaftJournal implements Durability, AutoCloseable {
  private static final System.Logger LOG = System.getLogger(RaftJournal.class.getName());

  static final int ENTRY_HEADER = 24;

  /**
   * A batch stops growing past this many body bytes (a single larger record still goes alone): far
   * below Ratis's appender buffer (4 MiB by default), which an entry must fit in.
   */
  static final int BATCH_BYTES = 512 << 10;

  /**
   * Hands one entry to Raft: returns once it is in the leader's log (or throws: not submitted); the
   * future completes when Raft committed and applied it, or failed to.
   */
  @FunctionalInterface
  interface RaftSubmit {
    CompletableFuture<RaftClientReply> submit(RaftClientRequest request) throws IOException;
  }

  private final RaftSubmit raft;
  private final RaftGroupId group;
  private final RaftPeerId self;
  private final ClientId client = ClientId.randomId();
  private final long stint;
  private final Supplier<String> notLeader;
  private final Consumer<FerriteException> onFailure;

  /** LSN of the last record appended (queued); stored by the appender (under the metadata lock). */
  private volatile long written;

  /** Longest committed prefix; stored under {@link #lock}. */
  private volatile long durable;

  private volatile FerriteException failure;

  /** Guards {@link #ahead}, {@link #waiters} and the stores of durable and failure. */
  private final ReentrantLock lock = new ReentrantLock();

  /** Entries committed beyond {@link #durable}, from -> to (replies back before an earlier one). */
  private final TreeMap<Long, Long> ahead = new TreeMap<>();

  private final List<Waiter> waiters = new ArrayList<>();

  private record Waiter(long lsn, CompletableFuture<Void> done) {}

  /** Records appended, not yet taken by the submitter; guarded by itself. */
  private final ArrayDeque<byte[]> queued = new ArrayDeque<>();

  /** LSN of the first record in {@link #queued}; guarded by {@link #queued}. */
  private long queuedFrom = 1;

  /** Set (under {@link #queued}) when the submitter must stop: failed or closed. */
  private boolean stopped;

  private final Thread submitter;

  /** Entries submitted and the most records one held, for {@link #stats}. */
  private volatile long entries;

  private volatile long largestBatch;

  /**
   * @param stint this leadership stint's id (never 0)
   * @param notLeader the message of the NOT_LEADER failure (names the leader when known)
   * @param onFailure told once when this journal fails (not at {@link #close})
   */
  RaftJournal(
      RaftServer server,
      RaftGroupId group,
      RaftPeerId self,
      long stint,
      Supplier<String> notLeader,
      Consumer<FerriteException> onFailure) {
    this(submitTo(server, group), group, self, stint, notLeader, onFailure);
  }

  /** With {@code raft} in the place of the local Raft server (tests). */
  RaftJournal(
      RaftSubmit raft,
      RaftGroupId group,
      RaftPeerId self,
      long stint,
      Supplier<String> notLeader,
      Consumer<FerriteException> onFailure) {
    this.raft = raft;
    this.group = group;
    this.self = self;
    this.stint = stint;
    this.notLeader = notLeader;
    this.onFailure = onFailure;
    this.submitter = new Thread(this::submitLoop, "ferrite-master-raft-submit");
    submitter.setDaemon(true);
    submitter.start();
  }

  /**
   * Submission to the leader's division itself: Ratis's division (RaftServerImpl in 3.3.0)
   * implements the asynchronous client protocol and appends a request on the caller's thread, while
   * the {@link RaftServer}'s entry point hands it to Ratis's client executor and waits for that
   * thread to append it (a hand-off and a wake-up per entry: JFR saw the submitter wait 2.3 ms
   * median, counting waits over 1 ms, on a loaded 2-core machine). Either way the call returns once
   * the entry is in the log. The server's entry point is the fallback should a Ratis version's
   * division not implement the protocol.
   */
  private static RaftSubmit submitTo(RaftServer server, RaftGroupId group) {
    RaftServer.Division d;
    try {
      d = server.getDivision(group);
    } catch (IOException e) {
      return server::submitClientRequestAsync; // its first submission fails, and says why
    }
    return d instanceof RaftClientAsynchronousProtocol p
        ? p::submitClientRequestAsync
        : server::submitClientRequestAsync;
  }

  long stint() {
    return stint;
  }

  /** The entry of records {@code from..to} whose encoded groups are {@code bodies}. */
  static byte[] entry(long stint, long from, List<byte[]> bodies) {
    int events = 0;
    int bytes = 4;
    for (byte[] b : bodies) {
      // Each body is Journal.encodeGroup's: an i32 count, then the events.
      events += ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getInt(0);
      bytes += b.length - 4;
    }
    ByteBuffer e = ByteBuffer.allocate(ENTRY_HEADER + bytes).order(ByteOrder.LITTLE_ENDIAN);
    e.putLong(stint).putLong(from).putLong(from + bodies.size() - 1).putInt(events);
    for (byte[] b : bodies) {
      e.put(b, 4, b.length - 4);
    }
    return e.array();
  }

  /**
   * Queues {@code events} as the next record. Under the metadata lock, before the state applies
   * them: throws (and the state stays unchanged) if this journal failed. Never blocks.
   */
  void append(List<MasterEvent> events) {
    FerriteException f = failure;
    if (f != null) {
      throw new FerriteException(f.code(), f.detail(), f);
    }
    byte[] body = Journal.encodeGroup(events);
    synchronized (queued) {
      if (stopped) {
        FerriteException g = failure;
        throw g != null
            ? new FerriteException(g.code(), g.detail(), g)
            : new FerriteException(ErrorCode.NOT_LEADER, notLeader.get());
      }
      // Before the submitter can take it, so that durable never passes written. Single writer:
      // the metadata lock's holder.
      written++;
      queued.add(body);
      if (queued.size() == 1) {
        queued.notifyAll(); // the submitter waits only on an empty queue
      }
    }
  }

  /** The submitter: one entry per batch of queued records, in LSN order, until stopped. */
  private void submitLoop() {
    List<byte[]> batch = new ArrayList<>();
    while (true) {
      long from;
      synchronized (queued) {
        while (queued.isEmpty() && !stopped) {
          try {
            queued.wait();
          } catch (InterruptedException e) {
            return; // close() interrupts only after stopping
          }
        }
        if (stopped) {
          return;
        }
        from = queuedFrom;
        int bytes = 0;
        while (!queued.isEmpty()
            && (batch.isEmpty() || bytes + queued.peek().length <= BATCH_BYTES)) {
          byte[] b = queued.poll();
          bytes += b.length;
          batch.add(b);
        }
        queuedFrom = from + batch.size();
      }
      if (!submit(from, batch)) {
        return;
      }
      batch.clear();
    }
  }

  private boolean submit(long from, List<byte[]> batch) {
    long to = from + batch.size() - 1;
    RaftClientRequest req =
        RaftClientRequest.newBuilder()
            .setClientId(client)
            .setServerId(self)
            .setGroupId(group)
            .setCallId(to)
            .setMessage(Message.valueOf(UnsafeByteOperations.unsafeWrap(entry(stint, from, batch))))
            .setType(RaftClientRequest.writeRequestType())
            .build();
    CompletableFuture<RaftClientReply> reply;
    try {
      // Synchronous up to the leader's log append (submitTo), so entries reach the Raft log in
      // submission order, which is LSN order; the state machine checks it (MasterStateMachine.
      // applyTransaction).
      reply = raft.submit(req);
    } catch (IOException | RuntimeException e) {
      fail(
          new FerriteException(
              ErrorCode.NOT_LEADER, notLeader.get() + " (cannot submit to Raft: " + e + ")", e));
      return false;
    }
    entries++;
    if (batch.size() > largestBatch) {
      largestBatch = batch.size();
    }
    reply.whenComplete((r, e) -> settled(from, to, r, e));
    return true;
  }

  private void settled(long from, long to, RaftClientReply reply, Throwable error) {
    if (error == null && reply.isSuccess()) {
      committed(from, to);
      return;
    }
    Throwable cause = error != null ? error : reply.getException();
    fail(
        new FerriteException(
            ErrorCode.NOT_LEADER,
            notLeader.get()
                + " (Raft did not commit mutations "
                + from
                + ".."
                + to
                + ": "
                + cause
                + ")",
            cause));
  }

  private void committed(long from, long to) {
    List<CompletableFuture<Void>> done = new ArrayList<>();
    lock.lock();
    try {
      if (to <= durable) {
        return;
      }
      ahead.put(from, to);
      long d = durable;
      while (!ahead.isEmpty() && ahead.firstKey() == d + 1) {
        d = ahead.pollFirstEntry().getValue();
      }
      durable = d;
      for (int i = waiters.size() - 1; i >= 0; i--) {
        if (waiters.get(i).lsn <= d) {
          done.add(waiters.remove(i).done);
        }
      }
    } finally {
      lock.unlock();
    }
    // Outside the lock: completing sends answers.
    for (int i = done.size() - 1; i >= 0; i--) {
      done.get(i).complete(null);
    }
  }

  private void stopSubmitter() {
    synchronized (queued) {
      stopped = true;
      queued.clear();
      queued.notifyAll();
    }
  }

  private void fail(FerriteException f) {
    List<Waiter> failed;
    lock.lock();
    try {
      if (failure != null) {
        return;
      }
      failure = f;
      failed = new ArrayList<>(waiters);
      waiters.clear();
    } finally {
      lock.unlock();
    }
    stopSubmitter();
    LOG.log(System.Logger.Level.WARNING, f.getMessage());
    for (Waiter w : failed) {
      w.done.completeExceptionally(f);
    }
    onFailure.accept(f);
  }

  @Override
  public long writtenLsn() {
    return written;
  }

  @Override
  public long durableLsn() {
    return durable;
  }

  @Override
  public FerriteException failure() {
    return failure;
  }

  @Override
  public CompletableFuture<Void> whenDurable(long lsn) {
    if (durable >= lsn) {
      return CompletableFuture.completedFuture(null);
    }
    lock.lock();
    try {
      if (durable >= lsn) {
        return CompletableFuture.completedFuture(null);
      }
      if (failure != null) {
        return CompletableFuture.failedFuture(failure);
      }
      CompletableFuture<Void> f = new CompletableFuture<>();
      waiters.add(new Waiter(lsn, f));
      return f;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Since this stint began: records appended, Raft entries submitted (in the place of fsyncs),
   * records committed, most records in one entry.
   */
  GroupCommit.Stats stats() {
    return new GroupCommit.Stats(written, entries, durable, largestBatch);
  }

  /**
   * Fails what still waits (NOT_LEADER: this master stopped serving as leader), refuses later
   * appends and drops what is queued. Entries already submitted may still commit; their callers
   * were told they failed, as after a timeout.
   */
  @Override
  public void close() {
    stopSubmitter();
    List<Waiter> failed;
    lock.lock();
    try {
      if (failure == null) {
        failure = new FerriteException(ErrorCode.NOT_LEADER, notLeader.get());
      }
      failed = new ArrayList<>(waiters);
      waiters.clear();
    } finally {
      lock.unlock();
    }
    for (Waiter w : failed) {
      w.done.completeExceptionally(failure);
    }
  }
}
