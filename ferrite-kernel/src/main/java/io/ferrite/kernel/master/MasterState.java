package io.ferrite.kernel.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.master.MasterEvent.BlockKey;
import io.ferrite.kernel.proto.BlockKeyMint;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.RegionInfo;
import io.ferrite.kernel.proto.ServerState;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.LongSupplier;

/**
 * The master's metadata and every rule that changes it: membership, the region directory, block
 * allocation across storage classes, and client sessions. Deterministic: time comes from an
 * injected clock and session ids from an injected {@link Random}, so tests drive it directly.
 *
 * <p>Every mutation is validated first, then written ahead to the {@link Sink} (the journal) as
 * {@link MasterEvent}s, then applied. A mutation the sink refuses (an I/O failure) leaves the state
 * unchanged. Replaying the same events with {@link #apply} rebuilds the same metadata; transient
 * state (server liveness, session renew times, round-robin cursors) is not journaled: after
 * recovery every server is {@link ServerState#UNKNOWN} until it heartbeats, and every session gets
 * a fresh lease.
 *
 * <p>Thread-safety: every public method is {@code synchronized}. The sink only writes under the
 * lock; the journal fsyncs outside it (group commit), and the master's RPC layer holds each answer
 * until the fsync that covers what it shows ({@link MasterService}). So a method returning here
 * means "applied in memory and written", not "durable": in-process callers that need durability
 * wait on the journal.
 */
public final class MasterState {
  private static final System.Logger LOG = System.getLogger(MasterState.class.getName());

  /** Where the events of a mutation go before they are applied. */
  @FunctionalInterface
  public interface Sink {
    /**
     * Writes {@code events} ahead, as one group, in order (durability may follow later: the
     * journal's group commit); throws if it cannot, and then the state stays unchanged.
     */
    void append(List<MasterEvent> events);

    /**
     * As {@link #append}, for the first mutation of a call with a request id: the sink may keep the
     * record open until {@link #release} adds the call's answer to it ({@link HeldRecords}).
     */
    default void appendHeld(List<MasterEvent> events, Object hold) {
      append(events);
    }

    /**
     * Closes the record {@link #appendHeld} opened for {@code hold}, with {@code answer}'s events
     * in it (empty: no answer is kept); without such a record, the answer is a record of its own.
     */
    default void release(Object hold, List<MasterEvent> answer) {
      if (!answer.isEmpty()) {
        append(answer);
      }
    }
  }

  /**
   * The default storage-class preference order; user-defined classes follow in order of arrival.
   */
  public static final List<String> DEFAULT_CLASSES = List.of("dram", "disk");

  private static final long MAX_LEASE_MILLIS = 3_600_000;

  private final String clusterId;
  private final long blockSize;
  private final long deadTimeoutMillis;
  private final int defaultLeaseMillis;
  private final int heartbeatMillis;
  private final LongSupplier clock;
  private final Random random;
  private Sink sink = events -> {};

  /** Mints block keys for ALLOCATE/OWNED answers; null: refs carry the region's owner key. */
  private BlockKeyMint mint;

  private final Metadata md;
  private final TreeMap<Integer, ServerEntry> servers;
  private final Map<Long, SessionEntry> sessions;

  /**
   * @param clock milliseconds from a monotonic source
   * @param random source of session ids (seed it in tests)
   */
  public MasterState(
      String clusterId,
      long blockSize,
      long deadTimeoutMillis,
      int defaultLeaseMillis,
      int heartbeatMillis,
      LongSupplier clock,
      Random random) {
    this.clusterId = clusterId;
    this.blockSize = blockSize;
    this.deadTimeoutMillis = deadTimeoutMillis;
    this.defaultLeaseMillis = defaultLeaseMillis;
    this.heartbeatMillis = heartbeatMillis;
    this.clock = clock;
    this.random = random;
    this.md = new Metadata(blockSize, clock);
    this.servers = md.servers;
    this.sessions = md.sessions;
  }

  /** Sets the journal; mutations before this go nowhere (used while replaying). */
  public synchronized void sink(Sink sink) {
    this.sink = Objects.requireNonNull(sink);
  }

  public long blockSize() {
    return blockSize;
  }

  /**
   * Hands out per-block keys minted by {@code mint} from now on, and quarantines freed blocks until
   * their servers revoked the old keys (the master does this before replaying its journal; without
   * it, a block ref carries its region's owner key, as before capabilities).
   */
  public synchronized void blockKeys(BlockKeyMint mint) {
    this.mint = Objects.requireNonNull(mint);
    md.revoking = true;
  }

  /**
   * Whether a mutation since the last {@link #drainRevokes} freed blocks (a volatile read, no lock:
   * a caller that made the mutation on this thread always sees it).
   */
  boolean revokesPending() {
    return md.revokesPending;
  }

  /**
   * The revokes owed since the last call, by server (and forgets them): see {@link Revoker}. No
   * lock: an allocation may hold it while it waits for these revokes to finish.
   */
  Map<Integer, List<ServerRevoke>> drainRevokes() {
    Map<Integer, List<ServerRevoke>> out = new TreeMap<>();
    for (Metadata.Revoke r : md.drainRevokes()) {
      out.computeIfAbsent(r.block().serverId(), k -> new ArrayList<>())
          .add(new ServerRevoke(r.block(), r.generation()));
    }
    return out;
  }

  /** One block's new generation, for its server. */
  record ServerRevoke(BlockKey block, int generation) {}

  /**
   * The server installed these generations: the blocks leave quarantine (unless freed again since,
   * or re-allocated) the next time the metadata lock is taken for something that looks at the
   * quarantine. No lock here: the Revoker's thread never waits behind an allocation that is waiting
   * for it ({@link #planWaitingForRevokes}).
   */
  void revoked(List<ServerRevoke> done) {
    revokedInbox.add(done);
  }

