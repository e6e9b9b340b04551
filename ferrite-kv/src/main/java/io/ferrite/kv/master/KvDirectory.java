package io.ferrite.kv.master;

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
import io.ferrite.kv.KvProtocol;
import io.ferrite.kv.TableInfo;
import io.ferrite.kv.TableOptions;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * The kv face's master half: the table directory (name -> id, options, server of each shard),
 * journaled with the master's metadata so that it survives master restarts. Shards are placed by
 * consistent hashing: each ALIVE server owns {@value #VNODES} points of a 64-bit ring, and shard
 * {@code i} of a table goes to the owner of the first point at or after {@code hash(table, i)}, so
 * adding a server moves only the shards whose arc it takes over.
 *
 * <p>Shards move when servers are added ({@code ferrite kv rebalance}, {@link
 * io.ferrite.kv.KvRebalancer}): the directory journals each move's intent, then its end (the new
 * placement, with the table's placement version bumped, or an abort). The copy itself is the
 * mover's work with the two servers; see docs/KV.md "Moving shards".
 *
 * <p>Records: {@code u8 1, table, i64 version} (created, or the state in a snapshot), {@code u8 2,
 * str name} (dropped), {@code u8 3, move} (a move's intent) and {@code u8 4, str name, i32 shard,
 * u8 commit} (its end: the shard now lives on the move's target, or it stays) and {@code u8 5,
 * table} (a replicated table's copies changed: a backup promoted or a dead copy dropped, see {@link
 * #serverDead}; the placement version is bumped).
 *
 * <p>Replicated tables ({@link TableOptions#replicas} 2 or 3): each shard's backups are the next
 * distinct servers clockwise on the ring after its primary's point, so copies of a shard are on
 * different servers. When the master declares a server DEAD, every shard it was the primary of is
 * taken over by its first backup, and it leaves every backup list it was on (docs/KV.md
 * "Replication"). A shard short of copies is then given new ones in the background by {@link
 * KvRepairs} ({@code kv.repair.period}), on its own thread, outside the metadata lock.
 */
public final class KvDirectory implements MasterExtension {
  private static final System.Logger LOG = System.getLogger(KvDirectory.class.getName());
  static final int VNODES = 64;
  private static final int CREATED = 1;
  private static final int DROPPED = 2;
  private static final int MOVE_BEGUN = 3;
  private static final int MOVE_ENDED = 4;
  private static final int PLACED = 5;

  /** A move the directory has journaled and not yet ended. */
  public record Move(String name, long tableId, int shard, int from, int to, long token) {
    public void write(Wire.Writer w) {
      w.str(name).i64(tableId).i32(shard).i32(from).i32(to).i64(token);
    }

    public static Move read(Wire.Reader r) {
      return new Move(
          r.str("name"),
          r.i64("tableId"),
          r.i32("shard"),
          r.i32("from"),
          r.i32("to"),
          r.i64("token"));
    }
  }

  private final Map<String, TableInfo> tables = new TreeMap<>();
  private final Map<String, Long> versions = new TreeMap<>();
  private final Map<String, Move> moves = new TreeMap<>();
  private final SecureRandom random = new SecureRandom();
  private volatile MasterContext context;

  @Override
  public int serviceId() {
    return KvProtocol.MASTER_SERVICE;
  }

  @Override
  public String name() {
    return "kv";
  }

  /**
   * A table of this directory (asked by group 0's placement directory under the metadata lock, the
   * lock that guards {@link #tables}): a table made before the cluster had several master groups
   * stays in group 0 (docs/RESILIENCE.md, "Master groups").
   */
  @Override
  public boolean holdsName(String kind, String name) {
    return kind.equals(io.ferrite.kernel.proto.PlacementProtocol.KV) && tables.containsKey(name);
  }

  @Override
  public void apply(ByteBuffer record) {
    Wire.Reader r = new Wire.Reader(record, "kv directory record");
    int type = r.u8("type");
    if (type == CREATED) {
      TableInfo t = TableInfo.read(r);
      tables.put(t.name(), t);
      versions.put(t.name(), r.remaining() >= 8 ? r.i64("version") : 0L);
    } else if (type == DROPPED) {
      String name = r.str("name");
      tables.remove(name);
      versions.remove(name);
      moves.values().removeIf(m -> m.name().equals(name));
    } else if (type == MOVE_BEGUN) {
      Move m = Move.read(r);
      moves.put(moveKey(m.name(), m.shard()), m);
    } else if (type == MOVE_ENDED) {
      String name = r.str("name");
      int shard = r.i32("shard");
      boolean commit = r.u8("commit") == 1;
      Move m = moves.remove(moveKey(name, shard));
      TableInfo t = tables.get(name);
      if (commit && m != null && t != null && t.tableId() == m.tableId()) {
        int[] servers = t.servers().clone();
        servers[shard] = m.to();
        tables.put(name, new TableInfo(name, t.tableId(), t.options(), servers));
        versions.merge(name, 1L, Long::sum);
      }
    } else if (type == PLACED) {
      TableInfo t = TableInfo.read(r);
      TableInfo old = tables.get(t.name());
      if (old != null && old.tableId() == t.tableId()) {
        tables.put(t.name(), t);
        versions.merge(t.name(), 1L, Long::sum);
      }
    }
  }

  /**
   * Fails over the shards of replicated tables that {@code serverId} held: a shard whose primary it
   * was is taken over by its first backup (which holds every acknowledged write: a write is
   * acknowledged only once each copy applied it), and the server leaves every backup list. One
   * {@code PLACED} record per changed table, its placement version bumped, so clients refetch it (a
   * write to the dead server fails, a one-sided read of it fails: both ask the master). A shard
   * with no backup left stays on the dead server, as an unreplicated one does.
   */
  @Override
  public void serverDead(int serverId, MasterContext.Mutation mutation) {
    for (TableInfo t : List.copyOf(tables.values())) {
      if (t.options().replicas() < 2) {
        continue;
      }
      TableInfo n = without(t, serverId);
      if (n != t) {
        promotions += promoted(t, n);
        Wire.Writer w = new Wire.Writer().u8(PLACED);
        n.write(w);
        mutation.commit(w.toArray());
      }
    }
    KvRepairs r = repairs;
    if (r != null) {
      r.kick(); // its shards are short of a copy now: the repair runs outside the lock
    }
  }

  /**
   * Servers that lost kv regions in the registration under way ({@link #regionsLost} comes just
   * before {@link #serverRegistered} of the same registration); in memory only.
   */
  private final java.util.Set<Integer> lostRegions = new java.util.HashSet<>();

  /** The incarnation each server registered with last (in memory: a master restart forgets). */
  private final Map<Integer, Long> incarnations = new java.util.HashMap<>();

  /**
   * Notes that {@code serverId} lost kv shard regions. A shard's own frees (a resize, a move's
   * release, a drop) come here too, one region at a time; only a registration of a new process of
   * the server ({@link #serverRegistered}) turns the note into lost shards.
   */
  @Override
  public void regionsLost(int serverId, List<LostRegion> lost, MasterContext.Mutation mutation) {
    if (lost.stream().anyMatch(l -> "kv".equals(l.region().service()))) {
      lostRegions.add(serverId);
    }
  }

  /**
   * A server registered. If it is a new process ({@code incarnation} differs from the last one, or
   * the master does not know the last one) that came back without kv regions it had, every shard
   * copy of a {@code none} table on it is gone (durable tables' shards come back from its log): a
   * replicated shard's backup there leaves its copies, a primary there is replaced by its first
   * backup (as at a {@link #serverDead}), and a shard whose only copy was there is marked {@link
   * TableInfo#LOST}: reads and writes answer {@code DATA_LOST}, naming the table and the shard.
   * Journaled as {@code PLACED} records.
   */
  @Override
  public void serverRegistered(int serverId, long incarnation, MasterContext.Mutation mutation) {
    Long before = incarnations.put(serverId, incarnation);
    boolean regionsGone = lostRegions.remove(serverId);
    boolean newProcess = before == null || incarnation == 0 || before != incarnation;
    if (newProcess) {
      // What a LOG_LOST this process sends later may find gone: placements made before it
      // registered (later ones are fresh, opened by this process).
      listedAtRegistration.put(serverId, durableCopiesOn(serverId));
    }
    KvRepairs r = repairs;
    if (r != null) {
      r.registered(serverId); // a new target for a short shard, or lost copies (below)
    }
    if (!regionsGone || !newProcess) {
      return;
    }
    for (TableInfo t : List.copyOf(tables.values())) {
      if (t.options().durability() != TableOptions.Durability.NONE) {
        continue;
      }
      TableInfo n = lose(t, serverId, i -> true, TableInfo.LOST);
      if (n != t) {
        promotions += promoted(t, n) - lostShards(n) + lostShards(t);
        Wire.Writer w = new Wire.Writer().u8(PLACED);
        n.write(w);
        mutation.commit(w.toArray());
      }
    }
  }

  /**
   * {@code t} without the copies on server {@code gone} of the shards {@code which} selects: a
   * primary there gives way to the shard's first complete backup (as at a {@link #serverDead}), a
   * backup leaves the list, and a shard left with no copy gets {@code mark} ({@link TableInfo#LOST}
   * or {@link TableInfo#lostOn}). {@code t} itself if nothing changed.
   */
  static TableInfo lose(TableInfo t, int gone, java.util.function.IntPredicate which, int mark) {
    TableInfo n = without(t, gone, which);
    int[] servers = n.servers().clone();
    boolean lost = false;
    for (int i = 0; i < servers.length; i++) {
      if (servers[i] == gone && which.test(i)) {
        servers[i] = mark;
        lost = true;
      }
    }
    return lost ? new TableInfo(t.name(), t.tableId(), t.options(), servers, n.backups()) : n;
  }

  /** A durable shard a server holds, as it reports them in {@code LOG_LOST}. */
  record Held(long tableId, int shard) {}

  /**
   * Per server, the durable shard copies this directory listed on it when its current process
   * registered ({@link #serverRegistered}); in memory only (a restarted master knows none and
   * counts every copy listed, see {@link #logLost}).
   */
  private final Map<Integer, java.util.Set<Held>> listedAtRegistration = new java.util.HashMap<>();

  private java.util.Set<Held> durableCopiesOn(int server) {
    java.util.Set<Held> out = new java.util.HashSet<>();
    for (TableInfo t : tables.values()) {
      if (t.options().durability() != TableOptions.Durability.NONE) {
        for (int i = 0; i < t.servers().length; i++) {
          if (listsCopy(t, i, server)) {
            out.add(new Held(t.tableId(), i));
          }
        }
      }
    }
    return out;
  }

  /** A copy {@code LOG_LOST} dropped: {@code lost} when it was the shard's last one. */
  record Gone(String name, long tableId, int shard, boolean lost) {}

  /**
   * {@code LOG_LOST}, under the metadata lock: server {@code server} started with an empty kv log
   * (removed, or a wiped disk) and holds only {@code held} of the durable shards. Every other copy
   * of a durable table's shard listed on it is gone (its pairs were in that log): dropped as at a
   * restart of a {@code none} table's server ({@link #lose}: a complete backup is promoted, else
   * the shard is LOST), one {@code PLACED} record per changed table. Without this, a client that
   * got NOT_FOUND from that server opened the shard there again, empty, and every acknowledged pair
   * in it was gone without a word (docs/KV.md "Lost shards").
   *
   * <p>Which copies count: sent before the server's process {@code incarnation} registered here (at
   * its start, before it serves: group 0's tables), every copy listed on it was placed for an
   * earlier process. Sent after it registered (another group's tables, told before the server makes
   * its first durable shard of that group, once it may have served for a while), only the copies
   * listed when it registered ({@link #listedAtRegistration}): a table placed since is a fresh
   * placement it is about to open. One false loss remains: a shard placed on it whose opening never
   * reached it (its creator died between CREATE_TABLE and the opens, or the server restarted right
   * then) is declared lost too: nothing tells it from one whose pairs were lost.
   */
  private List<Gone> logLost(
      MasterContext.Mutation m, int server, long incarnation, java.util.Set<Held> held) {
    Long registered = incarnations.get(server);
    java.util.Set<Held> placedBefore =
        incarnation != 0 && registered != null && registered == incarnation
            ? listedAtRegistration.get(server)
            : null;
    List<Gone> out = new ArrayList<>();
    for (TableInfo t : List.copyOf(tables.values())) {
      if (t.options().durability() == TableOptions.Durability.NONE) {
        continue; // its copies are DRAM only: regionsLost and serverRegistered handle them
      }
      java.util.function.IntPredicate which =
          i ->
              !held.contains(new Held(t.tableId(), i))
                  && listsCopy(t, i, server)
                  && (placedBefore == null || placedBefore.contains(new Held(t.tableId(), i)));
      TableInfo n = lose(t, server, which, TableInfo.lostOn(server));
      if (n == t) {
        continue;
      }
      for (int i = 0; i < t.servers().length; i++) {
        if (which.test(i)) {
          out.add(new Gone(t.name(), t.tableId(), i, n.lost(i)));
          LOG.log(
              System.Logger.Level.WARNING,
              "kv: server {0} came back without its kv log: its copy of shard {1} of durable table"
                  + " {2} is gone; {3}",
              server,
              i,
              t.name(),
              n.lost(i)
                  ? "it was the only one: the shard is LOST (DATA_LOST until the table is dropped)"
                  : "the shard is served by server " + n.servers()[i]);
        }
      }
      promotions += promoted(t, n) - lostShards(n) + lostShards(t);
      Wire.Writer w = new Wire.Writer().u8(PLACED);
      n.write(w);
      m.commit(w.toArray());
    }
    KvRepairs r = repairs;
    if (r != null && !out.isEmpty()) {
      r.kick(); // replicated shards short of a copy now
    }
    return out;
  }

  /** Whether {@code t} lists server {@code server} as a copy of {@code shard} (any kind). */
  private static boolean listsCopy(TableInfo t, int shard, int server) {
    if (t.servers()[shard] == server) {
      return true;
    }
    for (int b : t.backupsOf(shard)) {
      if (TableInfo.copyServer(b) == server) {
        return true;
      }
    }
    return false;
  }

  private static int lostShards(TableInfo t) {
    int n = 0;
    for (int s : t.servers()) {
      n += s < 0 ? 1 : 0; // LOST or lostOn
    }
    return n;
  }

  /** The shards lost for good ({@link TableInfo#LOST}), counted for {@code ferrite status}. */
  @Override
  public Map<String, Long> lost() {
    long shards = 0;
    long lostTables = 0;
    for (TableInfo t : tables.values()) {
      int n = lostShards(t);
      shards += n;
      lostTables += n > 0 ? 1 : 0;
    }
    return shards == 0 ? Map.of() : Map.of("shards", shards, "tables", lostTables);
  }

  /** Primaries changed by a failover since the master started (for tests and the console). */
  private long promotions;

  private static int promoted(TableInfo before, TableInfo after) {
    int n = 0;
    for (int i = 0; i < before.servers().length; i++) {
      n += before.servers()[i] != after.servers()[i] ? 1 : 0;
    }
    return n;
  }

  /** {@code t} without server {@code gone} among its copies ({@code t} itself if it had none). */
  static TableInfo without(TableInfo t, int gone) {
    return without(t, gone, i -> true);
  }

  /** As {@link #without(TableInfo, int)}, for the shards {@code which} selects only. */
  static TableInfo without(TableInfo t, int gone, java.util.function.IntPredicate which) {
    int shards = t.servers().length;
    int[] servers = t.servers().clone();
    int[][] backups = t.backups().clone();
    boolean changed = false;
    for (int i = 0; i < shards; i++) {
      if (!which.test(i)) {
        continue;
      }
      int[] b = backups[i];
      if (java.util.Arrays.stream(b).anyMatch(x -> TableInfo.copyServer(x) == gone)) {
        b = java.util.Arrays.stream(b).filter(x -> TableInfo.copyServer(x) != gone).toArray();
        backups[i] = b;
        changed = true;
      }
      if (servers[i] == gone) {
        // The first full backup takes over; a copy still being filled never does.
        for (int j = 0; j < b.length; j++) {
          if (!TableInfo.isSyncing(b[j])) {
            servers[i] = b[j];
            int[] rest = new int[b.length - 1];
            System.arraycopy(b, 0, rest, 0, j);
            System.arraycopy(b, j + 1, rest, j, b.length - j - 1);
            backups[i] = rest;
            changed = true;
            break;
          }
        }
      }
    }
    return changed ? new TableInfo(t.name(), t.tableId(), t.options(), servers, backups) : t;
  }

  /**
   * The console's view: every table with its shards, the servers holding them, its directory
   * version and the shards moving. At most {@value #DESCRIBE_LIMIT} tables are listed (all are
   * counted): the metadata lock is held meanwhile.
   */
  @Override
  public Map<String, Object> describe() {
    List<Object> list = new ArrayList<>();
    for (TableInfo t : tables.values()) {
      if (list.size() == DESCRIBE_LIMIT) {
        break;
      }
      java.util.SortedSet<Integer> servers = new java.util.TreeSet<>();
      int underReplicated = 0;
      for (int i = 0; i < t.servers().length; i++) {
        if (!t.lost(i)) {
          servers.add(t.servers()[i]);
        }
        for (int b : t.backupsOf(i)) {
          servers.add(TableInfo.copyServer(b));
        }
        underReplicated += t.copies(i) < t.options().replicas() ? 1 : 0;
      }
      long moving = moves.values().stream().filter(m -> m.name().equals(t.name())).count();
      Map<String, Object> row = new java.util.LinkedHashMap<>();
      row.put("table", t.name());
      row.put("shards", t.options().shards());
      row.put("replicas", t.options().replicas());
      row.put("under-replicated", underReplicated);
      row.put("lost shards", lostShards(t));
      row.put("servers", servers.toString());
      row.put("version", versions.getOrDefault(t.name(), 0L));
      row.put("moving", moving);
      list.add(row);
    }
    Map<String, Object> out = new java.util.LinkedHashMap<>();
    out.put("tables", tables.size());
    out.put("moving shards", moves.size());
    out.put("promotions", promotions);
    KvRepairs r = repairs;
    out.put("copies repaired", r == null ? 0L : r.made);
    out.put("repairs failed", r == null ? 0L : r.failed);
    out.put("list", list);
    return out;
  }

  private static final int DESCRIBE_LIMIT = 100;

  private static String moveKey(String name, int shard) {
    return name + "#" + shard;
  }

  @Override
  public List<byte[]> snapshot() {
    List<byte[]> out = new ArrayList<>();
    for (TableInfo t : tables.values()) {
      out.add(created(t, versions.getOrDefault(t.name(), 0L)));
    }
    for (Move m : moves.values()) {
      out.add(begun(m));
    }
    return out;
  }

  private static byte[] created(TableInfo t, long version) {
    Wire.Writer w = new Wire.Writer().u8(CREATED);
    t.write(w);
    return w.i64(version).toArray();
  }

  private static byte[] begun(Move m) {
    Wire.Writer w = new Wire.Writer().u8(MOVE_BEGUN);
    m.write(w);
    return w.toArray();
  }

  @Override
  public void start(MasterContext ctx) {
    this.context = ctx;
    java.time.Duration period = io.ferrite.kv.KvConfig.repairPeriod(ctx.config());
    if (!period.isZero()) {
      // Copies being filled now were left by a repair that died with the last master (or an
      // operator's): the first pass drops them and copies those shards again.
      java.util.Set<String> leftovers = new java.util.HashSet<>();
      for (TableInfo t : tables.values()) {
        for (int s = 0; s < t.options().shards(); s++) {
          for (int b : t.backupsOf(s)) {
            if (TableInfo.isSyncing(b)) {
              leftovers.add(syncingKey(t.name(), s, TableInfo.copyServer(b)));
            }
          }
        }
      }
      repairs = new KvRepairs(this, ctx, period, leftovers);
      repairs.kick();
    }
    this.meters =
        io.ferrite.kernel.ops.FaceMeters.of(ctx.metrics(), "kv")
            .byOpcode(
                java.util.Map.of(
                    KvProtocol.CREATE_TABLE, "create_table",
                    KvProtocol.GET_TABLE, "get_table",
                    KvProtocol.LIST_TABLES, "list_tables",
                    KvProtocol.DROP_TABLE, "drop_table",
                    KvProtocol.PLAN, "plan",
                    KvProtocol.BEGIN_MOVE, "begin_move",
                    KvProtocol.END_MOVE, "end_move",
                    KvProtocol.ADD_COPY, "add_copy",
                    KvProtocol.END_COPY, "end_copy",
                    KvProtocol.LOG_LOST, "log_lost"));
  }

  /** The automatic repair (null when {@code kv.repair.period} is 0); set in start. */
  private volatile KvRepairs repairs;

  @Override
  public void stop() {
    KvRepairs r = repairs;
    if (r != null) {
      r.close();
    }
  }

  /** A shard with fewer complete copies than its table's replicas (for {@link KvRepairs}). */
  record Need(String name, int shard) {}

  static String syncingKey(String name, int shard, int server) {
    return name + "#" + shard + "#" + server;
  }

  /**
   * Under the metadata lock: the shards of replicated tables short of copies, not lost, with no
   * copy being filled. A copy being filled for which {@code drop} (given {@link #syncingKey}) says
   * true is dropped first (journaled), and its shard listed.
   */
  List<Need> needs(MasterContext.Mutation m, java.util.function.Predicate<String> drop) {
    List<Need> out = new ArrayList<>();
    for (TableInfo t : List.copyOf(tables.values())) {
      if (t.options().replicas() < 2) {
        continue;
      }
      for (int s = 0; s < t.options().shards(); s++) {
        TableInfo now = t;
        boolean filling = false;
        for (int b : t.backupsOf(s)) {
          if (TableInfo.isSyncing(b)) {
            int server = TableInfo.copyServer(b);
            if (drop.test(syncingKey(t.name(), s, server))) {
              now = endCopy(m, t.name(), s, server, false);
            } else {
              filling = true;
            }
          }
        }
        if (!filling && !now.lost(s) && now.copies(s) < now.options().replicas()) {
          out.add(new Need(t.name(), s));
        }
      }
    }
    return out;
  }

  /** {@code ADD_COPY} for the repairer: a target not in {@code avoid}, and the version after it. */
  io.ferrite.kv.KvReplicator.AddedCopy addCopy(
      MasterContext.Mutation m, String name, int shard, java.util.Set<Integer> avoid) {
    int[] target = new int[1];
    TableInfo t = addCopy(m, name, shard, target, avoid);
    return new io.ferrite.kv.KvReplicator.AddedCopy(t, versions.getOrDefault(name, 0L), target[0]);
  }

  /** ferrite.face.ops{face=kv} of the directory's opcodes; set in start, before any request. */
  private io.ferrite.kernel.ops.FaceMeters.ByOpcode meters;

  @Override
  public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
    meters.count(opcode);
    try {
      checkRole(caller, opcode);
      return CompletableFuture.completedFuture(dispatch(opcode, request));
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * Moving shards and dropping tables are the operator's (the rebalancer, {@code ferrite kv drop}
   * with the root secret): both end in server-only shard opcodes (FREEZE, RETIRE, DROP_SHARD), and
   * a CLIENT that could drop a table from the directory alone would strand its shards' memory.
   */
  private static void checkRole(RpcContext caller, int opcode) {
    String name =
        switch (opcode) {
          case KvProtocol.BEGIN_MOVE -> "BEGIN_MOVE";
          case KvProtocol.END_MOVE -> "END_MOVE";
          case KvProtocol.DROP_TABLE -> "DROP_TABLE";
          case KvProtocol.ADD_COPY -> "ADD_COPY";
          case KvProtocol.END_COPY -> "END_COPY";
          case KvProtocol.LOG_LOST -> "LOG_LOST";
          default -> null;
        };
    if (name != null) {
      Permissions.require(caller, Role.SERVER, "kv directory " + name + " (opcode " + opcode + ")");
    }
  }

  private ByteBuffer dispatch(int opcode, ByteBuffer request) {
    Wire.Reader r = new Wire.Reader(request, "kv directory request " + opcode);
    Wire.Writer w = new Wire.Writer();
    switch (opcode) {
      case KvProtocol.CREATE_TABLE -> {
        String name = checkName(r.str("name"));
        TableOptions o = TableOptions.read(r).validate();
        r.end();
        long id = random.nextLong();
        TableInfo t =
            context.mutate(
                m -> {
                  TableInfo old = tables.get(name);
                  if (old != null) {
                    if (!old.options().equals(o)) {
                      throw new FerriteException(
                          ErrorCode.CONFLICT,
                          "table " + name + " exists with other options: " + old.options());
                    }
                    return old;
                  }
                  TableInfo nt = placed(name, id, o, m.members());
                  m.commit(created(nt, 0));
                  return nt;
                });
        writeVersioned(w, t);
      }
      case KvProtocol.GET_TABLE -> {
        String name = r.str("name");
        r.end();
        TableInfo t = context.mutate(m -> tables.get(name));
        if (t == null) {
          throw new FerriteException(ErrorCode.NOT_FOUND, "no kv table " + name);
        }
        writeVersioned(w, t);
      }
      case KvProtocol.PLAN -> {
        String name = r.str("name");
        r.end();
        List<Move> plan = context.mutate(m -> plan(name, m.members()));
        w.i32(plan.size());
        for (Move m : plan) {
          m.write(w);
        }
      }
      case KvProtocol.BEGIN_MOVE -> {
        String name = r.str("name");
        int shard = r.i32("shard");
        int to = r.i32("to");
        r.end();
        Move move = context.mutate(m -> beginMove(m, name, shard, to));
        move.write(w);
      }
      case KvProtocol.END_MOVE -> {
        String name = r.str("name");
        int shard = r.i32("shard");
        boolean commit = r.u8("commit") == 1;
        r.end();
        TableInfo t =
            context.mutate(
                m -> {
                  TableInfo old = existing(name);
                  if (moves.containsKey(moveKey(name, shard))) {
                    m.commit(
                        new Wire.Writer()
                            .u8(MOVE_ENDED)
                            .str(name)
                            .i32(shard)
                            .u8(commit ? 1 : 0)
                            .toArray());
                  }
                  // Ending a move that already ended answers the table as it is (a retried call).
                  return tables.getOrDefault(name, old);
                });
        writeVersioned(w, t);
      }
      case KvProtocol.ADD_COPY -> {
        String name = r.str("name");
        int shard = r.i32("shard");
        r.end();
        int[] target = new int[1];
        TableInfo t = context.mutate(m -> addCopy(m, name, shard, target, java.util.Set.of()));
        writeVersioned(w, t);
        w.i32(target[0]);
      }
      case KvProtocol.END_COPY -> {
        String name = r.str("name");
        int shard = r.i32("shard");
        int server = r.i32("server");
        boolean commit = r.u8("commit") == 1;
        r.end();
        TableInfo t = context.mutate(m -> endCopy(m, name, shard, server, commit));
        writeVersioned(w, t);
      }
      case KvProtocol.LOG_LOST -> {
        int server = r.i32("server");
        long incarnation = r.i64("incarnation");
        int n = r.i32("held");
        java.util.Set<Held> held = new java.util.HashSet<>();
        for (int i = 0; i < n; i++) {
          held.add(new Held(r.i64("tableId"), r.i32("shard")));
        }
        r.end();
        List<Gone> gone = context.mutate(m -> logLost(m, server, incarnation, held));
        w.i32(gone.size());
        for (Gone g : gone) {
          w.str(g.name()).i64(g.tableId()).i32(g.shard()).u8(g.lost() ? 1 : 0);
        }
      }
      case KvProtocol.LIST_MOVES -> {
        r.end();
        List<Move> all = context.mutate(m -> List.copyOf(moves.values()));
        w.i32(all.size());
        for (Move m : all) {
          m.write(w);
        }
      }
      case KvProtocol.LIST_TABLES -> {
        r.end();
        List<TableInfo> all = context.mutate(m -> List.copyOf(tables.values()));
        w.i32(all.size());
        for (TableInfo t : all) {
          t.write(w);
        }
      }
      case KvProtocol.DROP_TABLE -> {
        String name = r.str("name");
        r.end();
        boolean found =
            context.mutate(
                m -> {
                  if (!tables.containsKey(name)) {
                    return false;
                  }
                  m.commit(new Wire.Writer().u8(DROPPED).str(name).toArray());
                  return true;
                });
        if (!found) {
          throw new FerriteException(ErrorCode.NOT_FOUND, "no kv table " + name);
        }
      }
      default ->
          throw new FerriteException(
              ErrorCode.UNKNOWN_OPCODE, "kv directory has no opcode " + opcode);
    }
    return w.toBuffer();
  }

  private void writeVersioned(Wire.Writer w, TableInfo t) {
    t.write(w);
    w.i64(context.mutate(m -> versions.getOrDefault(t.name(), 0L)));
  }

  private TableInfo existing(String name) {
    TableInfo t = tables.get(name);
    if (t == null) {
      throw new FerriteException(ErrorCode.NOT_FOUND, "no kv table " + name);
    }
    return t;
  }

  /**
   * The shards of {@code name} (every table if empty) whose ring owner among the ALIVE servers is
   * not the server they live on, that live on an ALIVE server (the copy reads it) and that are not
   * moving already. Consistent hashing: a new server takes over only the arcs before its points, so
   * only the shards on those arcs are listed.
   */
  private List<Move> plan(String name, List<MemberInfo> members) {
    List<TableInfo> which = name.isEmpty() ? List.copyOf(tables.values()) : List.of(existing(name));
    java.util.Set<Integer> alive = new java.util.HashSet<>();
    for (MemberInfo m : members) {
      if (m.state() == ServerState.ALIVE) {
        alive.add(m.serverId());
      }
    }
    List<Move> out = new ArrayList<>();
    for (TableInfo t : which) {
      if (t.options().replicas() > 1) {
        continue; // copies are placed by failover, not moved (docs/KV.md "Replication")
      }
      int[] owners = place(t.name(), t.options().shards(), members);
      for (int i = 0; i < owners.length; i++) {
        int from = t.servers()[i];
        if (owners[i] != from && alive.contains(from) && !moves.containsKey(moveKey(t.name(), i))) {
          out.add(new Move(t.name(), t.tableId(), i, from, owners[i], 0));
        }
      }
    }
    return out;
  }

  /**
   * Adds a copy being filled of {@code shard} on the first ALIVE server clockwise from the shard's
   * ring point that holds no copy of it and is not in {@code avoid} (servers a repair could not
   * reach lately); {@code target[0]} is set to it.
   */
  private TableInfo addCopy(
      MasterContext.Mutation m,
      String name,
      int shard,
      int[] target,
      java.util.Set<Integer> avoid) {
    TableInfo t = existing(name);
    checkShard(t, shard);
    int[] b = t.backupsOf(shard);
    if (java.util.Arrays.stream(b).anyMatch(TableInfo::isSyncing)) {
      throw new FerriteException(
          ErrorCode.CONFLICT,
          "a copy of shard " + shard + " of " + name + " is being filled already");
    }
    if (t.lost(shard) || t.copies(shard) >= t.options().replicas()) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "shard "
              + shard
              + " of "
              + name
              + (t.lost(shard) ? " was lost" : " has its " + t.options().replicas() + " copies"));
    }
    java.util.Set<Integer> holding = new java.util.HashSet<>();
    holding.add(t.servers()[shard]);
    for (int x : b) {
      holding.add(TableInfo.copyServer(x));
    }
    TreeMap<Long, Integer> ring = ring(m.members());
    long point = hash(name + "#" + shard);
    List<Integer> order = new ArrayList<>(ring.tailMap(point, true).values());
    order.addAll(ring.headMap(point, false).values());
    int to =
        order.stream()
            .filter(s -> !holding.contains(s) && !avoid.contains(s))
            .findFirst()
            .orElse(-1);
    if (to < 0) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE,
          "no ALIVE memory server without a copy of shard " + shard + " of " + name);
    }
    target[0] = to;
    int[][] backups = t.backups().clone();
    backups[shard] = java.util.Arrays.copyOf(b, b.length + 1);
    backups[shard][b.length] = TableInfo.syncing(to);
    return placedRecord(m, new TableInfo(name, t.tableId(), t.options(), t.servers(), backups));
  }

  TableInfo endCopy(MasterContext.Mutation m, String name, int shard, int server, boolean commit) {
    TableInfo t = existing(name);
    checkShard(t, shard);
    int[] b = t.backupsOf(shard);
    int at = -1;
    for (int i = 0; i < b.length; i++) {
      at = b[i] == TableInfo.syncing(server) ? i : at;
    }
    if (at < 0) {
      if (commit && java.util.Arrays.stream(b).noneMatch(x -> x == server)) {
        throw new FerriteException(
            ErrorCode.CONFLICT,
            "server "
                + server
                + " is not filling a copy of shard "
                + shard
                + " of "
                + name
                + " (it died, or the copy was dropped): run the repair again");
      }
      return t; // ended already (a retried call)
    }
    int[][] backups = t.backups().clone();
    if (commit) {
      backups[shard] = b.clone();
      backups[shard][at] = server;
    } else {
      int[] rest = new int[b.length - 1];
      System.arraycopy(b, 0, rest, 0, at);
      System.arraycopy(b, at + 1, rest, at, b.length - at - 1);
      backups[shard] = rest;
    }
    return placedRecord(m, new TableInfo(name, t.tableId(), t.options(), t.servers(), backups));
  }

  private TableInfo placedRecord(MasterContext.Mutation m, TableInfo n) {
    Wire.Writer w = new Wire.Writer().u8(PLACED);
    n.write(w);
    m.commit(w.toArray());
    return tables.get(n.name());
  }

  private static void checkShard(TableInfo t, int shard) {
    if (shard < 0 || shard >= t.options().shards()) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "shard: " + shard + " (expected: >= 0 and < " + t.options().shards() + ")");
    }
  }

  private Move beginMove(MasterContext.Mutation m, String name, int shard, int to) {
    TableInfo t = existing(name);
    if (shard < 0 || shard >= t.options().shards()) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "shard: " + shard + " (expected: >= 0 and < " + t.options().shards() + ")");
    }
    if (t.options().replicas() > 1) {
      throw new FerriteException(
          ErrorCode.UNSUPPORTED,
          "table "
              + name
              + " has "
              + t.options().replicas()
              + " replicas: its shards are not moved (docs/KV.md \"Replication\")");
    }
    Move pending = moves.get(moveKey(name, shard));
    if (pending != null) {
      throw new FerriteException(
          ErrorCode.CONFLICT,
          "shard "
              + shard
              + " of "
              + name
              + " is already moving from server "
              + pending.from()
              + " to "
              + pending.to()
              + " (ferrite kv rebalance finishes or aborts it)");
    }
    int from = t.servers()[shard];
    if (to == from) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "shard " + shard + " of " + name + " already lives on server " + to);
    }
    boolean alive =
        m.members().stream().anyMatch(x -> x.serverId() == to && x.state() == ServerState.ALIVE);
    if (!alive) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE, "server " + to + " is not an ALIVE memory server");
    }
    long token = random.nextLong() | 1; // never 0: a token names a freeze
    Move move = new Move(name, t.tableId(), shard, from, to, token);
    m.commit(begun(move));
    return move;
  }

  private static String checkName(String name) {
    if (name.isEmpty() || name.length() > 200 || name.chars().anyMatch(c -> c < 0x21 || c == '/')) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "table name: '" + name + "' (expected: 1 to 200 printable characters, no '/' or spaces)");
    }
    return name;
  }

  /**
   * A new table's placement: each shard's primary by consistent hashing ({@link #place}), its
   * backups the next distinct servers clockwise from that point.
   *
   * @throws FerriteException INVALID_ARGUMENT if the table wants more copies than there are ALIVE
   *     servers (two copies on one server would die together)
   */
  static TableInfo placed(String name, long id, TableOptions o, List<MemberInfo> members) {
    TreeMap<Long, Integer> ring = ring(members);
    int alive = new java.util.HashSet<>(ring.values()).size();
    if (o.replicas() > alive && alive > 0) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "replicas: "
              + o.replicas()
              + " (expected: <= "
              + alive
              + ", the ALIVE memory servers: each copy of a shard lives on another server)");
    }
    int[] servers = place(name, o.shards(), members);
    int[][] backups = TableInfo.noBackups(o.shards());
    for (int i = 0; i < o.shards() && o.replicas() > 1; i++) {
      long point = hash(name + "#" + i);
      java.util.LinkedHashSet<Integer> copies = new java.util.LinkedHashSet<>();
      copies.add(servers[i]);
      // Walk the ring clockwise from the shard's point (wrapping) until enough distinct servers.
      for (Integer s : ring.tailMap(point, true).values()) {
        if (copies.size() == o.replicas()) {
          break;
        }
        copies.add(s);
      }
      for (Integer s : ring.values()) {
        if (copies.size() == o.replicas()) {
          break;
        }
        copies.add(s);
      }
      backups[i] = copies.stream().skip(1).mapToInt(Integer::intValue).toArray();
    }
    return new TableInfo(name, id, o, servers, backups);
  }

  private static TreeMap<Long, Integer> ring(List<MemberInfo> members) {
    TreeMap<Long, Integer> ring = new TreeMap<>();
    for (MemberInfo m : members) {
      if (m.state() == ServerState.ALIVE) {
        for (int v = 0; v < VNODES; v++) {
          ring.put(hash("server-" + m.serverId() + "#" + v), m.serverId());
        }
      }
    }
    return ring;
  }

  /** Consistent hashing of the table's shards onto the ring of ALIVE servers. */
  static int[] place(String table, int shards, List<MemberInfo> members) {
    TreeMap<Long, Integer> ring = ring(members);
    if (ring.isEmpty()) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE, "no ALIVE memory server to place a kv table on");
    }
    int[] out = new int[shards];
    for (int i = 0; i < shards; i++) {
      Map.Entry<Long, Integer> e = ring.ceilingEntry(hash(table + "#" + i));
      out[i] = (e != null ? e : ring.firstEntry()).getValue();
    }
    return out;
  }

  private static long hash(String s) {
    return io.ferrite.fabric.verify.Checksum64.of(
        s.getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }
}
