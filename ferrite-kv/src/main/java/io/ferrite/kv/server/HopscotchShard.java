package io.ferrite.kv.server;

import static io.ferrite.kernel.proto.LittleEndian.getInt;
import static io.ferrite.kernel.proto.LittleEndian.putInt;
import static io.ferrite.kernel.proto.LittleEndian.putLong;
import static io.ferrite.kv.HopscotchLayout.BACK_JOINT;
import static io.ferrite.kv.HopscotchLayout.BLOCK_SLOTS;
import static io.ferrite.kv.HopscotchLayout.BUCKET_SLOTS;
import static io.ferrite.kv.HopscotchLayout.FWD_JOINT;
import static io.ferrite.kv.HopscotchLayout.INCARNATION;
import static io.ferrite.kv.HopscotchLayout.NEXT;
import static io.ferrite.kv.HopscotchLayout.OVERFLOW;

import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.extent.Extents;
import io.ferrite.kv.HopscotchLayout;
import io.ferrite.kv.KeyHash;
import io.ferrite.kv.KvProtocol;
import io.ferrite.kv.ShardLayout;
import io.ferrite.kv.ShardStats;
import io.ferrite.kv.TableOptions;
import io.ferrite.kv.server.HopscotchMemory.Block;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.function.Function;
import java.util.function.LongFunction;
import java.util.function.Supplier;

/**
 * The server half of one hopscotch shard: FaRM's chained associative hopscotch table (FaRM §3.6;
 * memory layout in {@link HopscotchLayout}). A key lives in its home bucket b, in b + 1, or in b's
 * overflow chain; a client reads b and b + 1 with one one-sided read. Every write is done here, by
 * the server's CPU, under the shard's lock.
 *
 * <h2>Write protocol (what makes one-sided reads safe)</h2>
 *
 * <ul>
 *   <li>A bucket or block is changed by building its new image (version + 2, checksum over all of
 *       it), then: version odd (release), release fence, the rest of the image, version even
 *       (release). A reader accepts an even version with a matching checksum, or retries.
 *   <li>Out-of-line values: the extent is written (fresh incarnation) before the slot that points
 *       to it, and marked current after ({@link io.ferrite.kernel.extent.Extents}); an old extent
 *       stops being current before its slot changes, and is marked freed (incarnation 0) only after
 *       no slot points to it.
 *   <li>Insert: a free slot in b or b + 1; else hopscotch displacement (FaRM §3.6, after Herlihy et
 *       al.): the nearest bucket e ≤ b + 1 + {@value #MAX_DISTANCE} with a free slot is found, the
 *       path of keys that bring the hole back to b + 1 is computed without moving anything, then
 *       keys move from the far end first, each from its home bucket j to j + 1 (j + 1 written first
 *       with back(j + 1) + 1, then j with fwd(j) + 1), so a key is never absent and a reader that
 *       mixes the two buckets across a move sees unequal joint versions. If no path exists, the key
 *       goes to b's overflow chain (a new block is written completely, then linked at the head).
 *   <li>Delete: the slot is cleared; if it was a bucket slot and the bucket has a chain, a key of
 *       the head block is pulled into the slot ("removes attempt to collapse overflow chains") —
 *       the bucket is written first (with the key, and the head pointer's new incarnation or the
 *       next block), then the block loses the key and gets that incarnation (or is freed), so a
 *       reader that read the old bucket and then follows the chain restarts instead of missing the
 *       key. Empty blocks are unlinked, then freed (incarnation + 1, kept for reuse as blocks only:
 *       type stability).
 *   <li>Resize: every pair is placed in a new, larger array nobody reads yet; the epoch is bumped,
 *       every old bucket's version set to {@link HopscotchLayout#MOVED}, the old chains freed, and
 *       only then do writes (waiting for the lock) go to the new array.
 * </ul>
 */
final class HopscotchShard extends KvShard {
  /** Buckets an insert probes forward for a free slot before it uses the overflow chain. */
  static final int MAX_DISTANCE = 32;

  /** One bucket array and the server's view of it: per slot its key hash and extent, chains. */
  private static final class Table {
    final MappedRegion region;
    final int buckets;
    final long[] hashes;
    final long[] extAddr;
    final int[] extLen;
    final BitSet used;
    final Block[] heads;