  /** Revokes that finished, not yet applied (see {@link #revoked}). */
  private final java.util.concurrent.ConcurrentLinkedQueue<List<ServerRevoke>> revokedInbox =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  /**
   * Asks the master's Revoker to send what is owed now (set by the master; null in tests without
   * one). Must not take the metadata lock: it runs under it.
   */
  private volatile Runnable revokeNudge;

  /**
   * Opens a connection to a memory server for {@link MasterContext#connect} (set by the master).
   */
  private volatile java.util.function.IntFunction<io.ferrite.fabric.FabricConnection> connector;

  void connector(java.util.function.IntFunction<io.ferrite.fabric.FabricConnection> c) {
    this.connector = c;
  }

  void revokeNudge(Runnable nudge) {
    this.revokeNudge = nudge;
  }

  /**
   * How long an allocation that found no free block waits, holding the metadata lock, for freed
   * blocks whose revokes are on their way (a revoke is one round trip to a server; this bounds the
   * stall of everything else on a full cluster).
   */
  static final long REVOKE_WAIT_NANOS = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(200);

  /** Applies the finished revokes (caller holds the lock). */
  private void applyRevoked() {
    List<ServerRevoke> done;
    while ((done = revokedInbox.poll()) != null) {
      unquarantine(done);
    }
  }

  private void unquarantine(List<ServerRevoke> done) {
    for (ServerRevoke r : done) {
      RegionEntry reg = md.region(r.block());
      int i = r.block().index();
      if (reg != null
          && i < reg.blocks
          && reg.generation[i] == r.generation()
          && !reg.used.get(i)) {
        reg.unquarantine(i);
      }
    }
  }

  /** Quarantined blocks of ALIVE servers, as revokes to retry (the ticker's). */
  synchronized Map<Integer, List<ServerRevoke>> quarantinedRevokes() {
    applyRevoked();
    Map<Integer, List<ServerRevoke>> out = new TreeMap<>();
    for (ServerEntry s : servers.values()) {
      if (s.state != ServerState.ALIVE) {
        continue;
      }
      for (RegionEntry r : s.regions.values()) {
        for (int i = r.quarantined.nextSetBit(0); i >= 0; i = r.quarantined.nextSetBit(i + 1)) {
          out.computeIfAbsent(s.id, k -> new ArrayList<>())
              .add(
                  new ServerRevoke(
                      new BlockKey(s.id, r.info.ref().regionId(), i), r.generation[i]));
        }
      }
    }
    return out;
  }

  /** How many free blocks wait for a revoke (status and tests). */
  public synchronized int quarantinedBlocks() {
    applyRevoked();
    int n = 0;
    for (ServerEntry s : servers.values()) {
      for (RegionEntry r : s.regions.values()) {
        n += r.quarantinedCount;
      }
    }
    return n;
  }

  /**
   * The generation of every block of every block-pool region of {@code serverId}, by region id:
   * REGISTER's answer, so that the server installs the current keys before it serves any.
   */
  public synchronized Map<Integer, int[]> generations(int serverId) {
    Map<Integer, int[]> out = new TreeMap<>();
    ServerEntry s = servers.get(serverId);
    if (s != null) {
      for (RegionEntry r : s.regions.values()) {
        if (r.blocks > 0) {
          out.put(r.info.ref().regionId(), r.generation.clone());
        }
      }
    }
    return out;
  }

  /** How long a server may go unheard before it is declared DEAD ({@code server.dead.timeout}). */
  public long deadTimeoutMillis() {
    return deadTimeoutMillis;
  }

  public int heartbeatMillis() {
    return heartbeatMillis;
  }

  private void commit(List<MasterEvent> events) {
    if (events.isEmpty()) {
      return;
    }
    // The first mutation of a call that carries a request id says so in its own record: the
    // journal recovers a record whole or not at all, so a retry can never find the mutation
    // without the mark (which would run it twice).
    RequestScope rs = RequestScope.current();
    boolean mark = rs != null && !rs.applied() && sessions.containsKey(rs.id.sessionId());
    if (mark) {
      List<MasterEvent> marked = new ArrayList<>(events.size() + 1);
      marked.add(
          new MasterEvent.RequestApplied(rs.id.sessionId(), rs.id.seq(), rs.id.ackedBelow()));
      marked.addAll(events);
      events = marked;
    }
    // The call's answer joins this record (HeldRecords) unless the call already went asynchronous
    // (then it follows as a record of its own, see unhold).
    boolean hold = mark && !rs.unheld;
    if (hold) {
      sink.appendHeld(events, rs);
      rs.heldBy = this;
    } else if (rs != null && rs.heldBy == this) {
      // A later mutation of a call whose record is still held: joins that record when nothing
      // came between (one mutate block), so the call is recovered whole or not at all.
      sink.appendHeld(events, rs);
    } else {
      sink.append(events);
    }
    if (mark) {
      rs.markApplied();
    }
    for (MasterEvent e : events) {
      apply(e);
    }
  }

  /**
   * Remembers the answer of the call of {@code rs}, which committed a mutation: journaled (a retry
   * after a master restart gets it too). Call before the answer leaves, so that the fsync that
   * releases the answer covers this record as well.
   *
   * @param status 0 for an answer, else the failure's wire code
   * @param body the answer, or the failure's message in UTF-8
   */
  synchronized void answered(RequestScope rs, int status, byte[] body) {
    List<MasterEvent> answer =
        md.answers.get(rs.id.sessionId(), rs.id.seq()) == null
            ? List.of() // the session ended meanwhile (its answers went with it)
            : body.length > RememberedAnswers.MAX_ANSWER
                ? List.of() // left UNKNOWN: a retry is told the call was applied, answer not kept
                : List.of(
                    new MasterEvent.RequestAnswered(rs.id.sessionId(), rs.id.seq(), status, body));
    if (rs.heldBy == this) {
      // Into the record of the call's first mutation, still open (see HeldRecords).
      rs.heldBy = null;
      sink.release(rs, answer);
      for (MasterEvent e : answer) {
        apply(e);
      }
    } else if (!answer.isEmpty()) {
      commit(answer);
    }
  }

