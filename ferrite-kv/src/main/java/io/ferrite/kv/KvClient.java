package io.ferrite.kv;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The kv face's entry point: creates, finds and drops tables through the master's directory ({@link
 * io.ferrite.kv.master.KvDirectory}) and opens {@link KvTable}s. Thread-safe; it does not own the
 * {@link FerriteClient}, which must outlive it.
 */
public final class KvClient {
  private final FerriteClient client;
  private volatile boolean extentHints = true;

  public KvClient(FerriteClient client) {
    this.client = client;
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
    boolean existed = exists(name);
    Versioned t = readTable(callMaster(KvProtocol.CREATE_TABLE, w.toBuffer()));
    KvTable table = opened(new KvTable(client, t.table(), t.version()));
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
    Versioned t =
        readTable(callMaster(KvProtocol.GET_TABLE, new Wire.Writer().str(name).toBuffer()));
    return opened(new KvTable(client, t.table(), t.version()));
  }

  /** Every table in the directory. */
  public List<TableInfo> tables() {
    ByteBuffer b = callMaster(KvProtocol.LIST_TABLES, ByteBuffer.allocate(0));
    Wire.Reader r = new Wire.Reader(b, "kv table list");
    int n = r.count("tables", 1 << 20);
    List<TableInfo> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(TableInfo.read(r));
    }
    r.end();
    return out;
  }

  /** Drops a table from the directory, then its shards from their servers (best effort). */
  public void dropTable(String name) {
    TableInfo t = table(name).info();
    callMaster(KvProtocol.DROP_TABLE, new Wire.Writer().str(name).toBuffer());
    for (int i = 0; i < t.servers().length; i++) {
      int[] copies = new int[1 + t.backupsOf(i).length];
      copies[0] = t.servers()[i];
      for (int j = 1; j < copies.length; j++) {
        copies[j] = TableInfo.copyServer(t.backupsOf(i)[j - 1]);
      }
      for (int server : copies) {
        if (server == TableInfo.LOST) {
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

  ByteBuffer callMaster(int opcode, ByteBuffer body) {
    return Futures.join(client.callMaster(KvProtocol.MASTER_SERVICE, opcode, body));
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
