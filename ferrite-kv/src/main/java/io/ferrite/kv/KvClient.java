package io.ferrite.kv;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.client.MasterGroups;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The kv face's entry point: creates, finds and drops tables through the master's directory ({@link
 * io.ferrite.kv.master.KvDirectory}) and opens {@link KvTable}s. Thread-safe; it does not own the
 * {@link FerriteClient}, which must outlive it.
 *
 * <p>With several master groups (docs/RESILIENCE.md, "Master groups") a table lives in one group,
 * found by its name as the nodes face's top-level names are ({@link MasterGroups#find}/{@link
 * MasterGroups#place}, kind {@code kv}): every master call about a table goes to its group, and a
 * {@link KvTable} is opened on that group's client ({@link #clientOf}), so its refreshes and
 * failover waits ask the group that holds it.
 */
public final class KvClient {
  private final FerriteClient client;
  private final MasterGroups groups;
  private volatile boolean extentHints = true;

  public KvClient(FerriteClient client) {
    this.client = client;
    this.groups = client.groups();
  }

  /**
   * Whether tables opened from here on read a key's last known extent alone before the table (on by
   * default): one read per out-of-line get instead of two, and a stale guess costs one read (docs/
   * KV.md "Extent hints"). Off, every lookup reads the table: for workloads that rarely read a key
   * twice, and for measuring the table layouts themselves ({@code bench kv}'s reads per lookup).
   */
  public KvClient extentHints(boolean on) {
    extentHints = on;
    return this;
  }

  private KvTable opened(KvTable t) {
    t.extentHints(extentHints);
    return t;
  }

  public FerriteClient ferrite() {
    return client;
  }

