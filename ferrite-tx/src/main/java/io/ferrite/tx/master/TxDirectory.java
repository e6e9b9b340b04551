package io.ferrite.tx.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.Permissions;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.tx.TxProtocol;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The tx face's master extension: the region map (FaRM §3.3: region → primary and backups),
 * journaled. Records:
 *
 * <pre>
 *  REGION  u8 1, i32 region, i32 primary, i32 n, n × i32 backup
 *  OPENED  u8 2, i32 region
 * </pre>
 *
 * A new region goes to the live server holding the fewest tx regions (ties by id), or to the server
 * the allocation hint names while it is alive. Backups stay empty in this slice (no replication
 * yet; docs/TX.md); the map's shape and the wire already carry them, so the replication slice adds
 * placement on other servers without a format change.
 */
public final class TxDirectory implements MasterExtension {
  /** A region's placement. */
  record Placement(int region, int primary, List<Integer> backups, boolean opened) {}

  private final Map<Integer, Placement> regions = new LinkedHashMap<>();
  private MasterContext context;

  /** For {@link java.util.ServiceLoader}. */
  public TxDirectory() {}

  @Override
  public int serviceId() {
    return TxProtocol.MASTER_SERVICE;
  }

  @Override
  public String name() {
    return "tx";
  }

  @Override
  public void apply(ByteBuffer record) {
    Wire.Reader r = new Wire.Reader(record, "tx record");
    int type = r.u8("type");
    if (type == 2) {
      Placement p = regions.get(r.i32("region"));
      if (p != null) {
        regions.put(p.region(), new Placement(p.region(), p.primary(), p.backups(), true));
      }
    } else if (type == 1) {
      int region = r.i32("region");
      int primary = r.i32("primary");
      int n = r.count("backups", 64);
      List<Integer> backups = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        backups.add(r.i32("backup"));
      }
      regions.put(region, new Placement(region, primary, List.copyOf(backups), false));
    }
    // Other types: records of a newer version, ignored as unknown opcodes are.
  }

  @Override
  public List<byte[]> snapshot() {
    List<byte[]> out = new ArrayList<>();
    for (Placement p : regions.values()) {
      out.add(record(p));
      if (p.opened()) {
        out.add(opened(p.region()));
      }
    }
    return out;
  }

  private static byte[] record(Placement p) {
    Wire.Writer w =
        new Wire.Writer().u8(1).i32(p.region()).i32(p.primary()).i32(p.backups().size());
    p.backups().forEach(w::i32);
    return w.toArray();
  }

  private static byte[] opened(int region) {
    return new Wire.Writer().u8(2).i32(region).toArray();
  }

  @Override
  public void start(MasterContext context) {
    this.context = context;
  }

  @Override
  public Map<String, Object> describe() {
    return Map.of("regions", regions.size());
  }

  @Override
  public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
    try {
      return CompletableFuture.completedFuture(dispatch(caller, opcode, request));
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  private ByteBuffer dispatch(RpcContext caller, int opcode, ByteBuffer request) {
    Wire.Reader r = new Wire.Reader(request, "tx directory request " + opcode);
    Placement p;
    switch (opcode) {
      case TxProtocol.NEW_REGION -> {
        int near = r.i32("nearServer");
        r.end();
        p =
            context.mutate(
                m -> {
                  int id = regions.isEmpty() ? 1 : maxId() + 1;
                  Placement made = new Placement(id, place(near, m.members()), List.of(), false);
                  m.commit(record(made));
                  return regions.get(id);
                });
      }
      case TxProtocol.GET_REGION -> {
        int region = r.i32("region");
        r.end();
        p = context.mutate(m -> regions.get(region));
        if (p == null) {
          throw new FerriteException(
              ErrorCode.NO_SUCH_REGION, "tx region " + region + ": not in the master's region map");
        }
      }
      case TxProtocol.OPENED -> {
        Permissions.require(caller, Role.SERVER, "tx directory OPENED");
        int region = r.i32("region");
        r.end();
        context.mutate(
            m -> {
              Placement q = regions.get(region);
              if (q != null && !q.opened()) {
                m.commit(opened(region));
              }
              return null;
            });
        return ByteBuffer.allocate(0);
      }
      default ->
          throw new FerriteException(
              ErrorCode.UNKNOWN_OPCODE, "tx directory: unknown opcode " + opcode);
    }
    Wire.Writer w = new Wire.Writer().i32(p.region()).i32(p.primary()).i32(p.backups().size());
    p.backups().forEach(w::i32);
    return w.u8(p.opened() ? 1 : 0).toBuffer();
  }

  private int maxId() {
    return regions.keySet().stream().mapToInt(Integer::intValue).max().orElse(0);
  }

  /** The live server {@code near} if it is one, else the live server with the fewest regions. */
  private int place(int near, List<MemberInfo> members) {
    Map<Integer, Integer> load = new HashMap<>();
    for (Placement p : regions.values()) {
      load.merge(p.primary(), 1, Integer::sum);
    }
    int best = -1;
    for (MemberInfo mi : members) {
      if (mi.state() != ServerState.ALIVE) {
        continue;
      }
      if (mi.serverId() == near) {
        return near;
      }
      if (best < 0
          || load.getOrDefault(mi.serverId(), 0) < load.getOrDefault(best, 0)
          || (load.getOrDefault(mi.serverId(), 0).equals(load.getOrDefault(best, 0))
              && mi.serverId() < best)) {
        best = mi.serverId();
      }
    }
    if (best < 0) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, "tx: no live memory server for a region");
    }
    return best;
  }
}