    Table(MappedRegion region, int buckets) {
      this.region = region;
      this.buckets = buckets;
      int n = (buckets + 1) * BUCKET_SLOTS;
      this.hashes = new long[n];
      this.extAddr = new long[n];
      this.extLen = new int[n];
      this.used = new BitSet(n);
      this.heads = new Block[buckets];
    }

    int freeSlot(int bucket) {
      for (int i = 0; i < BUCKET_SLOTS; i++) {
        if (!used.get(bucket * BUCKET_SLOTS + i)) {
          return i;
        }
      }
      return -1;
    }
  }

  /** Where a key was found: bucket slot {@code bucket * 4 + i}, or slot {@code i} of a block. */
  private record Loc(int bucket, Block block, Block prev, int i) {}

  private final HopscotchMemory m;
  private final int slotBytes;
  private final byte[] slot;
  private final byte[] moving;

  /** The allocator's "a region was added" flag of a put (reused: the shard's lock guards it). */
  private final boolean[] grew = new boolean[1];

  private Table t;
  private int count;
  private int overflowKeys;

  HopscotchShard(
      long tableId,
      int shard,
      TableOptions options,
      LongFunction<MappedRegion> newTableRegion,
      Supplier<MappedRegion> newExtentRegion,
      Function<MappedRegion, RegionRef> refOf) {
    super(tableId, shard, options, newTableRegion, newExtentRegion, refOf);
    this.m = new HopscotchMemory(options.inlineBytes(), alloc);
    this.slotBytes = m.slotBytes;
    this.slot = new byte[slotBytes];
    this.moving = new byte[slotBytes];
    this.t = newTable(HopscotchLayout.bucketsFor(options.slotsPerShard()));
  }

  private Table newTable(int buckets) {
    MappedRegion r =
        newTableRegion.apply(HopscotchLayout.regionLength(buckets, options.inlineBytes()));
    Table n = new Table(r, buckets);
    // A fresh region is zero: every bucket has version 0, no slot in use and a null chain, but
    // its checksum must match before a reader accepts it.
    m.initBuckets(r, buckets);
    r.putLongRelease(HopscotchLayout.BUCKETS_OFFSET, buckets);
    r.putLongRelease(HopscotchLayout.SLOT_BYTES_OFFSET, slotBytes);
    r.putLongRelease(HopscotchLayout.EPOCH_OFFSET, epoch);
    r.putLongRelease(0, HopscotchLayout.MAGIC);
    return n;
  }

  /**
   * For protocol tests: runs {@code r} (under the lock) after every write to a region, so a test
   * can take a snapshot of each intermediate state a concurrent reader could copy.
   */
  synchronized void afterEachWrite(Runnable r) {
    m.afterEachWrite(r);
  }

  @Override
  synchronized ShardLayout layout() {
    List<RegionRef> ext = new ArrayList<>();
    for (MappedRegion r : alloc.regions()) {
      ext.add(refOf.apply(r));
    }
    return new ShardLayout(
        tableId, shard, epoch, t.buckets * BUCKET_SLOTS, refOf.apply(t.region), List.copyOf(ext));
  }

  @Override
  synchronized ShardStats stats() {
    if (t == null) {
      return new ShardStats(0, 0, 0, 0, 0, moves, puts, fullErrors, epoch, 0, 0, 0, 0);
    }
    return new ShardStats(
        t.buckets * BUCKET_SLOTS,
        count,
        alloc.usedBytes(),
        alloc.freeBytes(),
        alloc.regions().size(),
        moves,
        puts,
        fullErrors,
        epoch,
        overflowKeys,
        m.blocks(),
        (int) regionUsage()[0],
        regionUsage()[1]);
  }

  @Override
  synchronized MappedRegion tableRegion() {
    return t.region;
  }

  @Override
  synchronized int slots() {
    return t == null ? 0 : t.buckets * BUCKET_SLOTS;
  }

  @Override
  void forgetTable() {
    t = null;
  }

  /** Publishes a new extent region (or a resized array) to clients: the layout epoch moves. */
  private void bumpEpoch() {
    epoch++;
    t.region.putLongRelease(HopscotchLayout.EPOCH_OFFSET, epoch);
  }

