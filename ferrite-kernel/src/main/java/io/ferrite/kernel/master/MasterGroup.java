package io.ferrite.kernel.master;

import io.ferrite.kernel.config.FerriteConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.ratis.RaftConfigKeys;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.netty.NettyConfigKeys;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.SnapshotManagementRequest;
import org.apache.ratis.rpc.SupportedRpcType;
import org.apache.ratis.server.DivisionInfo;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.util.SizeInBytes;
import org.apache.ratis.util.TimeDuration;

/**
 * One master's side of a master group: its Apache Ratis server (NETTY rpc, storage in {@code
 * <data.dir>/master/raft}) with the {@link MasterStateMachine}, and the leadership watcher, a
 * thread ({@code ferrite-master-leadership}) that turns Raft roles into serving:
 *
 * <ul>
 *   <li><b>Becoming leader.</b> When Ratis says this server is the leader and ready (its first
 *       entry of the term is committed: HDDS-2637's "leader but not ready" is waited out) and the
 *       state machine has applied everything committed, the watcher builds a serving state: a copy
 *       of the committed state (fresh extension instances), every server UNKNOWN until it
 *       heartbeats and every session with a fresh lease (as after a restart), a {@link RaftJournal}
 *       of a new stint as its sink; starts the extensions (their start records go to Raft) and
 *       publishes it to the endpoints.
 *   <li><b>Stopping.</b> When it is no longer leader, or the term changed under it (it may have
 *       missed another leader's entries), or a mutation failed to commit, or its entries reached
 *       the log out of order, the watcher retires the serving state: answers still waiting for a
 *       commit fail with NOT_LEADER, its extensions stop, and the state is thrown away (it may hold
 *       mutations that never commit). The committed state lives on; the next stint copies it.
 * </ul>
 *
 * The watcher wakes on Ratis's notifications and every 20 ms.
 */
