package io.ferrite.kv.server;

import static io.ferrite.kv.PilafLayout.ENTRY;
import static io.ferrite.kv.PilafLayout.entryOffset;

import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.extent.Extents;
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
import java.util.function.LongFunction;
import java.util.function.Supplier;

/**
 * The server half of one Pilaf shard: a 3-way cuckoo hash table of self-verifying entries in one
 * region and key-value extents in others (Pilaf §3.2–3.4). Every write is done here, by the
 * server's CPU, under the shard's lock; clients only read the regions one-sided.
 *
 * <h2>Write order (what makes one-sided reads safe)</h2>
 *
 * <ul>
 *   <li>put of a new value: write the extent, release fence, clear the old extent's current word
 *       (full fence), write the entry (its checksum covers the pointer, the pointer's checksum
 *       covers the extent), mark the new extent current, full fence, then free the old extent and
 *       reply (Pilaf §3.3: a completed put is visible to every later get; the current word: {@link
 *       io.ferrite.kernel.extent.Extents});
 *   <li>cuckoo displacement: the path is computed first, without moving anything; then, between two
 *       increments of the {@code moves} counter, keys move last-first so that a key is in one or
 *       two slots, never zero (Pilaf §3.4), and the new key takes the first slot;
 *   <li>extent growth: the new region is registered, the layout epoch bumped (release), and only
 *       then may an entry point into it;
 *   <li>resize: every entry is placed in a new, larger array nobody reads yet; then the old
 *       header's epoch is bumped and every old entry overwritten with a checksummed {@code MOVED}
 *       entry; only then does the shard switch to the new array (Pilaf §3.3 resets connections
 *       instead).
 * </ul>
 *
 * A full table (no cuckoo path within {@value #MAX_BFS_NODES} nodes) or a full extent area fails
 * the put with {@link io.ferrite.fabric.ErrorCode#NO_SPACE} and changes nothing: no key is lost.
 */
final class PilafShard extends KvShard {
  static final int MAX_BFS_NODES = 4096;
  static final int MAX_PATH = 12;

  /** One entry array and the server's own view of it. */
  private static final class Table {
    final MappedRegion entries;
    final int slots;
    final long[] hashes;
    final long[] extentAddr;
    final int[] extentLen;
    final BitSet used;

    Table(MappedRegion entries, int slots) {
      this.entries = entries;
      this.slots = slots;
      this.hashes = new long[slots];
      this.extentAddr = new long[slots];
      this.extentLen = new int[slots];
      this.used = new BitSet(slots);
    }
  }

  private final ByteBuffer entryBuf = ByteBuffer.allocate(ENTRY).order(ByteOrder.LITTLE_ENDIAN);

  /** The allocator's "a region was added" flag of a put (reused: the shard's lock guards it). */
  private final boolean[] grew = new boolean[1];

  private Table t;
  private int count;
  private int incarnations;

  PilafShard(
      long tableId,
      int shard,
      TableOptions options,
      LongFunction<MappedRegion> newTableRegion,
      Supplier<MappedRegion> newExtentRegion,
      Function<MappedRegion, RegionRef> refOf) {
    super(tableId, shard, options, newTableRegion, newExtentRegion, refOf);
    this.t = newTable(options.slotsPerShard());
  }

  private Table newTable(int slots) {
    Table n = new Table(newTableRegion.apply(PilafLayout.entryRegionLength(slots)), slots);
    n.entries.putLongRelease(PilafLayout.SLOTS_OFFSET, slots);
    n.entries.putLongRelease(PilafLayout.EPOCH_OFFSET, epoch);
    n.entries.putLongRelease(0, PilafLayout.MAGIC);
    return n;
  }

  @Override
  synchronized ShardLayout layout() {
    List<RegionRef> ext = new ArrayList<>();
    for (MappedRegion r : alloc.regions()) {
      ext.add(refOf.apply(r));
    }
    return new ShardLayout(
        tableId, shard, epoch, t.slots, refOf.apply(t.entries), List.copyOf(ext));
  }

  @Override
  synchronized ShardStats stats() {
    if (t == null) {
      return new ShardStats(0, 0, 0, 0, 0, moves, puts, fullErrors, epoch, 0, 0, 0, 0);
    }
    return new ShardStats(
        t.slots,
        count,
        alloc.usedBytes(),
        alloc.freeBytes(),
        alloc.regions().size(),
        moves,
        puts,
        fullErrors,
        epoch,
        0,
        0,
        (int) regionUsage()[0],
        regionUsage()[1]);
  }

  @Override
  synchronized MappedRegion tableRegion() {
    return t.entries;
  }

  @Override
  synchronized int slots() {
    return t == null ? 0 : t.slots;
  }

  @Override
  void forgetTable() {
    t = null;
  }

  // ------------------------------------------------------------------ reads (server side)