  // ------------------------------------------------------------------ finding keys

  /** Loads the slot at {@code off} of {@code r} into {@link #slot}. */
  private void loadSlot(MappedRegion r, long off) {
    HopscotchMemory.read(r, off, slot, slotBytes);
  }

  private boolean keyMatches(long extAddr, int extLen, byte[] key) {
    if (extLen > 0) {
      return m.hasKey(extAddr, extLen, key);
    }
    return HopscotchLayout.keyLength(slot, 0) == key.length
        && Arrays.equals(slot, 8, 8 + key.length, key, 0, key.length);
  }

  private Loc find(long h, byte[] key) {
    int b = HopscotchLayout.home(h, t.buckets);
    for (int x = b; x <= b + 1; x++) {
      for (int i = 0; i < BUCKET_SLOTS; i++) {
        int g = x * BUCKET_SLOTS + i;
        if (t.used.get(g) && t.hashes[g] == h) {
          if (t.extLen[g] == 0) {
            // Only an inline pair's key (and value) is in its slot; an out-of-line pair's key is
            // compared in its extent, and nothing reads the slot image of it (a put overwrites
            // it).
            loadSlot(t.region, m.bucketOffset(x) + m.slotOffset(i));
          }
          if (keyMatches(t.extAddr[g], t.extLen[g], key)) {
            return new Loc(x, null, null, i);
          }
        }
      }
    }
    Block prev = null;
    for (Block k = t.heads[b]; k != null; prev = k, k = k.next) {
      for (int i = 0; i < BLOCK_SLOTS; i++) {
        if (k.used[i] && k.hashes[i] == h) {
          if (k.extLen[i] == 0) {
            loadSlot(m.blockRegion(k), m.blockOffset(k) + m.slotOffset(i));
          }
          if (keyMatches(k.extAddr[i], k.extLen[i], key)) {
            return new Loc(b, k, prev, i);
          }
        }
      }
    }
    return null;
  }

  /**
   * The value at {@code loc}; for an inline pair {@link #slot} holds its slot (loaded by {@link
   * #find}).
   */
  private byte[] valueAt(Loc loc) {
    long addr = loc.block == null ? t.extAddr[index(loc)] : loc.block.extAddr[loc.i];
    int len = loc.block == null ? t.extLen[index(loc)] : loc.block.extLen[loc.i];
    return len > 0 ? Extents.value(m.readExtent(addr, len)) : HopscotchLayout.inlineValue(slot, 0);
  }

  private static int index(Loc loc) {
    return loc.bucket * BUCKET_SLOTS + loc.i;
  }

  @Override
  synchronized byte[] get(byte[] key) {
    checkKey(key);
    Loc loc = find(KeyHash.of(key), key);
    return loc == null ? null : valueAt(loc);
  }

  // ------------------------------------------------------------------ writes

