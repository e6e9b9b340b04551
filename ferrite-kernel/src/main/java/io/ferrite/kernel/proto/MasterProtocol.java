package io.ferrite.kernel.proto;

import io.ferrite.fabric.RegionRef;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The master's RPC service: its id, opcodes and body layouts. All bodies are little-endian in the
 * primitive encodings of {@link Wire} ({@code str} = u16 length + UTF-8; counts are i32).
 *
 * <pre>
 * REGISTER (1)       server  -> serverId i32 (-1: new) | name str | hostId str
 *                               | addrCount i32 | { fabric str | address str }*
 *                               | regionCount i32 | { REGION }* | incarnation u64
 *                    master  <- serverId i32 | blockSize u64 | heartbeatMillis i32
 *                               | regionCount i32 | { regionId i32 | count i32 | { generation i32 }* }*
 *                               | deadTimeoutMillis i32
 *                    (incarnation: random per server process, never 0; absent = 0 = unknown,
 *                    from an older server. The generations of every block of the server's
 *                    block-pool regions: the server installs their keys, BlockKeyMint, before it
 *                    honours any block key; absent from an older master. deadTimeoutMillis: the
 *                    master's server.dead.timeout, which a server's leases stay under; absent = 0
 *                    = unknown, from an older master)
 * HEARTBEAT (2)      server  -> serverId i32                      master <- (empty)
 *                    NOT_FOUND: unknown or DEAD server: register again
 * ADD_REGION (3)     server  -> serverId i32 | REGION             master <- (empty)
 * REMOVE_REGION (4)  server  -> serverId i32 | regionId i32       master <- removed u8 (0: unknown)
 *                    (a service region its service freed; INVALID_ARGUMENT for a block-pool region)
 * LEAVE (5)          server  -> serverId i32 | incarnation u64      master <- left u8 (0: DEAD already,
 *                               or another process of the server registered since)
 *                    (a clean stop's goodbye: the master declares the server DEAD at once, as after
 *                    the dead timeout, and answers once the faces' failover is journaled;
 *                    NOT_FOUND: unknown server; UNKNOWN_OPCODE from an older master)
 * OPEN_SESSION (10)  client  -> clientName str | leaseMillis i32 (0: the master's default)
 *                    master  <- sessionId u64 | leaseMillis i32
 * RENEW_SESSION (11) client  -> sessionId u64                     master <- leaseMillis i32
 * CLOSE_SESSION (12) client  -> sessionId u64                     master <- freedBlocks i32
 * ALLOCATE (20)      client  -> sessionId u64 | count i32 | storageClass str ("": any)
 *                               | flags u8 (bit 0: strict, do not spill to other classes)
 *                               | owner str ("": session-scoped, freed with the session)
 *                    master  <- count i32 | { BLOCK }*
 * FREE (21)          client  -> sessionId u64 | count i32 | { serverId i32 | regionId i32 | offset u64 }*
 *                    master  <- freed i32
 * OWNED (22)         client  -> sessionId u64 | owner str         master <- count i32 | { BLOCK }*
 *                    (SESSION_EXPIRED without a live session; renews it)
 * MEMBERS (30)       any     -> (empty)                           master <- count i32 | { MEMBER }*
 * REGIONS (31)       any     -> serverId i32 (-1: all)            master <- count i32 | { serverId i32 | REGION }*
 *                    (to a CLIENT every rkey is 0: region keys are for servers)
 * STATUS (32)        any     -> (empty)
 *                    master  <- clusterId str | blockSize u64 | regions i32 | sessions i32
 *                               | count i32 | { MEMBER | regions i32 | classCount i32
 *                                               | { class str | capacity u64 | used u64 }* }*
 * MASTER_INFO (33)   any     -> (empty)
 *                    master  <- hostId str | addrCount i32 | { fabric str | address str }*
 *                    (where else the master listens: a client on the master's host moves to shm)
 * REQUEST (40)       client  -> sessionId u64 | seq u64 | ackedBelow u64 | service i32 | opcode i32
 *                               | body (the rest of the frame: the inner call's request)
 *                    master  <- the inner call's answer (or its error), exactly as unwrapped
 *                    (a call that carries a request id: a retry of an id whose first attempt
 *                    changed the metadata gets that attempt's remembered answer instead of running
 *                    again; ackedBelow: the client holds no answer-less id below it any more, so
 *                    the master may forget those. See RequestId and docs/KERNEL.md)
 *
 * REGION  = regionId i32 | rkey u64 | length u64 | storageClass str | service str ("": block pool)
 * BLOCK   = serverId i32 | regionId i32 | rkey u64 | regionLength u64 | offset u64 | length u64
 *           | storageClass str
 *           (rkey: the block's own read-write key for its current generation, BlockKeyMint; it
 *           grants nothing outside the block and dies when the block is freed)
 * MEMBER  = serverId i32 | name str | state u8 (ServerState ordinal) | hostId str
 *           | addrCount i32 | { fabric str | address str }*
 * </pre>
 *
 * Every caller has proven a role's secret in the fabric's handshake ({@link
 * io.ferrite.fabric.Role}). REGISTER, HEARTBEAT, ADD_REGION, REMOVE_REGION and LEAVE need role
 * SERVER or ADMIN: a CLIENT gets {@code PERMISSION_DENIED} ({@link Permissions}). Session ids are
 * random 63-bit values, so one client cannot guess another's session.
 *
 * <p>Errors travel as the fabric's error responses: a malformed body is {@code INVALID_ARGUMENT},
 * an unknown opcode {@code UNKNOWN_OPCODE}, an unknown or expired session {@code SESSION_EXPIRED},
 * no free blocks {@code NO_SPACE}.
 */
public final class MasterProtocol {
  private MasterProtocol() {}

  /** The master's service id. Ids 1 to 15 are reserved for the kernel; faces use 16 and up. */
  public static final int SERVICE = 1;

  public static final int REGISTER = 1;
  public static final int HEARTBEAT = 2;
  public static final int ADD_REGION = 3;
  public static final int REMOVE_REGION = 4;
  public static final int LEAVE = 5;
  public static final int OPEN_SESSION = 10;
  public static final int RENEW_SESSION = 11;
  public static final int CLOSE_SESSION = 12;
  public static final int ALLOCATE = 20;
  public static final int FREE = 21;
  public static final int OWNED = 22;
  public static final int MEMBERS = 30;
  public static final int REGIONS = 31;
  public static final int STATUS = 32;
  public static final int MASTER_INFO = 33;
  public static final int REQUEST = 40;

  /** REQUEST's header: the request id, then the inner call's service and opcode. */
  public static final int REQUEST_HEADER = 8 + 8 + 8 + 4 + 4;

  /**
   * The id of one call a client may send more than once (after a lost answer, a master restart, a
   * leader change): its session, a sequence number the client never reuses within the session, and
   * the lowest sequence number the client still waits on (every id below it is answered: the master
   * may forget its answer).
   */
  public record RequestId(long sessionId, long seq, long ackedBelow) {
    public RequestId {
      if (ackedBelow > seq) {
        throw new IllegalArgumentException(
            "ackedBelow: " + ackedBelow + " (expected: <= seq " + seq + ")");
      }
    }
  }

  /**
   * A REQUEST frame: {@code id}, then the inner call {@code service}/{@code opcode}/{@code body}.
   */
  public static ByteBuffer request(RequestId id, int service, int opcode, ByteBuffer body) {
    ByteBuffer b = body.duplicate();
    ByteBuffer out =
        ByteBuffer.allocate(REQUEST_HEADER + b.remaining()).order(ByteOrder.LITTLE_ENDIAN);
    out.putLong(id.sessionId())
        .putLong(id.seq())
        .putLong(id.ackedBelow())
        .putInt(service)
        .putInt(opcode)
        .put(b)
        .flip();
    return out;
  }

  /** A REQUEST frame read: its id, the inner call, and the inner body (a slice of the frame). */
  public record Request(RequestId id, int service, int opcode, ByteBuffer body) {}

  /** Reads a REQUEST frame without moving {@code frame}'s position. */
  public static Request readRequest(ByteBuffer frame) {
    ByteBuffer f = frame.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    if (f.remaining() < REQUEST_HEADER) {
      throw new io.ferrite.fabric.FerriteException(
          io.ferrite.fabric.ErrorCode.INVALID_ARGUMENT,
          "truncated request: " + f.remaining() + " bytes (expected: >= " + REQUEST_HEADER + ")");
    }
    long session = f.getLong();
    long seq = f.getLong();
    long acked = f.getLong();
    int service = f.getInt();
    int opcode = f.getInt();
    if (acked > seq || seq <= 0) {
      throw new io.ferrite.fabric.FerriteException(
          io.ferrite.fabric.ErrorCode.INVALID_ARGUMENT,
          "request id: seq "
              + seq
              + ", ackedBelow "
              + acked
              + " (expected: seq > 0, ackedBelow <= seq)");
    }
    return new Request(new RequestId(session, seq, acked), service, opcode, f.slice());
  }

  /** ALLOCATE flag: allocate only from the named class, never spill to the next. */
  public static final int FLAG_STRICT = 1;

  /** Upper bound on any list in a request; larger counts are rejected before allocating. */
  public static final int MAX_LIST = 1 << 20;

  public static void writeRegion(Wire.Writer w, RegionInfo r) {
    w.i32(r.ref().regionId())
        .i64(r.ref().rkey())
        .i64(r.ref().length())
        .str(r.storageClass())
        .str(r.service());
  }

  public static RegionInfo readRegion(Wire.Reader r, int serverId) {
    int id = r.i32("regionId");
    long rkey = r.i64("rkey");
    long length = r.i64("length");
    if (length <= 0) {
      throw new io.ferrite.fabric.FerriteException(
          io.ferrite.fabric.ErrorCode.INVALID_ARGUMENT,
          "region length: " + length + " (expected: > 0)");
    }
    String cls = r.str("storageClass");
    String service = r.str("service");
    return new RegionInfo(new RegionRef(serverId, id, rkey, length), cls, service);
  }

  public static void writeBlock(Wire.Writer w, BlockRef b) {
    w.i32(b.region().serverId())
        .i32(b.region().regionId())
        .i64(b.region().rkey())
        .i64(b.region().length())
        .i64(b.offset())
        .i64(b.length())
        .str(b.storageClass());
  }

  public static BlockRef readBlock(Wire.Reader r) {
    int server = r.i32("serverId");
    int region = r.i32("regionId");
    long rkey = r.i64("rkey");
    long regionLength = r.i64("regionLength");
    long offset = r.i64("offset");
    long length = r.i64("length");
    String cls = r.str("storageClass");
    try {
      return new BlockRef(new RegionRef(server, region, rkey, regionLength), offset, length, cls);
    } catch (IllegalArgumentException e) {
      throw new io.ferrite.fabric.FerriteException(
          io.ferrite.fabric.ErrorCode.INVALID_ARGUMENT, "block: " + e.getMessage());
    }
  }

  public static void writeBlocks(Wire.Writer w, List<BlockRef> blocks) {
    w.i32(blocks.size());
    for (BlockRef b : blocks) {
      writeBlock(w, b);
    }
  }

  public static List<BlockRef> readBlocks(Wire.Reader r) {
    int n = r.count("blockCount", MAX_LIST);
    List<BlockRef> out = new ArrayList<>(Math.min(n, 1024));
    for (int i = 0; i < n; i++) {
      out.add(readBlock(r));
    }
    return out;
  }

  /** REGISTER's answer tail: block generations by region id. */
  public static void writeGenerations(Wire.Writer w, Map<Integer, int[]> generations) {
    w.i32(generations.size());
    for (Map.Entry<Integer, int[]> e : generations.entrySet()) {
      w.i32(e.getKey()).i32(e.getValue().length);
      for (int g : e.getValue()) {
        w.i32(g);
      }
    }
  }

  public static Map<Integer, int[]> readGenerations(Wire.Reader r) {
    Map<Integer, int[]> out = new LinkedHashMap<>();
    int n = r.count("regionCount", MAX_LIST);
    for (int i = 0; i < n; i++) {
      int region = r.i32("regionId");
      int[] gens = new int[r.count("blockCount", MAX_LIST)];
      for (int j = 0; j < gens.length; j++) {
        gens[j] = r.i32("generation");
      }
      out.put(region, gens);
    }
    return out;
  }

  public static void writeAddresses(Wire.Writer w, Map<String, String> addresses) {
    w.i32(addresses.size());
    for (Map.Entry<String, String> e : addresses.entrySet()) {
      w.str(e.getKey()).str(e.getValue());
    }
  }

  public static Map<String, String> readAddresses(Wire.Reader r) {
    int n = r.count("addrCount", 64);
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      m.put(r.str("fabric"), r.str("address"));
    }
    return m;
  }

  public static void writeMember(Wire.Writer w, MemberInfo m) {
    w.i32(m.serverId()).str(m.name()).u8(m.state().ordinal()).str(m.hostId());
    writeAddresses(w, m.addresses());
  }

  public static MemberInfo readMember(Wire.Reader r) {
    int id = r.i32("serverId");
    String name = r.str("name");
    ServerState state = ServerState.fromWire(r.u8("state"));
    String host = r.str("hostId");
    return new MemberInfo(id, name, state, host, readAddresses(r));
  }

  public static void writeStatus(Wire.Writer w, ClusterStatus s) {
    w.str(s.clusterId()).i64(s.blockSize()).i32(s.regions()).i32(s.sessions());
    w.i32(s.members().size());
    for (ClusterStatus.Member m : s.members()) {
      writeMember(w, m.info());
      w.i32(m.regions()).i32(m.usage().size());
      for (ClusterStatus.ClassUsage u : m.usage()) {
        w.str(u.storageClass()).i64(u.capacityBytes()).i64(u.usedBytes());
      }
    }
    // Appended after the members, so a reader that predates it (which stops after them) still
    // parses the status: per member, per class in the order above, the service regions' bytes per
    // face.
    //   per member, per class: i32 faces, then faces x (str face, i64 bytes)
    for (ClusterStatus.Member m : s.members()) {
      for (ClusterStatus.ClassUsage u : m.usage()) {
        w.i32(u.serviceBytes().size());
        u.serviceBytes().forEach((f, b) -> w.str(f).i64(b));
      }
    }
    // Appended after that (a reader that predates it stops before): what the faces lost.
    //   i32 faces, then faces x (str face, i32 counts, counts x (str name, i64 value))
    w.i32(s.lost().size());
    s.lost()
        .forEach(
            (f, counts) -> {
              w.str(f).i32(counts.size());
              counts.forEach((k, v) -> w.str(k).i64(v));
            });
  }

  public static ClusterStatus readStatus(Wire.Reader r) {
    String cluster = r.str("clusterId");
    long blockSize = r.i64("blockSize");
    int regions = r.i32("regions");
    int sessions = r.i32("sessions");
    int n = r.count("memberCount", MAX_LIST);
    List<ClusterStatus.Member> members = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      MemberInfo info = readMember(r);
      int reg = r.i32("regions");
      int k = r.count("classCount", 1024);
      List<ClusterStatus.ClassUsage> usage = new ArrayList<>();
      for (int j = 0; j < k; j++) {
        usage.add(new ClusterStatus.ClassUsage(r.str("class"), r.i64("capacity"), r.i64("used")));
      }
      members.add(new ClusterStatus.Member(info, reg, usage));
    }
    if (r.remaining() > 0) {
      // A master that has the per-face section (see writeStatus); an older one ends above.
      for (int i = 0; i < members.size(); i++) {
        ClusterStatus.Member m = members.get(i);
        List<ClusterStatus.ClassUsage> usage = new ArrayList<>();
        for (ClusterStatus.ClassUsage u : m.usage()) {
          int f = r.count("faceCount", 1024);
          Map<String, Long> faces = new TreeMap<>();
          for (int j = 0; j < f; j++) {
            faces.put(r.str("face"), r.i64("bytes"));
          }
          usage.add(
              new ClusterStatus.ClassUsage(
                  u.storageClass(), u.capacityBytes(), u.usedBytes(), faces));
        }
        members.set(i, new ClusterStatus.Member(m.info(), m.regions(), usage));
      }
    }
    Map<String, Map<String, Long>> lost = new TreeMap<>();
    if (r.remaining() > 0) {
      int faces = r.count("lostFaces", 1024);
      for (int i = 0; i < faces; i++) {
        String face = r.str("face");
        int k = r.count("lostCounts", 64);
        Map<String, Long> counts = new java.util.LinkedHashMap<>();
        for (int j = 0; j < k; j++) {
          counts.put(r.str("name"), r.i64("value"));
        }
        lost.put(face, counts);
      }
    }
    return new ClusterStatus(cluster, blockSize, members, regions, sessions, lost);
  }
}