  private byte[] readExtent(int slot) {
    long a = t.extentAddr[slot];
    byte[] b = new byte[t.extentLen[slot]];
    alloc.region((int) (a >>> 32)).readInto(a & 0xFFFFFFFFL, ByteBuffer.wrap(b));
    return b;
  }

  private int find(long h, byte[] key) {
    for (int way = 0; way < KeyHash.WAYS; way++) {
      int s = KeyHash.slot(h, way, t.slots);
      if (t.used.get(s) && t.hashes[s] == h && alloc.hasKey(t.extentAddr[s], t.extentLen[s], key)) {
        return s;
      }
    }
    return -1;
  }

  @Override
  synchronized byte[] get(byte[] key) {
    checkKey(key);
    int s = find(KeyHash.of(key), key);
    return s < 0 ? null : Extents.value(readExtent(s));
  }

  // ------------------------------------------------------------------ writes

  @Override
  synchronized int put(int mode, byte[] key, ByteBuffer value, byte[] expected) {
    checkKey(key);
    int length = Extents.HEADER + key.length + value.remaining();
    checkValue(value.remaining());
    long h = KeyHash.of(key);
    int s = find(h, key);
    if (mode == KvProtocol.MODE_PUT_IF_ABSENT && s >= 0) {
      return KvProtocol.NOT_APPLIED;
    }
    if (mode == KvProtocol.MODE_COMPARE_AND_SET
        && (s < 0 || !Arrays.equals(Extents.value(readExtent(s)), expected))) {
      return KvProtocol.NOT_APPLIED;
    }
    int inc = nextIncarnation();
    grew[0] = false;
    long addr = alloc.allocate(length, grew);
    if (grew[0]) {
      // Publish the new region before any entry points into it.
      epoch++;
      t.entries.putLongRelease(PilafLayout.EPOCH_OFFSET, epoch);
    }
    // One copy of the value, from the request into the extent, and one checksum pass over what
    // was written there (ExtentAllocator#writeExtent).
    long sum = alloc.writeExtent(addr, inc, key, value);
    VarHandle.releaseFence();
    puts++;
    if (s >= 0) {
      long oldAddr = t.extentAddr[s];
      int oldLen = t.extentLen[s];
      alloc.clearCurrent(oldAddr);
      writeEntry(t, s, h, addr, length, sum);
      VarHandle.releaseFence();
      alloc.markCurrent(addr, inc);
      VarHandle.fullFence();
      alloc.free(oldAddr, oldLen);
      log.put(key, value);
      return KvProtocol.REPLACED;
    }
    if (!insert(t, h, addr, length, sum)) {
      alloc.free(addr, length);
      throw full(
          count
              + " of "
              + t.slots
              + " slots in use and no cuckoo path within "
              + MAX_BFS_NODES
              + " displacements");
    }
    count++;
    VarHandle.releaseFence();
    alloc.markCurrent(addr, inc);
    VarHandle.fullFence();
    log.put(key, value);
    return KvProtocol.CREATED;
  }

  /** Places a new key's entry in {@code table}, displacing others if needed; false if full. */
  private boolean insert(Table table, long h, long addr, int len, long sum) {
    for (int way = 0; way < KeyHash.WAYS; way++) {
      int c = KeyHash.slot(h, way, table.slots);
      if (!table.used.get(c)) {
        writeEntry(table, c, h, addr, len, sum);
        return true;
      }
    }
    int[] path = cuckooPath(table, h);
    if (path == null) {
      return false;
    }
    // Pilaf §3.4: move the last displaced key first, so every key stays in >= 1 slot.
    table.entries.fetchAndAdd(PilafLayout.MOVES_OFFSET, 1);
    for (int j = path.length - 1; j >= 1; j--) {
      moveEntry(table, path[j - 1], path[j]);
    }
    writeEntry(table, path[0], h, addr, len, sum);
    table.entries.fetchAndAdd(PilafLayout.MOVES_OFFSET, 1);
    moves += path.length - 1;
    return true;
  }

  @Override
  synchronized int delete(byte[] key) {
    checkKey(key);
    int s = find(KeyHash.of(key), key);
    if (s < 0) {
      return KvProtocol.MISSING;
    }
    alloc.clearCurrent(t.extentAddr[s]);
    Arrays.fill(entryBuf.array(), (byte) 0);
    t.entries.writeFrom(entryOffset(s), entryBuf.clear());
    VarHandle.fullFence();
    t.used.clear(s);
    alloc.free(t.extentAddr[s], t.extentLen[s]);
    count--;
    log.delete(key);
    return KvProtocol.DELETED;
  }