  @Override
  synchronized int put(int mode, byte[] key, ByteBuffer value, byte[] expected) {
    checkKey(key);
    int valueLength = value.remaining();
    checkValue(valueLength);
    long h = KeyHash.of(key);
    Loc loc = find(h, key);
    if (mode == KvProtocol.MODE_PUT_IF_ABSENT && loc != null) {
      return KvProtocol.NOT_APPLIED;
    }
    if (mode == KvProtocol.MODE_COMPARE_AND_SET
        && (loc == null || !Arrays.equals(valueAt(loc), expected))) {
      return KvProtocol.NOT_APPLIED;
    }
    // The new slot image, and its extent if the pair does not fit inline.
    long addr = 0;
    int len = 0;
    int inc = 0;
    if (key.length + valueLength <= options.inlineBytes()) {
      HopscotchLayout.putInlineSlot(slot, 0, slotBytes, key, value);
    } else {
      inc = (int) m.incarnation();
      len = Extents.HEADER + key.length + valueLength;
      grew[0] = false;
      addr = alloc.allocate(len, grew);
      if (grew[0]) {
        bumpEpoch(); // publish the new region before any slot points into it
      }
      // The value goes from the request straight into the extent; the checksum is taken over
      // what was written there (ExtentAllocator#writeExtent).
      long sum = m.writeExtent(addr, inc, key, value);
      HopscotchLayout.putOutOfLineSlot(
          slot, 0, slotBytes, key.length, h, valueLength, addr, len, inc, sum);
      VarHandle.releaseFence();
    }
    puts++;
    if (loc != null) {
      long oldAddr;
      int oldLen;
      if (loc.block == null) {
        int g = index(loc);
        oldAddr = t.extAddr[g];
        oldLen = t.extLen[g];
        m.clearCurrent(oldAddr, oldLen);
        m.loadBucket(t.region, loc.bucket);
        System.arraycopy(slot, 0, m.bucket, m.slotOffset(loc.i), slotBytes);
        m.storeBucket(t.region, loc.bucket);
        t.extAddr[g] = addr;
        t.extLen[g] = len;
      } else {
        oldAddr = loc.block.extAddr[loc.i];
        oldLen = loc.block.extLen[loc.i];
        m.clearCurrent(oldAddr, oldLen);
        m.loadBlock(loc.block);
        System.arraycopy(slot, 0, m.block, m.slotOffset(loc.i), slotBytes);
        m.storeBlock(loc.block);
        loc.block.extAddr[loc.i] = addr;
        loc.block.extLen[loc.i] = len;
      }
      markCurrent(addr, len, inc);
      m.freeExtent(oldAddr, oldLen);
      log.put(key, value);
      return KvProtocol.REPLACED;
    }
    try {
      insert(t, h, slot, addr, len);
    } catch (io.ferrite.fabric.FerriteException e) {
      m.freeExtent(addr, len);
      throw e;
    }
    count++;
    markCurrent(addr, len, inc);
    log.put(key, value);
    return KvProtocol.CREATED;
  }

  /** Marks the new extent of a put (if out of line) current, now its slot is published. */
  private void markCurrent(long addr, int len, int inc) {
    if (len != 0) {
      VarHandle.releaseFence();
      m.markCurrent(addr, inc);
    }
    VarHandle.fullFence();
  }

  /**
   * Places a new pair (slot image {@code image}, hash {@code h}) in {@code table}: its home bucket
   * or the next, after hopscotch displacement if needed, else the home bucket's overflow chain.
   *
   * @throws io.ferrite.fabric.FerriteException NO_SPACE if a new overflow block does not fit
   */
  private void insert(Table table, long h, byte[] image, long addr, int len) {
    int b = HopscotchLayout.home(h, table.buckets);
    for (int x = b; x <= b + 1; x++) {
      int i = table.freeSlot(x);
      if (i >= 0) {
        putInBucket(table, x, i, image, h, addr, len);
        return;
      }
    }
    int i = displace(table, b);
    if (i >= 0) {
      putInBucket(table, b + 1, i, image, h, addr, len);
      return;
    }
    insertInChain(table, b, image, h, addr, len);
  }

  private void putInBucket(Table table, int x, int i, byte[] image, long h, long addr, int len) {
    m.loadBucket(table.region, x);
    System.arraycopy(image, 0, m.bucket, m.slotOffset(i), slotBytes);
    m.storeBucket(table.region, x);
    int g = x * BUCKET_SLOTS + i;
    table.used.set(g);
    table.hashes[g] = h;
    table.extAddr[g] = addr;
    table.extLen[g] = len;
  }

  /**
   * Hopscotch displacement towards home bucket {@code b}: finds the nearest bucket past b + 1 with
   * a free slot and a path of keys (each in its own home bucket j, so it may move to j + 1) that
   * brings the hole back to b + 1; nothing moves unless the whole path exists. Returns the freed
   * slot of b + 1, or -1.
   */
  private int displace(Table table, int b) {
    int limit = Math.min(table.buckets, b + 1 + MAX_DISTANCE);
    for (int e = b + 2; e <= limit; e++) {
      int hole = table.freeSlot(e);
      if (hole < 0) {
        continue;
      }
      int[] pick = new int[e - b - 1];
      for (int j = e - 1; j >= b + 1; j--) {
        int p = -1;
        for (int i = 0; i < BUCKET_SLOTS && p < 0; i++) {
          int g = j * BUCKET_SLOTS + i;
          if (table.used.get(g) && HopscotchLayout.home(table.hashes[g], table.buckets) == j) {
            p = i;
          }
        }
        if (p < 0) {
          // Every farther hole would need the same bucket j to give up a key: none can.
          return -1;
        }
        pick[j - b - 1] = p;
      }
      // FaRM §3.6 / hopscotch: move from the far end first, so the hole walks back to b + 1.
      for (int j = e - 1; j >= b + 1; j--) {
        int p = pick[j - b - 1];
        move(table, j, p, hole);
        hole = p;
      }
      return hole;
    }
    return -1;
  }

