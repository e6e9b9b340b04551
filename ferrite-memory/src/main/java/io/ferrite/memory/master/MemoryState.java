package io.ferrite.memory.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The memory face's metadata on the master, changed only by {@link #apply}ing records (RStore
 * §III-E: namespaces, reserved chunks, allocations and their chunk locations, mapping references).
 *
 * <p>Memory comes from the kernel as blocks owned by {@link #OWNER}. A block is in exactly one
 * place: a namespace's reserve (carved into the namespace's chunks, free or bound to an allocation)
 * or the face's cache of ready blocks (§IV-B: released memory is kept and handed out again by the
 * next reserve without touching the servers).
 *
 * <p>Not thread-safe: used under the master's metadata lock only.
 *
 * <h2>Records</h2>
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
 * key   = server i32, region i32, blockOffset i64;   chunk key = key, offsetInBlock i64
 * </pre>
 *
 * <h2>Whose data a cached block holds</h2>
 *
 * The cache remembers the namespace each block was released or deleted from ({@link #cacheFrom}). A
 * reserve takes that namespace's own blocks first: they are handed back as they are, like a chunk
 * that {@code free} returns to its namespace's reserve and {@code alloc} hands out again (RStore
 * never zeroes within a namespace: it imposes no structure on the bytes, §III-C). Blocks from any
 * other namespace (or of unknown origin) are returned to the reserving client to be zeroed, exactly
 * as fresh blocks are, before the reserve returns: no bytes leak from one namespace to another
 * through the cache.
 *
 * <h2>A dead memory server</h2>
 *
 * When the master declares a server DEAD its memory may be gone. {@code SERVER_LOST} takes its
 * blocks out of every namespace's reserve (so the reserve and free-chunk counts shrink) and out of
 * the cache. An allocation with a chunk there is <em>lost</em>: it can no longer be mapped (a clear
 * error instead of locations on a dead server), only looked up and freed. The lost blocks are kept
 * out of circulation ({@link #lost}, with the namespace each came from) while an allocation,
 * retired COW generation or lease still names them, so a client holding an old mapping can never
 * write into memory the kernel has handed to someone else; once unreferenced they go back to the
 * kernel ({@code LOST_FREE}).
 *
 * <p>DEAD is not final: a server that was only paused (a GC, an overloaded VM, SIGSTOP) comes back
 * as the same process ({@link #incarnations}, random per process) with its regions and their bytes
 * intact. Then {@code SERVER_BACK} puts every lost block of it that is still held back into its
 * namespace, and the allocations on them (current chunks and retired generations) map again. A
 * different incarnation (a restarted process: nothing says what its memory holds) ends the wait
 * with {@code SERVER_GONE}: its allocations stay lost, as do those freed meanwhile (their blocks
 * went back to the kernel). A COW lease with chunks on the dead server was dropped at {@code
 * SERVER_LOST} (its publish fails {@code SESSION_EXPIRED}) and stays dropped: what comes back is
 * the last published generation.
 */
final class MemoryState {
  /** The kernel owner name of every block the memory face holds. */
  static final String OWNER = "memory";

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

  /** {@code alloc} flag: a copy-on-write allocation (§III-G). */
  static final int FLAG_COW = 1;

  /** A block's identity (its rkey and length come with the {@link BlockRef}). */
  record Key(int server, int region, long offset) implements Comparable<Key> {
    static Key of(BlockRef b) {
      return new Key(b.serverId(), b.regionId(), b.offset());
    }

    @Override
    public int compareTo(Key o) {
      int c = Integer.compare(server, o.server);
      if (c == 0) {
        c = Integer.compare(region, o.region);
      }
      return c != 0 ? c : Long.compare(offset, o.offset);
    }
  }

  /** A chunk: {@code chunkSize} bytes at {@code inBlock} within a reserved block. */
  record Chunk(Key block, long inBlock) implements Comparable<Chunk> {
    @Override
    public int compareTo(Chunk o) {
      int c = block.compareTo(o.block);
      return c != 0 ? c : Long.compare(inBlock, o.inBlock);
    }
  }

  static final class Alloc {
    final long address;
    final long length;
    final int flags;

    /** Data chunks in address order; for COW, then the metadata chunks (8 B per data chunk). */
    final List<Chunk> chunks;

    final int dataChunks;
    int maps;

    /** COW: the published generation (0 = as allocated). */
    long generation;

    /** COW: locations replaced by the publish of generation G, kept for mappings older than G. */
    final TreeMap<Long, List<Chunk>> retired = new TreeMap<>();

    /** COW: the writer lease, 0 = none. */
    long lease;

    /** Memory servers declared DEAD that held a chunk of this allocation; empty = intact. */
    final TreeSet<Integer> lostServers = new TreeSet<>();

    Alloc(long address, long length, int flags, List<Chunk> chunks, int dataChunks) {
      this.address = address;
      this.length = length;
      this.flags = flags;
      this.chunks = new ArrayList<>(chunks);
      this.dataChunks = dataChunks;
    }

    boolean cow() {
      return (flags & FLAG_COW) != 0;
    }

    boolean lost() {
      return !lostServers.isEmpty();
    }

    @Override
    public String toString() {
      return "[0x" + Long.toHexString(address) + ", +" + length + ")";
    }
  }

  static final class Ns {
    final long id;
    final String name;
    final int chunkSize;
    long nextAddress;
    int roundRobin;
    final Map<Key, BlockRef> blocks = new LinkedHashMap<>();
    final Map<Key, Integer> freeInBlock = new HashMap<>();
    final TreeMap<Integer, TreeSet<Chunk>> free = new TreeMap<>();
    final TreeMap<Long, Alloc> allocs = new TreeMap<>();
    long freeChunks;

    Ns(long id, String name, int chunkSize, long nextAddress) {
      this.id = id;
      this.name = name;
      this.chunkSize = chunkSize;
      this.nextAddress = nextAddress;
    }

    long reservedBytes() {
      long sum = 0;
      for (BlockRef b : blocks.values()) {
        sum += b.length();
      }
      return sum;
    }

    int chunksPer(BlockRef b) {
      return (int) (b.length() / chunkSize);
    }
  }

  record Mapping(
      long id,
      long session,
      long nsId,
      long allocAddress,
      long offset,
      long length,
      long generation) {}

  /**
   * A COW writer's lease on fresh chunks for data chunks {@code [first, first + chunks.size())}.
   */
  record Lease(
      long id,
      long nsId,
      long allocAddress,
      long session,
      int first,
      long deadline,
      List<Chunk> chunks) {}

  final Map<Long, Lease> leases = new TreeMap<>();
  long nextLeaseId = 1;

  final Map<Long, Ns> byId = new TreeMap<>();
  final Map<String, Ns> byName = new HashMap<>();
  final Map<Key, BlockRef> cache = new LinkedHashMap<>();

  /** The namespace a cached block was last reserved by; absent = unknown (treated as foreign). */
  final Map<Key, Long> cacheFrom = new HashMap<>();

  /** Blocks of dead servers still named by an allocation, retired generation or lease. */
  final Map<Key, BlockRef> lost = new LinkedHashMap<>();

  /** The namespace a lost block was taken from (absent: the cache, or unknown). */
  final Map<Key, Long> lostFrom = new HashMap<>();

  /** Per server, the incarnation (process) that registered last; absent: unknown. */
  final Map<Integer, Long> incarnations = new TreeMap<>();

  /** Per dead server whose blocks may come back, the incarnation that must return with them. */
  final Map<Integer, Long> awaited = new TreeMap<>();

  final Map<Long, Mapping> mappings = new TreeMap<>();
  long nextNsId = 1;
  long nextMapId = 1;

  // ---------------------------------------------------------------- lookups (with clear errors)

  Ns ns(long id) {
    Ns n = byId.get(id);
    if (n == null) {
      throw new FerriteException(
          ErrorCode.NOT_FOUND, "no namespace with id " + id + " (deleted, or never created)");
    }
    return n;
  }

  Ns ns(String name) {
    Ns n = byName.get(name);
    if (n == null) {
      throw new FerriteException(ErrorCode.NOT_FOUND, "no namespace '" + name + "'");
    }
    return n;
  }

  /** The allocation holding {@code [address, address + length)}. */
  static Alloc allocFor(Ns ns, long address, long length) {
    Map.Entry<Long, Alloc> e = ns.allocs.floorEntry(address);
    Alloc a = e == null ? null : e.getValue();
    if (a == null || address - a.address >= a.length) {
      throw new FerriteException(
          ErrorCode.NOT_FOUND,
          "address 0x"
              + Long.toHexString(address)
              + " is not allocated in namespace '"
              + ns.name
              + "'"
              + (a == null ? "" : " (nearest allocation below: " + a + ")"));
    }
    if (length < 0 || length > a.length - (address - a.address)) {
      throw new FerriteException(
          ErrorCode.OUT_OF_BOUNDS,
          "range 0x"
              + Long.toHexString(address)
              + " +"
              + length
              + " (expected: within allocation "
              + a
              + " of namespace '"
              + ns.name
              + "')");
    }
    return a;
  }

  /**
   * Fails for an allocation that lost chunks with a dead memory server: its data cannot be read or
   * written any more (it can still be looked up, to be freed).
   */
  void checkIntact(Ns ns, Alloc a) {
    if (a.lost() && awaited.keySet().containsAll(a.lostServers)) {
      throw new FerriteException(
          ErrorCode.NOT_FOUND,
          "allocation "
              + a
              + " of namespace '"
              + ns.name
              + "' lost its data for now: memory server(s) "
              + a.lostServers
              + " holding some of its chunks were declared DEAD and may come back (if the same"
              + " server process returns with its memory, after a pause, the allocation maps again;"
              + " if it was restarted, its data is gone: free it and allocate again)");
    }
    if (a.lost()) {
      throw new FerriteException(
          ErrorCode.NOT_FOUND,
          "allocation "
              + a
              + " of namespace '"
              + ns.name
              + "' lost its data: memory server(s) "
              + a.lostServers
              + " holding some of its chunks were declared DEAD (free it and allocate again)");
    }
  }

  /**
   * COW: retired generations of {@code a} that no mapping needs any more (every mapping of the
   * allocation is at that generation or newer).
   */
  List<Long> reclaimable(Ns ns, Alloc a) {
    long oldest = Long.MAX_VALUE;
    for (Mapping m : mappings.values()) {
      if (m.nsId == ns.id && m.allocAddress == a.address) {
        oldest = Math.min(oldest, m.generation);
      }
    }
    List<Long> out = new ArrayList<>();
    for (long g : a.retired.keySet()) {
      if (g <= oldest) {
        out.add(g);
      }
    }
    return out;
  }

  int mappingsOf(Ns ns) {
    int n = 0;
    for (Alloc a : ns.allocs.values()) {
      n += a.maps;
    }
    return n;
  }

  // ---------------------------------------------------------------- records

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
    Wire.Writer w =
        new Wire.Writer(32 + chunks.size() * 24)
            .u8(ALLOC)
            .i64(nsId)
            .i64(address)
            .i64(length)
            .i32(flags)
            .i32(chunks.size());
    for (Chunk c : chunks) {
      key(w, c.block).i64(c.inBlock);
    }
    return w.toArray();
  }

  static byte[] free(long nsId, long address) {
    return new Wire.Writer().u8(FREE).i64(nsId).i64(address).toArray();
  }

  static byte[] map(Mapping m) {
    return new Wire.Writer()
        .u8(MAP)
        .i64(m.id)
        .i64(m.session)
        .i64(m.nsId)
        .i64(m.allocAddress)
        .i64(m.offset)
        .i64(m.length)
        .i64(m.generation)
        .toArray();
  }

  static byte[] pending(Lease l) {
    Wire.Writer w =
        new Wire.Writer()
            .u8(PENDING)
            .i64(l.id)
            .i64(l.nsId)
            .i64(l.allocAddress)
            .i64(l.session)
            .i32(l.first)
            .i64(l.deadline);
    return chunks(w, l.chunks).toArray();
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
      key(w, c.block).i64(c.inBlock);
    }
    return w;
  }

  private static List<Chunk> readChunks(Wire.Reader r) {
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
    return w.i32(k.server).i32(k.region).i64(k.offset);
  }

  private static Wire.Writer keys(Wire.Writer w, List<Key> keys) {
    w.i32(keys.size());
    for (Key k : keys) {
      key(w, k);
    }
    return w;
  }

  private static Key readKey(Wire.Reader r) {
    return new Key(r.i32("server"), r.i32("region"), r.i64("blockOffset"));
  }

  private static List<Key> readKeys(Wire.Reader r) {
    int n = r.count("keys", Integer.MAX_VALUE);
    List<Key> out = new ArrayList<>(Math.min(n, 4096));
    for (int i = 0; i < n; i++) {
      out.add(readKey(r));
    }
    return out;
  }

  /** Applies one record; deterministic, and never fails on a record that was once accepted. */
  void apply(ByteBuffer record) {
    Wire.Reader r = new Wire.Reader(record, "memory record");
    int type = r.u8("type");
    switch (type) {
      case NS_CREATE -> {
        long id = r.i64("id");
        String name = r.str("name");
        int chunkSize = r.i32("chunkSize");
        long next = r.i64("nextAddress");
        Ns ns = new Ns(id, name, chunkSize, next);
        byId.put(id, ns);
        byName.put(name, ns);
        nextNsId = Math.max(nextNsId, id + 1);
      }
      case NS_DELETE -> {
        Ns ns = byId.remove(r.i64("id"));
        if (ns != null) {
          byName.remove(ns.name);
          mappings.values().removeIf(m -> m.nsId == ns.id);
          cache.putAll(ns.blocks);
          for (Key k : ns.blocks.keySet()) {
            cacheFrom.put(k, ns.id);
          }
        }
      }
      case RESERVE -> {
        Ns ns = byId.get(r.i64("nsId"));
        for (BlockRef b : MasterProtocol.readBlocks(r)) {
          Key k = Key.of(b);
          cache.remove(k);
          cacheFrom.remove(k);
          if (ns != null) {
            addBlock(ns, k, b);
          }
        }
      }
      case RELEASE -> {
        Ns ns = byId.get(r.i64("nsId"));
        for (Key k : readKeys(r)) {
          if (ns != null) {
            BlockRef b = removeBlock(ns, k);
            if (b != null) {
              cache.put(k, b);
              cacheFrom.put(k, ns.id);
            }
          }
        }
      }
      case CACHE_ADD -> {
        for (BlockRef b : MasterProtocol.readBlocks(r)) {
          cache.put(Key.of(b), b);
          cacheFrom.remove(Key.of(b));
        }
      }
      case CACHE_FROM -> {
        long from = r.i64("nsId");
        for (BlockRef b : MasterProtocol.readBlocks(r)) {
          cache.put(Key.of(b), b);
          cacheFrom.put(Key.of(b), from);
        }
      }
      case CACHE_DROP -> {
        for (Key k : readKeys(r)) {
          cache.remove(k);
          cacheFrom.remove(k);
        }
      }
      case SERVER_LOST -> {
        int server = r.i32("serverId");
        long incarnation = r.remaining() >= 8 ? r.i64("incarnation") : 0;
        applyServerLost(server, incarnation);
      }
      case LOST_ADD -> {
        for (BlockRef b : MasterProtocol.readBlocks(r)) {
          lost.put(Key.of(b), b);
        }
      }
      case LOST_FROM -> {
        long from = r.i64("nsId");
        for (BlockRef b : MasterProtocol.readBlocks(r)) {
          lost.put(Key.of(b), b);
          lostFrom.put(Key.of(b), from);
        }
      }
      case LOST_FREE -> {
        for (Key k : readKeys(r)) {
          lost.remove(k);
          lostFrom.remove(k);
        }
      }
      case SERVER_SEEN -> {
        int server = r.i32("serverId");
        incarnations.put(server, r.i64("incarnation"));
      }
      case SERVER_BACK -> applyServerBack(r.i32("serverId"));
      case SERVER_GONE -> awaited.remove(r.i32("serverId"));
      case ALLOC -> {
        Ns ns = byId.get(r.i64("nsId"));
        long address = r.i64("address");
        long length = r.i64("length");
        int flags = r.i32("flags");
        int n = r.count("chunks", Integer.MAX_VALUE);
        List<Chunk> chunks = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          chunks.add(new Chunk(readKey(r), r.i64("inBlock")));
        }
        if (ns != null) {
          for (Chunk c : chunks) {
            takeChunk(ns, c);
          }
          int data = (int) ((length + ns.chunkSize - 1) / ns.chunkSize);
          Alloc a = new Alloc(address, length, flags, chunks, data);
          for (Chunk c : chunks) {
            if (!ns.blocks.containsKey(c.block)) {
              a.lostServers.add(c.block.server); // replayed from a snapshot taken after a loss
            }
          }
          ns.allocs.put(address, a);
          long span = (long) n * ns.chunkSize;
          ns.nextAddress = Math.max(ns.nextAddress, address + span);
        }
      }
      case FREE -> {
        Ns ns = byId.get(r.i64("nsId"));
        long address = r.i64("address");
        Alloc a = ns == null ? null : ns.allocs.remove(address);
        if (a != null) {
          for (Chunk c : a.chunks) {
            giveChunk(ns, c);
          }
          for (List<Chunk> old : a.retired.values()) {
            old.forEach(c -> giveChunk(ns, c));
          }
          Lease l = leases.remove(a.lease);
          if (l != null) {
            l.chunks.forEach(c -> giveChunk(ns, c));
          }
          mappings.values().removeIf(m -> m.nsId == ns.id && m.allocAddress == address);
        }
      }
      case MAP -> {
        Mapping m =
            new Mapping(
                r.i64("mapId"),
                r.i64("session"),
                r.i64("nsId"),
                r.i64("allocAddress"),
                r.i64("offset"),
                r.i64("length"),
                r.i64("generation"));
        Ns ns = byId.get(m.nsId);
        Alloc a = ns == null ? null : ns.allocs.get(m.allocAddress);
        if (a != null) {
          a.maps++;
          mappings.put(m.id, m);
        }
        nextMapId = Math.max(nextMapId, m.id + 1);
      }
      case UNMAP -> {
        Mapping m = mappings.remove(r.i64("mapId"));
        if (m != null) {
          Ns ns = byId.get(m.nsId);
          Alloc a = ns == null ? null : ns.allocs.get(m.allocAddress);
          if (a != null) {
            a.maps--;
          }
        }
      }
      case PENDING -> {
        long id = r.i64("leaseId");
        long nsId = r.i64("nsId");
        long address = r.i64("allocAddress");
        long session = r.i64("session");
        int first = r.i32("first");
        long deadline = r.i64("deadline");
        List<Chunk> chunks = readChunks(r);
        Ns ns = byId.get(nsId);
        Alloc a = ns == null ? null : ns.allocs.get(address);
        if (a != null) {
          chunks.forEach(c -> takeChunk(ns, c));
          leases.put(id, new Lease(id, nsId, address, session, first, deadline, chunks));
          a.lease = id;
        }
        nextLeaseId = Math.max(nextLeaseId, id + 1);
      }
      case PUBLISH -> {
        Lease l = leases.remove(r.i64("leaseId"));
        long generation = r.i64("generation");
        Ns ns = l == null ? null : byId.get(l.nsId);
        Alloc a = ns == null ? null : ns.allocs.get(l.allocAddress);
        if (a != null) {
          List<Chunk> old = new ArrayList<>();
          for (int i = 0; i < l.chunks.size(); i++) {
            old.add(a.chunks.set(l.first + i, l.chunks.get(i)));
          }
          a.retired.put(generation, old);
          a.generation = generation;
          a.lease = 0;
        }
      }
      case ABORT -> {
        Lease l = leases.remove(r.i64("leaseId"));
        Ns ns = l == null ? null : byId.get(l.nsId);
        Alloc a = ns == null ? null : ns.allocs.get(l.allocAddress);
        if (a != null) {
          l.chunks.forEach(c -> giveChunk(ns, c));
          a.lease = 0;
        }
      }
      case RECLAIM -> {
        Ns ns = byId.get(r.i64("nsId"));
        Alloc a = ns == null ? null : ns.allocs.get(r.i64("allocAddress"));
        long generation = r.i64("generation");
        List<Chunk> old = a == null ? null : a.retired.remove(generation);
        if (old != null) {
          old.forEach(c -> giveChunk(ns, c));
        }
      }
      case COW_STATE -> {
        Ns ns = byId.get(r.i64("nsId"));
        Alloc a = ns == null ? null : ns.allocs.get(r.i64("allocAddress"));
        long generation = r.i64("generation");
        int n = r.count("retired", Integer.MAX_VALUE);
        for (int i = 0; i < n; i++) {
          long g = r.i64("retiredGeneration");
          List<Chunk> old = readChunks(r);
          if (a != null) {
            old.forEach(c -> takeChunk(ns, c));
            a.retired.put(g, old);
          }
        }
        if (a != null) {
          a.generation = generation;
        }
      }
      default ->
          throw new FerriteException(
              ErrorCode.INVALID_ARGUMENT, "memory record type: " + type + " (expected: 1 to 23)");
    }
    r.end();
  }

  /** Applies {@code SERVER_LOST}: see the class comment. */
  private void applyServerLost(int server, long incarnation) {
    if (incarnation != 0) {
      awaited.put(server, incarnation);
    } else {
      awaited.remove(server);
    }
    for (Ns ns : byId.values()) {
      List<Key> gone = new ArrayList<>();
      for (Key k : ns.blocks.keySet()) {
        if (k.server == server) {
          gone.add(k);
        }
      }
      if (gone.isEmpty()) {
        continue;
      }
      for (Key k : gone) {
        lost.put(k, removeBlock(ns, k));
        lostFrom.put(k, ns.id);
      }
      for (Alloc a : ns.allocs.values()) {
        for (Chunk c : a.chunks) {
          if (c.block.server == server) {
            a.lostServers.add(server);
            break;
          }
        }
      }
      // A COW writer's lease on chunks there can never be published: drop it (its publish fails
      // SESSION_EXPIRED, so the writer retries on live servers).
      for (Lease l : List.copyOf(leases.values())) {
        if (l.nsId == ns.id && l.chunks.stream().anyMatch(c -> c.block.server == server)) {
          leases.remove(l.id);
          Alloc a = ns.allocs.get(l.allocAddress);
          if (a != null) {
            a.lease = 0;
          }
          l.chunks.forEach(c -> giveChunk(ns, c));
        }
      }
    }
    for (Key k : List.copyOf(cache.keySet())) {
      if (k.server == server) {
        lost.put(k, cache.remove(k));
        cacheFrom.remove(k);
      }
    }
  }

  /**
   * Applies {@code SERVER_BACK}: every lost block of {@code server} whose namespace still exists
   * goes back into it; the chunks allocations name there (current and retired generations) are
   * taken again, the rest are free; allocations whose chunks on it are all back are intact again.
   */
  private void applyServerBack(int server) {
    awaited.remove(server);
    java.util.Set<Ns> touched = new java.util.LinkedHashSet<>();
    for (Key k : List.copyOf(lost.keySet())) {
      Long from = lostFrom.get(k);
      Ns ns = k.server != server || from == null ? null : byId.get(from);
      if (ns != null) {
        addBlock(ns, k, lost.remove(k));
        lostFrom.remove(k);
        touched.add(ns);
      }
    }
    for (Ns ns : touched) {
      for (Alloc a : ns.allocs.values()) {
        boolean whole = true;
        for (Chunk c : a.chunks) {
          if (c.block.server == server) {
            takeChunk(ns, c);
            whole &= ns.blocks.containsKey(c.block);
          }
        }
        for (List<Chunk> old : a.retired.values()) {
          for (Chunk c : old) {
            if (c.block.server == server) {
              takeChunk(ns, c);
            }
          }
        }
        if (whole) {
          a.lostServers.remove(server);
        }
      }
    }
  }

  /** The lost blocks of {@code server}. */
  List<BlockRef> lostOn(int server) {
    List<BlockRef> out = new ArrayList<>();
    for (Map.Entry<Key, BlockRef> e : lost.entrySet()) {
      if (e.getKey().server == server) {
        out.add(e.getValue());
      }
    }
    return out;
  }

  /** Whether any namespace or the cache holds a block of {@code server}. */
  boolean holdsBlocksOf(int server) {
    for (Key k : cache.keySet()) {
      if (k.server == server) {
        return true;
      }
    }
    for (Ns ns : byId.values()) {
      for (Key k : ns.blocks.keySet()) {
        if (k.server == server) {
          return true;
        }
      }
    }
    return false;
  }

  /** Lost blocks that no allocation, retired generation or lease names any more. */
  List<BlockRef> unreferencedLost() {
    if (lost.isEmpty()) {
      return List.of();
    }
    java.util.Set<Key> named = new java.util.HashSet<>();
    for (Ns ns : byId.values()) {
      for (Alloc a : ns.allocs.values()) {
        if (a.lost()) {
          a.chunks.forEach(c -> named.add(c.block));
        }
        a.retired.values().forEach(old -> old.forEach(c -> named.add(c.block)));
      }
    }
    for (Lease l : leases.values()) {
      l.chunks.forEach(c -> named.add(c.block));
    }
    List<BlockRef> out = new ArrayList<>();
    for (Map.Entry<Key, BlockRef> e : lost.entrySet()) {
      if (!named.contains(e.getKey())) {
        out.add(e.getValue());
      }
    }
    return out;
  }

  private void addBlock(Ns ns, Key k, BlockRef b) {
    if (ns.blocks.putIfAbsent(k, b) != null) {
      return;
    }
    int per = ns.chunksPer(b);
    TreeSet<Chunk> set = ns.free.computeIfAbsent(k.server, s -> new TreeSet<>());
    for (int i = 0; i < per; i++) {
      set.add(new Chunk(k, (long) i * ns.chunkSize));
    }
    ns.freeInBlock.put(k, per);
    ns.freeChunks += per;
  }

  private BlockRef removeBlock(Ns ns, Key k) {
    BlockRef b = ns.blocks.remove(k);
    if (b == null) {
      return null;
    }
    int per = ns.chunksPer(b);
    TreeSet<Chunk> set = ns.free.get(k.server);
    for (int i = 0; i < per; i++) {
      if (set != null && set.remove(new Chunk(k, (long) i * ns.chunkSize))) {
        ns.freeChunks--;
      }
    }
    if (set != null && set.isEmpty()) {
      ns.free.remove(k.server);
    }
    ns.freeInBlock.remove(k);
    return b;
  }

  private static void takeChunk(Ns ns, Chunk c) {
    TreeSet<Chunk> set = ns.free.get(c.block.server);
    if (set != null && set.remove(c)) {
      ns.freeChunks--;
      ns.freeInBlock.merge(c.block, -1, Integer::sum);
      if (set.isEmpty()) {
        ns.free.remove(c.block.server);
      }
    }
  }

  private static void giveChunk(Ns ns, Chunk c) {
    if (!ns.blocks.containsKey(c.block)) {
      return;
    }
    if (ns.free.computeIfAbsent(c.block.server, s -> new TreeSet<>()).add(c)) {
      ns.freeChunks++;
      ns.freeInBlock.merge(c.block, 1, Integer::sum);
    }
  }

  /** Records that rebuild this state from empty. */
  List<byte[]> snapshot() {
    List<byte[]> out = new ArrayList<>();
    Map<Long, List<BlockRef>> byFrom = new TreeMap<>();
    List<BlockRef> unknown = new ArrayList<>();
    for (Map.Entry<Key, BlockRef> e : cache.entrySet()) {
      Long from = cacheFrom.get(e.getKey());
      if (from == null) {
        unknown.add(e.getValue());
      } else {
        byFrom.computeIfAbsent(from, f -> new ArrayList<>()).add(e.getValue());
      }
    }
    if (!unknown.isEmpty()) {
      out.add(cacheAdd(unknown));
    }
    byFrom.forEach((from, blocks) -> out.add(cacheFrom(from, blocks)));
    incarnations.forEach((server, inc) -> out.add(serverSeen(server, inc)));
    // Applied to an empty state, SERVER_LOST only records the incarnation awaited.
    awaited.forEach((server, inc) -> out.add(serverLost(server, inc)));
    Map<Long, List<BlockRef>> lostByFrom = new TreeMap<>();
    List<BlockRef> lostUnknown = new ArrayList<>();
    for (Map.Entry<Key, BlockRef> e : lost.entrySet()) {
      Long from = lostFrom.get(e.getKey());
      if (from == null) {
        lostUnknown.add(e.getValue());
      } else {
        lostByFrom.computeIfAbsent(from, f -> new ArrayList<>()).add(e.getValue());
      }
    }
    if (!lostUnknown.isEmpty()) {
      out.add(lostAdd(lostUnknown));
    }
    lostByFrom.forEach((from, blocks) -> out.add(lostFrom(from, blocks)));
    for (Ns ns : byId.values()) {
      out.add(nsCreate(ns.id, ns.name, ns.chunkSize, ns.nextAddress));
      out.add(reserve(ns.id, List.copyOf(ns.blocks.values())));
      for (Alloc a : ns.allocs.values()) {
        out.add(alloc(ns.id, a.address, a.length, a.flags, a.chunks));
        if (a.cow()) {
          out.add(cowState(ns.id, a));
        }
      }
    }
    for (Mapping m : mappings.values()) {
      out.add(map(m));
    }
    for (Lease l : leases.values()) {
      out.add(pending(l));
    }
    return out;
  }

  // ---------------------------------------------------------------- decisions (no side effects)

  /** Picks {@code n} free chunks of {@code ns}, one server after the other (striping, §III-C). */
  List<Chunk> pickChunks(Ns ns, int n) {
    List<Chunk> out = new ArrayList<>(n);
    List<Integer> servers = new ArrayList<>(ns.free.keySet());
    Map<Integer, java.util.Iterator<Chunk>> its = new HashMap<>();
    for (Integer s : servers) {
      its.put(s, ns.free.get(s).iterator());
    }
    int i = Math.floorMod(ns.roundRobin, Math.max(1, servers.size()));
    while (out.size() < n && !its.isEmpty()) {
      Integer s = servers.get(i % servers.size());
      java.util.Iterator<Chunk> it = its.get(s);
      if (it != null) {
        if (it.hasNext()) {
          out.add(it.next());
        } else {
          its.remove(s);
        }
      }
      i++;
    }
    ns.roundRobin = i;
    return out;
  }

  /** Whole blocks of {@code ns} with no chunk allocated, up to {@code n}. */
  List<Key> freeBlocks(Ns ns, int n) {
    List<Key> out = new ArrayList<>();
    for (Map.Entry<Key, Integer> e : ns.freeInBlock.entrySet()) {
      if (out.size() == n) {
        break;
      }
      if (e.getValue() == ns.chunksPer(ns.blocks.get(e.getKey()))) {
        out.add(e.getKey());
      }
    }
    out.sort(null);
    return out;
  }
}
