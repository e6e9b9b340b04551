package io.ferrite.kv;

import static io.ferrite.kv.PilafLayout.ENTRY;
import static io.ferrite.kv.PilafLayout.entryOffset;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.verify.Checksum64;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;

/**
 * One kv table, as a client sees it. Thread-safe; share one per table.
 *
 * <h2>Reads are one-sided (Pilaf §3.2–3.3)</h2>
 *
 * {@link #get}, {@link #contains} and {@link #multiGet} never call the server: they read the
 * shard's entries and extents with one-sided reads and verify both checksums. A probe reads the
 * entry of the key's next cuckoo slot; if it is in use and its tag matches, it reads the extent the
 * self-verifying pointer names and compares the key. A torn copy (a read racing the server's write)
 * fails its checksum and the lookup starts again; a pointer into an extent region the client does
 * not know yet, or an error naming a region, makes the client fetch the layout again (the layout
 * epoch moved). A miss is confirmed by one batch that reads the {@code moves} counter, the three
 * entries and the counter again: with no displacement in between, the key was absent at that
 * instant (a key moving between slots would otherwise be missed).
 *
 * <h2>Writes go to the owning server by RPC</h2>
 *
 * {@link #put}, {@link #putIfAbsent}, {@link #compareAndSet} and {@link #delete} are one RPC to the
 * shard's server; they are not retried blindly (a lost answer does not mean the put did not
 * happen). Every operation is linearizable per key.
 */
public final class KvTable {
  /** How long a lookup keeps retrying torn copies before it gives up with CONFLICT. */
  static final long LOOKUP_DEADLINE_NANOS = 10_000_000_000L;

  private static final Object TORN = new Object();
  private static final Object STALE = new Object();
  private static final Object MISS = new Object();

  private final FerriteClient client;
  private final TableInfo info;
  private final AtomicReferenceArray<ShardLayout> layouts;
  private final LookupStats stats = new LookupStats();

