package io.ferrite.kv;

import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * Gives replicated shards their copies back (docs/KV.md "Replication"): after a failover or a lost
 * copy a shard has fewer complete copies than its table's {@code replicas}; for each, the master
 * names a new server ({@code ADD_COPY}: a copy being filled, to which writers ship from then on),
 * the shard's pairs are copied from its primary page by page ({@code COPY_PAGE}, which first fences
 * out writers whose placement does not name the new copy) into the new copy with their sequences
 * ({@code REPLICATE}, so a pair copied late never undoes a newer write shipped there), and the
 * master makes it a full backup ({@code END_COPY}).
 *
 * <p>The copier is never a memory server (servers never call servers). The master's kv directory
 * runs it in the background over its own connections to the servers ({@code KvRepairs}: automatic,
 * after every failover or lost copy); {@code ferrite kv rebalance} and any admin process can run it
 * as a client too ({@link #KvReplicator(KvClient, Consumer)}). Both go through a {@link Cluster}.
 */
public final class KvReplicator {
  /** Bytes of pairs per COPY_PAGE. */
  static final int PAGE_BYTES = 1 << 20;

  /**
   * What a copy needs of the cluster: the directory's {@code ADD_COPY} and {@code END_COPY}, and
   * calls to the servers' kv service (with at least the SERVER role: {@code COPY_PAGE} is
   * server-only). A client implements them with RPCs; the master's directory directly.
   */
  public interface Cluster {
    /** {@code ADD_COPY}: a copy being filled of {@code shard}; the table after it, and where. */
    AddedCopy addCopy(String name, int shard);

    /** {@code END_COPY}: the copy on {@code server} made a full backup (commit) or dropped. */
    TableInfo endCopy(String name, int shard, int server, boolean commit);

    /** Calls {@code opcode} of the kv service of memory server {@code server}. */
    CompletableFuture<ByteBuffer> call(int server, int opcode, ByteBuffer body);
  }

  /** What {@code ADD_COPY} answers: the table with the copy, its placement version, its server. */
  public record AddedCopy(TableInfo table, long version, int server) {}

  private final KvClient kv;
  private final Cluster cluster;
  private final Consumer<String> progress;

  /** A client's replicator (the operator's credentials). */
  public KvReplicator(KvClient kv, Consumer<String> progress) {
    this.kv = kv;
    FerriteClient client = kv.ferrite();
    this.cluster =
        new Cluster() {
          @Override
          public AddedCopy addCopy(String name, int shard) {
            Wire.Reader r =
                new Wire.Reader(
                    kv.callMaster(
                        name,
                        KvProtocol.ADD_COPY,
                        new Wire.Writer().str(name).i32(shard).toBuffer()),
                    "kv add-copy answer");
            TableInfo t = TableInfo.read(r);
            long version = r.i64("version");
            int target = r.i32("server");
            r.end();
            return new AddedCopy(t, version, target);
          }

          @Override
          public TableInfo endCopy(String name, int shard, int server, boolean commit) {
            return KvClient.readTable(
                    kv.callMaster(
                        name,
                        KvProtocol.END_COPY,
                        new Wire.Writer()
                            .str(name)
                            .i32(shard)
                            .i32(server)
                            .u8(commit ? 1 : 0)
                            .toBuffer()))
                .table();
          }

          @Override
          public CompletableFuture<ByteBuffer> call(int server, int opcode, ByteBuffer body) {
            return client.call(server, KvProtocol.SERVER_SERVICE, opcode, body);
          }
        };
    this.progress = progress;
  }

  /** A replicator over {@code cluster} (the master's directory: {@link #copy} only). */
  public KvReplicator(Cluster cluster, Consumer<String> progress) {
    this.kv = null;
    this.cluster = cluster;
    this.progress = progress;
  }

  /**
   * Repairs the named replicated tables (every one if {@code names} is empty): each shard with
   * fewer complete copies than its table's replicas gets new ones, while the table serves. A copy
   * left half-filled by a repair that died is dropped and made again. Returns the copies made.
   */
  public int repair(List<String> names) {
    if (kv == null) {
      throw new IllegalStateException("repair(names) needs a client's replicator");
    }
    int made = 0;
    for (TableInfo t : kv.tables()) {
      if (t.options().replicas() < 2 || !(names.isEmpty() || names.contains(t.name()))) {
        continue;
      }
      for (int shard = 0; shard < t.options().shards(); shard++) {
        TableInfo now = t;
        for (int b : now.backupsOf(shard)) {
          if (TableInfo.isSyncing(b)) {
            now = endCopy(now.name(), shard, TableInfo.copyServer(b), false);
          }
        }
        while (!now.lost(shard) && now.copies(shard) < now.options().replicas()) {
          copy(now.name(), shard);
          made++;
          now = kv.table(now.name()).info();
        }
      }
    }
    return made;
  }

  /** Makes one new copy of {@code shard} of table {@code name}; returns the server it is on. */
  public int copy(String name, int shard) {
    AddedCopy added = cluster.addCopy(name, shard);
    TableInfo t = added.table();
    long version = added.version();
    int target = added.server();
    int primary = KvTable.primary(t, shard);
    try {
      // A copy the target may still hold from before (it was a copy, was declared DEAD and came
      // back as the same process) has keys deleted since: drop it before the first page. Writes
      // shipped to it since ADD_COPY were applied at the primary before that page, so the copy
      // gets them again; later ones land in the new shard.
      try {
        call(
            target,
            KvProtocol.DROP_SHARD,
            new Wire.Writer().i64(t.tableId()).i32(shard).toBuffer());
      } catch (FerriteException e) {
        if (e.code() != io.ferrite.fabric.ErrorCode.NOT_FOUND) {
          throw e;
        }
      }
      Wire.Writer open = new Wire.Writer();
      t.write(open);
      // OPEN_COPY: the copy's fence is the repair's placement version, so a client whose placement
      // still names the target as it was before its death (a primary, say) never reads it.
      call(target, KvProtocol.OPEN_COPY, open.i32(shard).i64(version).toBuffer());
      long afterHash = 0;
      byte[] afterKey = new byte[0];
      long pairs = 0;
      for (boolean more = true; more; ) {
        Wire.Reader page =
            new Wire.Reader(
                call(
                    primary,
                    KvProtocol.COPY_PAGE,
                    new Wire.Writer()
                        .i64(t.tableId())
                        .i32(shard)
                        .i64(version)
                        .i64(afterHash)
                        .bytes(afterKey)
                        .i32(PAGE_BYTES)
                        .toBuffer()),
                "kv copy page");
        more = page.u8("more") == 1;
        int n = page.count("pairs", 1 << 24);
        List<CompletableFuture<ByteBuffer>> sent = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          byte[] key = page.bytes("key");
          byte[] value = page.bytes("value");
          long seq = page.i64("seq");
          sent.add(
              cluster.call(
                  target,
                  KvProtocol.REPLICATE,
                  new Wire.Writer(37 + key.length + value.length)
                      .i64(t.tableId())
                      .i32(shard)
                      .i64(seq)
                      .u8(0)
                      .bytes(key)
                      .bytes(value)
                      .i64(version) // the fence OPEN_COPY set on the target
                      .toBuffer()));
          afterHash = KeyHash.of(key);
          afterKey = key;
        }
        page.end();
        for (CompletableFuture<ByteBuffer> f : sent) {
          Futures.join(f);
        }
        pairs += n;
      }
      endCopy(name, shard, target, true);
      progress.accept(
          "shard "
              + shard
              + " of "
              + name
              + ": new copy on server "
              + target
              + ", "
              + pairs
              + " pairs copied from server "
              + primary);
      return target;
    } catch (FerriteException e) {
      try {
        endCopy(name, shard, target, false);
      } catch (FerriteException abort) {
        e.addSuppressed(abort);
      }
      throw e;
    }
  }

  private TableInfo endCopy(String name, int shard, int server, boolean commit) {
    return cluster.endCopy(name, shard, server, commit);
  }

  private ByteBuffer call(int server, int opcode, ByteBuffer body) {
    return Futures.join(cluster.call(server, opcode, body));
  }
}
