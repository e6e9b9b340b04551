package io.ferrite.tx.master;

import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.tx.TxConfig;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Re-replication at the master (docs/TX.md, "Recovery: a new copy for a region that lost one"): a
 * region with fewer copies than {@code tx.replicas} gets a live server holding no copy of it as a
 * copy in state FILLING (journaled: a PLACED record with epoch + 1 and a FILLING record). Its
 * primary learns it (GET_PLACEMENT), forwards every record to it from then on, copies the region's
 * state to it, and says END_FILL: the copy becomes a backup (epoch + 1). A FILLING copy is never
 * promoted: when the primary dies the fill is dropped, the promoted backup goes on with what it has
 * and fills a new copy. A FILLING server that dies is dropped (epoch + 1) and another one picked.
 *
 * <p>Repairs are checked when a server is declared dead or registers, and on every GET_PLACEMENT
 * (each primary asks for its regions on every tick of its repair thread: the periodic check).
 * Everything runs under the master's metadata lock (a {@link MasterContext.Mutation}), as the
 * directory does.
 */
final class TxRepairs {
  private static final System.Logger LOG = System.getLogger(TxRepairs.class.getName());

  private final TxDirectory dir;

  TxRepairs(TxDirectory dir) {
    this.dir = dir;
  }

  static byte[] fillingRecord(int region, Map<Integer, Long> f) {
    Wire.Writer w = new Wire.Writer().u8(4).i32(region).i32(f.size());
    f.forEach((s, since) -> w.i32(s).i64(since));
    return w.toArray();
  }

  private Map<Integer, Long> fills(int region) {
    return dir.filling.getOrDefault(region, Map.of());
  }

  /**
   * {@code serverId} leaves: a fill it was the target of is dropped (epoch + 1); a fill of a region
   * it was the primary of is dropped (the directory then promotes a full backup, epoch + 1).
   */
  void leave(TxDirectory.Placement p, int serverId, MasterContext.Mutation m) {
    Map<Integer, Long> f = fills(p.region());
    if (f.isEmpty()) {
      return;
    }
    if (f.containsKey(serverId)) {
      Map<Integer, Long> left = new LinkedHashMap<>(f);
      left.remove(serverId);
      m.commit(fillingRecord(p.region(), left));
      m.commit(TxDirectory.record(withEpoch(p, p.backups())));
      LOG.log(
          System.Logger.Level.INFO,
          "tx region {0}: copy being filled on server {1} dropped (it left), epoch {2}",
          p.region(),
          serverId,
          p.epoch() + 1);
    } else if (p.primary() == serverId) {
      m.commit(fillingRecord(p.region(), Map.of()));
    }
  }

  private static TxDirectory.Placement withEpoch(TxDirectory.Placement p, List<Integer> backups) {
    return new TxDirectory.Placement(
        p.region(), p.primary(), List.copyOf(backups), p.opened(), p.epoch() + 1);
  }

  void repairAll(MasterContext.Mutation m, int excluded) {
    for (TxDirectory.Placement p : List.copyOf(dir.regions().values())) {
      repair(p, m, excluded);
    }
  }

  /**
   * Adds FILLING copies to {@code p} until it has {@code tx.replicas} copies, from the live servers
   * holding no copy of it (those holding the fewest copies of any region first, ties by id), while
   * its primary is alive. Logs when no server is left to take one.
   */
  void repair(TxDirectory.Placement p, MasterContext.Mutation m, int excluded) {
    Map<Integer, Long> f = fills(p.region());
    int missing = dir.replicas - 1 - p.backups().size() - f.size();
    if (missing <= 0) {
      return;
    }
    List<Integer> alive = new ArrayList<>();
    boolean primaryAlive = false;
    for (MemberInfo mi : m.members()) {
      if (mi.state() != ServerState.ALIVE || mi.serverId() == excluded) {
        continue;
      }
      if (mi.serverId() == p.primary()) {
        primaryAlive = true;
      } else if (!p.backups().contains(mi.serverId()) && !f.containsKey(mi.serverId())) {
        alive.add(mi.serverId());
      }
    }
    if (!primaryAlive) {
      return; // its primary is dead or gone: promotion (or DATA_LOST) comes first
    }
    if (alive.isEmpty()) {
      LOG.log(
          System.Logger.Level.DEBUG,
          "tx region {0}: {1} cop(ies) of {2} ({3}), and no live server without one to add",
          p.region(),
          1 + p.backups().size() + f.size(),
          dir.replicas,
          TxConfig.REPLICAS);
      return;
    }
    Map<Integer, Integer> load = new HashMap<>();
    for (TxDirectory.Placement q : dir.regions().values()) {
      load.merge(q.primary(), 1, Integer::sum);
      q.backups().forEach(b -> load.merge(b, 1, Integer::sum));
      fills(q.region()).keySet().forEach(b -> load.merge(b, 1, Integer::sum));
    }
    alive.sort(
        Comparator.<Integer>comparingInt(s -> load.getOrDefault(s, 0))
            .thenComparingInt(Integer::intValue));
    Map<Integer, Long> next = new LinkedHashMap<>(f);
    for (int s : alive.subList(0, Math.min(missing, alive.size()))) {
      next.put(s, p.epoch() + 1);
    }
    m.commit(TxDirectory.record(withEpoch(p, p.backups())));
    m.commit(fillingRecord(p.region(), next));
    LOG.log(
        System.Logger.Level.INFO,
        "tx region {0}: lost a copy; filling a new one on server(s) {1}, epoch {2}",
        p.region(),
        next.keySet(),
        p.epoch() + 1);
  }

  /**
   * END_FILL: {@code target} becomes a backup if the fill is still the one added at {@code since}.
   */
  boolean endFill(int region, int primary, int target, long since, MasterContext.Mutation m) {
    TxDirectory.Placement p = dir.regions().get(region);
    Long at = fills(region).get(target);
    if (p == null || p.primary() != primary || at == null || at != since) {
      return false;
    }
    Map<Integer, Long> left = new LinkedHashMap<>(fills(region));
    left.remove(target);
    List<Integer> backups = new ArrayList<>(p.backups());
    backups.add(target);
    m.commit(fillingRecord(region, left));
    m.commit(TxDirectory.record(withEpoch(p, backups)));
    LOG.log(
        System.Logger.Level.INFO,
        "tx region {0}: server {1} filled, now a backup; backups {2}, epoch {3}",
        region,
        target,
        backups,
        p.epoch() + 1);
    return true;
  }

  /** GET_PLACEMENT: repairs the region if due, then answers it with the copies being filled. */
  ByteBuffer placement(int region, MasterContext.Mutation m) {
    TxDirectory.Placement p = dir.regions().get(region);
    if (p == null) {
      throw new io.ferrite.fabric.FerriteException(
          io.ferrite.fabric.ErrorCode.NO_SUCH_REGION,
          "tx region " + region + ": not in the master's region map");
    }
    repair(p, m, -1);
    p = dir.regions().get(region);
    Map<Integer, Long> f = fills(region);
    Wire.Writer w = TxDirectory.placement(p).i32(f.size());
    f.forEach((s, since) -> w.i32(s).i64(since));
    return w.toBuffer();
  }
}
