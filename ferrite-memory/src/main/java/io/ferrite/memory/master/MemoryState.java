package io.ferrite.memory.master;

import static io.ferrite.memory.master.MemoryRecords.ABORT;
import static io.ferrite.memory.master.MemoryRecords.ALLOC;
import static io.ferrite.memory.master.MemoryRecords.ALLOC_LOST;
import static io.ferrite.memory.master.MemoryRecords.BLOCKS_LOST;
import static io.ferrite.memory.master.MemoryRecords.CACHE_ADD;
import static io.ferrite.memory.master.MemoryRecords.CACHE_DROP;
import static io.ferrite.memory.master.MemoryRecords.CACHE_FROM;
import static io.ferrite.memory.master.MemoryRecords.COW_STATE;
import static io.ferrite.memory.master.MemoryRecords.FREE;
import static io.ferrite.memory.master.MemoryRecords.LOST_ADD;
import static io.ferrite.memory.master.MemoryRecords.LOST_FREE;
import static io.ferrite.memory.master.MemoryRecords.LOST_FROM;
import static io.ferrite.memory.master.MemoryRecords.MAP;
import static io.ferrite.memory.master.MemoryRecords.NS_CREATE;
import static io.ferrite.memory.master.MemoryRecords.NS_DELETE;
import static io.ferrite.memory.master.MemoryRecords.PENDING;
import static io.ferrite.memory.master.MemoryRecords.PUBLISH;
import static io.ferrite.memory.master.MemoryRecords.RECLAIM;
import static io.ferrite.memory.master.MemoryRecords.RELEASE;
import static io.ferrite.memory.master.MemoryRecords.RESERVE;
import static io.ferrite.memory.master.MemoryRecords.SERVER_BACK;
import static io.ferrite.memory.master.MemoryRecords.SERVER_GONE;
import static io.ferrite.memory.master.MemoryRecords.SERVER_LOST;
import static io.ferrite.memory.master.MemoryRecords.SERVER_SEEN;
import static io.ferrite.memory.master.MemoryRecords.UNMAP;

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
import java.util.Set;
import java.util.TreeMap;

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
 * <p>Record layouts: {@link MemoryRecords}; dead servers: {@link ServerLoss}; blocks the kernel
 * declared lost (regions gone): {@link BlockLoss}.
 */
final class MemoryState {
  /** The kernel owner name of every block the memory face holds. */
  static final String OWNER = "memory";

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

  /** What dead memory servers took, and what may come back with them. */
  final ServerLoss loss = new ServerLoss(this);

  final Map<Long, Mapping> mappings = new TreeMap<>();
  long nextNsId = 1;
  long nextMapId = 1;

  // ---------------------------------------------------------------- lookups (with clear errors)

