package io.ferrite.kernel.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.RegionInfo;
import io.ferrite.kernel.proto.Wire;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One mutation of the master's metadata: what the journal stores. Replaying the events of a journal
 * (snapshot, then log) into an empty {@link MasterState} rebuilds the metadata. A snapshot is
 * itself a list of events that recreates the state it was taken from.
 *
 * <p>Encoding: {@code type u8 | payload}, payloads in {@link Wire} primitives:
 *
 * <pre>
 * 1 SERVER_REGISTERED  serverId i32 | name str | hostId str | addrCount i32 | { fabric str | address str }*
 * 2 REGION_ADDED       serverId i32 | REGION (see MasterProtocol)
 * 3 REGION_REMOVED     serverId i32 | regionId i32
 * 4 SESSION_OPENED     sessionId u64 | client str | leaseMillis i32
 * 5 SESSION_CLOSED     sessionId u64
 * 6 BLOCKS_ALLOCATED   sessionId u64 (0 for a persistent allocation) | owner str | count i32
 *                      | { serverId i32 | regionId i32 | blockIndex i32 }*
 * 7 BLOCKS_FREED       count i32 | { serverId i32 | regionId i32 | blockIndex i32 }*
 * 8 EXTENSION          serviceId i32 | record bytes (i32 length + bytes): a MasterExtension's own
 * 9 BLOCK_GENERATIONS  serverId i32 | regionId i32 | count i32 | { generation i32 }*
 *                      (snapshots only: the generation of each block of a region; a journal
 *                      without it, from an older master, reads as every generation 0)
 * 10 REQUEST_APPLIED   sessionId u64 | seq u64 | ackedBelow u64
 *                      (in the group of the first records a call with that request id wrote:
 *                      the call changed the metadata; the session forgets its ids below
 *                      ackedBelow. See RequestScope)
 * 11 REQUEST_ANSWERED  sessionId u64 | seq u64 | status u16 (0: OK, else the ErrorCode's wire code)
 *                      | body bytes (OK: the answer; else the error's message, UTF-8)
 * </pre>
 */
sealed interface MasterEvent {
  int SERVER_REGISTERED = 1;
  int REGION_ADDED = 2;
  int REGION_REMOVED = 3;
  int SESSION_OPENED = 4;
  int SESSION_CLOSED = 5;
  int BLOCKS_ALLOCATED = 6;
  int BLOCKS_FREED = 7;
  int EXTENSION = 8;
  int BLOCK_GENERATIONS = 9;
  int REQUEST_APPLIED = 10;
  int REQUEST_ANSWERED = 11;

  /** A block by its position: block {@code index} of region {@code regionId} of a server. */
  record BlockKey(int serverId, int regionId, int index) {}

  record ServerRegistered(int serverId, String name, String hostId, Map<String, String> addresses)
      implements MasterEvent {
    public ServerRegistered {
      addresses = Map.copyOf(addresses);
    }
  }

  record RegionAdded(RegionInfo region) implements MasterEvent {}

  record RegionRemoved(int serverId, int regionId) implements MasterEvent {}

  record SessionOpened(long sessionId, String client, int leaseMillis) implements MasterEvent {}

  record SessionClosed(long sessionId) implements MasterEvent {}

  record BlocksAllocated(long sessionId, String owner, List<BlockKey> blocks)
      implements MasterEvent {
    public BlocksAllocated {
      blocks = List.copyOf(blocks);
    }
  }

  record BlocksFreed(List<BlockKey> blocks) implements MasterEvent {
    public BlocksFreed {
      blocks = List.copyOf(blocks);
    }
  }

  /** The generation of every block of a region (see {@link RegionEntry#generation}). */
  record BlockGenerations(int serverId, int regionId, int[] generations) implements MasterEvent {
    public BlockGenerations {
      generations = generations.clone();
    }

    @Override
    public int[] generations() {
      return generations.clone();
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof BlockGenerations g
          && g.serverId == serverId
          && g.regionId == regionId
          && java.util.Arrays.equals(g.generations, generations);
    }

    @Override
    public int hashCode() {
      return (serverId * 31 + regionId) * 31 + java.util.Arrays.hashCode(generations);
    }

    @Override
    public String toString() {
      return "BlockGenerations[" + serverId + "/" + regionId + ", " + generations.length + "]";
    }
  }

  /** Request {@code seq} of a session changed the metadata (see {@link RequestScope}). */
  record RequestApplied(long sessionId, long seq, long ackedBelow) implements MasterEvent {}

  /** The answer of request {@code seq} of a session, remembered for its retries. */
  record RequestAnswered(long sessionId, long seq, int status, byte[] body) implements MasterEvent {
    public RequestAnswered {
      body = body.clone();
    }

    @Override
    public byte[] body() {
      return body.clone();
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof RequestAnswered a
          && a.sessionId == sessionId
          && a.seq == seq
          && a.status == status
          && java.util.Arrays.equals(a.body, body);
    }

    @Override
    public int hashCode() {
      return Long.hashCode(sessionId * 31 + seq) * 31 + status;
    }

    @Override
    public String toString() {
      return "RequestAnswered["
          + Long.toHexString(sessionId)
          + "/"
          + seq
          + ", status "
          + status
          + ", "
          + body.length
          + " B]";
    }
  }

  /** A record of a {@link MasterExtension}, opaque to the master. */
  record ExtensionRecord(int serviceId, byte[] record) implements MasterEvent {
    public ExtensionRecord {
      record = record.clone();
    }

    @Override
    public byte[] record() {
      return record.clone();
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof ExtensionRecord x
          && x.serviceId == serviceId
          && java.util.Arrays.equals(x.record, record);
    }

    @Override
    public int hashCode() {
      return serviceId * 31 + java.util.Arrays.hashCode(record);
    }

    @Override
    public String toString() {
      return "ExtensionRecord[service " + serviceId + ", " + record.length + " B]";
    }
  }

  static byte[] encode(MasterEvent e) {
    Wire.Writer w = new Wire.Writer(64);
    if (e instanceof ServerRegistered s) {
      w.u8(SERVER_REGISTERED).i32(s.serverId()).str(s.name()).str(s.hostId());
      MasterProtocol.writeAddresses(w, s.addresses());
    } else if (e instanceof RegionAdded r) {
      w.u8(REGION_ADDED).i32(r.region().ref().serverId());
      MasterProtocol.writeRegion(w, r.region());
    } else if (e instanceof RegionRemoved r) {
      w.u8(REGION_REMOVED).i32(r.serverId()).i32(r.regionId());
    } else if (e instanceof SessionOpened s) {
      w.u8(SESSION_OPENED).i64(s.sessionId()).str(s.client()).i32(s.leaseMillis());
    } else if (e instanceof SessionClosed s) {
      w.u8(SESSION_CLOSED).i64(s.sessionId());
    } else if (e instanceof BlocksAllocated a) {
      w.u8(BLOCKS_ALLOCATED).i64(a.sessionId()).str(a.owner());
      writeKeys(w, a.blocks());
    } else if (e instanceof BlocksFreed f) {
      w.u8(BLOCKS_FREED);
      writeKeys(w, f.blocks());
    } else if (e instanceof ExtensionRecord x) {
      w.u8(EXTENSION).i32(x.serviceId()).bytes(x.record);
    } else if (e instanceof RequestApplied a) {
      w.u8(REQUEST_APPLIED).i64(a.sessionId()).i64(a.seq()).i64(a.ackedBelow());
    } else if (e instanceof RequestAnswered a) {
      w.u8(REQUEST_ANSWERED).i64(a.sessionId()).i64(a.seq()).u16(a.status()).bytes(a.body);
    } else if (e instanceof BlockGenerations g) {
      w.u8(BLOCK_GENERATIONS).i32(g.serverId()).i32(g.regionId()).i32(g.generations.length);
      for (int v : g.generations) {
        w.i32(v);
      }
    }
    return w.toArray();
  }

  private static void writeKeys(Wire.Writer w, List<BlockKey> keys) {
    w.i32(keys.size());
    for (BlockKey k : keys) {
      w.i32(k.serverId()).i32(k.regionId()).i32(k.index());
    }
  }

  private static List<BlockKey> readKeys(Wire.Reader r) {
    int n = r.count("blockCount", MasterProtocol.MAX_LIST);
    List<BlockKey> keys = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      keys.add(new BlockKey(r.i32("serverId"), r.i32("regionId"), r.i32("blockIndex")));
    }
    return keys;
  }

  static MasterEvent decode(Wire.Reader r) {
    int type = r.u8("type");
    MasterEvent e =
        switch (type) {
          case SERVER_REGISTERED ->
              new ServerRegistered(
                  r.i32("serverId"),
                  r.str("name"),
                  r.str("hostId"),
                  MasterProtocol.readAddresses(r));
          case REGION_ADDED -> new RegionAdded(MasterProtocol.readRegion(r, r.i32("serverId")));
          case REGION_REMOVED -> new RegionRemoved(r.i32("serverId"), r.i32("regionId"));
          case SESSION_OPENED ->
              new SessionOpened(r.i64("sessionId"), r.str("client"), r.i32("leaseMillis"));
          case SESSION_CLOSED -> new SessionClosed(r.i64("sessionId"));
          case BLOCKS_ALLOCATED ->
              new BlocksAllocated(r.i64("sessionId"), r.str("owner"), readKeys(r));
          case BLOCKS_FREED -> new BlocksFreed(readKeys(r));
          case EXTENSION -> new ExtensionRecord(r.i32("serviceId"), r.bytes("record"));
          case REQUEST_APPLIED ->
              new RequestApplied(r.i64("sessionId"), r.i64("seq"), r.i64("ackedBelow"));
          case REQUEST_ANSWERED ->
              new RequestAnswered(
                  r.i64("sessionId"), r.i64("seq"), r.u16("status"), r.bytes("body"));
          case BLOCK_GENERATIONS -> {
            int server = r.i32("serverId");
            int region = r.i32("regionId");
            int[] gens = new int[r.count("count", MasterProtocol.MAX_LIST)];
            for (int i = 0; i < gens.length; i++) {
              gens[i] = r.i32("generation");
            }
            yield new BlockGenerations(server, region, gens);
          }
          default ->
              throw new FerriteException(ErrorCode.PROTOCOL, "unknown journal event type " + type);
        };
    r.end();
    return e;
  }
}
