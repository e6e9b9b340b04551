package io.ferrite.ycsb;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Role;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.ClusterLocator;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import io.ferrite.tree.Tree;
import io.ferrite.tree.TreeClient;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * YCSB binding of the kv face ({@code -db io.ferrite.ycsb.FerriteKvDb}). A record (a map of fields)
 * is one value: {@code u32 n, n x (u16 name length, name, u32 value length, value)}. read is one
 * one-sided get; insert a put; update a get, merge and compare-and-set (retried), as YCSB's update
 * changes only the fields it names; delete a delete; scan answers NOT_IMPLEMENTED on the kv face.
 *
 * <p>With {@code -p ferrite.face=tree} the same binding serves the tree face ({@code
 * io.ferrite.tree}, sorted keys, Cell) and so workload E: read is a get by {@code
 * ferrite.tree.path} ({@code auto}, the default: the locality selector picks per search; {@code
 * server}: one RPC per server on the way; {@code client}: one-sided reads of the nodes), insert and
 * update a put, delete a delete, scan YCSB's {@code (startkey, recordcount)} a tree scan from
 * {@code startkey} (inclusive) to the end with limit {@code recordcount}, in key order, by the same
 * path. The tree has no compare-and-set: update is a get, a merge and a put, so two threads
 * updating other fields of one record at once can lose one's fields (YCSB checks no values). One
 * binding class, not two, because {@code ferrite ycsb} and {@link YcsbProperties} accept exactly
 * this {@code db}; the face is a property like the table's layout.
 *
 * <p>Properties: {@code ferrite.cluster.file} (default: {@code ~/.ferrite/cluster}), or {@code
 * ferrite.cluster} + {@code ferrite.secret.file} + {@code ferrite.cluster.id}; {@code
 * ferrite.table} (default: the workload's table; the tree's name with the tree face); {@code
 * ferrite.face} (kv, the default, or tree); {@code ferrite.fabric} (auto, shm, tcp); {@code
 * ferrite.layout} (hopscotch, the default, or pilaf), {@code ferrite.inline} (hopscotch: key plus
 * value bytes kept inline), {@code ferrite.shards}, {@code ferrite.slots}, {@code ferrite.replicas}
 * (copies per shard, 1 to 3) for a table this binding creates. {@code ferrite.metrics.port} (-1:
 * off, the default; 0: any port) serves the client's meters at {@code /metrics} while the run lasts
 * ({@code ferrite.metrics.host}, default loopback).
 *
 * <p>YCSB makes one DB per client thread; they share one {@link FerriteClient} per process (a
 * reference-counted holder: YCSB gives the binding no other place to keep it).
 */
public final class FerriteKvDb extends DB {
  private static final Object LOCK = new Object();
  private static FerriteClient shared;
  private static int users;

  private KvTable table;

  /** With {@code ferrite.face=tree}: the tree instead of {@link #table}, and the read path. */
  private Tree tree;

