package io.ferrite.kernel.master;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.apache.ratis.io.MD5Hash;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftGroupMemberId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.StateMachineStorage;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.util.LifeCycle;
import org.apache.ratis.util.MD5FileUtil;

/**
 * The master group's Raft state machine: the <em>committed</em> metadata, a {@link MasterState}
 * (with its own instances of the extensions) to which every committed entry ({@link RaftJournal}'s
 * records) is applied in log order, on every master, leader included. It is what a new leader's
 * serving state is copied from, and what snapshots are written from: never the leader's serving
 * state, which runs ahead of the commit (it applies a mutation before Raft commits it).
 *
 * <p>Snapshots are the journal's snapshot format ({@link Journal#writeSnapshotFile}), one file per
 * snapshot in Ratis's {@link SimpleStateMachineStorage} ({@code snapshot.TERM_INDEX} plus its MD5
 * file), which Ratis sends whole to a follower whose log the leader has purged; the follower's
 * {@link #reinitialize} then loads it.
 *
 * <p>Threads: Ratis calls {@link #applyTransaction}, {@link #takeSnapshot} and the notifications on
 * its state machine updater thread, one at a time. {@link #committedEvents} is called by the
 * master's leadership watcher; it reads under the committed state's lock, which {@link
 * #applyTransaction} holds across a whole entry.
 */
final class MasterStateMachine extends BaseStateMachine {
  private static final System.Logger LOG = System.getLogger(MasterStateMachine.class.getName());

  private final SimpleStateMachineStorage storage = new SimpleStateMachineStorage();
  private final Supplier<MasterState> fresh;
  private final Runnable changed;
  private final Runnable applied;

  /** Replaced only by (re)initialization, on the updater thread. */
  private volatile MasterState committed;

  /**
   * The stint of the last entry applied, and its last record's LSN: the records of one stint come
   * 1, 2, 3, ... (an entry holds a run of them).
   */
  private long lastStint;

  private long lastLsn;

  /** Set when entries of a stint came out of order: that stint's serving state is wrong. */
  private volatile long disorderedStint;

  /**
   * @param fresh an empty state with fresh instances of the extensions installed
   * @param changed told on every leader change, term index update and disordered entry (wakes the
   *     watcher)
   * @param applied told after every applied entry (on the updater thread: keep it cheap)
   */
  MasterStateMachine(Supplier<MasterState> fresh, Runnable changed, Runnable applied) {
    this.fresh = fresh;
    this.changed = changed;
    this.applied = applied;
  }

  @Override
  public void initialize(RaftServer server, RaftGroupId groupId, RaftStorage raftStorage)
      throws IOException {
    super.initialize(server, groupId, raftStorage);
    storage.init(raftStorage);
    getLifeCycle().startAndTransition(this::load);
  }

  /**
   * Ratis pauses the state machine before it installs a snapshot a leader sent (its updater then
   * asserts PAUSED) and calls {@link #reinitialize} after; BaseStateMachine's pause does nothing.
   */
  @Override
  public void pause() {
    getLifeCycle().transition(LifeCycle.State.PAUSING);
    getLifeCycle().transition(LifeCycle.State.PAUSED);
  }

  /** After a snapshot install: the committed state is the newest snapshot's. */
  @Override
  public void reinitialize() throws IOException {
    getLifeCycle().startAndTransition(this::load);
  }

  /** The committed state from the newest snapshot (an empty one without). */
  private void load() throws IOException {
    MasterState s = fresh.get();
    SingleFileSnapshotInfo snap = storage.loadLatestSnapshot();
    if (snap != null) {
      int n = Journal.readSnapshotFile(snap.getFile().getPath(), s::apply);
      setLastAppliedTermIndex(snap.getTermIndex());
      LOG.log(
          System.Logger.Level.INFO,
          "master group state machine: snapshot {0} ({1} records) loaded",
          snap.getTermIndex(),
          n);
    }
    committed = s;
    lastStint = 0;
    lastLsn = 0;
  }

  @Override
  public StateMachineStorage getStateMachineStorage() {
    return storage;
  }

  @Override
  public CompletableFuture<Message> applyTransaction(TransactionContext trx) {
    LogEntryProto entry = trx.getLogEntry();
    ByteBuffer data =
        entry
            .getStateMachineLogEntry()
            .getLogData()
            .asReadOnlyByteBuffer()
            .order(ByteOrder.LITTLE_ENDIAN);
    long stint = data.getLong();
    long from = data.getLong();
    long to = data.getLong();
    List<MasterEvent> events =
        Journal.decodeGroup(
            data.slice(), "raft entry " + entry.getIndex() + " (stint " + stint + ")");
    if (stint == lastStint && from != lastLsn + 1) {
      // The leader applied its mutations in LSN order; the log must hold them so. Never expected
      // (one thread submits, each entry appended to the log before the next is submitted): the
      // leader's serving state is rebuilt from this committed one.
      LOG.log(
          System.Logger.Level.ERROR,
          "raft entry {0}: mutations {1}..{2} of stint {3} follow {4}; rebuilding the leader''s"
              + " state",
          entry.getIndex(),
          from,
          to,
          stint,
          lastLsn);
      disorderedStint = stint;
      changed.run();
    }
    lastStint = stint;
    lastLsn = to;
    MasterState s = committed;
    synchronized (s) {
      for (MasterEvent e : events) {
        s.apply(e);
      }
      updateLastAppliedTermIndex(entry.getTerm(), entry.getIndex());
    }
    applied.run();
    return CompletableFuture.completedFuture(Message.EMPTY);
  }

  @Override
  public void notifyTermIndexUpdated(long term, long index) {
    MasterState s = committed;
    synchronized (s) {
      super.notifyTermIndexUpdated(term, index);
    }
    changed.run();
  }

  @Override
  public void notifyLeaderChanged(RaftGroupMemberId member, RaftPeerId leader) {
    changed.run();
  }

  /** True if entries of {@code stint} reached the log out of order (see applyTransaction). */
  boolean disordered(long stint) {
    return disorderedStint == stint;
  }

  /** The committed state (read it under its lock). */
  MasterState committed() {
    return committed;
  }

  /** The committed state as events, and the index it holds, read together. */
  record Copy(List<MasterEvent> events, long index) {}

  Copy committedEvents() {
    MasterState s = committed;
    synchronized (s) {
      return new Copy(s.snapshotEvents(), getLastAppliedTermIndex().getIndex());
    }
  }

  /** The index of the last entry applied. */
  long appliedIndex() {
    return getLastAppliedTermIndex().getIndex();
  }

  @Override
  public long takeSnapshot() throws IOException {
    MasterState s = committed;
    List<MasterEvent> events;
    TermIndex last;
    synchronized (s) {
      events = s.snapshotEvents();
      last = getLastAppliedTermIndex();
    }
    if (last == null || last.getIndex() < 0) {
      return -1;
    }
    File file = storage.getSnapshotFile(last.getTerm(), last.getIndex());
    Journal.writeSnapshotFile(file.toPath(), last.getIndex(), events);
    MD5Hash md5 = MD5FileUtil.computeAndSaveMd5ForFile(file);
    storage.updateLatestSnapshot(
        new SingleFileSnapshotInfo(new FileInfo(file.toPath(), md5), last));
    LOG.log(
        System.Logger.Level.INFO, "master group snapshot at {0}: {1} records", last, events.size());
    return last.getIndex();
  }
}