  @Override
  synchronized void resize(int slots) {
    checkResize(slots);
    if (slots <= t.slots) {
      return;
    }
    Table old = t;
    Table n = newTable(slots);
    for (int s = old.used.nextSetBit(0); s >= 0; s = old.used.nextSetBit(s + 1)) {
      old.entries.readInto(entryOffset(s), entryBuf.clear());
      PilafLayout.Entry en = PilafLayout.decode(entryBuf, 0);
      if (!insert(n, old.hashes[s], old.extentAddr[s], old.extentLen[s], en.checksum())) {
        // Nothing was published: the old array is untouched; the new region goes back.
        free(n.entries);
        throw full("the " + count + " keys do not fit " + slots + " slots");
      }
    }
    // Publish: the epoch first (a miss confirmation in the old array fails), then poison every old
    // entry, so a stale reader fetches the layout; writes (which wait for the lock) go to the new.
    epoch++;
    n.entries.putLongRelease(PilafLayout.EPOCH_OFFSET, epoch);
    old.entries.putLongRelease(PilafLayout.EPOCH_OFFSET, epoch);
    VarHandle.fullFence();
    PilafLayout.encodeMoved(entryBuf.clear(), 0);
    for (int s = 0; s < old.slots; s++) {
      old.entries.writeFrom(entryOffset(s), entryBuf.clear());
    }
    VarHandle.fullFence();
    t = n;
    // Every old entry is MOVED and nothing here reads the old array again: give its region back
    // (a stale reader gets NO_SUCH_REGION over tcp, the poison from its own mapping over shm).
    free(old.entries);
    log.resize(slots);
  }

  @Override
  synchronized void forEachPair(java.util.function.BiConsumer<byte[], byte[]> f) {
    for (int s = t.used.nextSetBit(0); s >= 0; s = t.used.nextSetBit(s + 1)) {
      byte[] e = readExtent(s);
      f.accept(Extents.key(e), Extents.value(e));
    }
  }

  @Override
  synchronized void poisonForRetire() {
    // As a resize poisons its old array, but with nowhere new: the header's epoch first (a miss
    // confirmation fails), then every entry. Extents stay: a reader holding an entry it copied
    // before the poison reads the pair the frozen shard still has. But none is current any more:
    // its pair is about to be written on the new server, so a hint to it must not answer.
    t.entries.putLongRelease(PilafLayout.EPOCH_OFFSET, epoch | RETIRED_EPOCH);
    VarHandle.fullFence();
    PilafLayout.encodeMoved(entryBuf.clear(), 0);
    for (int s = 0; s < t.slots; s++) {
      t.entries.writeFrom(entryOffset(s), entryBuf.clear());
    }
    VarHandle.fullFence();
    for (int s = t.used.nextSetBit(0); s >= 0; s = t.used.nextSetBit(s + 1)) {
      alloc.clearCurrent(t.extentAddr[s]);
    }
  }

  /** A new extent incarnation ({@link Extents}): shard-unique, never 0. */
  private int nextIncarnation() {
    int inc = ++incarnations;
    return inc != 0 ? inc : ++incarnations;
  }

  private void writeEntry(Table table, int s, long h, long addr, int len, long sum) {
    PilafLayout.encode(
        entryBuf.clear(), 0, len, (int) (addr >>> 32), (int) addr, KeyHash.tag(h), sum);
    table.entries.writeFrom(entryOffset(s), entryBuf.clear());
    table.used.set(s);
    table.hashes[s] = h;
    table.extentAddr[s] = addr;
    table.extentLen[s] = len;
  }

  /** Copies the entry of slot {@code from} into slot {@code to} (the entry names no slot). */
  private void moveEntry(Table table, int from, int to) {
    table.entries.readInto(entryOffset(from), entryBuf.clear());
    table.entries.writeFrom(entryOffset(to), entryBuf.clear());
    table.used.set(to);
    table.hashes[to] = table.hashes[from];
    table.extentAddr[to] = table.extentAddr[from];
    table.extentLen[to] = table.extentLen[from];
    // 'from' keeps its copy until the next move (or the new key) overwrites it.
  }

  /**
   * Breadth-first search for the shortest displacement path from one of the new key's slots to an
   * empty slot: {@code path[0]} is the new key's slot, {@code path[last]} the empty one, and the
   * key in {@code path[j]} has {@code path[j + 1]} among its candidates. Nothing is moved here.
   */
  private static int[] cuckooPath(Table table, long h) {
    int slots = table.slots;
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
        int c = KeyHash.slot(table.hashes[s], way, slots);
        if (c == s || seen.get(c)) {
          continue;
        }
        if (!table.used.get(c)) {
          int[] path = new int[depth[i] + 2];
          path[path.length - 1] = c;
          for (int k = i, j = path.length - 2; k >= 0; k = parent[k], j--) {
            path[j] = nodeSlot[k];
          }
          return path;
        }
        if (n < MAX_BFS_NODES && depth[i] + 1 < MAX_PATH) {
          seen.set(c);
          nodeSlot[n] = c;
          parent[n] = i;
          depth[n] = depth[i] + 1;
          queue.add(n++);
        }
      }
    }
    return null;
  }
}
