package io.ferrite.kv;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;

/**
 * One kv table, as a client sees it. Thread-safe; share one per table.
 *
 * <h2>Reads are one-sided (Pilaf §3.2–3.3, FaRM §3.5–3.6)</h2>
 *
 * {@link #get}, {@link #contains} and {@link #multiGet} never call the server: they read the
 * shard's table and extents with one-sided reads and verify what they read, the way the table's
 * {@link TableOptions.Layout} prescribes (a {@link LayoutReader}: Pilaf's cuckoo entries and
 * self-verifying pointers, or FaRM's versioned hopscotch buckets read two at a time). A torn copy
 * (a read racing the server's write) fails its verification and the lookup starts again after a
 * short backoff; a copy of an array a resize replaced, a pointer into an extent region the client
 * does not know yet, or an error naming a region, makes the client fetch the layout again (the
 * layout epoch moved).
 *
 * <h2>Writes go to the owning server by RPC</h2>
 *
 * {@link #put}, {@link #putIfAbsent}, {@link #compareAndSet}, {@link #delete} and {@link #resize}
 * are one RPC to the shard's server; they are not retried blindly (a lost answer does not mean the
 * put did not happen). Every operation is linearizable per key.
 */
public final class KvTable {
  /** How long a lookup keeps retrying torn copies before it gives up with CONFLICT. */
  static final long LOOKUP_DEADLINE_NANOS = 10_000_000_000L;

  private static final Object TORN = LayoutReader.TORN;
  private static final Object STALE = LayoutReader.STALE;
  private static final Object MISS = LayoutReader.MISS;

  private final FerriteClient client;
  private final TableInfo info;
  private final AtomicReferenceArray<ShardLayout> layouts;
  private final AtomicReferenceArray<FabricConnection> connections;
  private final LookupStats stats = new LookupStats();
  private final LayoutReader reader;

  KvTable(FerriteClient client, TableInfo info) {
    this.client = client;
    this.info = info;
    this.layouts = new AtomicReferenceArray<>(info.options().shards());
    this.connections = new AtomicReferenceArray<>(info.options().shards());
    this.reader = LayoutReader.of(this, stats);
  }

  FerriteClient client() {
    return client;
  }

  public TableInfo info() {
    return info;
  }

  public String name() {
    return info.name();
  }

  /** Client-side lookup counts of this handle. */
  public LookupStats lookupStats() {
    return stats;
  }

  /** The shard of {@code key}. */
  public int shardOf(byte[] key) {
    return KeyHash.shard(KeyHash.of(key), info.options().shards());
  }

  /** The memory server of shard {@code shard}. */
  public int serverOf(int shard) {
    return info.servers()[shard];
  }

  // ------------------------------------------------------------------ argument checks

