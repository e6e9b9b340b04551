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
import io.ferrite.tx.TxConfig;
import io.ferrite.tx.TxProtocol;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
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
 *  REGION  u8 1, i32 region, i32 primary, i32 n, n × i32 backup        (older journals: epoch 1)
 *  OPENED  u8 2, i32 region
 *  PLACED  u8 3, i32 region, i64 epoch, i32 primary, i32 n, n × i32 backup
 *  FILLING u8 4, i32 region, i32 n, n × (i32 server, i64 since)      (copies being filled)
 * </pre>
 *
 * A new region goes to the live server holding the fewest tx regions as primary (ties by id), or to
 * the server the allocation hint names while it is alive; its {@code tx.replicas - 1} backups go to
 * the other live servers holding the fewest copies (fewer when fewer servers are alive: logged).
 * Every placement has an epoch, bumped on every change. A server declared dead (or one that came
 * back as a new process, its memory gone) leaves every placement: where it was the primary, the
 * first backup becomes the primary; a region without any other copy keeps its placement (its
 * primary answers DATA_LOST when it comes back). A region with fewer copies than {@code
 * tx.replicas} is repaired ({@link TxRepairs}): a live server holding no copy is added in state
 * FILLING, and becomes a backup when its primary says it is filled (END_FILL).
 */
public final class TxDirectory implements MasterExtension {
  private static final System.Logger LOG = System.getLogger(TxDirectory.class.getName());

  /** A region's placement. */
  record Placement(int region, int primary, List<Integer> backups, boolean opened, long epoch) {}

  private final Map<Integer, Placement> regions = new LinkedHashMap<>();

  /** The process incarnation each server registered with (not journaled: 0 unknown). */
  private final Map<Integer, Long> incarnations = new HashMap<>();

  /** Copies being filled: region → (server → the epoch it was added at); journaled (FILLING). */
  final Map<Integer, Map<Integer, Long>> filling = new HashMap<>();

