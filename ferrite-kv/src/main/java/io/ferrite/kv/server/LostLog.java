package io.ferrite.kv.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.ServiceContext;
import io.ferrite.kv.KvProtocol;
import java.nio.ByteBuffer;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntFunction;

/**
 * What a kv service does when its log held no record at start (docs/KV.md "Lost shards"): a new
 * server, or one that came back without its log (the file removed, a wiped disk). The durable
 * shards the directory lists here are then not here, and without a word a client's NOT_FOUND would
 * open them again, empty: every acknowledged pair in them gone.
 *
 * <p>So each master group's directory is told ({@link KvProtocol#LOG_LOST}) once per process: group
 * 0 at start, before the server accepts connections; another group before this process makes its
 * first durable shard of that group (its link to that group registers only after the services
 * started, so it cannot be waited for at start). The directory drops the copies it listed here and
 * answers them; this server then refuses to make them again for a client: a lost shard (no copy
 * left) answers DATA_LOST naming the table, the shard and this server, one whose backup took over
 * answers MOVED to OPEN_SHARD (the client asks the master). A repair's copy or a move's import may
 * make the shard here again ({@link #madeAgain}).
 *
 * <p>Thread-safe: reports are made one at a time (under {@link #reported}'s lock), so a durable
 * shard of a group is never made while that group's report, which lists the shards held, is under
 * way.
 */
final class LostLog {
  private static final System.Logger LOG = System.getLogger(LostLog.class.getName());

  /** A shard: table id and shard number. */
  record Key(long tableId, int shard) {}

  /** A copy a directory dropped: its table's name, and whether the shard was lost with it. */
  private record Gone(String table, boolean lost) {}

  private final ServiceContext context;
  private final boolean empty;

  /** The durable shards held now of a master group's tables (for the report). */
  private final IntFunction<List<Key>> held;

  /** The master groups told already; guarded by itself. */
  private final Set<Integer> reported = new HashSet<>();

  /** The copies that were here before the log was lost, as the directories answered. */
  private final Map<Key, Gone> gone = new ConcurrentHashMap<>();

  /**
   * @param empty whether the log held no record at start (else this does nothing)
   * @param held the durable shards this server holds now of group {@code g}'s tables
   */
  LostLog(ServiceContext context, boolean empty, IntFunction<List<Key>> held) {
    this.context = context;
    this.empty = empty;
    this.held = held;
  }

  /** Whether the log held no record at start. */
  boolean empty() {
    return empty;
  }

  /**
   * Tells master group {@code group}'s directory, unless it was told or the log was not empty: this
   * server's id, its process incarnation (the directory tells from it whether this process
   * registered with it yet: placements made since are fresh) and the group's durable shards held
   * here now; keeps what the directory dropped.
   *
   * @throws FerriteException what the master answered (UNAVAILABLE while it is away: the caller
   *     waits, or fails the request, which the client sends again)
   */
  void report(int group) {
    if (!empty) {
      return;
    }
    synchronized (reported) {
      if (reported.contains(group)) {
        return;
      }
      List<Key> mine = held.apply(group);
      Wire.Writer w =
          new Wire.Writer().i32(context.serverId()).i64(context.incarnation()).i32(mine.size());
      for (Key k : mine) {
        w.i64(k.tableId()).i32(k.shard());
      }
      ByteBuffer answer;
      try {
        answer =
            context
                .master(group)
                .callSync(null, KvProtocol.MASTER_SERVICE, KvProtocol.LOG_LOST, w.toBuffer());
      } catch (FerriteException e) {
        if (e.code() == ErrorCode.UNKNOWN_SERVICE) {
          reported.add(group); // a master without the kv directory holds no kv table
          return;
        }
        if (e.code() != ErrorCode.UNKNOWN_OPCODE) {
          throw e;
        }
        LOG.log(
            System.Logger.Level.WARNING,
            "kv: master group {0} does not know LOG_LOST (an older master): it is not told that"
                + " this server''s kv log was empty, and durable shards it lists here may be opened"
                + " again empty",
            group);
        reported.add(group);
        return;
      }
      Wire.Reader r = new Wire.Reader(answer, "kv LOG_LOST answer");
      int n = r.i32("gone");
      for (int i = 0; i < n; i++) {
        String name = r.str("name");
        Key k = new Key(r.i64("tableId"), r.i32("shard"));
        boolean lost = r.u8("lost") == 1;
        gone.put(k, new Gone(name, lost));
        LOG.log(
            System.Logger.Level.WARNING,
            "kv: this server''s kv log was empty at start, so shard {0} of durable table {1} that"
                + " was here is gone: {2}",
            k.shard(),
            name,
            lost ? "LOST (it had no other copy)" : "another copy serves it");
      }
      r.end();
      reported.add(group);
    }
  }

  /**
   * Before a client's {@code OPEN_SHARD} makes shard {@code k} of durable table {@code table} (of
   * master group {@code group}) here: the group's directory is told first, then a copy it dropped
   * is refused, never made again, empty.
   *
   * @throws FerriteException DATA_LOST for a lost shard; MOVED for one another copy took over
   */
  void beforeOpen(int group, String table, Key k) {
    report(group);
    Gone g = gone.get(k);
    if (g == null) {
      return;
    }
    if (g.lost()) {
      throw lost(k, g);
    }
    throw new FerriteException(
        ErrorCode.MOVED,
        "shard "
            + k.shard()
            + " of kv table "
            + table
            + " is no longer here: server "
            + context.serverId()
            + " restarted without its kv log and another copy took over (ask the master)");
  }

  /**
   * Before a repair's copy ({@code OPEN_COPY}) or a move's import makes shard {@code k} of a
   * durable table of group {@code group} here again, from another copy's pairs.
   */
  void madeAgain(int group, Key k) {
    report(group);
    gone.remove(k);
  }

  /** For a request to shard {@code k}, which is not here: DATA_LOST if it was lost, else null. */
  FerriteException lostOrNull(Key k) {
    Gone g = gone.get(k);
    return g != null && g.lost() ? lost(k, g) : null;
  }

  private FerriteException lost(Key k, Gone g) {
    return new FerriteException(
        ErrorCode.DATA_LOST,
        "shard "
            + k.shard()
            + " of kv table "
            + g.table()
            + " was lost: its only copy was on memory server "
            + context.serverId()
            + ", which restarted without its kv log (the acknowledged writes in it are gone; the"
            + " table keeps its other shards: drop it and create it again, docs/KV.md \"Lost"
            + " shards\")");
  }
}