  /**
   * Creates table {@code name} (or returns the existing one if its options are the same) and opens
   * every shard on its server.
   *
   * @throws FerriteException CONFLICT if the table exists with other options; NO_SPACE if its
   *     servers have no room for its shards (a table this call created is dropped again, so the
   *     shards already opened give their space back)
   */
  public KvTable createTable(String name, TableOptions options) {
    Wire.Writer w = new Wire.Writer().str(name);
    options.validate().write(w);
    FerriteClient owner = clientOf(name, true);
    boolean existed = exists(name);
    Versioned t =
        readTable(
            Futures.join(
                owner.callMaster(
                    KvProtocol.MASTER_SERVICE, KvProtocol.CREATE_TABLE, w.toBuffer())));
    KvTable table = opened(new KvTable(owner, t.table(), t.version()));
    try {
      table.openAllShards();
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.NO_SPACE && !existed) {
        try {
          dropTable(name);
        } catch (FerriteException dropFailed) {
          if (dropFailed.code() == ErrorCode.PERMISSION_DENIED) {
            // Dropping is the operator's (docs/SECURITY.md): a CLIENT cannot take back the shards
            // that did fit. Say so where the user looks, with what to run.
            throw new FerriteException(
                ErrorCode.NO_SPACE,
                e.detail()
                    + "; table '"
                    + name
                    + "' was created but not all of its shards fit, and only an admin may drop"
                    + " it: run `ferrite kv drop "
                    + name
                    + "` with the cluster's root secret to give its space back",
                e);
          }
          e.addSuppressed(dropFailed);
        }
      }
      throw e;
    }
    return table;
  }

  private boolean exists(String name) {
    try {
      table(name);
      return true;
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.NOT_FOUND) {
        return false;
      }
      throw e;
    }
  }

  /**
   * Opens an existing table.
   *
   * @throws FerriteException NOT_FOUND if there is no such table
   */
  public KvTable table(String name) {
    FerriteClient owner = clientOf(name, false);
    Versioned t =
        readTable(
            Futures.join(
                owner.callMaster(
                    KvProtocol.MASTER_SERVICE,
                    KvProtocol.GET_TABLE,
                    new Wire.Writer().str(name).toBuffer())));
    return opened(new KvTable(owner, t.table(), t.version()));
  }

  /**
   * Every table in the directory: with several master groups, every group's (one LIST_TABLES per
   * group), merged in name order, as each group lists its own.
   *
   * @throws FerriteException UNAVAILABLE if a group's master does not answer
   */
  public List<TableInfo> tables() {
    List<TableInfo> out = new ArrayList<>();
    for (ByteBuffer b : callMasters(KvProtocol.LIST_TABLES, ByteBuffer.allocate(0))) {
      Wire.Reader r = new Wire.Reader(b, "kv table list");
      int n = r.count("tables", 1 << 20);
      for (int i = 0; i < n; i++) {
        out.add(TableInfo.read(r));
      }
      r.end();
    }
    if (groups.count() > 1) {
      out.sort(java.util.Comparator.comparing(TableInfo::name));
    }
    return out;
  }

  /** Drops a table from the directory, then its shards from their servers (best effort). */
  public void dropTable(String name) {
    KvTable table = table(name);
    TableInfo t = table.info();
    FerriteClient client = table.client();
    Futures.join(
        client.callMaster(
            KvProtocol.MASTER_SERVICE,
            KvProtocol.DROP_TABLE,
            new Wire.Writer().str(name).toBuffer()));
    for (int i = 0; i < t.servers().length; i++) {
      int[] copies = new int[1 + t.backupsOf(i).length];
      copies[0] = t.servers()[i];
      for (int j = 1; j < copies.length; j++) {
        copies[j] = TableInfo.copyServer(t.backupsOf(i)[j - 1]);
      }
      for (int server : copies) {
        if (server < 0) { // lost: no copy anywhere
          continue;
        }
        try {
          Futures.join(
              client.call(
                  server,
                  KvProtocol.SERVER_SERVICE,
                  KvProtocol.DROP_SHARD,
                  new Wire.Writer().i64(t.tableId()).i32(i).toBuffer()));
        } catch (FerriteException e) {
          if (e.code() != ErrorCode.NOT_FOUND && !e.retryable()) {
            throw e;
          }
        }
      }
    }
  }

  /** A server's kv log size before and after a compaction. */
  public record LogSizes(int server, long before, long after) {}

  /**
   * Compacts the kv operation log of memory server {@code server} now (docs/KV.md "Compaction"): it
   * is rewritten as a snapshot of the durable shards there. The server's requests wait meanwhile.
   */
  public LogSizes compactLog(int server) {
    Wire.Reader r =
        new Wire.Reader(
            Futures.join(
                client.call(
                    server,
                    KvProtocol.SERVER_SERVICE,
                    KvProtocol.COMPACT_LOG,
                    ByteBuffer.allocate(0))),
            "kv compact-log answer");
    LogSizes s = new LogSizes(server, r.i64("before"), r.i64("after"));
    r.end();
    return s;
  }

  /** Calls group 0's master (every group's master with one group): a call that names no table. */
  ByteBuffer callMaster(int opcode, ByteBuffer body) {
    return Futures.join(client.callMaster(KvProtocol.MASTER_SERVICE, opcode, body));
  }

  /** Calls the master of the group that holds {@code table} (group 0 for a table never placed). */
  ByteBuffer callMaster(String table, int opcode, ByteBuffer body) {
    return Futures.join(clientOf(table, false).callMaster(KvProtocol.MASTER_SERVICE, opcode, body));
  }

  /** Calls every group's master, in group order (one call with one group). */
  List<ByteBuffer> callMasters(int opcode, ByteBuffer body) {
    List<ByteBuffer> out = new ArrayList<>(groups.count());
    for (int g = 0; g < groups.count(); g++) {
      out.add(
          Futures.join(
              groups.client(g).callMaster(KvProtocol.MASTER_SERVICE, opcode, body.duplicate())));
    }
    return out;
  }

  /**
   * The client of the master group that holds table {@code name}: the one place a kv call picks its
   * master. {@code place}: a create, which places a new name first (in group 0's placement
   * directory, by the rule of docs/RESILIENCE.md "Master groups"); otherwise a name never placed is
   * group 0's (made before the cluster had groups, or nowhere: group 0 then answers NOT_FOUND).
   * With one group it asks nothing.
   */
  FerriteClient clientOf(String name, boolean place) {
    return groups.clientOf(io.ferrite.kernel.proto.PlacementProtocol.KV, name, place);
  }

  /** A table with the directory's placement version. */
  record Versioned(TableInfo table, long version) {}

  static Versioned readTable(ByteBuffer b) {
    Wire.Reader r = new Wire.Reader(b, "kv table");
    TableInfo t = TableInfo.read(r);
    long version = r.i64("version");
    r.end();
    return new Versioned(t, version);
  }
}