  /** Moves the key in slot {@code from} of bucket j to free slot {@code to} of bucket j + 1. */
  private void move(Table table, int j, int from, int to) {
    m.loadBucket(table.region, j);
    System.arraycopy(m.bucket, m.slotOffset(from), moving, 0, slotBytes);
    // j + 1 first: the key is in both buckets until j is written, never in neither.
    m.loadBucket(table.region, j + 1);
    System.arraycopy(moving, 0, m.bucket, m.slotOffset(to), slotBytes);
    putInt(m.bucket, BACK_JOINT, getInt(m.bucket, BACK_JOINT) + 1);
    m.storeBucket(table.region, j + 1);
    m.loadBucket(table.region, j);
    Arrays.fill(m.bucket, m.slotOffset(from), m.slotOffset(from) + slotBytes, (byte) 0);
    putInt(m.bucket, FWD_JOINT, getInt(m.bucket, FWD_JOINT) + 1);
    m.storeBucket(table.region, j);
    int gf = j * BUCKET_SLOTS + from;
    int gt = (j + 1) * BUCKET_SLOTS + to;
    table.used.set(gt);
    table.hashes[gt] = table.hashes[gf];
    table.extAddr[gt] = table.extAddr[gf];
    table.extLen[gt] = table.extLen[gf];
    table.used.clear(gf);
    moves++;
  }

  private void insertInChain(Table table, int b, byte[] image, long h, long addr, int len) {
    for (Block k = table.heads[b]; k != null; k = k.next) {
      int i = k.freeSlot();
      if (i >= 0) {
        m.loadBlock(k);
        System.arraycopy(image, 0, m.block, m.slotOffset(i), slotBytes);
        m.storeBlock(k);
        k.set(i, h, addr, len);
        overflowKeys++;
        return;
      }
    }
    Block k = m.allocateBlock(this::bumpEpoch, this::full);
    // The block is written whole before anything points to it, then linked at the head.
    m.loadBlock(k);
    Arrays.fill(m.block, 8, m.blockBytes, (byte) 0);
    putLong(m.block, INCARNATION, k.incarnation);
    Block head = table.heads[b];
    if (head != null) {
      HopscotchLayout.putPointer(m.block, NEXT, head.addr, head.incarnation);
    }
    System.arraycopy(image, 0, m.block, m.slotOffset(0), slotBytes);
    m.storeBlock(k);
    m.loadBucket(table.region, b);
    HopscotchLayout.putPointer(m.bucket, OVERFLOW, k.addr, k.incarnation);
    m.storeBucket(table.region, b);
    k.next = head;
    table.heads[b] = k;
    k.set(0, h, addr, len);
    overflowKeys++;
  }

  @Override
  synchronized int delete(byte[] key) {
    checkKey(key);
    Loc loc = find(KeyHash.of(key), key);
    if (loc == null) {
      return KvProtocol.MISSING;
    }
    long oldAddr;
    int oldLen;
    if (loc.block == null) {
      int g = index(loc);
      oldAddr = t.extAddr[g];
      oldLen = t.extLen[g];
      m.clearCurrent(oldAddr, oldLen);
      deleteFromBucket(loc.bucket, loc.i);
    } else {
      oldAddr = loc.block.extAddr[loc.i];
      oldLen = loc.block.extLen[loc.i];
      m.clearCurrent(oldAddr, oldLen);
      deleteFromChain(loc);
    }
    VarHandle.fullFence();
    m.freeExtent(oldAddr, oldLen);
    count--;
    log.delete(key);
    return KvProtocol.DELETED;
  }