  /**
   * The call of {@code rs} goes on asynchronously (or is over): its record, if still held for its
   * answer, is written without it, and later mutations of the call are not held. Idempotent.
   */
  synchronized void unhold(RequestScope rs) {
    rs.unheld = true;
    if (rs.heldBy == this) {
      rs.heldBy = null;
      sink.release(rs, List.of());
    }
  }

  /** The remembered answer of request {@code seq} of {@code sessionId}, or null. No lock. */
  RememberedAnswers.Answer remembered(long sessionId, long seq) {
    return md.answers.get(sessionId, seq);
  }

  /** How many answers the master keeps for retries (tests). */
  public synchronized int rememberedAnswers() {
    return md.answers.size();
  }

  private void commit(MasterEvent e) {
    commit(List.of(e));
  }

  // ---------------------------------------------------------------- membership

  /**
   * Registers a memory server (or re-registers a known one) with its addresses and regions. Regions
   * the master knew for this server but that are missing or changed (a different rkey or size: the
   * server lost them) are dropped with every block allocated in them. The server becomes ALIVE.
   *
   * @param requestedId the id the server kept from an earlier registration, or {@code <= 0} for a
   *     new id
   * @return the server's id
   */
  public synchronized int register(
      int requestedId,
      String name,
      String hostId,
      Map<String, String> addresses,
      List<RegionInfo> regions) {
    return register(requestedId, name, hostId, addresses, regions, 0);
  }