  private Tree.Path path = Tree.Path.AUTO;

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    try {
      synchronized (LOCK) {
        if (shared == null) {
          shared = connect(p);
        }
        users++;
      }
      String name = p.getProperty("ferrite.table", p.getProperty("table", "usertable"));
      String face = p.getProperty("ferrite.face", "kv");
      if (face.equals("tree")) {
        path =
            Tree.Path.valueOf(
                p.getProperty("ferrite.tree.path", "auto").toUpperCase(java.util.Locale.ROOT));
        tree = new TreeClient(shared).create(name);
        return;
      }
      if (!face.equals("kv")) {
        throw new IllegalArgumentException("ferrite.face: '" + face + "' (expected: kv or tree)");
      }
      KvClient kv = new KvClient(shared);
      try {
        table = kv.table(name);
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.NOT_FOUND) {
          throw e;
        }
        table =
            kv.createTable(
                name,
                TableOptions.DEFAULTS
                    .withLayout(
                        TableOptions.Layout.valueOf(
                            p.getProperty("ferrite.layout", "hopscotch")
                                .toUpperCase(java.util.Locale.ROOT)))
                    .withInlineBytes(
                        Integer.parseInt(
                            p.getProperty(
                                "ferrite.inline", Integer.toString(TableOptions.DEFAULT_INLINE))))
                    .withShards(Integer.parseInt(p.getProperty("ferrite.shards", "8")))
                    .withSlotsPerShard(Integer.parseInt(p.getProperty("ferrite.slots", "65536")))
                    .withReplicas(Integer.parseInt(p.getProperty("ferrite.replicas", "1"))));
      }
    } catch (FerriteException | IllegalArgumentException e) {
      throw new DBException("ferrite: " + e.getMessage(), e);
    }
  }

  private static FerriteClient connect(Properties p) {
    ClusterLocator.Location l =
        ClusterLocator.locate(
            new ClusterLocator.Given(
                ClusterLocator.first(p.getProperty("ferrite.cluster")),
                ClusterLocator.first(p.getProperty("ferrite.cluster.id")),
                path(p, "ferrite.secret.file"),
                path(p, "ferrite.cluster.file"),
                path(p, "ferrite.tls.trust"),
                "-p ferrite.cluster",
                "-p ferrite.secret.file",
                "-p ferrite.cluster.file"),
            System.getenv());
    Credentials creds = l.credentials(Role.CLIENT);
    ClientOptions.Builder options =
        ClientOptions.builder(creds)
            .fabric(p.getProperty("ferrite.fabric", "auto"))
            .fabrics(l.fabrics(FerriteConfig.load(null, System.getenv(), Map.of())))
            .clientName("ycsb");
    int metricsPort = Integer.parseInt(p.getProperty("ferrite.metrics.port", "-1"));
    if (metricsPort >= 0) {
      // The run's client meters (fabric ops, kv gets and puts) at /metrics while it runs.
      metrics =
          new io.ferrite.kernel.ops.Metrics(
              java.util.List.of(io.micrometer.core.instrument.Tag.of("process", "client")));
      ops =
          io.ferrite.kernel.ops.OpsServer.start(
              p.getProperty("ferrite.metrics.host", "127.0.0.1"),
              metricsPort,
              metrics,
              creds,
              "ycsb");
      options.metrics(metrics.registry());
    }
    return Ferrite.connect(l.master(), options.build());
  }

  /** The path property {@code key} names, or null when it is unset or blank. */
  private static Path path(Properties p, String key) {
    String v = ClusterLocator.first(p.getProperty(key));
    return v == null ? null : Path.of(v);
  }

  /** With {@code ferrite.metrics.port >= 0}: the shared client's meters and their endpoint. */
  private static io.ferrite.kernel.ops.Metrics metrics;

  private static io.ferrite.kernel.ops.OpsServer ops;

  @Override
  public void cleanup() {
    synchronized (LOCK) {
      if (--users == 0 && shared != null) {
        shared.close();
        shared = null;
        if (ops != null) {
          ops.close();
          metrics.close();
          ops = null;
          metrics = null;
        }
      }
    }
  }

  static byte[] key(String k) {
    return k.getBytes(StandardCharsets.UTF_8);
  }

  static byte[] encode(Map<String, byte[]> fields) {
    int size = 4;
    for (Map.Entry<String, byte[]> e : fields.entrySet()) {
      size += 2 + e.getKey().getBytes(StandardCharsets.UTF_8).length + 4 + e.getValue().length;
    }
    ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(fields.size());
    for (Map.Entry<String, byte[]> e : fields.entrySet()) {
      byte[] n = e.getKey().getBytes(StandardCharsets.UTF_8);
      b.putShort((short) n.length).put(n).putInt(e.getValue().length).put(e.getValue());
    }
    return b.array();
  }

  static Map<String, byte[]> decode(byte[] record) {
    ByteBuffer b = ByteBuffer.wrap(record).order(ByteOrder.LITTLE_ENDIAN);
    int n = b.getInt();
    Map<String, byte[]> out = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      byte[] name = new byte[b.getShort() & 0xFFFF];
      b.get(name);
      byte[] v = new byte[b.getInt()];
      b.get(v);
      out.put(new String(name, StandardCharsets.UTF_8), v);
    }
    return out;
  }

  private static Map<String, byte[]> bytes(Map<String, ByteIterator> values) {
    Map<String, byte[]> out = new LinkedHashMap<>();
    for (Map.Entry<String, ByteIterator> e : values.entrySet()) {
      out.put(e.getKey(), e.getValue().toArray());
    }
    return out;
  }

  @Override
  public Status read(String t, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      byte[] v = tree != null ? tree.get(key(key), path) : table.get(key(key));
      if (v == null) {
        return Status.NOT_FOUND;
      }
      for (Map.Entry<String, byte[]> e : decode(v).entrySet()) {
        if (fields == null || fields.contains(e.getKey())) {
          result.put(e.getKey(), new ByteArrayByteIterator(e.getValue()));
        }
      }
      return Status.OK;
    } catch (FerriteException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status scan(
      String t,
      String startkey,
      int recordcount,
      Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    if (tree == null) {
      return Status.NOT_IMPLEMENTED;
    }
    try {
      for (Map.Entry<byte[], byte[]> pair : tree.scan(key(startkey), null, recordcount, path)) {
        HashMap<String, ByteIterator> record = new HashMap<>();
        for (Map.Entry<String, byte[]> e : decode(pair.getValue()).entrySet()) {
          if (fields == null || fields.contains(e.getKey())) {
            record.put(e.getKey(), new ByteArrayByteIterator(e.getValue()));
          }
        }
        result.add(record);
      }
      return Status.OK;
    } catch (FerriteException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status update(String t, String key, Map<String, ByteIterator> values) {
    try {
      Map<String, byte[]> changes = bytes(values);
      if (tree != null) {
        // No compare-and-set on the tree: get, merge, put (see the class comment).
        byte[] cur = tree.get(key(key), path);
        if (cur == null) {
          return Status.NOT_FOUND;
        }
        Map<String, byte[]> merged = decode(cur);
        merged.putAll(changes);
        tree.put(key(key), encode(merged));
        return Status.OK;
      }
      for (int attempt = 0; attempt < 100; attempt++) {
        byte[] cur = table.get(key(key));
        if (cur == null) {
          return Status.NOT_FOUND;
        }
        Map<String, byte[]> merged = decode(cur);
        merged.putAll(changes);
        if (table.compareAndSet(key(key), cur, encode(merged))) {
          return Status.OK;
        }
      }
      return Status.ERROR;
    } catch (FerriteException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status insert(String t, String key, Map<String, ByteIterator> values) {
    try {
      if (tree != null) {
        tree.put(key(key), encode(bytes(values)));
      } else {
        table.put(key(key), encode(bytes(values)));
      }
      return Status.OK;
    } catch (FerriteException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status delete(String t, String key) {
    try {
      boolean deleted = tree != null ? tree.delete(key(key)) : table.delete(key(key));
      return deleted ? Status.OK : Status.NOT_FOUND;
    } catch (FerriteException e) {
      return Status.ERROR;
    }
  }
}
