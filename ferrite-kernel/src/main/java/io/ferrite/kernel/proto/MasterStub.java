package io.ferrite.kernel.proto;

import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.Futures;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Typed calls of the master's RPCs ({@link MasterProtocol}) over one connection. Used by memory
 * servers, clients, hosted services and the CLI. Thread-safe (the connection is). Blocking methods
 * throw {@link io.ferrite.fabric.FerriteException}.
 */
public final class MasterStub {
  private final FabricConnection conn;
  private final Duration deadline;

  public MasterStub(FabricConnection conn, Duration deadline) {
    this.conn = conn;
    this.deadline = deadline;
  }

  public FabricConnection connection() {
    return conn;
  }

  private CompletableFuture<ByteBuffer> call(int opcode, Wire.Writer w) {
    return conn.call(MasterProtocol.SERVICE, opcode, w.toBuffer(), deadline);
  }

  private Wire.Reader callSync(int opcode, Wire.Writer w, String what) {
    return new Wire.Reader(Futures.join(call(opcode, w)), what);
  }

  /** The master's answer to REGISTER. */
  /**
   * REGISTER's answer.
   *
   * @param generations block generations by region id (empty from an older master)
   */
  public record Registration(
      int serverId,
      long blockSize,
      int heartbeatMillis,
      Map<Integer, int[]> generations,
      int deadTimeoutMillis) {}

  public Registration register(
      int serverId,
      String name,
      String hostId,
      Map<String, String> addresses,
      List<RegionInfo> regions) {
    return register(serverId, name, hostId, addresses, regions, 0);
  }

  /**
   * Registers a memory server process; {@code incarnation} tells this process apart from an earlier
   * or later one of the same server (random, never 0; 0 = unknown).
   */
  public Registration register(
      int serverId,
      String name,
      String hostId,
      Map<String, String> addresses,
      List<RegionInfo> regions,
      long incarnation) {
    Wire.Writer w = new Wire.Writer(256).i32(serverId).str(name).str(hostId);
    MasterProtocol.writeAddresses(w, addresses);
    w.i32(regions.size());
    for (RegionInfo r : regions) {
      MasterProtocol.writeRegion(w, r);
    }
    w.i64(incarnation);
    Wire.Reader r = callSync(MasterProtocol.REGISTER, w, "register response");
    int id = r.i32("serverId");
    long blockSize = r.i64("blockSize");
    int heartbeat = r.i32("heartbeatMillis");
    Map<Integer, int[]> gens = r.remaining() > 0 ? MasterProtocol.readGenerations(r) : Map.of();
    int deadTimeout = r.remaining() >= 4 ? r.i32("deadTimeoutMillis") : 0;
    return new Registration(id, blockSize, heartbeat, gens, deadTimeout);
  }

  public void heartbeat(int serverId) {
    callSync(MasterProtocol.HEARTBEAT, new Wire.Writer(8).i32(serverId), "heartbeat response");
  }

  /**
   * A heartbeat that also reports what the server served ({@link ServerLoad}). A master older than
   * the block refuses it with INVALID_ARGUMENT: fall back to {@link #heartbeat(int)}.
   */
  public void heartbeat(int serverId, ServerLoad load) {
    Wire.Writer w = new Wire.Writer(128).i32(serverId);
    load.write(w);
    callSync(MasterProtocol.HEARTBEAT, w, "heartbeat response");
  }

  public void addRegion(int serverId, RegionInfo region) {
    Wire.Writer w = new Wire.Writer(64).i32(serverId);
    MasterProtocol.writeRegion(w, region);
    callSync(MasterProtocol.ADD_REGION, w, "add-region response");
  }

  /** Tells the master a service region is gone (idempotent: an unknown region is no error). */
  public void removeRegion(int serverId, int regionId) {
    callSync(
        MasterProtocol.REMOVE_REGION,
        new Wire.Writer(8).i32(serverId).i32(regionId),
        "remove-region response");
  }

  /**
   * A clean stop's goodbye ({@link MasterProtocol#LEAVE}): the master declares the server DEAD at
   * once. True if this call did; false if it was DEAD already or {@code incarnation} is not the
   * process registered now.
   */
  public boolean leave(int serverId, long incarnation) {
    return callSync(
                MasterProtocol.LEAVE,
                new Wire.Writer(12).i32(serverId).i64(incarnation),
                "leave response")
            .u8("left")
        != 0;
  }

