package io.ferrite.kv;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kv.master.KvDirectory.Move;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * Moves kv shards to the server the directory's consistent-hash ring names for them now (after
 * memory servers were added), live: {@code ferrite kv rebalance}. The mover is this client; the
 * master journals each move's intent and end, the two servers freeze, copy, retire and import.
 *
 * <h2>One move of shard s from server A to server B (docs/KV.md "Moving shards")</h2>
 *
 * <ol>
 *   <li>{@code BEGIN_MOVE} at the master: the intent (table, s, A, B, a random token) is journaled;
 *       a second mover of s is refused.
 *   <li>{@code FREEZE} at A under the token, with a lease: from then on A answers writes of s with
 *       BUSY (retried by clients), under the shard's lock, so every write A applied is in the
 *       snapshot A takes; one-sided reads of A go on (nothing changes under them). The lease lapses
 *       by itself if the mover dies: writes resume, the move can no longer retire A.
 *   <li>{@code EXPORT} pages of the snapshot from A (renewing the lease), {@code IMPORT} them into
 *       a fresh shard at B (the first page creates it, as large as A's): bulk, about {@value
 *       #CHUNK_BYTES} bytes per call, values of every size, keys as bytes.
 *   <li>{@code RETIRE} at A (only while the freeze holds): A's array is poisoned ({@code MOVED}
 *       entries or buckets, the header's epoch marked retired), the retirement logged and synced
 *       for durable tables; from then on everything sent to A about s answers {@code MOVED}.
 *   <li>{@code END_MOVE commit} at the master: the placement names B, the table's placement version
 *       is bumped. Clients that heard {@code MOVED} refetch the table and go to B.
 *   <li>{@code RELEASE} at A (best effort): now that no move can need A's copy any more, A frees
 *       the retired shard's regions and keeps a tombstone that answers {@code MOVED}. A mover that
 *       dies before it leaves them to the next rebalance, which sweeps every server for retired
 *       shards the master places elsewhere (and for shards of dropped tables).
 * </ol>
 *
 * A failure before the retire cancels the move at A ({@code CANCEL}: atomic with RETIRE under A's
 * lock, so it either finds A retired — the move completes — or cancels it for good), drops B's
 * partial copy and aborts at the master. After the retire the move only ever completes: the
 * master's commit is retried, and if the master stays away, the next rebalance completes it from
 * the intent (re-copying from A's retired shard, which keeps its pairs). Thread-safe per move; do
 * not run two rebalances of one table at once (the directory refuses a second mover of a shard).
 */
public final class KvRebalancer {
  /** Bytes of pairs per EXPORT/IMPORT page. */
  static final int CHUNK_BYTES = 1 << 20;

  /** How long a freeze lasts without an EXPORT renewing it. */
  static final long LEASE_MILLIS = 10_000;

  /** How long the mover retries the master's commit after A retired. */
  static final long COMMIT_DEADLINE_NANOS = 30_000_000_000L;

  private final KvClient kv;
  private final FerriteClient client;
  private final Consumer<String> progress;

  /**
   * @param progress told what happens, one line at a time (the CLI prints it on stderr)
   */
  public KvRebalancer(KvClient kv, Consumer<String> progress) {
    this.kv = kv;
    this.client = kv.ferrite();
    this.progress = progress;
  }

  /** What one rebalance did. */
  public record Report(List<Move> moved, List<Move> resolved, List<String> failures) {
    public boolean ok() {
      return failures.isEmpty();
    }
  }

  /**
   * The moves that would bring {@code tables} (every table if empty) onto their ring owners.
   *
   * @throws FerriteException NOT_FOUND for an unknown table
   */
  public List<Move> plan(List<String> tables) {
    List<Move> out = new ArrayList<>();
    if (tables.isEmpty()) {
      // Every table: every master group's ("" asks a directory for all of its own).
      for (ByteBuffer b : kv.callMasters(KvProtocol.PLAN, new Wire.Writer().str("").toBuffer())) {
        out.addAll(readMoves(b));
      }
      return out;
    }
    for (String t : tables) {
      out.addAll(readMoves(kv.callMaster(t, KvProtocol.PLAN, new Wire.Writer().str(t).toBuffer())));
    }
    return out;
  }

  /** Moves the directory journaled and that have not ended (a mover died, or is running). */
  public List<Move> pending() {
    List<Move> out = new ArrayList<>();
    for (ByteBuffer b : kv.callMasters(KvProtocol.LIST_MOVES, ByteBuffer.allocate(0))) {
      out.addAll(readMoves(b));
    }
    return out;
  }

  private static List<Move> readMoves(ByteBuffer b) {
    Wire.Reader r = new Wire.Reader(b, "kv moves");
    int n = r.count("moves", 1 << 20);
    List<Move> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(Move.read(r));
    }
    r.end();
    return out;
  }

  /**
   * Resolves the pending moves of {@code tables} (every table if empty), then moves every shard the
   * plan lists, one at a time. A move that fails is reported and the others go on.
   *
   * @throws FerriteException NOT_FOUND for an unknown table (before anything moves)
   */
  public Report rebalance(List<String> tables) {
    List<Move> plan = plan(tables); // checks the names first
    Report before = resolvePending(tables);
    List<Move> resolved = before.resolved();
    List<String> failures = new ArrayList<>(before.failures());
    if (!resolved.isEmpty()) {
      plan = plan(tables);
    }
    List<Move> moved = new ArrayList<>();
    for (Move p : plan) {
      try {
        moved.add(move(p.name(), p.shard(), p.to()));
      } catch (FerriteException e) {
        failures.add(describe(p) + ": " + e.getMessage());
        progress.accept(describe(p) + ": FAILED: " + e.getMessage());
      }
    }
    sweepRetired(tables);
    return new Report(moved, resolved, failures);
  }

  /**
   * Frees what earlier moves left on their old servers (a mover that died between the commit and
   * its RELEASE, a server that was away then): every retired shard of {@code tables} (every table
   * if empty) that the master places on another server with no move of it pending is released, and
   * every shard of a table the directory no longer has is dropped. Best effort; returns the number
   * of shards whose regions were freed.
   */
  public int sweepRetired(List<String> tables) {
    int freed = 0;
    for (MemberInfo member : client.refreshMembers()) {
      if (member.state() != ServerState.ALIVE) {
        continue;
      }
      int server = member.serverId();
      try {
        Wire.Reader r =
            new Wire.Reader(call(server, KvProtocol.SHARDS, ByteBuffer.allocate(0)), "kv shards");
        int n = r.count("shards", 1 << 24);
        List<long[]> listed = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          long id = r.i64("tableId");
          int shard = r.i32("shard");
          int state = r.u8("state");
          r.i32("count");
          listed.add(new long[] {id, shard, state});
        }
        r.end();
        // The directory is read after the server's list: a shard listed there was opened after its
        // table was created, so a table id the directory no longer has was dropped (ids are random
        // per creation, never reused), not created since.
        Map<Long, TableInfo> byId = new HashMap<>();
        for (TableInfo t : kv.tables()) {
          byId.put(t.tableId(), t);
        }
        Set<String> moving = new HashSet<>();
        for (Move m : pending()) {
          moving.add(m.tableId() + "/" + m.shard());
        }
        for (long[] e : listed) {
          long id = e[0];
          int shard = (int) e[1];
          TableInfo t = byId.get(id);
          if (t == null) {
            if (tables.isEmpty()) {
              call(server, KvProtocol.DROP_SHARD, new Wire.Writer().i64(id).i32(shard).toBuffer());
              progress.accept(
                  "shard "
                      + shard
                      + " of dropped table "
                      + Long.toHexString(id)
                      + ": dropped on server "
                      + server);
              freed++;
            }
          } else if (e[2] == 2
              && (tables.isEmpty() || tables.contains(t.name()))
              && t.servers()[shard] != server
              && !moving.contains(id + "/" + shard)) {
            ByteBuffer a =
                call(
                    server,
                    KvProtocol.RELEASE,
                    new Wire.Writer().i64(id).i32(shard).i32(t.servers()[shard]).toBuffer());
            if (new Wire.Reader(a, "kv release").u8("freed") == 1) {
              progress.accept(
                  t.name() + " shard " + shard + ": regions freed on old server " + server);
              freed++;
            }
          }
        }
      } catch (FerriteException e) {
        progress.accept("server " + server + ": not swept (" + e.getMessage() + ")");
      }
    }
    return freed;
  }

  /**
   * After the commit of {@code m}: the old server frees the retired shard's regions (it keeps
   * answering MOVED). Best effort: a failure leaves them to {@link #sweepRetired}.
   */
  private void release(Move m) {
    try {
      call(m.from(), KvProtocol.RELEASE, ids(m).i32(m.to()).toBuffer());
      progress.accept(describe(m) + ": regions freed on the old server");
    } catch (FerriteException e) {
      progress.accept(
          describe(m)
              + ": the old server did not free the shard's regions yet ("
              + e.getMessage()
              + "); the next rebalance does");
    }
  }

  /**
   * Ends the pending moves of {@code tables} (every table if empty): each completes if its old
   * server retired the shard, else it is cancelled there and aborted.
   */
  public Report resolvePending(List<String> tables) {
    List<Move> resolved = new ArrayList<>();
    List<String> failures = new ArrayList<>();
    for (Move m : pending()) {
      if (tables.isEmpty() || tables.contains(m.name())) {
        try {
          resolve(m);
          resolved.add(m);
        } catch (FerriteException e) {
          failures.add(describe(m) + ": " + e.getMessage());
        }
      }
    }
    return new Report(List.of(), resolved, failures);
  }

  static String describe(Move m) {
    return m.name() + " shard " + m.shard() + " (server " + m.from() + " -> " + m.to() + ")";
  }

  /**
   * Moves shard {@code shard} of {@code table} to server {@code to}, live (the protocol above).
   *
   * @return the move as the directory journaled it
   * @throws FerriteException if it did not happen (the shard serves from where it was), or, after
   *     the old server retired the shard, if the master could not commit it (the intent stays:
   *     {@link #rebalance} completes it)
   */
  public Move move(String table, int shard, int to) {
    ByteBuffer b =
        kv.callMaster(
            table,
            KvProtocol.BEGIN_MOVE,
            new Wire.Writer().str(table).i32(shard).i32(to).toBuffer());
    Wire.Reader r = new Wire.Reader(b, "kv move");
    Move m = Move.read(r);
    r.end();
    progress.accept(describe(m) + ": freezing writes");
    long frozenAt = System.nanoTime();
    long[] copied = new long[1];
    try {
      int pairs =
          new Wire.Reader(
                  call(
                      m.from(),
                      KvProtocol.FREEZE,
                      ids(m).i64(m.token()).i64(LEASE_MILLIS).toBuffer()),
                  "kv freeze")
              .i32("pairs");
      copied[0] = copy(m, pairs);
      call(m.from(), KvProtocol.RETIRE, ids(m).i64(m.token()).i32(m.to()).toBuffer());
    } catch (FerriteException e) {
      cancelOrFinish(m, e); // returns only if the old server did retire the shard
    }
    commit(m);
    release(m);
    progress.accept(
        String.format(
            java.util.Locale.ROOT,
            "%s: %d KiB copied; writes of the shard waited %.1f ms (freeze to commit)",
            describe(m),
            copied[0] >> 10,
            (System.nanoTime() - frozenAt) / 1e6));
    return m;
  }

  /**
   * After a failure before the retire was known to succeed: cancels the move at the old server (or
   * learns that it retired, when the RETIRE's answer was lost), cleans the new server and aborts at
   * the master. Returns if the move must complete; else throws {@code cause}.
   */
  private void cancelOrFinish(Move m, FerriteException cause) {
    boolean retired;
    try {
      retired = cancelAtSource(m);
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.NOT_FOUND) {
        throw new FerriteException(
            cause.code(),
            describe(m)
                + " failed ("
                + cause.getMessage()
                + ") and the old server cannot be reached to cancel it ("
                + e.getMessage()
                + "): the move stays pending; run ferrite kv rebalance again to finish or abort"
                + " it",
            cause);
      }
      retired = false; // the old server restarted without the shard: nothing there to retire
    }
    if (retired) {
      return;
    }
    abort(m);
    throw new FerriteException(
        cause.code(),
        describe(m)
            + " aborted, the shard serves from server "
            + m.from()
            + ": "
            + cause.getMessage(),
        cause);
  }

  private void abort(Move m) {
    try {
      call(m.to(), KvProtocol.DROP_SHARD, ids(m).toBuffer());
    } catch (FerriteException e) {
      // Best effort: a partial copy the new server keeps is never served (the master never named
      // it) and is replaced by the next import there.
    }
    kv.callMaster(
        m.name(),
        KvProtocol.END_MOVE,
        new Wire.Writer().str(m.name()).i32(m.shard()).u8(0).toBuffer());
    progress.accept(describe(m) + ": aborted");
  }

  /**
   * Copies the frozen (or retired) shard at {@code m.from()} into a fresh shard at {@code m.to()};
   * {@code pairs} is for progress only (-1: unknown). Returns the bytes of keys and values copied.
   */
  private long copy(Move m, int pairs) {
    TableInfo info = kv.table(m.name()).info();
    int from = 0;
    int copied = 0;
    int count = 0;
    long bytes = 0;
    boolean first = true;
    while (first || from >= 0) {
      ByteBuffer page =
          call(
              m.from(),
              KvProtocol.EXPORT,
              ids(m).i64(m.token()).i32(from).i32(CHUNK_BYTES).toBuffer());
      Wire.Reader r = new Wire.Reader(page, "kv export");
      int next = r.i32("next");
      int slots = r.i32("slots");
      int n = r.i32("n");
      Wire.Writer w = new Wire.Writer(page.remaining() + 256);
      info.write(w);
      w.i32(m.shard()).u8(first ? 1 : 0).i32(slots).i32(n);
      for (int i = 0; i < n; i++) {
        byte[] k = r.bytes("key");
        byte[] v = r.bytes("value");
        bytes += k.length + v.length;
        w.bytes(k).bytes(v);
      }
      r.end();
      count =
          new Wire.Reader(call(m.to(), KvProtocol.IMPORT, w.toBuffer()), "kv import").i32("count");
      copied += n;
      first = false;
      from = next;
      progress.accept(
          describe(m) + ": copied " + copied + (pairs >= 0 ? "/" + pairs : "") + " pairs");
    }
    if (count != copied) {
      throw new FerriteException(
          ErrorCode.INTERNAL,
          "the new server holds " + count + " pairs after the copy of " + copied);
    }
    return bytes;
  }

  /** Journals the new placement; retried while the master is away (the old shard is retired). */
  private void commit(Move m) {
    long deadline = System.nanoTime() + COMMIT_DEADLINE_NANOS;
    for (int attempt = 0; ; attempt++) {
      try {
        ByteBuffer b =
            kv.callMaster(
                m.name(),
                KvProtocol.END_MOVE,
                new Wire.Writer().str(m.name()).i32(m.shard()).u8(1).toBuffer());
        KvClient.Versioned t = KvClient.readTable(b);
        if (t.table().tableId() == m.tableId() && t.table().servers()[m.shard()] != m.to()) {
          throw new FerriteException(
              ErrorCode.CONFLICT,
              describe(m) + ": the master ended this move otherwise (aborted by another mover)");
        }
        progress.accept(describe(m) + ": moved (placement version " + t.version() + ")");
        return;
      } catch (FerriteException e) {
        if (!e.retryable() || System.nanoTime() - deadline > 0) {
          throw new FerriteException(
              e.code(),
              describe(m)
                  + ": the old server retired the shard but the master did not commit the move ("
                  + e.getMessage()
                  + "); the shard is unavailable until ferrite kv rebalance completes it",
              e);
        }
        LockSupport.parkNanos(Math.min(1_000_000_000L, 10_000_000L << Math.min(attempt, 6)));
      }
    }
  }

  /**
   * Asks the shard's old server to cancel the move {@code m}: true if it had already retired the
   * shard (the move must then complete), false if it cancelled it (the freeze is lifted for good).
   */
  private boolean cancelAtSource(Move m) {
    ByteBuffer answer = call(m.from(), KvProtocol.CANCEL, ids(m).i64(m.token()).toBuffer());
    return new Wire.Reader(answer, "kv cancel").u8("retired") == 1;
  }

  /**
   * Ends a pending move: completes it if the old server retired the shard (re-copying from the
   * retired shard), else cancels it there and aborts it.
   */
  void resolve(Move m) {
    progress.accept(describe(m) + ": pending; resolving");
    boolean retired;
    try {
      retired = cancelAtSource(m);
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.NOT_FOUND) {
        throw e;
      }
      retired = false;
    }
    if (!retired) {
      abort(m);
      return;
    }
    copy(m, -1);
    commit(m);
    release(m);
  }

  private static Wire.Writer ids(Move m) {
    return new Wire.Writer().i64(m.tableId()).i32(m.shard());
  }

  private ByteBuffer call(int server, int opcode, ByteBuffer body) {
    return Futures.join(client.call(server, KvProtocol.SERVER_SERVICE, opcode, body));
  }
}