  /** The mapping {@code mapId} if {@code session} holds it, else NOT_FOUND. */
  Mapping mappingOf(long mapId, long session) {
    Mapping mp = mappings.get(mapId);
    if (mp == null || mp.session() != session) {
      throw new FerriteException(
          ErrorCode.NOT_FOUND,
          "no mapping " + mapId + " held by session " + Long.toHexString(session));
    }
    return mp;
  }

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
            ns.addBlock(k, b);
          }
        }
      }
      case RELEASE -> {
        Ns ns = byId.get(r.i64("nsId"));
        for (Key k : MemoryRecords.readKeys(r)) {
          if (ns != null) {
            BlockRef b = ns.removeBlock(k);
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
        for (Key k : MemoryRecords.readKeys(r)) {
          cache.remove(k);
          cacheFrom.remove(k);
        }
      }
      case BLOCKS_LOST -> BlockLoss.apply(this, MasterProtocol.readBlocks(r));
      case SERVER_LOST, LOST_ADD, LOST_FROM, LOST_FREE, SERVER_SEEN, SERVER_BACK, SERVER_GONE ->
          loss.apply(type, r);
      case ALLOC, ALLOC_LOST -> {
        Ns ns = byId.get(r.i64("nsId"));
        long address = r.i64("address");
        long length = r.i64("length");
        int flags = r.i32("flags");
        int n = r.count("chunks", Integer.MAX_VALUE);
        List<Chunk> chunks = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          chunks.add(new Chunk(MemoryRecords.readKey(r), r.i64("inBlock")));
        }
        java.util.Set<Key> lostKeys =
            type == ALLOC_LOST ? new java.util.TreeSet<>(MemoryRecords.readKeys(r)) : Set.of();
        if (ns != null) {
          for (Chunk c : chunks) {
            if (!lostKeys.contains(c.block())) {
              ns.takeChunk(c);
            }
          }
          int data = (int) ((length + ns.chunkSize - 1) / ns.chunkSize);
          Alloc a = new Alloc(address, length, flags, chunks, data);
          a.lostBlocks.addAll(lostKeys);
          for (Chunk c : chunks) {
            if (!lostKeys.contains(c.block()) && !ns.blocks.containsKey(c.block())) {
              a.lostServers.add(c.block().server()); // replayed from a snapshot taken after a loss
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
            if (!a.lostBlocks.contains(c.block())) { // a lost block's key may be someone else's now
              ns.giveChunk(c);
            }
          }
          for (List<Chunk> old : a.retired.values()) {
            old.forEach(c -> ns.giveChunk(c));
          }
          Lease l = leases.remove(a.lease);
          if (l != null) {
            l.chunks.forEach(c -> ns.giveChunk(c));
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
        List<Chunk> chunks = MemoryRecords.readChunks(r);
        Ns ns = byId.get(nsId);
        Alloc a = ns == null ? null : ns.allocs.get(address);
        if (a != null) {
          chunks.forEach(c -> ns.takeChunk(c));
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
          l.chunks.forEach(c -> ns.giveChunk(c));
          a.lease = 0;
        }
      }
      case RECLAIM -> {
        Ns ns = byId.get(r.i64("nsId"));
        Alloc a = ns == null ? null : ns.allocs.get(r.i64("allocAddress"));
        long generation = r.i64("generation");
        List<Chunk> old = a == null ? null : a.retired.remove(generation);
        if (old != null) {
          old.forEach(c -> ns.giveChunk(c));
        }
      }
      case COW_STATE -> {
        Ns ns = byId.get(r.i64("nsId"));
        Alloc a = ns == null ? null : ns.allocs.get(r.i64("allocAddress"));
        long generation = r.i64("generation");
        int n = r.count("retired", Integer.MAX_VALUE);
        for (int i = 0; i < n; i++) {
          long g = r.i64("retiredGeneration");
          List<Chunk> old = MemoryRecords.readChunks(r);
          if (a != null) {
            old.forEach(c -> ns.takeChunk(c));
            a.retired.put(g, old);
          }
        }
        if (a != null) {
          a.generation = generation;
        }
      }
      default ->
          throw new FerriteException(
              ErrorCode.INVALID_ARGUMENT, "memory record type: " + type + " (expected: 1 to 25)");
    }
    r.end();
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
      out.add(MemoryRecords.cacheAdd(unknown));
    }
    byFrom.forEach((from, blocks) -> out.add(MemoryRecords.cacheFrom(from, blocks)));
    loss.snapshot(out);
    for (Ns ns : byId.values()) {
      out.add(MemoryRecords.nsCreate(ns.id, ns.name, ns.chunkSize, ns.nextAddress));
      out.add(MemoryRecords.reserve(ns.id, List.copyOf(ns.blocks.values())));
      for (Alloc a : ns.allocs.values()) {
        out.add(MemoryRecords.allocOf(ns.id, a));
        if (a.cow()) {
          out.add(MemoryRecords.cowState(ns.id, a));
        }
      }
    }
    for (Mapping m : mappings.values()) {
      out.add(MemoryRecords.map(m));
    }
    for (Lease l : leases.values()) {
      out.add(MemoryRecords.pending(l));
    }
    return out;
  }
}