  /** An open session: its id and the lease the master granted. */
  public record Session(long sessionId, int leaseMillis) {}

  public Session openSession(String clientName, int leaseMillis) {
    Wire.Reader r =
        callSync(
            MasterProtocol.OPEN_SESSION,
            new Wire.Writer(64).str(clientName).i32(leaseMillis),
            "open-session response");
    return new Session(r.i64("sessionId"), r.i32("leaseMillis"));
  }

  public CompletableFuture<Void> renewSession(long sessionId) {
    return call(MasterProtocol.RENEW_SESSION, new Wire.Writer(8).i64(sessionId))
        .thenApply(b -> null);
  }

  public int closeSession(long sessionId) {
    return callSync(
            MasterProtocol.CLOSE_SESSION, new Wire.Writer(8).i64(sessionId), "close response")
        .i32("freed");
  }

  public CompletableFuture<List<BlockRef>> allocate(
      long sessionId, int count, String storageClass, boolean strict, String owner) {
    return allocate(null, sessionId, count, storageClass, strict, owner);
  }

  /**
   * ALLOCATE carrying request id {@code id} (null: none): a retry with the same id after a lost
   * answer gets the blocks of the first attempt rather than new ones ({@link
   * MasterProtocol#REQUEST}).
   */
  public CompletableFuture<List<BlockRef>> allocate(
      MasterProtocol.RequestId id,
      long sessionId,
      int count,
      String storageClass,
      boolean strict,
      String owner) {
    Wire.Writer w =
        new Wire.Writer(64)
            .i64(sessionId)
            .i32(count)
            .str(storageClass)
            .u8(strict ? MasterProtocol.FLAG_STRICT : 0)
            .str(owner);
    return call(id, MasterProtocol.SERVICE, MasterProtocol.ALLOCATE, w.toBuffer())
        .thenApply(b -> MasterProtocol.readBlocks(new Wire.Reader(b, "allocate response")));
  }

  public CompletableFuture<Integer> free(long sessionId, List<BlockRef> blocks) {
    return free(null, sessionId, blocks);
  }

  /** FREE carrying request id {@code id} (null: none): a retry is not refused NOT_FOUND. */
  public CompletableFuture<Integer> free(
      MasterProtocol.RequestId id, long sessionId, List<BlockRef> blocks) {
    Wire.Writer w = new Wire.Writer(16 + 16 * blocks.size()).i64(sessionId).i32(blocks.size());
    for (BlockRef b : blocks) {
      w.i32(b.serverId()).i32(b.regionId()).i64(b.offset());
    }
    return call(id, MasterProtocol.SERVICE, MasterProtocol.FREE, w.toBuffer())
        .thenApply(b -> new Wire.Reader(b, "free response").i32("freed"));
  }

  /**
   * Calls {@code opcode} of {@code service} on the master, wrapped in a {@link
   * MasterProtocol#REQUEST} carrying {@code id} (null: sent as it is).
   */
  public CompletableFuture<ByteBuffer> call(
      MasterProtocol.RequestId id, int service, int opcode, ByteBuffer body) {
    if (id == null) {
      return conn.call(service, opcode, body, deadline);
    }
    return conn.call(
        MasterProtocol.SERVICE,
        MasterProtocol.REQUEST,
        MasterProtocol.request(id, service, opcode, body),
        deadline);
  }

  /**
   * As {@link #call(MasterProtocol.RequestId, int, int, ByteBuffer)}, blocking, through {@link
   * FabricConnection#callSync} (a small request over tcp reads its own answer).
   */
  public ByteBuffer callSync(
      MasterProtocol.RequestId id, int service, int opcode, ByteBuffer body) {
    if (id == null) {
      return conn.callSync(service, opcode, body, deadline);
    }
    return conn.callSync(
        MasterProtocol.SERVICE,
        MasterProtocol.REQUEST,
        MasterProtocol.request(id, service, opcode, body),
        deadline);
  }