  KvTable(FerriteClient client, TableInfo info) {
    this.client = client;
    this.info = info;
    this.layouts = new AtomicReferenceArray<>(info.options().shards());
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

  private Object lookup(byte[] key) {
    long h = KeyHash.of(key);
    int shard = KeyHash.shard(h, info.options().shards());
    long deadline = System.nanoTime() + LOOKUP_DEADLINE_NANOS;
    for (int attempt = 0; ; attempt++) {
      ShardLayout l = layout(shard);
      Object r;
      try {
        r = probe(l, key, h);
      } catch (FerriteException e) {
        if (e.code() == ErrorCode.NO_SUCH_REGION
            || e.code() == ErrorCode.BAD_RKEY
            || e.code() == ErrorCode.OUT_OF_BOUNDS) {
          r = STALE;
        } else if (e.retryable() && System.nanoTime() < deadline) {
          r = TORN;
        } else {
          throw e;
        }
      }
      if (r == STALE) {
        invalidate(shard, l);
      } else if (r == TORN) {
        stats.tornRetries.increment();
      } else {
        return r;
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

  /** One lookup attempt: the value, {@link #MISS}, {@link #TORN} or {@link #STALE}. */
  private Object probe(ShardLayout l, byte[] key, long h) {
    FabricConnection c = client.connection(l.entries().serverId());
    int tag = KeyHash.tag(h);
    ByteBuffer e = ByteBuffer.allocate(ENTRY);
    for (int way = 0; way < KeyHash.WAYS; way++) {
      int slot = KeyHash.slot(h, way, l.slots());
      Futures.join(c.read(l.entries(), entryOffset(slot), e.clear()));
      PilafLayout.Entry en = PilafLayout.decode(e, 0);
      if (en == null) {
        return TORN;
      }
      if (!en.inUse() || en.tag() != tag) {
        continue;
      }
      Object v = readExtent(c, l, en, key);
      if (v == TORN || v == STALE) {
        return v;
      }
      if (v != MISS) {
        stats.lookup(way + 1);
        return v;
      }
    }
    return confirmMiss(c, l, h, tag);
  }

  /**
   * Reads and verifies the extent {@code en} points to: the value, MISS (another key), TORN, STALE.
   */
  private static Object readExtent(
      FabricConnection c, ShardLayout l, PilafLayout.Entry en, byte[] key) {
    if (en.region() >= l.extents().size()) {
      return STALE;
    }
    byte[] ext = new byte[en.length()];
    Futures.join(
        c.read(l.extents().get(en.region()), en.offset() & 0xFFFFFFFFL, ByteBuffer.wrap(ext)));
    return verifiedValue(ext, en, key);
  }

  private static Object verifiedValue(byte[] ext, PilafLayout.Entry en, byte[] key) {
    if (Checksum64.of(ext) != en.checksum()) {
      return TORN;
    }
    return PilafLayout.extentHasKey(ext, key) ? PilafLayout.extentValue(ext) : MISS;
  }

  /**
   * Confirms a miss: one batch reads the header (epoch, moves), the key's three entries and the
   * header again; ops on one connection take effect in issue order. Unchanged and even {@code
   * moves} means no key moved while the entries were read, so none of them holding the key proves
   * it absent at that instant.
   */
  private Object confirmMiss(FabricConnection c, ShardLayout l, long h, int tag) {
    stats.missConfirms.increment();
    Batch b = c.batch();
    ByteBuffer before = ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer after = ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer[] es = new ByteBuffer[KeyHash.WAYS];
    List<CompletableFuture<Void>> fs = new ArrayList<>(5);
    fs.add(b.read(l.entries(), 0, before));
    for (int way = 0; way < KeyHash.WAYS; way++) {
      es[way] = ByteBuffer.allocate(ENTRY);
      fs.add(b.read(l.entries(), entryOffset(KeyHash.slot(h, way, l.slots())), es[way]));
    }
    fs.add(b.read(l.entries(), 0, after));
    Futures.join(b.flush());
    for (CompletableFuture<Void> f : fs) {
      Futures.join(f);
    }
    long epoch = before.getLong(PilafLayout.EPOCH_OFFSET);
    long m1 = before.getLong(PilafLayout.MOVES_OFFSET);
    long m2 = after.getLong(PilafLayout.MOVES_OFFSET);
    if (epoch != l.epoch() || after.getLong(PilafLayout.EPOCH_OFFSET) != epoch) {
      return STALE;
    }
    if (m1 != m2 || (m1 & 1) != 0) {
      return TORN;
    }
    for (ByteBuffer e : es) {
      PilafLayout.Entry en = PilafLayout.decode(e, 0);
      if (en == null || (en.inUse() && en.tag() == tag)) {
        // Torn, or a candidate appeared since the probe: look again.
        return TORN;
      }
    }
    stats.lookup(KeyHash.WAYS);
    return MISS;
  }

  /**
   * The values of {@code keys} (null where absent), in order, in rounds of one batch per server:
   * first every key's first-choice entry; then, per key, the extent its entry names (tag match) or
   * its two other entries; then the extents those name. Most keys live in their first slot, so most
   * finish in two rounds of one read each. Keys whose copies were torn or stale, or that look
   * absent (a miss needs {@link #get}'s confirmation), finish through {@link #get}. Each key is
   * linearizable on its own; the call is not atomic across keys.
   */
  public List<byte[]> multiGet(List<byte[]> keys) {
    int n = keys.size();
    byte[][] out = new byte[n][];
    long[] hs = new long[n];
    ShardLayout[] ls = new ShardLayout[n];
    boolean[] slow = new boolean[n];
    boolean[] done = new boolean[n];
    java.util.Map<Integer, Batch> batches = new java.util.HashMap<>();
    List<CompletableFuture<Void>> fs = new ArrayList<>();
    ByteBuffer[] first = new ByteBuffer[n];
    for (int i = 0; i < n; i++) {
      byte[] key = keys.get(i);
      checkKey(key);
      hs[i] = KeyHash.of(key);
      ls[i] = layout(KeyHash.shard(hs[i], info.options().shards()));
      first[i] = ByteBuffer.allocate(ENTRY);
      fs.add(readEntry(batches, ls[i], hs[i], 0, first[i]));
    }
    flushAll(batches, fs);
    // Round 2: extents of first-slot tag matches; the other two entries of everyone else.
    PilafLayout.Entry[] hit = new PilafLayout.Entry[n];
    byte[][] ext = new byte[n][];
    ByteBuffer[][] rest = new ByteBuffer[n][];
    for (int i = 0; i < n; i++) {
      PilafLayout.Entry en = PilafLayout.decode(first[i], 0);
      if (en == null) {
        slow[i] = true;
      } else if (en.inUse() && en.tag() == KeyHash.tag(hs[i])) {
        slow[i] = !readExtent(batches, fs, ls[i], en, hit, ext, i);
      } else {
        rest[i] = new ByteBuffer[] {ByteBuffer.allocate(ENTRY), ByteBuffer.allocate(ENTRY)};
        fs.add(readEntry(batches, ls[i], hs[i], 1, rest[i][0]));
        fs.add(readEntry(batches, ls[i], hs[i], 2, rest[i][1]));
      }
    }
    flushAll(batches, fs);
    // Round 3: verify first-slot extents; extents of the other entries' tag matches.
    for (int i = 0; i < n; i++) {
      if (slow[i]) {
        continue;
      }
      if (hit[i] != null) {
        Object v = verifiedValue(ext[i], hit[i], keys.get(i));
        if (v instanceof byte[] value) {
          out[i] = value;
          done[i] = true;
          stats.lookup(1);
        } else {
          slow[i] = true;
        }
        continue;
      }
      for (ByteBuffer e : rest[i]) {
        PilafLayout.Entry en = PilafLayout.decode(e, 0);
        if (en == null) {
          slow[i] = true;
        } else if (hit[i] == null && en.inUse() && en.tag() == KeyHash.tag(hs[i])) {
          slow[i] = !readExtent(batches, fs, ls[i], en, hit, ext, i);
        }
      }
      if (hit[i] == null) {
        slow[i] = true; // absent here: get() confirms the miss
      }
    }
    flushAll(batches, fs);
    for (int i = 0; i < n; i++) {
      if (!done[i] && !slow[i] && hit[i] != null) {
        Object v = verifiedValue(ext[i], hit[i], keys.get(i));
        if (v instanceof byte[] value) {
          out[i] = value;
          done[i] = true;
          stats.lookup(2);
        }
      }
      if (!done[i]) {
        out[i] = get(keys.get(i));
      }
    }
    return Arrays.asList(out);
  }

  private CompletableFuture<Void> readEntry(
      java.util.Map<Integer, Batch> batches, ShardLayout l, long h, int way, ByteBuffer dst) {
    Batch b = batches.computeIfAbsent(l.entries().serverId(), s -> client.batch(s));
    return b.read(l.entries(), entryOffset(KeyHash.slot(h, way, l.slots())), dst);
  }

  /** Queues the extent read of {@code en} for key {@code i}; false if the layout is stale. */
  private boolean readExtent(
      java.util.Map<Integer, Batch> batches,
      List<CompletableFuture<Void>> fs,
      ShardLayout l,
      PilafLayout.Entry en,
      PilafLayout.Entry[] hit,
      byte[][] ext,
      int i) {
    if (en.region() >= l.extents().size()) {
      return false;
    }
    hit[i] = en;
    ext[i] = new byte[en.length()];
    Batch b = batches.computeIfAbsent(l.entries().serverId(), s -> client.batch(s));
    fs.add(
        b.read(l.extents().get(en.region()), en.offset() & 0xFFFFFFFFL, ByteBuffer.wrap(ext[i])));
    return true;
  }

  private static void flushAll(
      java.util.Map<Integer, Batch> batches, List<CompletableFuture<Void>> fs) {
    List<CompletableFuture<Void>> flushes = new ArrayList<>();
    for (Batch b : batches.values()) {
      flushes.add(b.flush());
    }
    batches.clear();
    for (CompletableFuture<Void> f : flushes) {
      Futures.join(f);
    }
    for (CompletableFuture<Void> f : fs) {
      Futures.join(f);
    }
    fs.clear();
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