  private MasterContext context;
  int replicas = 2;

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
    if (type == 4) {
      int region = r.i32("region");
      int n = r.count("filling", 64);
      Map<Integer, Long> f = new LinkedHashMap<>();
      for (int i = 0; i < n; i++) {
        f.put(r.i32("server"), r.i64("since"));
      }
      if (f.isEmpty()) {
        filling.remove(region);
      } else {
        filling.put(region, f);
      }
    } else if (type == 2) {
      Placement p = regions.get(r.i32("region"));
      if (p != null) {
        regions.put(
            p.region(), new Placement(p.region(), p.primary(), p.backups(), true, p.epoch()));
      }
    } else if (type == 1 || type == 3) {
      int region = r.i32("region");
      long epoch = type == 3 ? r.i64("epoch") : 1;
      int primary = r.i32("primary");
      int n = r.count("backups", 64);
      List<Integer> backups = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        backups.add(r.i32("backup"));
      }
      Placement old = regions.get(region);
      boolean opened = old != null && old.opened();
      regions.put(region, new Placement(region, primary, List.copyOf(backups), opened, epoch));
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
      if (filling.containsKey(p.region())) {
        out.add(TxRepairs.fillingRecord(p.region(), filling.get(p.region())));
      }
    }
    return out;
  }

  static byte[] record(Placement p) {
    Wire.Writer w =
        new Wire.Writer()
            .u8(3)
            .i32(p.region())
            .i64(p.epoch())
            .i32(p.primary())
            .i32(p.backups().size());
    p.backups().forEach(w::i32);
    return w.toArray();
  }

  private static byte[] opened(int region) {
    return new Wire.Writer().u8(2).i32(region).toArray();
  }

  @Override
  public void start(MasterContext context) {
    this.context = context;
    this.replicas = context.config().getInt(TxConfig.REPLICAS);
  }

  @Override
  public Map<String, Object> describe() {
    return Map.of("regions", regions.size(), "replicas", replicas, "filling", filling.size());
  }

  @Override
  public void serverDead(int serverId, MasterContext.Mutation mutation) {
    leave(serverId, mutation, "declared dead");
    repairs.repairAll(mutation, serverId);
  }

  @Override
  public void serverRegistered(int serverId, long incarnation, MasterContext.Mutation mutation) {
    Long before = incarnations.put(serverId, incarnation);
    if (before != null && before != 0 && incarnation != 0 && before != incarnation) {
      // A new process: the copies the old one held are gone, as if it had been declared dead.
      leave(serverId, mutation, "back as a new process");
    }
    repairs.repairAll(mutation, -1);
  }

  private final TxRepairs repairs = new TxRepairs(this);

  Map<Integer, Placement> regions() {
    return regions;
  }

  /**
   * Takes {@code serverId} out of every placement (under the metadata lock): a region it was the
   * primary of gets its first backup as primary; one it backed loses it; epoch + 1 each. A region
   * whose only copy it held keeps its placement (its data is lost: DATA_LOST).
   */
  private void leave(int serverId, MasterContext.Mutation mutation, String why) {
    for (Placement p : List.copyOf(regions.values())) {
      repairs.leave(p, serverId, mutation);
      Placement next = null;
      if (p.primary() == serverId && !p.backups().isEmpty()) {
        next =
            new Placement(
                p.region(),
                p.backups().get(0),
                List.copyOf(p.backups().subList(1, p.backups().size())),
                p.opened(),
                p.epoch() + 1);
      } else if (p.backups().contains(serverId)) {
        List<Integer> left = new ArrayList<>(p.backups());
        left.remove(Integer.valueOf(serverId));
        next = new Placement(p.region(), p.primary(), List.copyOf(left), p.opened(), p.epoch() + 1);
      }
      if (next != null) {
        LOG.log(
            System.Logger.Level.INFO,
            "tx region {0}: server {1} {2}; primary {3}, backups {4}, epoch {5}",
            p.region(),
            serverId,
            why,
            next.primary(),
            next.backups(),
            next.epoch());
        mutation.commit(record(next));
      }
    }
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
                  int primary = place(near, m.members());
                  Placement made =
                      new Placement(id, primary, backups(primary, m.members()), false, 1);
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
      case TxProtocol.END_FILL -> {
        Permissions.require(caller, Role.SERVER, "tx directory END_FILL");
        int region = r.i32("region");
        int primary = r.i32("primary");
        int target = r.i32("server");
        long since = r.i64("since");
        r.end();
        boolean ok = context.mutate(m -> repairs.endFill(region, primary, target, since, m));
        return new Wire.Writer().u8(ok ? 1 : 0).toBuffer();
      }
      case TxProtocol.GET_PLACEMENT -> {
        int region = r.i32("region");
        r.end();
        return context.mutate(m -> repairs.placement(region, m));
      }
      default ->
          throw new FerriteException(
              ErrorCode.UNKNOWN_OPCODE, "tx directory: unknown opcode " + opcode);
    }
    return placement(p).toBuffer();
  }

  /** The placement answer of GET_REGION (GET_PLACEMENT appends the copies being filled). */
  static Wire.Writer placement(Placement p) {
    Wire.Writer w = new Wire.Writer().i32(p.region()).i32(p.primary()).i32(p.backups().size());
    p.backups().forEach(w::i32);
    return w.u8(p.opened() ? 1 : 0).i64(p.epoch());
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

  /**
   * {@code tx.replicas - 1} live servers other than {@code primary}, those holding the fewest
   * copies (primary or backup) first, ties by id; fewer (logged) when fewer are alive.
   */
  private List<Integer> backups(int primary, List<MemberInfo> members) {
    Map<Integer, Integer> load = new HashMap<>();
    for (Placement p : regions.values()) {
      load.merge(p.primary(), 1, Integer::sum);
      p.backups().forEach(b -> load.merge(b, 1, Integer::sum));
    }
    List<Integer> alive = new ArrayList<>();
    for (MemberInfo mi : members) {
      if (mi.state() == ServerState.ALIVE && mi.serverId() != primary) {
        alive.add(mi.serverId());
      }
    }
    alive.sort(
        Comparator.<Integer>comparingInt(s -> load.getOrDefault(s, 0))
            .thenComparingInt(Integer::intValue));
    int want = replicas - 1;
    if (alive.size() < want) {
      LOG.log(
          System.Logger.Level.WARNING,
          "tx: {0} = {1}, but only {2} live server(s): a new region gets {2} cop(ies)",
          TxConfig.REPLICAS,
          replicas,
          alive.size() + 1);
    }
    return List.copyOf(alive.subList(0, Math.min(want, alive.size())));
  }
}