  /** The blocks {@code owner} holds; the caller must hold live session {@code sessionId}. */
  public List<BlockRef> owned(long sessionId, String owner) {
    return MasterProtocol.readBlocks(
        callSync(
            MasterProtocol.OWNED, new Wire.Writer(40).i64(sessionId).str(owner), "owned response"));
  }

  public List<MemberInfo> members() {
    Wire.Reader r = callSync(MasterProtocol.MEMBERS, new Wire.Writer(0), "members response");
    int n = r.count("memberCount", MasterProtocol.MAX_LIST);
    List<MemberInfo> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(MasterProtocol.readMember(r));
    }
    return out;
  }

  public List<RegionInfo> regions(int serverId) {
    Wire.Reader r =
        callSync(MasterProtocol.REGIONS, new Wire.Writer(4).i32(serverId), "regions response");
    int n = r.count("regionCount", MasterProtocol.MAX_LIST);
    List<RegionInfo> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      int sid = r.i32("serverId");
      out.add(MasterProtocol.readRegion(r, sid));
    }
    return out;
  }

  /** Where the master listens, and on which host: {@link MasterProtocol#MASTER_INFO}. */
  /** MASTER_INFO's role of a master group member ({@link MasterInfo#role}). */
  public static final int ROLE_SINGLE = 0;

  public static final int ROLE_LEADER = 1;
  public static final int ROLE_FOLLOWER = 2;
  public static final int ROLE_CANDIDATE = 3;

  /**
   * What MASTER_INFO says: the host identity and address per fabric; for a member of a master group
   * also its role ({@link #ROLE_LEADER}, {@link #ROLE_FOLLOWER}, {@link #ROLE_CANDIDATE}; a single
   * master: {@link #ROLE_SINGLE}), the Raft term, the leader's client address ("" if unknown) and
   * its place in the group (0 for a single master) and the Raft log index its committed state holds
   * (how far it caught up).
   */
  public record MasterInfo(
      String hostId,
      Map<String, String> addresses,
      int role,
      long term,
      String leader,
      int memberId,
      long appliedIndex) {
    public MasterInfo(String hostId, Map<String, String> addresses) {
      this(hostId, addresses, ROLE_SINGLE, 0, "", 0, 0);
    }

    /** "single", "leader", "follower" or "candidate". */
    public String roleName() {
      return switch (role) {
        case ROLE_LEADER -> "leader";
        case ROLE_FOLLOWER -> "follower";
        case ROLE_CANDIDATE -> "candidate";
        default -> "single";
      };
    }
  }

  /**
   * The leader's address a NOT_LEADER answer names ({@code ...; leader: tcp://host:port}), or null
   * when it names none (an election is under way) or {@code e} is no NOT_LEADER.
   */
  public static String leaderNamedIn(Throwable e) {
    Throwable t = e;
    while (t != null && !(t instanceof io.ferrite.fabric.FerriteException)) {
      t = t.getCause();
    }
    if (!(t instanceof io.ferrite.fabric.FerriteException f)
        || f.code() != io.ferrite.fabric.ErrorCode.NOT_LEADER) {
      return null;
    }
    String m = f.getMessage();
    int i = m == null ? -1 : m.indexOf("leader: ");
    if (i < 0) {
      return null;
    }
    int from = i + "leader: ".length();
    int to = from;
    while (to < m.length() && !Character.isWhitespace(m.charAt(to)) && m.charAt(to) != ')') {
      to++;
    }
    String a = m.substring(from, to);
    return a.contains("://") ? a : null;
  }

  public MasterInfo masterInfo() {
    Wire.Reader r =
        callSync(MasterProtocol.MASTER_INFO, new Wire.Writer(0), "master-info response");
    String host = r.str("hostId");
    Map<String, String> addresses = MasterProtocol.readAddresses(r);
    if (r.remaining() == 0) {
      r.end();
      return new MasterInfo(host, addresses); // a single master
    }
    int role = r.u8("role");
    long term = r.i64("term");
    String leader = r.str("leader");
    int member = r.i32("memberId");
    long applied = r.i64("appliedIndex");
    r.end();
    return new MasterInfo(host, addresses, role, term, leader, member, applied);
  }

  public ClusterStatus status() {
    return MasterProtocol.readStatus(
        callSync(MasterProtocol.STATUS, new Wire.Writer(0), "status response"));
  }
}
