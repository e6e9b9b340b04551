package io.ferrite.kv.server;

import static io.ferrite.kv.PilafLayout.ENTRY;
import static io.ferrite.kv.PilafLayout.entryOffset;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.verify.Checksum64;
import io.ferrite.kv.KeyHash;
import io.ferrite.kv.KvProtocol;
import io.ferrite.kv.PilafLayout;
import io.ferrite.kv.ShardLayout;
import io.ferrite.kv.ShardStats;
import io.ferrite.kv.TableOptions;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The server half of one Pilaf shard: a 3-way cuckoo hash table of self-verifying entries in one
 * region and key-value extents in others (Pilaf §3.2–3.4). Every write is done here, by the
 * server's CPU, under the shard's lock; clients only read the regions one-sided.
 *
 * <h2>Write order (what makes one-sided reads safe)</h2>
 *
 * <ul>
 *   <li>put of a new value: write the extent, release fence, write the entry (its checksum covers
 *       the pointer, the pointer's checksum covers the extent), full fence, then free the old
 *       extent and reply (Pilaf §3.3: a completed put is visible to every later get);
 *   <li>cuckoo displacement: the path is computed first, without moving anything; then, between two
 *       increments of the {@code moves} counter, keys move last-first so that a key is in one or
 *       two slots, never zero (Pilaf §3.4), and the new key takes the first slot;
 *   <li>extent growth: the new region is registered, the layout epoch bumped (release), and only
 *       then may an entry point into it.
 * </ul>
 *
 * A full table (no cuckoo path within {@value #MAX_BFS_NODES} nodes) or a full extent area fails
 * the put with {@link ErrorCode#NO_SPACE} and changes nothing: no key is ever lost.
 */
final class PilafShard {
  static final int MAX_BFS_NODES = 4096;
  static final int MAX_PATH = 12;

  private final long tableId;
  private final int shard;
  private final TableOptions options;
  private final MappedRegion entries;
  private final Function<MappedRegion, RegionRef> refOf;
  private final int slots;
  private final long[] hashes;
  private final long[] extentAddr;
  private final int[] extentLen;
  private final BitSet used;
  private final ExtentAllocator alloc;
  private final ByteBuffer entryBuf = ByteBuffer.allocate(ENTRY).order(ByteOrder.LITTLE_ENDIAN);
  private int count;
  private long epoch = 1;
  private long moves;
  private long puts;
  private long fullErrors;
  private java.util.function.BiConsumer<Integer, byte[][]> log = (type, kv) -> {};

  PilafShard(
      long tableId,
      int shard,
      TableOptions options,
      Supplier<MappedRegion> newEntryRegion,
      Supplier<MappedRegion> newExtentRegion,
      Function<MappedRegion, RegionRef> refOf) {
    this.tableId = tableId;
    this.shard = shard;
    this.options = options;
    this.slots = options.slotsPerShard();
    this.refOf = refOf;
    this.entries = newEntryRegion.get();
    this.hashes = new long[slots];
    this.extentAddr = new long[slots];
    this.extentLen = new int[slots];
    this.used = new BitSet(slots);
    this.alloc =
        new ExtentAllocator(newExtentRegion.get(), options.maxExtentRegions(), newExtentRegion);
    entries.putLongRelease(PilafLayout.SLOTS_OFFSET, slots);
    entries.putLongRelease(PilafLayout.EPOCH_OFFSET, epoch);
    entries.putLongRelease(0, PilafLayout.MAGIC);
  }

  /**
   * Sets what is told, under the shard's lock (so in the order writes are applied), of every write
   * that changed the shard: {@code (PUT, {key, value})} or {@code (DELETE, {key})}.
   */
  synchronized void onWrite(java.util.function.BiConsumer<Integer, byte[][]> hook) {
    this.log = hook;
  }

  TableOptions options() {
    return options;
  }

  long tableId() {
    return tableId;
  }

  int shard() {
    return shard;
  }

  synchronized ShardLayout layout() {
    List<RegionRef> ext = new ArrayList<>();
    for (MappedRegion r : alloc.regions()) {
      ext.add(refOf.apply(r));
    }
    return new ShardLayout(tableId, shard, epoch, slots, refOf.apply(entries), List.copyOf(ext));
  }

  synchronized ShardStats stats() {
    return new ShardStats(
        slots,
        count,
        alloc.usedBytes(),
        alloc.freeBytes(),
        alloc.regions().size(),
        moves,
        puts,
        fullErrors,
        epoch);
  }

  void checkKey(byte[] key) {
    if (key.length == 0 || key.length > options.maxKey()) {
      throw new FerriteException(
          key.length == 0 ? ErrorCode.INVALID_ARGUMENT : ErrorCode.TOO_LARGE,
          "key of " + key.length + " B (expected: >= 1 and <= " + options.maxKey() + " B)");
    }
  }

  void checkValue(byte[] value) {
    if (value.length > options.maxValue()) {
      throw new FerriteException(
          ErrorCode.TOO_LARGE,
          "value of " + value.length + " B (expected: <= " + options.maxValue() + " B)");
    }
  }

  // ------------------------------------------------------------------ reads (server side)

  private byte[] readExtent(int slot) {
    long a = extentAddr[slot];
    byte[] b = new byte[extentLen[slot]];
    alloc.region((int) (a >>> 32)).readInto(a & 0xFFFFFFFFL, ByteBuffer.wrap(b));
    return b;
  }

  private int find(long h, byte[] key) {
    for (int way = 0; way < KeyHash.WAYS; way++) {
      int s = KeyHash.slot(h, way, slots);
      if (used.get(s) && hashes[s] == h && PilafLayout.extentHasKey(readExtent(s), key)) {
        return s;
      }
    }
    return -1;
  }

  /** The RPC baseline get (Pilaf-VO): the value, or null. */
  synchronized byte[] get(byte[] key) {
    checkKey(key);
    int s = find(KeyHash.of(key), key);
    return s < 0 ? null : PilafLayout.extentValue(readExtent(s));
  }

  // ------------------------------------------------------------------ writes

  /** Puts by {@code mode}; returns a {@link KvProtocol} status. */
  synchronized int put(int mode, byte[] key, byte[] value, byte[] expected) {
    checkKey(key);
    checkValue(value);
    long h = KeyHash.of(key);
    int s = find(h, key);
    if (mode == KvProtocol.MODE_PUT_IF_ABSENT && s >= 0) {
      return KvProtocol.NOT_APPLIED;
    }
    if (mode == KvProtocol.MODE_COMPARE_AND_SET
        && (s < 0 || !Arrays.equals(PilafLayout.extentValue(readExtent(s)), expected))) {
      return KvProtocol.NOT_APPLIED;
    }
    byte[] extent = PilafLayout.extent(key, value);
    boolean[] grew = new boolean[1];
    long addr = alloc.allocate(extent.length, grew);
    if (grew[0]) {
      // Publish the new region before any entry points into it.
      epoch++;
      entries.putLongRelease(PilafLayout.EPOCH_OFFSET, epoch);
    }
    alloc.region((int) (addr >>> 32)).writeFrom(addr & 0xFFFFFFFFL, ByteBuffer.wrap(extent));
    long sum = Checksum64.of(extent);
    VarHandle.releaseFence();
    puts++;
    if (s >= 0) {
      long oldAddr = extentAddr[s];
      int oldLen = extentLen[s];
      writeEntry(s, h, addr, extent.length, sum);
      VarHandle.fullFence();
      alloc.free(oldAddr, oldLen);
      log.accept(KvProtocol.PUT, new byte[][] {key, value});
      return KvProtocol.REPLACED;
    }
    int target = -1;
    for (int way = 0; way < KeyHash.WAYS && target < 0; way++) {
      int c = KeyHash.slot(h, way, slots);
      if (!used.get(c)) {
        target = c;
      }
    }
    if (target >= 0) {
      writeEntry(target, h, addr, extent.length, sum);
    } else {
      int[] path = cuckooPath(h);
      if (path == null) {
        alloc.free(addr, extent.length);
        fullErrors++;
        throw new FerriteException(
            ErrorCode.NO_SPACE,
            "shard "
                + shard
                + " is full: "
                + count
                + " of "
                + slots
                + " slots in use and no cuckoo path within "
                + MAX_BFS_NODES
                + " displacements; create the table with more shards or slotsPerShard");
      }
      // Pilaf §3.4: move the last displaced key first, so every key stays in >= 1 slot.
      entries.fetchAndAdd(PilafLayout.MOVES_OFFSET, 1);
      for (int j = path.length - 1; j >= 1; j--) {
        moveEntry(path[j - 1], path[j]);
      }
      writeEntry(path[0], h, addr, extent.length, sum);
      entries.fetchAndAdd(PilafLayout.MOVES_OFFSET, 1);
      moves += path.length - 1;
    }
    count++;
    VarHandle.fullFence();
    log.accept(KvProtocol.PUT, new byte[][] {key, value});
    return KvProtocol.CREATED;
  }

  /** Deletes {@code key}; returns DELETED or MISSING. */
  synchronized int delete(byte[] key) {
    checkKey(key);
    int s = find(KeyHash.of(key), key);
    if (s < 0) {
      return KvProtocol.MISSING;
    }
    Arrays.fill(entryBuf.array(), (byte) 0);
    entries.writeFrom(entryOffset(s), entryBuf.clear());
    VarHandle.fullFence();
    used.clear(s);
    alloc.free(extentAddr[s], extentLen[s]);
    count--;
    log.accept(KvProtocol.DELETE, new byte[][] {key});
    return KvProtocol.DELETED;
  }

  private void writeEntry(int s, long h, long addr, int len, long sum) {
    PilafLayout.encode(
        entryBuf.clear(), 0, len, (int) (addr >>> 32), (int) addr, KeyHash.tag(h), sum);
    entries.writeFrom(entryOffset(s), entryBuf.clear());
    used.set(s);
    hashes[s] = h;
    extentAddr[s] = addr;
    extentLen[s] = len;
  }

  /** Copies the entry of slot {@code from} into slot {@code to} (the entry names no slot). */
  private void moveEntry(int from, int to) {
    entries.readInto(entryOffset(from), entryBuf.clear());
    entries.writeFrom(entryOffset(to), entryBuf.clear());
    used.set(to);
    hashes[to] = hashes[from];
    extentAddr[to] = extentAddr[from];
    extentLen[to] = extentLen[from];
    // 'from' keeps its copy until the next move (or the new key) overwrites it.
  }

  /**
   * Breadth-first search for the shortest displacement path from one of the new key's slots to an
   * empty slot: {@code path[0]} is the new key's slot, {@code path[last]} the empty one, and the
   * key in {@code path[j]} has {@code path[j + 1]} among its candidates. Nothing is moved here.
   */
  private int[] cuckooPath(long h) {
    int[] nodeSlot = new int[MAX_BFS_NODES];
    int[] parent = new int[MAX_BFS_NODES];
    int[] depth = new int[MAX_BFS_NODES];
    BitSet seen = new BitSet(slots);
    ArrayDeque<Integer> queue = new ArrayDeque<>();
    int n = 0;
    for (int way = 0; way < KeyHash.WAYS; way++) {
      int c = KeyHash.slot(h, way, slots);
      if (!seen.get(c)) {
        seen.set(c);
        nodeSlot[n] = c;
        parent[n] = -1;
        depth[n] = 0;
        queue.add(n++);
      }
    }
    while (!queue.isEmpty()) {
      int i = queue.poll();
      int s = nodeSlot[i];
      for (int way = 0; way < KeyHash.WAYS; way++) {
        int t = KeyHash.slot(hashes[s], way, slots);
        if (t == s || seen.get(t)) {
          continue;
        }
        if (!used.get(t)) {
          int[] path = new int[depth[i] + 2];
          path[path.length - 1] = t;
          for (int k = i, j = path.length - 2; k >= 0; k = parent[k], j--) {
            path[j] = nodeSlot[k];
          }
          return path;
        }
        if (n < MAX_BFS_NODES && depth[i] + 1 < MAX_PATH) {
          seen.set(t);
          nodeSlot[n] = t;
          parent[n] = i;
          depth[n] = depth[i] + 1;
          queue.add(n++);
        }
      }
    }
    return null;
  }
}