  private void deleteFromBucket(int x, int i) {
    int g = x * BUCKET_SLOTS + i;
    Block head = x < t.buckets ? t.heads[x] : null;
    m.loadBucket(t.region, x);
    if (head == null) {
      Arrays.fill(m.bucket, m.slotOffset(i), m.slotOffset(i) + slotBytes, (byte) 0);
      m.storeBucket(t.region, x);
      t.used.clear(g);
      return;
    }
    // FaRM §3.6: pull a pair of the chain into the freed slot. Bucket first (the pair plus the
    // head's next incarnation, or the next block), then the block: a reader that holds the old
    // bucket and follows the chain finds another incarnation and restarts.
    int p = 0;
    while (!head.used[p]) {
      p++;
    }
    m.loadBlock(head);
    System.arraycopy(m.block, m.slotOffset(p), m.bucket, m.slotOffset(i), slotBytes);
    boolean emptied = head.usedCount() == 1;
    long inc = m.incarnation();
    if (emptied) {
      if (head.next == null) {
        HopscotchLayout.putNullPointer(m.bucket, OVERFLOW);
      } else {
        HopscotchLayout.putPointer(m.bucket, OVERFLOW, head.next.addr, head.next.incarnation);
      }
    } else {
      HopscotchLayout.putPointer(m.bucket, OVERFLOW, head.addr, inc);
    }
    m.storeBucket(t.region, x);
    t.hashes[g] = head.hashes[p];
    t.extAddr[g] = head.extAddr[p];
    t.extLen[g] = head.extLen[p];
    head.used[p] = false;
    overflowKeys--;
    moves++;
    if (emptied) {
      t.heads[x] = head.next;
      m.freeBlock(head);
    } else {
      head.incarnation = inc;
      m.loadBlock(head);
      Arrays.fill(m.block, m.slotOffset(p), m.slotOffset(p) + slotBytes, (byte) 0);
      putLong(m.block, INCARNATION, inc);
      m.storeBlock(head);
    }
  }

  private void deleteFromChain(Loc loc) {
    Block k = loc.block;
    m.loadBlock(k);
    Arrays.fill(m.block, m.slotOffset(loc.i), m.slotOffset(loc.i) + slotBytes, (byte) 0);
    m.storeBlock(k);
    k.used[loc.i] = false;
    overflowKeys--;
    if (k.usedCount() > 0) {
      return;
    }
    // Unlink the empty block (its predecessor skips it), then free it.
    if (loc.prev == null) {
      m.loadBucket(t.region, loc.bucket);
      if (k.next == null) {
        HopscotchLayout.putNullPointer(m.bucket, OVERFLOW);
      } else {
        HopscotchLayout.putPointer(m.bucket, OVERFLOW, k.next.addr, k.next.incarnation);
      }
      m.storeBucket(t.region, loc.bucket);
      t.heads[loc.bucket] = k.next;
    } else {
      m.loadBlock(loc.prev);
      if (k.next == null) {
        HopscotchLayout.putNullPointer(m.block, NEXT);
      } else {
        HopscotchLayout.putPointer(m.block, NEXT, k.next.addr, k.next.incarnation);
      }
      m.storeBlock(loc.prev);
      loc.prev.next = k.next;
    }
    m.freeBlock(k);
  }