  private void checkKey(byte[] key) {
    if (key == null) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "key: null (expected: 1 or more bytes)");
    }
    int max = info.options().maxKey();
    if (key.length == 0 || key.length > max) {
      throw new FerriteException(
          key.length == 0 ? ErrorCode.INVALID_ARGUMENT : ErrorCode.TOO_LARGE,
          "key of " + key.length + " B (expected: >= 1 and <= " + max + " B)");
    }
  }

  private void checkValue(byte[] value) {
    if (value == null) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "value: null (expected: 0 or more bytes)");
    }
    int max = info.options().maxValue();
    if (value.length > max) {
      throw new FerriteException(
          ErrorCode.TOO_LARGE, "value of " + value.length + " B (expected: <= " + max + " B)");
    }
  }

  // ------------------------------------------------------------------ layouts

  void openAllShards() {
    for (int i = 0; i < info.options().shards(); i++) {
      layouts.set(i, open(i));
    }
  }

  private ShardLayout open(int shard) {
    Wire.Writer w = new Wire.Writer();
    info.write(w);
    w.i32(shard);
    return readLayout(shard, rpc(shard, KvProtocol.OPEN_SHARD, w.toBuffer()));
  }

  private ShardLayout readLayout(int shard, ByteBuffer b) {
    Wire.Reader r = new Wire.Reader(b, "kv layout");
    ShardLayout l = ShardLayout.read(r, serverOf(shard));
    r.end();
    return l;
  }

  /**
   * The cached layout of {@code shard}, fetched (or the shard opened) if absent. Public for
   * benchmarks, which read the same regions raw as the ceiling of a get.
   */
  public ShardLayout layout(int shard) {
    ShardLayout l = layouts.get(shard);
    if (l == null) {
      stats.layoutFetches.increment();
      try {
        l = readLayout(shard, rpc(shard, KvProtocol.LAYOUT, ids(shard).toBuffer()));
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.NOT_FOUND) {
          throw e;
        }
        // The server restarted (its DRAM shards are gone) or never opened this shard.
        l = open(shard);
      }
      layouts.set(shard, l);
    }
    return l;
  }

  private void invalidate(int shard, ShardLayout seen) {
    layouts.compareAndSet(shard, seen, null);
  }

  private Wire.Writer ids(int shard) {
    return new Wire.Writer().i64(info.tableId()).i32(shard);
  }

  private ByteBuffer rpc(int shard, int opcode, ByteBuffer body) {
    return Futures.join(client.call(serverOf(shard), KvProtocol.SERVER_SERVICE, opcode, body));
  }

  // ------------------------------------------------------------------ one-sided reads

  /** The value of {@code key}, or null. One-sided reads only. */
  public byte[] get(byte[] key) {
    checkKey(key);
    Object r = lookup(key);
    return r == MISS ? null : (byte[]) r;
  }

  /** Whether {@code key} is present. One-sided reads only. */
  public boolean contains(byte[] key) {
    return get(key) != null;
  }

  /** The connection to {@code shard}'s server, cached per shard (one map lookup saved per get). */
  private FabricConnection connection(int shard, ShardLayout l) {
    FabricConnection c = connections.get(shard);
    if (c == null || !c.isOpen()) {
      c = client.connection(l.entries().serverId());
      connections.set(shard, c);
    }
    return c;
  }

  private Object lookup(byte[] key) {
    long h = KeyHash.of(key);
    int shard = KeyHash.shard(h, info.options().shards());
    long deadline = 0; // set at the first failed attempt: the common get never reads the clock
    for (int attempt = 0; ; attempt++) {
      ShardLayout l = layout(shard);
      Object r;
      try {
        r = reader.probe(connection(shard, l), l, key, h);
      } catch (FerriteException e) {
        if (e.code() == ErrorCode.NO_SUCH_REGION
            || e.code() == ErrorCode.BAD_RKEY
            || e.code() == ErrorCode.OUT_OF_BOUNDS) {
          r = STALE;
        } else if (e.retryable() && (deadline == 0 || System.nanoTime() < deadline)) {
          r = TORN;
        } else {
          throw e;
        }
      }
      if (r != STALE && r != TORN) {
        return r;
      }
      if (deadline == 0) {
        deadline = System.nanoTime() + LOOKUP_DEADLINE_NANOS;
      }
      if (r == STALE) {
        invalidate(shard, l);
      } else {
        stats.tornRetries.increment();
      }
      if (System.nanoTime() > deadline) {
        throw new FerriteException(
            ErrorCode.CONFLICT,
            "lookup in shard "
                + shard
                + " of table "
                + info.name()
                + " saw torn or stale copies for "
                + attempt
                + " attempts (a writer that never finishes?)");
      }
      backoff(attempt);
    }
  }

  private static void backoff(int attempt) {
    if (attempt < 4) {
      Thread.onSpinWait();
    } else {
      LockSupport.parkNanos(Math.min(1_000_000L, 1_000L << Math.min(attempt - 4, 10)));
    }
  }

  /**
   * The values of {@code keys} (null where absent), in order. The layout reads every key's first
   * candidates in rounds of one batch per server (one flush per connection per round: for the
   * hopscotch layout one round settles every inline pair and every miss); keys whose copies were
   * torn or stale, or that need more than the batched rounds, finish through {@link #get}. Each key
   * is linearizable on its own; the call is not atomic across keys.
   */
  public List<byte[]> multiGet(List<byte[]> keys) {
    int n = keys.size();
    byte[][] out = new byte[n][];
    boolean[] done = new boolean[n];
    long[] hs = new long[n];
    ShardLayout[] ls = new ShardLayout[n];
    int shards = info.options().shards();
    for (int i = 0; i < n; i++) {
      byte[] key = keys.get(i);
      checkKey(key);
      hs[i] = KeyHash.of(key);
      ls[i] = layout(KeyHash.shard(hs[i], shards));
    }
    reader.multiGet(keys, hs, ls, out, done);
    for (int i = 0; i < n; i++) {
      if (!done[i]) {
        out[i] = get(keys.get(i));
      }
    }
    return Arrays.asList(out);
  }

  /** The value of {@code key} read by the server (one RPC): the baseline one-sided gets beat. */
  public byte[] getViaRpc(byte[] key) {
    checkKey(key);
    int shard = shardOf(key);
    ByteBuffer b = writeRpc(shard, KvProtocol.GET, ids(shard).bytes(key));
    Wire.Reader r = new Wire.Reader(b, "kv get");
    int status = r.u8("status");
    byte[] v = r.bytes("value");
    r.end();
    return status == KvProtocol.FOUND ? v : null;
  }

  /**
   * An RPC to the kv service of {@code shard}'s server that does nothing with {@code padding} bytes
   * of request: the ceiling a put is measured against.
   */
  public void ping(int shard, byte[] padding) {
    rpc(shard, KvProtocol.PING, ByteBuffer.wrap(padding));
  }

  // ------------------------------------------------------------------ writes (RPC)

  /** Stores {@code value} under {@code key}; returns true if the key was new. */
  public boolean put(byte[] key, byte[] value) {
    return putMode(KvProtocol.MODE_PUT, key, value, new byte[0]) == KvProtocol.CREATED;
  }

  /** Stores {@code value} only if {@code key} is absent; returns whether it did. */
  public boolean putIfAbsent(byte[] key, byte[] value) {
    return putMode(KvProtocol.MODE_PUT_IF_ABSENT, key, value, new byte[0]) == KvProtocol.CREATED;
  }

  /** Replaces the value of {@code key} only if it is {@code expected}; returns whether it did. */
  public boolean compareAndSet(byte[] key, byte[] expected, byte[] update) {
    checkValue(expected);
    return putMode(KvProtocol.MODE_COMPARE_AND_SET, key, update, expected) == KvProtocol.REPLACED;
  }

  /** Removes {@code key}; returns false if it was absent. */
  public boolean delete(byte[] key) {
    checkKey(key);
    int shard = shardOf(key);
    ByteBuffer b = writeRpc(shard, KvProtocol.DELETE, ids(shard).bytes(key));
    return new Wire.Reader(b, "kv delete").u8("status") == KvProtocol.DELETED;
  }

  private int putMode(int mode, byte[] key, byte[] value, byte[] expected) {
    checkKey(key);
    checkValue(value);
    int shard = shardOf(key);
    ByteBuffer b =
        writeRpc(
            shard, KvProtocol.PUT, ids(shard).u8(mode).bytes(key).bytes(value).bytes(expected));
    return new Wire.Reader(b, "kv put").u8("status");
  }

  /**
   * One write RPC. NOT_FOUND means the server has no such shard (it restarted): the write did not
   * happen, so the shard is opened and the write sent once more.
   */
  private ByteBuffer writeRpc(int shard, int opcode, Wire.Writer body) {
    try {
      return rpc(shard, opcode, body.toBuffer());
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.NOT_FOUND) {
        throw e;
      }
      layouts.set(shard, open(shard));
      return rpc(shard, opcode, body.toBuffer());
    }
  }

  /**
   * Grows every shard's table array to at least {@code slotsPerShard} slots, one shard at a time,
   * while readers and writers go on: each server builds the new array, poisons the old one and
   * bumps the layout epoch; readers with the old layout see the poison and fetch the new one.
   *
   * @throws FerriteException NO_SPACE if a shard's keys do not fit (that shard is unchanged)
   */
  public void resize(int slotsPerShard) {
    for (int i = 0; i < info.options().shards(); i++) {
      resizeShard(i, slotsPerShard);
    }
  }

  /**
   * Grows shard {@code shard}'s table array to at least {@code slots} slots (see {@link #resize}).
   */
  public void resizeShard(int shard, int slots) {
    if (shard < 0 || shard >= info.options().shards()) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "shard: " + shard + " (expected: >= 0 and < " + info.options().shards() + ")");
    }
    layout(shard);
    ByteBuffer b = writeRpc(shard, KvProtocol.RESIZE, ids(shard).i32(slots));
    layouts.set(shard, readLayout(shard, b));
  }

  // ------------------------------------------------------------------ stats

  /** Every shard's counts, from its server. */
  public List<ShardStats> stats() {
    List<ShardStats> out = new ArrayList<>();
    for (int i = 0; i < info.options().shards(); i++) {
      layout(i);
      Wire.Reader r = new Wire.Reader(rpc(i, KvProtocol.STATS, ids(i).toBuffer()), "kv stats");
      out.add(ShardStats.read(r));
      r.end();
    }
    return out;
  }
}
