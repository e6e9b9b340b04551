package io.ferrite.kernel.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;

/**
 * A master group leader's journal: each mutation's record (its group of {@link MasterEvent}s, the
 * body {@link Journal} writes) becomes one Raft log entry, submitted to the local Raft server under
 * the metadata lock, in the order the leader applied the mutations. Durable means committed by
 * Raft: on the disks of a majority (Ratis fsyncs its log unless {@code journal.fsync=false}).
 *
 * <pre>
 * entry = stint u64 | lsn u64 | body     (little-endian; body = Journal.encodeGroup)
 * </pre>
 *
 * {@code stint} is drawn at random for each leadership stint (each core the leader builds), {@code
 * lsn} numbers its entries from 1, so {@link MasterStateMachine} can check that the Raft log holds
 * them in the order the leader applied them.
 *
 * <p>{@link #append} is the state's sink: it submits and returns (it never waits for Raft); {@link
 * #durableLsn} is the longest prefix of LSNs whose entries Raft committed and applied. Replies come
 * back on Ratis threads, possibly out of order; the prefix is what counts. A submission that fails
 * (the leader lost its leadership, Ratis refused it) leaves the leader's state holding a mutation
 * that may never commit, so this journal fails for good ({@link #failure}, NOT_LEADER): every
 * answer still waiting fails, every later mutation is refused, and {@code onFailure} tells the
 * master to throw its state away and rebuild it from the committed state.
 *
 * <p>Thread-safety: {@link #append} under the master's metadata lock (one at a time); the rest from
 * any thread. Nothing here blocks.
 */
final class RaftJournal implements Durability, AutoCloseable {
  private static final System.Logger LOG = System.getLogger(RaftJournal.class.getName());

  static final int ENTRY_HEADER = 16;

  private final RaftServer server;
  private final RaftGroupId group;
  private final RaftPeerId self;
  private final ClientId client = ClientId.randomId();
  private final long stint;
  private final Supplier<String> notLeader;
  private final Consumer<FerriteException> onFailure;

  /** LSN of the last entry submitted; stored by the appender (under the metadata lock). */
  private volatile long written;

  /** Longest committed prefix; stored under {@link #lock}. */
  private volatile long durable;

  private volatile FerriteException failure;

  /** Guards {@link #ahead}, {@link #waiters} and the stores of durable and failure. */
  private final ReentrantLock lock = new ReentrantLock();

  /** LSNs committed beyond {@link #durable} (replies that came back before an earlier one). */
  private final TreeSet<Long> ahead = new TreeSet<>();

  private final List<Waiter> waiters = new ArrayList<>();

  private record Waiter(long lsn, CompletableFuture<Void> done) {}

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
    this.server = server;
    this.group = group;
    this.self = self;
    this.stint = stint;
    this.notLeader = notLeader;
    this.onFailure = onFailure;
  }

  long stint() {
    return stint;
  }

  /** The entry of {@code events}: see the class comment. */
  static byte[] entry(long stint, long lsn, List<MasterEvent> events) {
    byte[] body = Journal.encodeGroup(events);
    ByteBuffer b = ByteBuffer.allocate(ENTRY_HEADER + body.length).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(stint).putLong(lsn).put(body);
    return b.array();
  }

  /**
   * Submits {@code events} as the next entry. Under the metadata lock, before the state applies
   * them: throws (and the state stays unchanged) if it cannot submit.
   */
  void append(List<MasterEvent> events) {
    FerriteException f = failure;
    if (f != null) {
      throw new FerriteException(f.code(), f.detail(), f);
    }
    long lsn = written + 1;
    RaftClientRequest req =
        RaftClientRequest.newBuilder()
            .setClientId(client)
            .setServerId(self)
            .setGroupId(group)
            .setCallId(lsn)
            .setMessage(Message.valueOf(UnsafeByteOperations.unsafeWrap(entry(stint, lsn, events))))
            .setType(RaftClientRequest.writeRequestType())
            .build();
    CompletableFuture<RaftClientReply> reply;
    try {
      // Synchronous up to the leader's log append (RaftServerImpl appends under its own lock on
      // this thread), so entries reach the Raft log in the order of the metadata lock; the
      // state machine checks it (MasterStateMachine.applyTransaction).
      reply = server.submitClientRequestAsync(req);
    } catch (IOException | RuntimeException e) {
      throw new FerriteException(
          ErrorCode.NOT_LEADER, notLeader.get() + " (cannot submit to Raft: " + e + ")", e);
    }
    written = lsn;
    reply.whenComplete((r, e) -> settled(lsn, r, e));
  }

  private void settled(long lsn, RaftClientReply reply, Throwable error) {
    if (error == null && reply.isSuccess()) {
      committed(lsn);
      return;
    }
    Throwable cause = error != null ? error : reply.getException();
    fail(
        new FerriteException(
            ErrorCode.NOT_LEADER,
            notLeader.get() + " (Raft did not commit mutation " + lsn + ": " + cause + ")",
            cause));
  }

  private void committed(long lsn) {
    List<CompletableFuture<Void>> done = new ArrayList<>();
    lock.lock();
    try {
      if (lsn <= durable) {
        return;
      }
      ahead.add(lsn);
      long d = durable;
      while (!ahead.isEmpty() && ahead.first() == d + 1) {
        d = ahead.pollFirst();
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

  /** Records submitted and committed since this stint began. */
  GroupCommit.Stats stats() {
    long d = durable;
    return new GroupCommit.Stats(written, d, d, 0);
  }

  /**
   * Fails what still waits (NOT_LEADER: this master stopped serving as leader) and refuses later
   * appends. Entries already submitted may still commit; their callers were told they failed, as
   * after a timeout.
   */
  @Override
  public void close() {
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