final class MasterGroup implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(MasterGroup.class.getName());

  /**
   * Ratis's netty server logs every accepted connection at INFO through a LoggingHandler (to
   * java.util.logging, as no slf4j provider is bound): quieted to warnings. Held strongly, since
   * java.util.logging keeps its loggers weakly.
   */
  private static final java.util.logging.Logger NETTY_WIRE_LOG =
      java.util.logging.Logger.getLogger(
          "org.apache.ratis.thirdparty.io.netty.handler.logging.LoggingHandler");

  static {
    NETTY_WIRE_LOG.setLevel(java.util.logging.Level.WARNING);
  }

  private final FerriteConfig cfg;
  private final Path dir;
  private final Master master;
  private final List<FerriteConfig.MasterPeer> peers;
  private final RaftPeerId self;
  private final RaftGroupId groupId;
  private final MasterStateMachine sm;
  private final Supplier<MasterState> fresh;
  private final SecureRandom random = new SecureRandom();
  private final Object wake = new Object();
  private volatile RaftServer server;
  private Thread watcher;
  private volatile boolean closed;
  private boolean woken;

  MasterGroup(
      FerriteConfig cfg,
      Path dir,
      Supplier<MasterState> fresh,
      Master master,
      Supplier<List<MasterExtension>> extensions) {
    this.cfg = cfg;
    this.dir = dir;
    this.master = master;
    this.fresh = fresh;
    this.peers = cfg.masterPeers();
    this.self = peerId(cfg.masterId());
    this.groupId = groupId(cfg.clusterId());
    this.sm = new MasterStateMachine(fresh, this::wake, this::appliedEntry);
  }

  static RaftPeerId peerId(int member) {
    return RaftPeerId.valueOf("master-" + member);
  }

  /** One group per cluster id: a master of another cluster is never let in. */
  static RaftGroupId groupId(String clusterId) {
    return RaftGroupId.valueOf(
        UUID.nameUUIDFromBytes(
            ("ferrite-master-group:" + clusterId).getBytes(StandardCharsets.UTF_8)));
  }

  /** Ratis's properties from the Ferrite configuration (see docs/RESILIENCE.md). */
  RaftProperties properties() {
    RaftProperties p = new RaftProperties();
    RaftConfigKeys.Rpc.setType(p, SupportedRpcType.NETTY);
    FerriteConfig.MasterPeer me = peers.get(cfg.masterId() - 1);
    NettyConfigKeys.Server.setHost(p, me.host());
    NettyConfigKeys.Server.setPort(p, me.raftPort());
    RaftServerConfigKeys.setStorageDir(p, List.of(dir.resolve("raft").toFile()));
    long min = cfg.masterRaftTimeout().toMillis();
    RaftServerConfigKeys.Rpc.setTimeoutMin(p, TimeDuration.valueOf(min, TimeUnit.MILLISECONDS));
    RaftServerConfigKeys.Rpc.setTimeoutMax(p, TimeDuration.valueOf(2 * min, TimeUnit.MILLISECONDS));
    // A request that cannot commit (no majority) fails after this; the serving state is then
    // thrown away and nothing was acknowledged.
    RaftServerConfigKeys.Rpc.setRequestTimeout(
        p, TimeDuration.valueOf(Math.max(3 * min, 3000), TimeUnit.MILLISECONDS));
    // journal.fsync keeps its meaning: Ratis fsyncs its log before it counts an entry as
    // appended (false: flushes in the background, like the single master's no-fsync mode).
    RaftServerConfigKeys.Log.setUnsafeFlushEnabled(p, !cfg.journalFsync());
    RaftServerConfigKeys.Snapshot.setAutoTriggerEnabled(p, true);
    RaftServerConfigKeys.Snapshot.setAutoTriggerThreshold(p, cfg.snapshotEvery());
    RaftServerConfigKeys.Log.setPurgeUptoSnapshotIndex(p, true);
    // Snapshots purge whole closed segments: the segment size bounds what a snapshot leaves.
    long segment = cfg.masterRaftSegmentSize();
    RaftServerConfigKeys.Log.setSegmentSizeMax(p, SizeInBytes.valueOf(segment));
    RaftServerConfigKeys.Log.setPreallocatedSize(
        p, SizeInBytes.valueOf(Math.min(segment, 4L << 20)));

    RaftServerConfigKeys.Log.setPurgeGap(p, Math.max(1, Math.min(1024, cfg.snapshotEvery())));
    return p;
  }

  void start() throws IOException {
    List<RaftPeer> rp = new ArrayList<>();
    for (int i = 0; i < peers.size(); i++) {
      rp.add(
          RaftPeer.newBuilder()
              .setId(peerId(i + 1))
              .setAddress(peers.get(i).raftAddress())
              .build());
    }
    server =
        RaftServer.newBuilder()
            .setServerId(self)
            .setGroup(RaftGroup.valueOf(groupId, rp))
            .setStateMachine(sm)
            .setProperties(properties())
            .setOption(RaftStorage.StartupOption.RECOVER)
            .build();
    server.start();
    watcher = new Thread(this::watch, "ferrite-master-leadership");
    watcher.setDaemon(true);
    watcher.start();
  }

  /**
   * An entry was applied to the committed state. Only a master that is not serving waits for that
   * (its applied index must reach the commit index before it builds a core); a serving leader's
   * watcher has nothing to do per entry, and waking it for each one (a step: Ratis's division info
   * and commit infos) took CPU from the commit path on a loaded machine.
   */
  private void appliedEntry() {
    if (master.core() == null) {
      wake();
    }
  }

  private void wake() {
    synchronized (wake) {
      woken = true;
      wake.notifyAll();
    }
  }

  private void watch() {
    while (!closed) {
      try {
        step();
      } catch (IOException | RuntimeException e) {
        if (!closed) {
          LOG.log(System.Logger.Level.WARNING, "master group: leadership step failed", e);
        }
      }
      synchronized (wake) {
        if (!woken) {
          try {
            wake.wait(20);
          } catch (InterruptedException e) {
            return;
          }
        }
        woken = false;
      }
    }
  }

  private DivisionInfo info() throws IOException {
    RaftServer s = server;
    if (s == null) {
      // The endpoints serve (MASTER_INFO, NOT_LEADER) from just before the Raft server starts.
      throw new IOException("the Raft server is starting");
    }
    return s.getDivision(groupId).getInfo();
  }

  /** One look at the Raft role: retire a core that may no longer serve, build one if leading. */
  private void step() throws IOException {
    RaftServer.Division d = server.getDivision(groupId);
    DivisionInfo info = d.getInfo();
    long term = info.getCurrentTerm();
    boolean leading = info.isLeader() && info.isLeaderReady();
    Master.Core c = master.core();
    if (c != null) {
      RaftJournal rj = (RaftJournal) c.log;
      String why =
          !leading
              ? "no longer the leader"
              : c.term != term
                  ? "the term changed to " + term
                  : c.held.failure() != null
                      ? "a mutation did not commit"
                      : sm.disordered(rj.stint()) ? "entries reached the log out of order" : null;
      if (why != null) {
        LOG.log(
            System.Logger.Level.INFO,
            "master {0}: stops serving as leader of term {1} ({2})",
            cfg.masterId(),
            c.term,
            why);
        master.retire(c);
        c = null;
      }
    }
    if (c != null) {
      nudgeWhenIdle(d, c);
      return;
    }
    if (!leading || closed) {
      return;
    }
    // Everything committed before this term must be in the committed state before it is copied.
    if (sm.appliedIndex() < d.getRaftLog().getLastCommittedIndex()) {
      return;
    }
    MasterStateMachine.Copy copy = sm.committedEvents();
    MasterState state = fresh.get();
    for (MasterEvent e : copy.events()) {
      state.apply(e);
    }
    state.recovered();
    long stint;
    do {
      stint = random.nextLong();
    } while (stint == 0);
    RaftJournal rj =
        new RaftJournal(server, groupId, self, stint, this::notLeaderMessage, f -> wake());
    Master.Core fresh = new Master.Core(state, rj, rj::append, state.extensions(), term);
    try {
      master.startCore(fresh);
    } catch (RuntimeException e) {
      master.retire(fresh);
      throw e;
    }
    master.publish(fresh);
    LOG.log(
        System.Logger.Level.INFO,
        "master {0}: leader of term {1}, serving from index {2} ({3} records)",
        cfg.masterId(),
        term,
        copy.index(),
        copy.events().size());
  }

  /** A leader whose log has not grown for this long appends an empty record (see below). */
  private static final long NUDGE_AFTER_IDLE_NS = 1_000_000_000L;

  /**
   * The leader's last log index when the watcher last looked, and since when it is so (ns). Only
   * the watcher thread touches them.
   */
  private long idleIndex = Long.MIN_VALUE;

  private long idleSince;

  /**
   * RATIS-2523 (seen with Ratis 3.3.0; filed against the gRPC appender, and NETTY's
   * LogAppenderDefault shares its cause in LogAppenderBase): a follower restarted with empty
   * storage answers every heartbeat INCONSISTENCY with nextIndex 0, and the leader ignores that
   * hint for its stale {@code matchIndex + 1} (LogAppenderBase.getNextIndexForInconsistency takes
   * the hint only when the request's first entry is {@code matchIndex + 1}; a heartbeat has none).
   * An idle group's leader never sends that follower anything but heartbeats, so it never catches
   * up; the next entry appended unsticks it (its request starts at {@code matchIndex + 1}: the
   * leader then sends the log from the follower's hint, or installs a snapshot if it purged what
   * the follower lacks).
   *
   * <p>So a serving leader whose Raft log has not grown for a second appends an empty record (no
   * events: applying it changes nothing). Nothing the leader can see tells a wiped follower apart:
   * its match index stays where it was, and Ratis raises a follower's commit index only to its
   * maximum ({@code FollowerInfo.updateCommitIndex}), so the -1 it reports is never seen. (The
   * first version nudged only while a follower's reported commit index lagged; when the group was
   * idle as the follower stopped, nothing lagged, ever, and the follower stayed empty: the flake of
   * MasterGroupTest.aFollowerRestartedWithEmptyStorageCatchesUp.) Cost: one small entry a second on
   * an idle group (a log write on each master, fsynced with journal.fsync), none on a busy one. A
   * wiped follower catches up within about a second of its restart.
   */
  private void nudgeWhenIdle(RaftServer.Division d, Master.Core c) {
    long last = d.getRaftLog().getNextIndex() - 1;
    long now = System.nanoTime();
    if (last != idleIndex) {
      idleIndex = last;
      idleSince = now;
      return;
    }
    if (now - idleSince < NUDGE_AFTER_IDLE_NS) {
      return;
    }
    idleSince = now; // at most one nudge a second, also while one has not reached the log yet
    RaftJournal rj = (RaftJournal) c.log;
    if (rj.durableLsn() < rj.writtenLsn()) {
      return; // records in flight: their entries reach the followers already
    }
    synchronized (c.state) {
      if (c.held.failure() == null) {
        // Through the core's sink, under the metadata lock: LSN order is the log's order. Goes
        // straight to the RaftJournal unless a record is held for its answer (then it queues
        // behind that one and is written right after it).
        c.held.append(List.of());
      }
    }
  }

  /** The index of the last entry the committed state holds. */
  long appliedIndex() {
    return sm.appliedIndex();
  }

  /** The committed state (a follower's {@link Master#state}). */
  MasterState committed() {
    return sm.committed();
  }

  String role() {
    try {
      DivisionInfo i = info();
      return i.isFollower() ? "follower" : "candidate";
    } catch (IOException e) {
      return "candidate";
    }
  }

  long term() {
    try {
      return info().getCurrentTerm();
    } catch (IOException e) {
      return 0;
    }
  }

  /** The leader's client address ({@code tcp://host:port} from master.peers), "" if unknown. */
  String leaderAddress() {
    try {
      RaftPeerId leader = info().getLeaderId();
      if (leader == null) {
        return "";
      }
      for (int i = 0; i < peers.size(); i++) {
        if (peerId(i + 1).equals(leader)) {
          return peers.get(i).tcpAddress();
        }
      }
    } catch (IOException e) {
      // closing
    }
    return "";
  }

  /**
   * What NOT_LEADER says: ends with {@code leader: tcp://host:port} when the leader is known (the
   * form clients parse).
   */
  String notLeaderMessage() {
    String leader = leaderAddress();
    return "master "
        + cfg.masterId()
        + " is not serving as the leader of the master group"
        + (leader.isEmpty()
            ? " (no leader known: an election is under way)"
            : "; leader: " + leader);
  }

  String summary() {
    return "Raft group " + groupId.getUuid() + ", applied index " + sm.appliedIndex();
  }

  /** Asks Ratis for a snapshot of the committed state now. */
  void snapshot() {
    try {
      RaftClientReply r =
          server.snapshotManagement(
              SnapshotManagementRequest.newCreate(
                  ClientId.randomId(), self, groupId, 1, cfg.rpcTimeout().toMillis()));
      if (!r.isSuccess()) {
        throw new io.ferrite.fabric.FerriteException(
            io.ferrite.fabric.ErrorCode.UNAVAILABLE, "snapshot refused: " + r.getException());
      }
    } catch (IOException e) {
      throw new io.ferrite.fabric.FerriteException(
          io.ferrite.fabric.ErrorCode.UNAVAILABLE, "snapshot failed: " + e, e);
    }
  }

  /** The Raft server, for tests. */
  RaftServer server() {
    return server;
  }

  @Override
  public void close() {
    closed = true;
    Thread w = watcher;
    if (w != null) {
      w.interrupt();
      try {
        w.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    RaftServer s = server;
    if (s != null) {
      try {
        s.close();
      } catch (IOException e) {
        LOG.log(System.Logger.Level.WARNING, "closing the master group's Raft server", e);
      }
    }
  }
}