  /**
   * As {@link #register(int, String, String, Map, List)}, from the server process {@code
   * incarnation} (random per process, 0 = unknown); every extension is told through {@link
   * MasterExtension#serverRegistered} once the regions are settled.
   */
  public synchronized int register(
      int requestedId,
      String name,
      String hostId,
      Map<String, String> addresses,
      List<RegionInfo> regions,
      long incarnation) {
    int id = requestedId > 0 ? requestedId : md.nextServerId;
    Set<Integer> seen = new HashSet<>();
    for (RegionInfo r : regions) {
      checkRegion(id, r);
      if (!seen.add(r.ref().regionId())) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT, "region id " + r.ref().regionId() + " listed twice");
      }
    }
    List<MasterEvent> events = new ArrayList<>();
    ServerEntry old = servers.get(id);
    if (old != null
        && old.state == ServerState.ALIVE
        && (!old.name.equals(name) || !old.hostId.equals(hostId))) {
      // Two live processes claim one id: a copied server directory, or a name reused on
      // another host. Refuse the newcomer rather than hand one server's blocks to another.
      throw new FerriteException(
          ErrorCode.CONFLICT,
          "server id "
              + id
              + " belongs to "
              + old.name
              + " on "
              + old.hostId
              + ", which is ALIVE; "
              + name
              + " on "
              + hostId
              + " must use its own directory");
    }
    if (old == null
        || !old.name.equals(name)
        || !old.hostId.equals(hostId)
        || !old.addresses.equals(Map.copyOf(addresses))) {
      events.add(new MasterEvent.ServerRegistered(id, name, hostId, addresses));
    }
    Map<Integer, RegionInfo> incoming = new LinkedHashMap<>();
    for (RegionInfo r : regions) {
      incoming.put(r.ref().regionId(), withServer(id, r));
    }
    List<MasterExtension.LostRegion> lost = new ArrayList<>();
    if (old != null) {
      for (RegionEntry have : old.regions.values()) {
        RegionInfo now = incoming.get(have.info.ref().regionId());
        if (!have.info.equals(now)) {
          lost.add(lostRegion(id, have));
          if (have.usedCount > 0) {
            LOG.log(
                System.Logger.Level.WARNING,
                "server {0} re-registered without region {1} as it was: {2} allocated block(s) in"
                    + " it are lost",
                id,
                have.info.ref().regionId(),
                have.usedCount);
          }
          events.add(new MasterEvent.RegionRemoved(id, have.info.ref().regionId()));
        } else {
          incoming.remove(have.info.ref().regionId());
        }
      }
    }
    for (RegionInfo r : incoming.values()) {
      events.add(new MasterEvent.RegionAdded(r));
    }
    commit(events);
    ServerEntry s = servers.get(id);
    if (!addresses.isEmpty() || old != null) {
      s.state = ServerState.ALIVE;
    }
    // else: a new server only obtaining its id (it serves nothing yet) stays UNKNOWN, so no
    // client sees it as a live member without an address; its full registration follows.
    s.lastHeartbeat = clock.getAsLong();
    s.deadReason = null;
    s.incarnation = incarnation;
    // The answer carries every generation and the server installs them before serving block
    // keys: nothing of this server needs a revoke any more.
    for (RegionEntry r : s.regions.values()) {
      for (int i = r.quarantined.nextSetBit(0); i >= 0; i = r.quarantined.nextSetBit(i + 1)) {
        r.unquarantine(i);
      }
    }
    if (!lost.isEmpty()) {
      int lostId = id;
      forEachExtension((ext, m) -> ext.regionsLost(lostId, lost, m));
    }
    if (s.state == ServerState.ALIVE) {
      int aliveId = id;
      forEachExtension((ext, m) -> ext.serverRegistered(aliveId, incarnation, m));
    }
    LOG.log(
        System.Logger.Level.INFO,
        "server {0} ({1}) registered: {2} region(s), {3}",
        id,
        name,
        s.regions.size(),
        addresses.values());
    return id;
  }

  private static RegionInfo withServer(int serverId, RegionInfo r) {
    RegionRef ref = r.ref();
    return new RegionInfo(
        new RegionRef(serverId, ref.regionId(), ref.rkey(), ref.length()),
        r.storageClass(),
        r.service());
  }

  private void checkRegion(int serverId, RegionInfo r) {
    if (r.storageClass().isEmpty()) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "region " + r.ref().regionId() + ": empty storage class");
    }
    if (r.ref().length() > io.ferrite.fabric.MappedRegion.MAX_LENGTH) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "region "
              + serverId
              + "/"
              + r.ref().regionId()
              + " length: "
              + r.ref().length()
              + " (expected: <= "
              + io.ferrite.fabric.MappedRegion.MAX_LENGTH
              + ")");
    }
    if (r.isBlockPool() && (r.ref().length() % blockSize != 0)) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "region "
              + serverId
              + "/"
              + r.ref().regionId()
              + " length: "
              + r.ref().length()
              + " (expected: a multiple of the block size "
              + blockSize
              + ")");
    }
  }

  /** Records a heartbeat; an unknown or DEAD server gets NOT_FOUND and must register again. */
  public synchronized void heartbeat(int serverId) {
    ServerEntry s = servers.get(serverId);
    if (s == null || s.state == ServerState.DEAD) {
      throw new FerriteException(
          ErrorCode.NOT_FOUND,
          "server "
              + serverId
              + (s == null ? " is not registered" : " was marked DEAD")
              + ": register again");
    }
    if (s.state == ServerState.UNKNOWN) {
      LOG.log(System.Logger.Level.INFO, "server {0} is back (heartbeat)", serverId);
    }
    s.state = ServerState.ALIVE;
    s.lastHeartbeat = clock.getAsLong();
  }

  /** {@link #deadReason} of a server that said goodbye ({@link #leave}). */
  public static final String REASON_LEFT = "left";

  /** {@link #deadReason} of a server silent for longer than the dead timeout. */
  public static final String REASON_TIMEOUT = "heartbeat timeout";

  /**
   * A server stopping cleanly says goodbye: it is declared DEAD at once, by the same path as a
   * missed heartbeat timeout ({@link MasterExtension#serverDead}: kv promotes backups, nodes copies
   * file blocks again), instead of after the timeout. The faces' reactions are journaled through
   * their mutations, and the RPC layer answers only once they are durable. The DEAD state itself
   * stays transient, as for a timeout: a restarted master sees the server UNKNOWN, then DEAD after
   * the timeout, and the faces' failover is in its journal already. A server that registers again
   * afterwards is a new incarnation, as after a timeout.
   *
   * @param incarnation the leaving process ({@link #register}'s; 0 = unknown): a goodbye from an
   *     older process than the one registered now (a late retry) is ignored, never kills the new
   *     one
   * @return true if the server was declared DEAD by this call; false if it was DEAD already or the
   *     goodbye came from another incarnation
   * @throws FerriteException NOT_FOUND for a server the master does not know
   */
  public synchronized boolean leave(int serverId, long incarnation) {
    ServerEntry s = servers.get(serverId);
    if (s == null) {
      throw new FerriteException(ErrorCode.NOT_FOUND, "server " + serverId + " is not registered");
    }
    if (s.state == ServerState.DEAD) {
      return false;
    }
    if (incarnation != 0 && s.incarnation != 0 && incarnation != s.incarnation) {
      LOG.log(
          System.Logger.Level.INFO,
          "server {0} ({1}): ignored a goodbye from an earlier process of it",
          serverId,
          s.name);
      return false;
    }
    declareDead(s, REASON_LEFT);
    LOG.log(
        System.Logger.Level.INFO,
        "server {0} ({1}) stopped cleanly and said goodbye: DEAD",
        s.id,
        s.name);
    return true;
  }

  /**
   * Why {@code serverId} is DEAD ({@link #REASON_LEFT} or {@link #REASON_TIMEOUT}); null if it is
   * not DEAD or not known (for tests and operators: the reason is not journaled).
   */
  public synchronized String deadReason(int serverId) {
    ServerEntry s = servers.get(serverId);
    return s == null || s.state != ServerState.DEAD ? null : s.deadReason;
  }

  /** The one way a server becomes DEAD: its faces are told ({@link MasterExtension#serverDead}). */
  private void declareDead(ServerEntry s, String reason) {
    s.state = ServerState.DEAD;
    s.deadReason = reason;
    int deadId = s.id;
    forEachExtension((ext, m) -> ext.serverDead(deadId, m));
  }

  /** Adds one region to a registered server's directory (a service's region, or growth). */
  public synchronized void addRegion(int serverId, RegionInfo region) {
    ServerEntry s = servers.get(serverId);
    if (s == null) {
      throw new FerriteException(ErrorCode.NOT_FOUND, "server " + serverId + " is not registered");
    }
    checkRegion(serverId, region);
    if (s.regions.containsKey(region.ref().regionId())) {
      throw new FerriteException(
          ErrorCode.CONFLICT,
          "region " + serverId + "/" + region.ref().regionId() + " is already registered");
    }
    commit(new MasterEvent.RegionAdded(withServer(serverId, region)));
  }

  /**
   * Forgets service region {@code regionId} of {@code serverId} (its service freed it), or an empty
   * block-pool region (its server gives the space to a service region); false if the master does
   * not know it (removed already, or never reached the master). Journaled.
   *
   * @throws FerriteException NOT_FOUND for an unknown server, CONFLICT for a block-pool region with
   *     blocks in use (they are the master's to hand out and their owners'; a server drops those
   *     only by registering again without them)
   */
  public synchronized boolean removeServiceRegion(int serverId, int regionId) {
    ServerEntry s = servers.get(serverId);
    if (s == null) {
      throw new FerriteException(ErrorCode.NOT_FOUND, "server " + serverId + " is not registered");
    }
    RegionEntry have = s.regions.get(regionId);
    if (have == null) {
      return false;
    }
    if (have.info.service().isEmpty() && have.usedCount > 0) {
      // An empty pool region may go (its server gives the space to a service region); one with
      // blocks in use may not: its blocks are the master's to hand out and their owners'.
      throw new FerriteException(
          ErrorCode.CONFLICT,
          "region "
              + serverId
              + "/"
              + regionId
              + " is a block-pool region with "
              + have.usedCount
              + " block(s) in use (expected: a service region or an empty block-pool region)");
    }
    MasterExtension.LostRegion gone = lostRegion(serverId, have);
    commit(new MasterEvent.RegionRemoved(serverId, regionId));
    forEachExtension((ext, m) -> ext.regionsLost(serverId, List.of(gone), m));
    return true;
  }

  /**
   * Region {@code have} of {@code serverId} as it is before its removal: its info and every block
   * allocated in it, by owner (read before the removal drops them).
   */
  private MasterExtension.LostRegion lostRegion(int serverId, RegionEntry have) {
    Map<String, List<BlockRef>> byOwner = new java.util.TreeMap<>();
    for (int i = have.used.nextSetBit(0); i >= 0; i = have.used.nextSetBit(i + 1)) {
      String owner = have.owner[i] == null ? "" : have.owner[i];
      byOwner
          .computeIfAbsent(owner, o -> new ArrayList<>())
          .add(blockRef(new MasterEvent.BlockKey(serverId, have.info.ref().regionId(), i)));
    }
    byOwner.replaceAll((o, l) -> List.copyOf(l));
    return new MasterExtension.LostRegion(have.info, Map.copyOf(byOwner));
  }

  /**
   * Marks servers silent for longer than the timeout DEAD and expires unrenewed sessions (freeing
   * their session-scoped blocks). Called periodically by the master's ticker.
   */
  public synchronized void tick() {
    long now = clock.getAsLong();
    for (ServerEntry s : servers.values()) {
      // UNKNOWN (recovered by a restarted master) counts from the recovery: a server that does
      // not come back within the timeout is as dead as one that stopped heartbeating.
      if (s.state != ServerState.DEAD && now - s.lastHeartbeat > deadTimeoutMillis) {
        declareDead(s, REASON_TIMEOUT);
        LOG.log(
            System.Logger.Level.WARNING,
            "server {0} ({1}) missed heartbeats for {2} ms: DEAD",
            s.id,
            s.name,
            now - s.lastHeartbeat);
      }
    }
    List<Long> expired = new ArrayList<>();
    for (SessionEntry s : sessions.values()) {
      if (now - s.lastRenew > s.leaseMillis) {
        expired.add(s.id);
      }
    }
    for (long id : expired) {
      SessionEntry s = sessions.get(id);
      LOG.log(
          System.Logger.Level.INFO,
          "session {0} of {1} expired: freeing {2} block(s)",
          Long.toHexString(id),
          s.client,
          s.blocks.size());
      endSession(id);
    }
  }

  /** Lets every extension drop what the session held, then closes it (freeing its blocks). */
  private void endSession(long sessionId) {
    forEachExtension((ext, m) -> ext.sessionClosed(sessionId, m));
    commit(new MasterEvent.SessionClosed(sessionId));
  }

  private void forEachExtension(
      java.util.function.BiConsumer<MasterExtension, MasterContext.Mutation> action) {
    for (MasterExtension ext : List.copyOf(md.extensions.values())) {
      try {
        action.accept(ext, mutationFor(ext.serviceId()));
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.ERROR, "extension " + ext.name() + " failed a callback", e);
      }
    }
  }

  // ---------------------------------------------------------------- sessions

  /** An open session: id and granted lease. */
  public record SessionGrant(long sessionId, int leaseMillis) {}

  public synchronized SessionGrant openSession(String client, int leaseMillis) {
    if (leaseMillis < 0 || leaseMillis > MAX_LEASE_MILLIS) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "lease: "
              + leaseMillis
              + " ms (expected: 0 for the default, or <= "
              + MAX_LEASE_MILLIS
              + ")");
    }
    int lease = leaseMillis == 0 ? defaultLeaseMillis : leaseMillis;
    long id;
    do {
      id = random.nextLong() & Long.MAX_VALUE;
    } while (id == 0 || sessions.containsKey(id));
    commit(new MasterEvent.SessionOpened(id, client, lease));
    return new SessionGrant(id, lease);
  }

  private SessionEntry session(long sessionId) {
    SessionEntry s = sessions.get(sessionId);
    if (s == null) {
      throw new FerriteException(
          ErrorCode.SESSION_EXPIRED,
          "session " + Long.toHexString(sessionId) + " is unknown or expired: open a new one");
    }
    return s;
  }

  public synchronized int renewSession(long sessionId) {
    SessionEntry s = session(sessionId);
    s.lastRenew = clock.getAsLong();
    return s.leaseMillis;
  }

  /** Closes a session, freeing its session-scoped blocks; returns how many. */
  public synchronized int closeSession(long sessionId) {
    int n = session(sessionId).blocks.size();
    endSession(sessionId);
    return n;
  }

  // ---------------------------------------------------------------- blocks

  /**
   * Allocates {@code count} blocks, all or none.
   *
   * <p>Classes are tried in order: {@code storageClass} first (or the preference order {@code dram,
   * disk, ...} when it is empty), then, unless {@code strict}, the other classes in preference
   * order. Within a class, blocks are handed out round-robin across the ALIVE servers that have
   * free blocks of that class, continuing where the previous allocation left off.
   *
   * @param owner empty for session scope (freed when the session ends); otherwise the name that
   *     owns the blocks persistently, beyond the session
   * @throws FerriteException NO_SPACE when fewer than {@code count} blocks are free, with the free
   *     counts per class; SESSION_EXPIRED for an unknown session; INVALID_ARGUMENT for a bad count
   *     or an unknown class
   */
  public synchronized List<BlockRef> allocate(
      long sessionId, int count, String storageClass, boolean strict, String owner) {
    return allocate(sessionId, count, storageClass, strict, owner, "");
  }

  /**
   * Like {@link #allocate(long, int, String, boolean, String)}, placing blocks preferably on the
   * servers that {@code location} names (a server name, a host identity or a host name; "" for
   * none), within each class: see {@link BlockAllocator#plan(int, String, boolean, String)}.
   */
  public synchronized List<BlockRef> allocate(
      long sessionId,
      int count,
      String storageClass,
      boolean strict,
      String owner,
      String location) {
    session(sessionId);
    return allocateChecked(sessionId, count, storageClass, strict, owner, location);
  }

  /** {@link #allocate}, the session checked (or none: an extension's own, with an owner). */
  private List<BlockRef> allocateChecked(
      long sessionId,
      int count,
      String storageClass,
      boolean strict,
      String owner,
      String location) {
    if (count < 1 || count > io.ferrite.kernel.proto.MasterProtocol.MAX_LIST) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "count: "
              + count
              + " (expected: >= 1 and <= "
              + io.ferrite.kernel.proto.MasterProtocol.MAX_LIST
              + ")");
    }
    List<BlockKey> picks;
    try {
      picks = planWaitingForRevokes(count, storageClass, strict, location);
    } catch (FerriteException e) {
      throw notHeardFrom(e);
    }
    commit(new MasterEvent.BlocksAllocated(owner.isEmpty() ? sessionId : 0, owner, picks));
    List<BlockRef> out = new ArrayList<>(picks.size());
    for (BlockKey k : picks) {
      out.add(blockRef(k));
    }
    return out;
  }

  /**
   * NO_SPACE {@code e} as UNAVAILABLE (retryable: clients wait it out) while servers with
   * block-pool regions have not been heard from since this master recovered them (UNKNOWN until
   * their first heartbeat, DEAD after the dead timeout): right after a master restart their space
   * is not lost, only not yet confirmed, and a client riding through the restart must not be told
   * NO_SPACE.
   */
  private FerriteException notHeardFrom(FerriteException e) {
    if (e.code() != ErrorCode.NO_SPACE) {
      return e;
    }
    int waiting = 0;
    for (ServerEntry s : servers.values()) {
      if (s.state == ServerState.UNKNOWN
          && s.regions.values().stream().anyMatch(r -> r.info.isBlockPool())) {
        waiting++;
      }
    }
    if (waiting == 0) {
      return e;
    }
    return new FerriteException(
        ErrorCode.UNAVAILABLE,
        e.detail()
            + "; "
            + waiting
            + " server(s) not heard from since the master started may have space: try again",
        e);
  }

  /**
   * Plans an allocation; when no block is free but freed blocks wait for their revokes (a FREE
   * whose REVOKE is one round trip from done, a KeyValue's old value reclaimed a moment ago), asks
   * for the revokes to go now and waits for them, holding the lock, at most {@link
   * #REVOKE_WAIT_NANOS}: without it a nearly full cluster answers NO_SPACE while the space it needs
   * is a round trip from free. The revokes need no lock to be drained, sent or reported ({@link
   * #drainRevokes}, {@link #revoked}), so waiting under it cannot stall them.
   */
  private List<BlockKey> planWaitingForRevokes(
      int count, String storageClass, boolean strict, String location) {
    applyRevoked();
    try {
      return md.allocator.plan(count, storageClass, strict, location);
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.NO_SPACE || !md.revoking || quarantinedBlocks() == 0) {
        throw e;
      }
      Runnable nudge = revokeNudge;
      if (nudge != null) {
        nudge.run();
      }
      long deadline = System.nanoTime() + REVOKE_WAIT_NANOS;
      while (System.nanoTime() - deadline < 0) {
        java.util.concurrent.locks.LockSupport.parkNanos(50_000);
        if (!revokedInbox.isEmpty()) {
          applyRevoked();
          try {
            return md.allocator.plan(count, storageClass, strict, location);
          } catch (FerriteException again) {
            if (again.code() != ErrorCode.NO_SPACE || quarantinedBlocks() == 0) {
              throw again;
            }
          }
        }
      }
      throw e;
    }
  }

  /** The block's ref, carrying its key for the current generation (see {@link #blockKeys}). */
  private BlockRef blockRef(BlockKey k) {
    RegionEntry r = servers.get(k.serverId()).regions.get(k.regionId());
    RegionRef ref = r.info.ref();
    if (mint != null) {
      long key =
          mint.key(k.serverId(), k.regionId(), ref.rkey(), k.index(), r.generation[k.index()]);
      ref = new RegionRef(ref.serverId(), ref.regionId(), key, ref.length());
    }
    return new BlockRef(ref, k.index() * blockSize, blockSize, r.info.storageClass());
  }

  /**
   * Frees blocks named by (server, region, offset), all or none. A session-scoped block may be
   * freed only by its own session; a persistent block by any session.
   *
   * @return the number of blocks freed
   */
  public synchronized int free(long sessionId, List<int[]> serverRegion, List<Long> offsets) {
    session(sessionId);
    Set<BlockKey> keys = new LinkedHashSet<>();
    for (int i = 0; i < offsets.size(); i++) {
      int sid = serverRegion.get(i)[0];
      int rid = serverRegion.get(i)[1];
      long off = offsets.get(i);
      ServerEntry s = servers.get(sid);
      RegionEntry r = s == null ? null : s.regions.get(rid);
      if (r == null) {
        throw new FerriteException(ErrorCode.NOT_FOUND, "no region " + sid + "/" + rid);
      }
      if (off < 0 || off % blockSize != 0 || off / blockSize >= r.blocks) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            "block offset: "
                + off
                + " in region "
                + sid
                + "/"
                + rid
                + " (expected: a multiple of "
                + blockSize
                + " below "
                + r.blocks * blockSize
                + ")");
      }
      int idx = (int) (off / blockSize);
      if (!r.used.get(idx)) {
        throw new FerriteException(
            ErrorCode.NOT_FOUND, "block " + sid + "/" + rid + "@" + off + " is not allocated");
      }
      if (r.owner[idx] == null && r.session[idx] != sessionId) {
        throw new FerriteException(
            ErrorCode.CONFLICT,
            "block " + sid + "/" + rid + "@" + off + " belongs to another session");
      }
      if (!keys.add(new BlockKey(sid, rid, idx))) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT, "block " + sid + "/" + rid + "@" + off + " listed twice");
      }
    }
    if (!keys.isEmpty()) {
      commit(new MasterEvent.BlocksFreed(new ArrayList<>(keys)));
    }
    return keys.size();
  }

  /** The blocks persistently owned by {@code owner}. */
  public synchronized List<BlockRef> owned(String owner) {
    List<BlockRef> out = new ArrayList<>();
    for (BlockKey k : md.owners.getOrDefault(owner, Set.of())) {
      out.add(blockRef(k));
    }
    return out;
  }

  // ---------------------------------------------------------------- queries

  public synchronized List<MemberInfo> members() {
    List<MemberInfo> out = new ArrayList<>();
    for (ServerEntry s : servers.values()) {
      out.add(s.info());
    }
    return out;
  }

  public synchronized ServerState serverState(int serverId) {
    ServerEntry s = servers.get(serverId);
    return s == null ? null : s.state;
  }

  /** The regions of {@code serverId}, or of every server if it is negative. */
  public synchronized List<RegionInfo> regions(int serverId) {
    List<RegionInfo> out = new ArrayList<>();
    for (ServerEntry s : servers.values()) {
      if (serverId < 0 || s.id == serverId) {
        for (RegionEntry r : s.regions.values()) {
          out.add(r.info);
        }
      }
    }
    return out;
  }

  public synchronized int sessionCount() {
    return sessions.size();
  }

  public synchronized boolean hasSession(long sessionId) {
    return sessions.containsKey(sessionId);
  }

  /** {@link #status(boolean)} with what the faces lost: {@code ferrite status}, the console. */
  public ClusterStatus status() {
    return status(true);
  }

  /**
   * The cluster's status; with {@code withLost}, each face's {@link MasterExtension#lost} too,
   * which walks the face's objects (a metrics scrape, every 200 ms at most, leaves it out).
   */
  public synchronized ClusterStatus status(boolean withLost) {
    List<ClusterStatus.Member> members = new ArrayList<>();
    int regionCount = 0;
    for (ServerEntry s : servers.values()) {
      Map<String, long[]> use = new LinkedHashMap<>();
      for (String c : md.allocator.classes()) {
        use.put(c, new long[2]);
      }
      for (RegionEntry r : s.regions.values()) {
        long[] u = use.computeIfAbsent(r.info.storageClass(), k -> new long[2]);
        if (r.info.isBlockPool()) {
          u[0] += r.blocks * blockSize;
          u[1] += r.usedCount * blockSize;
        } else {
          // A service region (kv shards, ...) takes its space from the server's capacity.
          u[0] += r.info.ref().length();
          u[1] += r.info.ref().length();
        }
      }
      List<RegionInfo> infos = new ArrayList<>();
      s.regions.values().forEach(r -> infos.add(r.info));
      Map<String, Map<String, Long>> faces = RegionInfo.serviceBytes(infos);
      List<ClusterStatus.ClassUsage> usage = new ArrayList<>();
      use.forEach(
          (c, u) ->
              usage.add(
                  new ClusterStatus.ClassUsage(c, u[0], u[1], faces.getOrDefault(c, Map.of()))));
      members.add(new ClusterStatus.Member(s.info(), s.regions.size(), usage));
      regionCount += s.regions.size();
    }
    Map<String, Map<String, Long>> lost = new java.util.TreeMap<>();
    for (MasterExtension ext : withLost ? md.extensions.values() : List.<MasterExtension>of()) {
      try {
        Map<String, Long> l = ext.lost();
        if (!l.isEmpty()) {
          lost.put(ext.name(), l);
        }
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.ERROR, "extension " + ext.name() + " failed lost()", e);
      }
    }
    return new ClusterStatus(clusterId, blockSize, members, regionCount, sessions.size(), lost);
  }

  // ---------------------------------------------------------------- extensions

  /**
   * Installs {@code ext}; must happen before the journal is replayed so that its records reach it.
   * Records that were kept for its service id while it was missing are applied now.
   */
  public synchronized void registerExtension(MasterExtension ext) {
    int id = ext.serviceId();
    if (id < 16 || id > 0xFFFF) {
      throw new IllegalArgumentException(
          "service id of extension " + ext.name() + ": " + id + " (expected: 16 to 65535)");
    }
    MasterExtension prev = md.extensions.putIfAbsent(id, ext);
    if (prev != null) {
      throw new IllegalArgumentException(
          "extensions " + prev.name() + " and " + ext.name() + " both claim service id " + id);
    }
    List<byte[]> kept = md.orphanRecords.remove(id);
    if (kept != null) {
      for (byte[] rec : kept) {
        md.apply(new MasterEvent.ExtensionRecord(id, rec));
      }
    }
  }

  /** The installed extension with {@code serviceId}, or null. */
  public synchronized MasterExtension extension(int serviceId) {
    return md.extensions.get(serviceId);
  }

  /** The installed extensions. */
  public synchronized List<MasterExtension> extensions() {
    return List.copyOf(md.extensions.values());
  }

  /** A {@link MasterContext} for {@code ext}: its mutations run under this state's lock. */
  public MasterContext contextFor(MasterExtension ext) {
    return contextFor(ext, null);
  }

  /**
   * A {@link MasterContext} for {@code ext} whose {@link MasterContext#createRegion} is {@code
   * regions} (null: unsupported).
   */
  public MasterContext contextFor(
      MasterExtension ext,
      java.util.function.BiFunction<String, Long, MasterContext.MasterRegion> regions) {
    return contextFor(
        ext,
        regions,
        io.ferrite.kernel.config.FerriteConfig.defaults(),
        io.ferrite.kernel.ops.Metrics.none());
  }

  /**
   * As {@link #contextFor(MasterExtension, java.util.function.BiFunction)}, with {@code cfg} as
   * {@link MasterContext#config} and the master's meters as {@link MasterContext#metrics}.
   */
  public MasterContext contextFor(
      MasterExtension ext,
      java.util.function.BiFunction<String, Long, MasterContext.MasterRegion> regions,
      io.ferrite.kernel.config.FerriteConfig cfg,
      io.micrometer.core.instrument.MeterRegistry metrics) {
    MasterState self = this;
    return new MasterContext() {
      @Override
      public io.ferrite.kernel.config.FerriteConfig config() {
        return cfg;
      }

      @Override
      public <T> T mutate(java.util.function.Function<Mutation, T> body) {
        synchronized (self) {
          return body.apply(mutationFor(ext.serviceId()));
        }
      }

      @Override
      public long blockSize() {
        return blockSize;
      }

      @Override
      public List<MasterExtension> extensions() {
        synchronized (self) {
          return List.copyOf(md.extensions.values());
        }
      }

      @Override
      public io.micrometer.core.instrument.MeterRegistry metrics() {
        return metrics;
      }

      @Override
      public io.ferrite.fabric.FabricConnection connect(int serverId) {
        java.util.function.IntFunction<io.ferrite.fabric.FabricConnection> c = connector;
        return c == null ? MasterContext.super.connect(serverId) : c.apply(serverId);
      }

      @Override
      public MasterRegion createRegion(String name, long length) {
        if (regions == null) {
          return MasterContext.super.createRegion(name, length);
        }
        return regions.apply(ext.name() + "-" + name, length);
      }
    };
  }

  private MasterContext.Mutation mutationFor(int serviceId) {
    return new MasterContext.Mutation() {
      @Override
      public void commit(byte[] record) {
        MasterState.this.commit(new MasterEvent.ExtensionRecord(serviceId, record));
      }

      @Override
      public List<BlockRef> allocate(
          long sessionId,
          int count,
          String storageClass,
          boolean strict,
          String owner,
          String location) {
        if (owner.isEmpty()) {
          throw new IllegalArgumentException("owner: empty (expected: the extension's owner name)");
        }
        if (sessionId == 0) {
          // The extension's own work (no client's call): owned blocks need no session.
          return allocateChecked(0, count, storageClass, strict, owner, location);
        }
        return MasterState.this.allocate(sessionId, count, storageClass, strict, owner, location);
      }

      @Override
      public int free(String owner, List<BlockRef> blocks) {
        return freeOwned(owner, blocks);
      }

      @Override
      public List<BlockRef> owned(String owner) {
        return MasterState.this.owned(owner);
      }

      @Override
      public boolean sessionOpen(long sessionId) {
        return sessions.containsKey(sessionId);
      }

      @Override
      public List<MemberInfo> members() {
        return MasterState.this.members();
      }
    };
  }

  /** Frees blocks owned by {@code owner}, all or none. */
  synchronized int freeOwned(String owner, List<BlockRef> blocks) {
    Set<BlockKey> owned = md.owners.getOrDefault(owner, Set.of());
    List<BlockKey> keys = new ArrayList<>();
    for (BlockRef b : blocks) {
      BlockKey k =
          new BlockKey(
              b.region().serverId(), b.region().regionId(), (int) (b.offset() / blockSize));
      if (!owned.contains(k) || b.offset() % blockSize != 0) {
        throw new FerriteException(
            ErrorCode.NOT_FOUND, b + " is not a block owned by " + owner + ": nothing freed");
      }
      keys.add(k);
    }
    if (!keys.isEmpty()) {
      commit(new MasterEvent.BlocksFreed(keys));
    }
    return keys.size();
  }

  // ---------------------------------------------------------------- journal

  /** Applies one event (replay, or a committed mutation); see {@link Metadata#apply}. */
  synchronized void apply(MasterEvent e) {
    md.apply(e);
  }

  /** Events that, replayed into an empty state, recreate this one: the content of a snapshot. */
  synchronized List<MasterEvent> snapshotEvents() {
    return md.snapshotEvents();
  }

  /**
   * After replay: every server is UNKNOWN until it heartbeats, every session gets a fresh lease (so
   * a client that died while the master was down still expires, one lease later).
   */
  synchronized void recovered() {
    md.recovered();
    long now = clock.getAsLong();
    for (ServerEntry s : servers.values()) {
      s.state = ServerState.UNKNOWN;
      s.lastHeartbeat = now;
    }
    for (SessionEntry s : sessions.values()) {
      s.lastRenew = now;
    }
  }

  @Override
  public synchronized String toString() {
    return "MasterState[" + servers.size() + " servers, " + sessions.size() + " sessions]";
  }
}
