package io.ferrite.memory.master;

import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.Wire;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The memory face's journal records: their types, layouts and encoders (decoded by {@link
 * MemoryState#apply}).
 *
 * <pre>
 * 1 NS_CREATE   id i64, name str, chunkSize i32, nextAddress i64
 * 2 NS_DELETE   id i64                        (its blocks go to the cache)
 * 3 RESERVE     nsId i64, blocks              (taken from the cache if there, else fresh)
 * 4 RELEASE     nsId i64, keys                (whole free blocks go to the cache)
 * 5 CACHE_ADD   blocks
 * 6 CACHE_DROP  keys                          (given back to the kernel)
 * 7 ALLOC       nsId i64, address i64, length i64, flags i32, count i32, count x chunk key
 * 8 FREE        nsId i64, address i64
 * 9 MAP         mapId i64, session i64, nsId i64, allocAddress i64, offset i64, length i64
 * 10 UNMAP      mapId i64
 * 11 PENDING    leaseId i64, nsId i64, allocAddress i64, session i64, first i32, deadline i64,
 *               count i32, count x chunk key    (a COW writer's fresh chunks, not yet visible)
 * 12 PUBLISH    leaseId i64, generation i64     (swap them in; the old ones retire)
 * 13 ABORT      leaseId i64                     (the writer died or gave up: chunks are freed)
 * 14 RECLAIM    nsId i64, allocAddress i64, generation i64   (retired chunks nobody maps)
 * 15 COW_STATE  nsId i64, allocAddress i64, generation i64, retired count i32, per retired:
 *               generation i64, count i32, chunk keys     (snapshots only)
 * 16 CACHE_FROM nsId i64, blocks              (cached blocks last reserved by namespace nsId)
 * 17 SERVER_LOST serverId i32 [incarnation i64] (declared DEAD: its blocks leave every
 *                                               namespace and the cache; allocations on them are
 *                                               lost until that incarnation comes back; 0 or
 *                                               absent: for good)
 * 18 LOST_ADD   blocks                        (snapshots only: lost blocks of unknown origin)
 * 19 LOST_FREE  keys                          (lost blocks nobody references: back to the kernel)
 * 20 SERVER_SEEN serverId i32, incarnation i64 (the server process that registered last)
 * 21 SERVER_BACK serverId i32                 (the lost incarnation re-registered with its
 *                                               regions: its blocks go back where they were)
 * 22 SERVER_GONE serverId i32                 (another incarnation registered: what it held is
 *                                               lost for good)
 * 23 LOST_FROM  nsId i64, blocks              (snapshots only: lost blocks of namespace nsId)
 * 24 BLOCKS_LOST blocks                       (the kernel declared them lost, or does not list
 *                                               them at start: they leave the cache, every
 *                                               reserve and the dead servers' held blocks;
 *                                               allocations with a chunk there are lost for good)
 * 25 ALLOC_LOST as ALLOC, then keys           (snapshots only: an allocation whose chunks in
 *                                               those blocks are lost; it takes only the others)
 * key   = server i32, region i32, blockOffset i64;   chunk key = key, offsetInBlock i64
 * </pre>
 */
final class MemoryRecords {
  private MemoryRecords() {}

  static final int NS_CREATE = 1;
  static final int NS_DELETE = 2;
  static final int RESERVE = 3;
  static final int RELEASE = 4;
  static final int CACHE_ADD = 5;
  static final int CACHE_DROP = 6;
  static final int ALLOC = 7;
  static final int FREE = 8;
  static final int MAP = 9;
  static final int UNMAP = 10;
  static final int PENDING = 11;
  static final int PUBLISH = 12;
  static final int ABORT = 13;
  static final int RECLAIM = 14;
  static final int COW_STATE = 15;
  static final int CACHE_FROM = 16;
  static final int SERVER_LOST = 17;
  static final int LOST_ADD = 18;
  static final int LOST_FREE = 19;
  static final int SERVER_SEEN = 20;
  static final int SERVER_BACK = 21;
  static final int SERVER_GONE = 22;
  static final int LOST_FROM = 23;
  static final int BLOCKS_LOST = 24;
  static final int ALLOC_LOST = 25;

  static byte[] blocksLost(List<BlockRef> blocks) {
    Wire.Writer w = new Wire.Writer().u8(BLOCKS_LOST);
    MasterProtocol.writeBlocks(w, blocks);
    return w.toArray();
  }

  /** An ALLOC record of {@code a} as a snapshot writes it: ALLOC_LOST when it lost blocks. */
  static byte[] allocOf(long nsId, Alloc a) {
    if (a.lostBlocks.isEmpty()) {
      return alloc(nsId, a.address, a.length, a.flags, a.chunks);
    }
    Wire.Writer w = allocWriter(ALLOC_LOST, nsId, a.address, a.length, a.flags, a.chunks);
    return keys(w, List.copyOf(a.lostBlocks)).toArray();
  }

  static byte[] nsCreate(long id, String name, int chunkSize, long nextAddress) {
    return new Wire.Writer()
        .u8(NS_CREATE)
        .i64(id)
        .str(name)
        .i32(chunkSize)
        .i64(nextAddress)
        .toArray();
  }

  static byte[] nsDelete(long id) {
    return new Wire.Writer().u8(NS_DELETE).i64(id).toArray();
  }

  static byte[] reserve(long nsId, List<BlockRef> blocks) {
    Wire.Writer w = new Wire.Writer().u8(RESERVE).i64(nsId);
    MasterProtocol.writeBlocks(w, blocks);
    return w.toArray();
  }

  static byte[] release(long nsId, List<Key> keys) {
    return keys(new Wire.Writer().u8(RELEASE).i64(nsId), keys).toArray();
  }

  static byte[] cacheAdd(List<BlockRef> blocks) {
    Wire.Writer w = new Wire.Writer().u8(CACHE_ADD);
    MasterProtocol.writeBlocks(w, blocks);
    return w.toArray();
  }

  static byte[] cacheFrom(long nsId, List<BlockRef> blocks) {
    Wire.Writer w = new Wire.Writer().u8(CACHE_FROM).i64(nsId);
    MasterProtocol.writeBlocks(w, blocks);
    return w.toArray();
  }

  static byte[] serverLost(int serverId, long incarnation) {
    return new Wire.Writer().u8(SERVER_LOST).i32(serverId).i64(incarnation).toArray();
  }

  static byte[] serverSeen(int serverId, long incarnation) {
    return new Wire.Writer().u8(SERVER_SEEN).i32(serverId).i64(incarnation).toArray();
  }

  static byte[] serverBack(int serverId) {
    return new Wire.Writer().u8(SERVER_BACK).i32(serverId).toArray();
  }

  static byte[] serverGone(int serverId) {
    return new Wire.Writer().u8(SERVER_GONE).i32(serverId).toArray();
  }

  static byte[] lostFrom(long nsId, List<BlockRef> blocks) {
    Wire.Writer w = new Wire.Writer().u8(LOST_FROM).i64(nsId);
    MasterProtocol.writeBlocks(w, blocks);
    return w.toArray();
  }

  static byte[] lostAdd(List<BlockRef> blocks) {
    Wire.Writer w = new Wire.Writer().u8(LOST_ADD);
    MasterProtocol.writeBlocks(w, blocks);
    return w.toArray();
  }

  static byte[] lostFree(List<Key> keys) {
    return keys(new Wire.Writer().u8(LOST_FREE), keys).toArray();
  }

  static byte[] cacheDrop(List<Key> keys) {
    return keys(new Wire.Writer().u8(CACHE_DROP), keys).toArray();
  }

  static byte[] alloc(long nsId, long address, long length, int flags, List<Chunk> chunks) {
    return allocWriter(ALLOC, nsId, address, length, flags, chunks).toArray();
  }

  private static Wire.Writer allocWriter(
      int type, long nsId, long address, long length, int flags, List<Chunk> chunks) {
    Wire.Writer w =
        new Wire.Writer(32 + chunks.size() * 24)
            .u8(type)
            .i64(nsId)
            .i64(address)
            .i64(length)
            .i32(flags)
            .i32(chunks.size());
    for (Chunk c : chunks) {
      key(w, c.block()).i64(c.inBlock());
    }
    return w;
  }

  static byte[] free(long nsId, long address) {
    return new Wire.Writer().u8(FREE).i64(nsId).i64(address).toArray();
  }

  static byte[] map(MemoryState.Mapping m) {
    return new Wire.Writer()
        .u8(MAP)
        .i64(m.id())
        .i64(m.session())
        .i64(m.nsId())
        .i64(m.allocAddress())
        .i64(m.offset())
        .i64(m.length())
        .i64(m.generation())
        .toArray();
  }

  static byte[] pending(MemoryState.Lease l) {
    Wire.Writer w =
        new Wire.Writer()
            .u8(PENDING)
            .i64(l.id())
            .i64(l.nsId())
            .i64(l.allocAddress())
            .i64(l.session())
            .i32(l.first())
            .i64(l.deadline());
    return chunks(w, l.chunks()).toArray();
  }

  static byte[] publish(long leaseId, long generation) {
    return new Wire.Writer().u8(PUBLISH).i64(leaseId).i64(generation).toArray();
  }

  static byte[] abort(long leaseId) {
    return new Wire.Writer().u8(ABORT).i64(leaseId).toArray();
  }

  static byte[] reclaim(long nsId, long allocAddress, long generation) {
    return new Wire.Writer().u8(RECLAIM).i64(nsId).i64(allocAddress).i64(generation).toArray();
  }

  static byte[] cowState(long nsId, Alloc a) {
    Wire.Writer w =
        new Wire.Writer()
            .u8(COW_STATE)
            .i64(nsId)
            .i64(a.address)
            .i64(a.generation)
            .i32(a.retired.size());
    for (Map.Entry<Long, List<Chunk>> e : a.retired.entrySet()) {
      chunks(w.i64(e.getKey()), e.getValue());
    }
    return w.toArray();
  }

  private static Wire.Writer chunks(Wire.Writer w, List<Chunk> chunks) {
    w.i32(chunks.size());
    for (Chunk c : chunks) {
      key(w, c.block()).i64(c.inBlock());
    }
    return w;
  }

  static List<Chunk> readChunks(Wire.Reader r) {
    int n = r.count("chunks", Integer.MAX_VALUE);
    List<Chunk> out = new ArrayList<>(Math.min(n, 4096));
    for (int i = 0; i < n; i++) {
      out.add(new Chunk(readKey(r), r.i64("inBlock")));
    }
    return out;
  }

  static byte[] unmap(long mapId) {
    return new Wire.Writer().u8(UNMAP).i64(mapId).toArray();
  }

  private static Wire.Writer key(Wire.Writer w, Key k) {
    return w.i32(k.server()).i32(k.region()).i64(k.offset());
  }

  private static Wire.Writer keys(Wire.Writer w, List<Key> keys) {
    w.i32(keys.size());
    for (Key k : keys) {
      key(w, k);
    }
    return w;
  }

  static Key readKey(Wire.Reader r) {
    return new Key(r.i32("server"), r.i32("region"), r.i64("blockOffset"));
  }

  static List<Key> readKeys(Wire.Reader r) {
    int n = r.count("keys", Integer.MAX_VALUE);
    List<Key> out = new ArrayList<>(Math.min(n, 4096));
    for (int i = 0; i < n; i++) {
      out.add(readKey(r));
    }
    return out;
  }
}
