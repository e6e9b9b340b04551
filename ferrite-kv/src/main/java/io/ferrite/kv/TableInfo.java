package io.ferrite.kv;

import io.ferrite.kernel.proto.Wire;

/**
 * A table as the directory knows it: its name, a unique id (a table dropped and created again gets
 * a new one), its options, the memory server of each shard (its primary: the copy clients read and
 * write first) and, for a replicated table ({@link TableOptions#replicas} above 1), the servers of
 * each shard's backups (fewer than {@code replicas - 1} while a lost copy is being replaced).
 */
public record TableInfo(
    String name, long tableId, TableOptions options, int[] servers, int[][] backups) {
  private static final int[] NONE = new int[0];

  /**
   * The server of a shard that was lost: its only copy was in DRAM on a server that came back
   * without it (a restart of a {@code none} table's server). Reads and writes of it answer {@code
   * DATA_LOST}; dropping the table works.
   */
  public static final int LOST = -1;

  /**
   * The server entry of a durable table's shard lost with server {@code server}'s kv log: its only
   * copy was there, and the server came back without its log (docs/KV.md "Lost shards"). As {@link
   * #LOST}, naming the server; encoded as {@link #syncing} is, {@code -2 - server}.
   */
  public static int lostOn(int server) {
    return -2 - server;
  }

  /** Whether shard {@code shard} was lost ({@link #LOST} or {@link #lostOn}). */
  public boolean lost(int shard) {
    return servers[shard] < 0;
  }

  /** The server a lost shard's only copy was on ({@link #lostOn}), or -1 if not known. */
  public int lostFrom(int shard) {
    return servers[shard] <= -2 ? -2 - servers[shard] : -1;
  }

  /** A table with no backups. */
  public TableInfo(String name, long tableId, TableOptions options, int[] servers) {
    this(name, tableId, options, servers, noBackups(servers.length));
  }

  /** Per shard, an empty list of backups. */
  public static int[][] noBackups(int shards) {
    int[][] out = new int[shards][];
    java.util.Arrays.fill(out, NONE);
    return out;
  }

  /**
   * The backups of shard {@code shard} (empty for a table with one copy): server ids, or {@link
   * #syncing} entries for a copy being filled (decode with {@link #copyServer}).
   */
  public int[] backupsOf(int shard) {
    return backups[shard];
  }

  /**
   * A backup entry for server {@code server} whose copy is still being filled by a repair
   * (docs/KV.md "Replication"): writes are shipped to it, but it is never promoted.
   */
  public static int syncing(int server) {
    return -2 - server;
  }

  /** Whether backup entry {@code entry} is a copy still being filled. */
  public static boolean isSyncing(int entry) {
    return entry <= -2;
  }

  /** The server of backup entry {@code entry}, full or syncing. */
  public static int copyServer(int entry) {
    return entry <= -2 ? -2 - entry : entry;
  }

  /** The complete copies shard {@code shard} has now: its primary and its full backups. */
  public int copies(int shard) {
    int n = servers[shard] < 0 ? 0 : 1;
    for (int b : backups[shard]) {
      n += isSyncing(b) ? 0 : 1;
    }
    return n;
  }

  /**
   * {@code table = str name, i64 tableId, options, shards x i32 server} and, only when {@code
   * options.replicas > 1} (so tables and logs written before replication read the same), {@code
   * shards x (u8 n, n x i32 backup)}.
   */
  public void write(Wire.Writer w) {
    w.str(name).i64(tableId);
    options.write(w);
    for (int s : servers) {
      w.i32(s);
    }
    if (options.replicas() > 1) {
      for (int[] b : backups) {
        w.u8(b.length);
        for (int s : b) {
          w.i32(s);
        }
      }
    }
  }

  public static TableInfo read(Wire.Reader r) {
    String name = r.str("name");
    long id = r.i64("tableId");
    TableOptions o = TableOptions.read(r);
    int[] servers = new int[o.shards()];
    for (int i = 0; i < servers.length; i++) {
      servers[i] = r.i32("server");
    }
    int[][] backups = noBackups(servers.length);
    if (o.replicas() > 1) {
      for (int i = 0; i < servers.length; i++) {
        int n = r.u8("backups");
        if (n >= o.replicas()) {
          throw new io.ferrite.fabric.FerriteException(
              io.ferrite.fabric.ErrorCode.INVALID_ARGUMENT,
              "backups of shard " + i + ": " + n + " (expected: < replicas " + o.replicas() + ")");
        }
        backups[i] = new int[n];
        for (int j = 0; j < n; j++) {
          backups[i][j] = r.i32("backup");
        }
      }
    }
    return new TableInfo(name, id, o, servers, backups);
  }

  public byte[] toBytes() {
    Wire.Writer w = new Wire.Writer();
    write(w);
    return w.toArray();
  }
}