  @Override
  synchronized void resize(int slots) {
    checkResize(slots);
    int buckets = HopscotchLayout.bucketsFor(slots);
    if (buckets <= t.buckets) {
      return;
    }
    Table old = t;
    Table n = newTable(buckets);
    int keptOverflow = overflowKeys;
    overflowKeys = 0;
    try {
      for (int g = old.used.nextSetBit(0); g >= 0; g = old.used.nextSetBit(g + 1)) {
        int x = g / BUCKET_SLOTS;
        old.region.readInto(
            m.bucketOffset(x) + m.slotOffset(g % BUCKET_SLOTS), ByteBuffer.wrap(slot));
        insert(n, old.hashes[g], slot.clone(), old.extAddr[g], old.extLen[g]);
      }
      for (Block head : old.heads) {
        for (Block k = head; k != null; k = k.next) {
          for (int i = 0; i < BLOCK_SLOTS; i++) {
            if (k.used[i]) {
              m.blockRegion(k).readInto(m.blockOffset(k) + m.slotOffset(i), ByteBuffer.wrap(slot));
              insert(n, k.hashes[i], slot.clone(), k.extAddr[i], k.extLen[i]);
            }
          }
        }
      }
    } catch (io.ferrite.fabric.FerriteException e) {
      // Nothing was published: give back the new array's blocks and region, keep the old array.
      for (Block head : n.heads) {
        for (Block k = head, next; k != null; k = next) {
          next = k.next;
          m.freeBlock(k);
        }
      }
      overflowKeys = keptOverflow;
      free(n.region);
      throw e;
    }
    // Publish: the epoch, then poison every old bucket (a stale reader fetches the layout), then
    // free the old chains (a reader that read an old bucket before the poison and follows its chain
    // finds another incarnation and restarts). Writes, waiting for the lock, go to the new array.
    t = n;
    bumpEpoch();
    old.region.putLongRelease(HopscotchLayout.EPOCH_OFFSET, epoch);
    VarHandle.fullFence();
    for (int x = 0; x <= old.buckets; x++) {
      m.poison(old.region, x);
    }
    VarHandle.fullFence();
    for (Block head : old.heads) {
      for (Block k = head, next; k != null; k = next) {
        next = k.next;
        m.freeBlock(k);
      }
    }
    // Every bucket of the old array is MOVED and nothing here reads it again: give its region
    // back. A reader that still holds the old layout gets NO_SUCH_REGION (tcp) or reads the
    // poison from its own mapping of the unlinked file (shm); both fetch the layout again.
    free(old.region);
    log.resize(slots);
  }

  @Override
  synchronized void forEachPair(java.util.function.BiConsumer<byte[], byte[]> f) {
    for (int g = t.used.nextSetBit(0); g >= 0; g = t.used.nextSetBit(g + 1)) {
      loadSlot(t.region, m.bucketOffset(g / BUCKET_SLOTS) + m.slotOffset(g % BUCKET_SLOTS));
      pair(t.extAddr[g], t.extLen[g], f);
    }
    for (Block head : t.heads) {
      for (Block k = head; k != null; k = k.next) {
        for (int i = 0; i < BLOCK_SLOTS; i++) {
          if (k.used[i]) {
            loadSlot(m.blockRegion(k), m.blockOffset(k) + m.slotOffset(i));
            pair(k.extAddr[i], k.extLen[i], f);
          }
        }
      }
    }
  }

  /** The pair of the slot in {@link #slot} (out of line when {@code extLen > 0}). */
  private void pair(long extAddr, int extLen, java.util.function.BiConsumer<byte[], byte[]> f) {
    if (extLen > 0) {
      byte[] e = m.readExtent(extAddr, extLen);
      f.accept(Extents.key(e), Extents.value(e));
    } else {
      int kl = HopscotchLayout.keyLength(slot, 0);
      f.accept(Arrays.copyOfRange(slot, 8, 8 + kl), HopscotchLayout.inlineValue(slot, 0));
    }
  }

  @Override
  synchronized void poisonForRetire() {
    // As a resize poisons its old array, but with nowhere new, and the chains kept: a reader that
    // copied a bucket before the poison and follows its chain still reads the frozen shard's
    // blocks and extents; one that copies a bucket after it fetches the layout. No extent is
    // current
    // any more: its pair is about to be written on the new server, so a hint to it must not answer.
    t.region.putLongRelease(HopscotchLayout.EPOCH_OFFSET, epoch | RETIRED_EPOCH);
    VarHandle.fullFence();
    for (int x = 0; x <= t.buckets; x++) {
      m.poison(t.region, x);
    }
    VarHandle.fullFence();
    for (int g = t.used.nextSetBit(0); g >= 0; g = t.used.nextSetBit(g + 1)) {
      m.clearCurrent(t.extAddr[g], t.extLen[g]);
    }
    for (Block head : t.heads) {
      for (Block k = head; k != null; k = k.next) {
        for (int i = 0; i < BLOCK_SLOTS; i++) {
          if (k.used[i]) {
            m.clearCurrent(k.extAddr[i], k.extLen[i]);
          }
        }
      }
    }
  }
}
