package io.ferrite.memory.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.memory.proto.MemoryProtocol;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The master half of the memory face (RStore §III-B): namespaces, each a flat 64-bit address space;
 * reserved memory carved into chunks; allocations binding an address range to chunks striped over
 * the memory servers; mapping references held by client sessions. Every change is a journaled
 * record applied to {@link MemoryState} under the master's metadata lock, so checks and changes are
 * atomic (§III-E).
 *
 * <p>Rules: memory still mapped is never freed (free and delete fail with {@code CONFLICT}); a
 * session that ends (closed or expired) loses its mappings; released or deleted memory is kept in a
 * cache of ready blocks (at most {@code cacheLimitBlocks}; the rest goes back to the kernel) and
 * handed to the next reserve (§IV-B).
 */
public final class MemoryMaster implements MasterExtension {
  /** Cached blocks kept by default: beyond this, released memory goes back to the kernel. */
  public static final int DEFAULT_CACHE_LIMIT_BLOCKS = 8192;

  /** Flag bits {@code alloc} understands. */
  static final int KNOWN_ALLOC_FLAGS = MemoryState.FLAG_COW;

  /** The default time a COW writer's lease on fresh chunks lasts (§III-G: 10 s). */
  public static final long DEFAULT_LEASE_MILLIS = 10_000;

  private static final System.Logger LOG = System.getLogger(MemoryMaster.class.getName());

  private final long leaseMillis;
  private java.util.concurrent.ScheduledExecutorService expirer;

  private final int cacheLimitBlocks;
  private final MemoryState state = new MemoryState();
  private MasterContext ctx;

  /** For {@link java.util.ServiceLoader}. */
  public MemoryMaster() {
    this(DEFAULT_CACHE_LIMIT_BLOCKS);
  }

  public MemoryMaster(int cacheLimitBlocks) {
    this(cacheLimitBlocks, DEFAULT_LEASE_MILLIS);
  }

  /**
   * @param cacheLimitBlocks ready blocks kept for the next reserve
   * @param leaseMillis how long a COW writer's lease on fresh chunks lasts
   */
  public MemoryMaster(int cacheLimitBlocks, long leaseMillis) {
    if (leaseMillis <= 0) {
      throw new IllegalArgumentException("leaseMillis: " + leaseMillis + " (expected: > 0)");
    }
    this.leaseMillis = leaseMillis;
    if (cacheLimitBlocks < 0) {
      throw new IllegalArgumentException(
          "cacheLimitBlocks: " + cacheLimitBlocks + " (expected: >= 0)");
    }
    this.cacheLimitBlocks = cacheLimitBlocks;
  }

  @Override
  public int serviceId() {
    return MemoryProtocol.SERVICE;
  }

  @Override
  public String name() {
    return "memory";
  }

  @Override
  public void apply(ByteBuffer record) {
    state.apply(record);
  }

  @Override
  public List<byte[]> snapshot() {
    return state.snapshot();
  }

  @Override
  public void start(MasterContext context) {
    this.ctx = context;
    // §III-G: "When a lease expires (owing to a client's failure or inactivity), the master
    // garbage collects the lease's chunk locations."
    expirer =
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor(
            new io.ferrite.fabric.NamedThreadFactory("memory-lease-expirer", true));
    long period = Math.max(10, Math.min(500, leaseMillis / 4));
    expirer.scheduleWithFixedDelay(
        this::expireLeases, period, period, java.util.concurrent.TimeUnit.MILLISECONDS);
  }

  @Override
  public void stop() {
    if (expirer != null) {
      expirer.shutdownNow();
    }
  }

  private void expireLeases() {
    long now = System.currentTimeMillis();
    try {
      ctx.mutate(
          m -> {
            for (MemoryState.Lease l : List.copyOf(state.leases.values())) {
              if (l.deadline() < now) {
                m.commit(MemoryState.abort(l.id()));
              }
            }
            freeLost(m);
            return null;
          });
    } catch (RuntimeException e) {
      System.getLogger(MemoryMaster.class.getName())
          .log(System.Logger.Level.WARNING, "expiring COW leases failed, will retry", e);
    }
  }

  @Override
  public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
    try {
      Wire.Reader r = new Wire.Reader(request, "memory opcode " + opcode);
      ByteBuffer out =
          switch (opcode) {
            case MemoryProtocol.CREATE_NS -> create(r);
            case MemoryProtocol.JOIN_NS -> join(r);
            case MemoryProtocol.DELETE_NS -> delete(r);
            case MemoryProtocol.RESERVE -> reserve(r);
            case MemoryProtocol.RELEASE -> release(r);
            case MemoryProtocol.ALLOC -> alloc(r);
            case MemoryProtocol.FREE -> free(r);
            case MemoryProtocol.LOOKUP -> lookup(r);
            case MemoryProtocol.MAP -> map(r);
            case MemoryProtocol.UNMAP -> unmap(r);
            case MemoryProtocol.STAT -> stat(r);
            case MemoryProtocol.COW_BEGIN -> cowBegin(r);
            case MemoryProtocol.COW_PUBLISH -> cowPublish(r);
            default ->
                throw new FerriteException(
                    ErrorCode.UNKNOWN_OPCODE,
                    "memory service opcode " + opcode + " (expected: 1 to 13)");
          };
      return CompletableFuture.completedFuture(out);
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  private static ByteBuffer empty() {
    return ByteBuffer.allocate(0);
  }

  private static long positive(String what, long v) {
    if (v <= 0) {
      throw new FerriteException(ErrorCode.INVALID_ARGUMENT, what + ": " + v + " (expected: > 0)");
    }
    return v;
  }

  private static void session(MasterContext.Mutation m, long session) {
    if (!m.sessionOpen(session)) {
      throw new FerriteException(
          ErrorCode.SESSION_EXPIRED, "session " + Long.toHexString(session) + " is not open");
    }
  }

  private ByteBuffer create(Wire.Reader r) {
    String name = MemoryProtocol.checkName(r.str("name"));
    int chunkSize = r.i32("chunkSize");
    r.end();
    long bs = ctx.blockSize();
    int cs = chunkSize == 0 ? (int) Math.min(bs, Integer.MAX_VALUE) : chunkSize;
    if (cs < 8 || cs > bs || bs % cs != 0 || (cs & 7) != 0) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "chunk size: "
              + chunkSize
              + " (expected: 0 for the block size, or a multiple of 8 that divides the block size "
              + bs
              + ")");
    }
    return ctx.mutate(
        m -> {
          if (state.byName.containsKey(name)) {
            throw new FerriteException(
                ErrorCode.CONFLICT, "namespace '" + name + "' already exists");
          }
          long id = state.nextNsId;
          m.commit(MemoryState.nsCreate(id, name, cs, cs));
          return new Wire.Writer().i64(id).i32(cs).toBuffer();
        });
  }

  private ByteBuffer join(Wire.Reader r) {
    String name = MemoryProtocol.checkName(r.str("name"));
    r.end();
    return ctx.mutate(
        m -> {
          MemoryState.Ns ns = state.ns(name);
          return new Wire.Writer().i64(ns.id).i32(ns.chunkSize).toBuffer();
        });
  }

  private ByteBuffer delete(Wire.Reader r) {
    String name = MemoryProtocol.checkName(r.str("name"));
    r.end();
    return ctx.mutate(
        m -> {
          MemoryState.Ns ns = state.ns(name);
          int maps = state.mappingsOf(ns);
          if (maps > 0) {
            throw new FerriteException(
                ErrorCode.CONFLICT,
                "namespace '" + name + "' has " + maps + " mapping(s) open; unmap them first");
          }
          m.commit(MemoryState.nsDelete(ns.id));
          trimCache(m);
          freeLost(m);
          return empty();
        });
  }

  private ByteBuffer reserve(Wire.Reader r) {
    long nsId = r.i64("nsId");
    long bytes = positive("reserve bytes", r.i64("bytes"));
    long session = r.i64("session");
    r.end();
    long bs = ctx.blockSize();
    long count = (bytes + bs - 1) / bs;
    if (count > MasterProtocol.MAX_LIST) {
      throw new FerriteException(
          ErrorCode.TOO_LARGE,
          "reserve: " + bytes + " B (expected: at most " + MasterProtocol.MAX_LIST * bs + " B)");
    }
    return ctx.mutate(
        m -> {
          MemoryState.Ns ns = state.ns(nsId);
          session(m, session);
          // The namespace's own cached blocks first: they hold only its own bytes and go back as
          // they are. Any other cached block is zeroed by the client with the fresh ones (see
          // MemoryState: no bytes leak from one namespace to another through the cache).
          List<BlockRef> cached = new ArrayList<>();
          List<BlockRef> foreign = new ArrayList<>();
          for (Map.Entry<MemoryState.Key, BlockRef> e : state.cache.entrySet()) {
            if (cached.size() == count) {
              break;
            }
            if (Long.valueOf(ns.id).equals(state.cacheFrom.get(e.getKey()))) {
              cached.add(e.getValue());
            }
          }
          for (Map.Entry<MemoryState.Key, BlockRef> e : state.cache.entrySet()) {
            if (cached.size() + foreign.size() == count) {
              break;
            }
            if (!Long.valueOf(ns.id).equals(state.cacheFrom.get(e.getKey()))) {
              foreign.add(e.getValue());
            }
          }
          int fromCache = cached.size() + foreign.size();
          List<BlockRef> fresh = List.of();
          int more = (int) count - fromCache;
          if (more > 0) {
            try {
              fresh = m.allocate(session, more, "", false, MemoryState.OWNER);
            } catch (FerriteException e) {
              throw new FerriteException(
                  e.code(),
                  "reserve "
                      + bytes
                      + " B for namespace '"
                      + ns.name
                      + "' ("
                      + fromCache
                      + " cached block(s) ready, "
                      + more
                      + " more needed): "
                      + e.detail(),
                  e);
            }
          }
          List<BlockRef> all = new ArrayList<>(cached);
          all.addAll(foreign);
          all.addAll(fresh);
          m.commit(MemoryState.reserve(ns.id, all));
          List<BlockRef> prepare = new ArrayList<>(foreign);
          prepare.addAll(fresh);
          Wire.Writer w = new Wire.Writer().i64(ns.reservedBytes()).i32(fromCache);
          MasterProtocol.writeBlocks(w, prepare);
          return w.toBuffer();
        });
  }

  private ByteBuffer release(Wire.Reader r) {
    long nsId = r.i64("nsId");
    long bytes = positive("release bytes", r.i64("bytes"));
    r.end();
    long bs = ctx.blockSize();
    long count = (bytes + bs - 1) / bs;
    return ctx.mutate(
        m -> {
          MemoryState.Ns ns = state.ns(nsId);
          List<MemoryState.Key> keys = state.freeBlocks(ns, (int) Math.min(count, 1 << 30));
          if (keys.size() < count) {
            throw new FerriteException(
                ErrorCode.CONFLICT,
                "release "
                    + bytes
                    + " B from namespace '"
                    + ns.name
                    + "': only "
                    + keys.size() * bs
                    + " B of its "
                    + ns.reservedBytes()
                    + " B reserve are in blocks with nothing allocated (free allocations first)");
          }
          m.commit(MemoryState.release(ns.id, keys));
          trimCache(m);
          return new Wire.Writer().i64(ns.reservedBytes()).toBuffer();
        });
  }

  /** Gives cached blocks beyond the limit back to the kernel. */
  private void trimCache(MasterContext.Mutation m) {
    int over = state.cache.size() - cacheLimitBlocks;
    if (over <= 0) {
      return;
    }
    List<BlockRef> drop = new ArrayList<>(over);
    List<MemoryState.Key> keys = new ArrayList<>(over);
    for (Map.Entry<MemoryState.Key, BlockRef> e : state.cache.entrySet()) {
      if (drop.size() == over) {
        break;
      }
      drop.add(e.getValue());
      keys.add(e.getKey());
    }
    m.free(MemoryState.OWNER, drop);
    m.commit(MemoryState.cacheDrop(keys));
  }

  /**
   * Gives the blocks of dead servers that nothing names any more back to the kernel (those the
   * kernel still has: a server that re-registered without its regions took its blocks with it).
   */
  private void freeLost(MasterContext.Mutation m) {
    List<BlockRef> done = state.unreferencedLost();
    if (done.isEmpty()) {
      return;
    }
    java.util.Set<MemoryState.Key> owned = new java.util.HashSet<>();
    for (BlockRef b : m.owned(MemoryState.OWNER)) {
      owned.add(MemoryState.Key.of(b));
    }
    List<BlockRef> give = new ArrayList<>();
    List<MemoryState.Key> keys = new ArrayList<>();
    for (BlockRef b : done) {
      keys.add(MemoryState.Key.of(b));
      if (owned.contains(MemoryState.Key.of(b))) {
        give.add(b);
      }
    }
    if (!give.isEmpty()) {
      m.free(MemoryState.OWNER, give);
    }
    m.commit(MemoryState.lostFree(keys));
  }

  private ByteBuffer alloc(Wire.Reader r) {
    long nsId = r.i64("nsId");
    long bytes = positive("alloc bytes", r.i64("bytes"));
    int flags = r.i32("flags");
    r.end();
    if ((flags & ~KNOWN_ALLOC_FLAGS) != 0) {
      throw new FerriteException(
          ErrorCode.UNSUPPORTED,
          "alloc flags: 0x" + Integer.toHexString(flags) + " (expected: 0, or ALLOC_COW = 1)");
    }
    return ctx.mutate(
        m -> {
          MemoryState.Ns ns = state.ns(nsId);
          long data = (bytes + ns.chunkSize - 1) / ns.chunkSize;
          // COW: 8 B of metadata per data chunk, in chunks of their own (§III-G).
          long meta =
              (flags & MemoryState.FLAG_COW) == 0
                  ? 0
                  : (8 * data + ns.chunkSize - 1) / ns.chunkSize;
          long n = data + meta;
          if (n > MemoryProtocol.MAX_CHUNKS * 16L || n > ns.freeChunks) {
            throw new FerriteException(
                ErrorCode.NO_SPACE,
                "alloc "
                    + bytes
                    + " B in namespace '"
                    + ns.name
                    + "' needs "
                    + n
                    + " chunk(s) of "
                    + ns.chunkSize
                    + " B; its reserve has "
                    + ns.freeChunks
                    + " free (reserve more first)");
          }
          List<MemoryState.Chunk> chunks = state.pickChunks(ns, (int) n);
          long address = ns.nextAddress;
          m.commit(MemoryState.alloc(ns.id, address, bytes, flags, chunks));
          return new Wire.Writer().i64(address).i64(bytes).toBuffer();
        });
  }

  private ByteBuffer free(Wire.Reader r) {
    long nsId = r.i64("nsId");
    long address = r.i64("address");
    r.end();
    return ctx.mutate(
        m -> {
          MemoryState.Ns ns = state.ns(nsId);
          MemoryState.Alloc a = ns.allocs.get(address);
          if (a == null) {
            throw new FerriteException(
                ErrorCode.NOT_FOUND,
                "no allocation starts at 0x"
                    + Long.toHexString(address)
                    + " in namespace '"
                    + ns.name
                    + "'");
          }
          if (a.maps > 0) {
            throw new FerriteException(
                ErrorCode.CONFLICT,
                "allocation "
                    + a
                    + " of namespace '"
                    + ns.name
                    + "' is mapped "
                    + a.maps
                    + " time(s); unmap it first");
          }
          m.commit(MemoryState.free(ns.id, address));
          freeLost(m);
          return empty();
        });
  }

  private ByteBuffer lookup(Wire.Reader r) {
    long nsId = r.i64("nsId");
    long address = r.i64("address");
    long length = r.i64("length");
    r.end();
    return ctx.mutate(
        m -> {
          MemoryState.Alloc a = MemoryState.allocFor(state.ns(nsId), address, length);
          return new Wire.Writer().i64(a.address).i64(a.length).toBuffer();
        });
  }

  private ByteBuffer map(Wire.Reader r) {
    long nsId = r.i64("nsId");
    long address = r.i64("address");
    long length = positive("map length", r.i64("length"));
    long session = r.i64("session");
    r.i32("flags");
    r.end();
    return ctx.mutate(
        m -> {
          MemoryState.Ns ns = state.ns(nsId);
          MemoryState.Alloc a = MemoryState.allocFor(ns, address, length);
          state.checkIntact(ns, a);
          session(m, session);
          long offset = address - a.address;
          long first = offset / ns.chunkSize;
          long last = (offset + length - 1) / ns.chunkSize;
          if (last - first + 1 > MemoryProtocol.MAX_CHUNKS) {
            throw new FerriteException(
                ErrorCode.TOO_LARGE,
                "map of "
                    + length
                    + " B spans "
                    + (last - first + 1)
                    + " chunks (expected: at most "
                    + MemoryProtocol.MAX_CHUNKS
                    + "; map it in parts)");
          }
          MemoryState.Mapping mp =
              new MemoryState.Mapping(
                  state.nextMapId, session, ns.id, a.address, offset, length, a.generation);
          m.commit(MemoryState.map(mp));
          List<MemoryState.Chunk> data = a.chunks.subList((int) first, (int) last + 1);
          List<MemoryState.Chunk> meta =
              a.cow() ? a.chunks.subList(a.dataChunks, a.chunks.size()) : List.of();
          Locations loc = new Locations(ns);
          Wire.Writer chunks = loc.chunks(data);
          Wire.Writer metaChunks = loc.chunks(meta);
          Wire.Writer w =
              new Wire.Writer()
                  .i64(mp.id())
                  .i32(ns.chunkSize)
                  .i64(first)
                  .i64(a.generation)
                  .i32(a.flags);
          loc.regions(w);
          return concat(w, chunks, metaChunks);
        });
  }

  /** Chunk locations as (region index, offset) pairs over one table of regions. */
  private static final class Locations {
    private final MemoryState.Ns ns;
    private final Map<MemoryState.Key, Integer> index = new HashMap<>();
    private final List<RegionRef> regions = new ArrayList<>();

    Locations(MemoryState.Ns ns) {
      this.ns = ns;
    }

    Wire.Writer chunks(List<MemoryState.Chunk> list) {
      Wire.Writer w = new Wire.Writer(list.size() * 12 + 4).i32(list.size());
      for (MemoryState.Chunk c : list) {
        BlockRef b = ns.blocks.get(c.block());
        MemoryState.Key rk = new MemoryState.Key(b.serverId(), b.regionId(), 0);
        Integer idx = index.get(rk);
        if (idx == null) {
          idx = regions.size();
          index.put(rk, idx);
          regions.add(b.region());
        }
        w.i32(idx).i64(b.offset() + c.inBlock());
      }
      return w;
    }

    void regions(Wire.Writer w) {
      w.i32(regions.size());
      for (RegionRef rr : regions) {
        MemoryProtocol.writeRegion(w, rr);
      }
    }
  }

  private static ByteBuffer concat(Wire.Writer... parts) {
    List<ByteBuffer> bufs = new ArrayList<>();
    int n = 0;
    for (Wire.Writer p : parts) {
      ByteBuffer b = p.toBuffer();
      bufs.add(b);
      n += b.remaining();
    }
    ByteBuffer out = ByteBuffer.allocate(n).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    bufs.forEach(out::put);
    return out.flip();
  }

  /** Frees the retired COW chunks of {@code a} that no mapping needs any more. */
  private void reclaim(MasterContext.Mutation m, MemoryState.Ns ns, MemoryState.Alloc a) {
    if (a == null || !a.cow()) {
      return;
    }
    for (long g : state.reclaimable(ns, a)) {
      m.commit(MemoryState.reclaim(ns.id, a.address, g));
    }
    freeLost(m);
  }

  private MemoryState.Alloc allocOf(MemoryState.Mapping mp) {
    MemoryState.Ns ns = state.byId.get(mp.nsId());
    return ns == null ? null : ns.allocs.get(mp.allocAddress());
  }

  private ByteBuffer cowBegin(Wire.Reader r) {
    long mapId = r.i64("mapId");
    long session = r.i64("session");
    int first = r.i32("firstChunk");
    int count = r.i32("count");
    r.end();
    return ctx.mutate(
        m -> {
          MemoryState.Mapping mp = state.mappings.get(mapId);
          if (mp == null || mp.session() != session) {
            throw new FerriteException(
                ErrorCode.NOT_FOUND,
                "no mapping " + mapId + " held by session " + Long.toHexString(session));
          }
          MemoryState.Ns ns = state.ns(mp.nsId());
          MemoryState.Alloc a = allocOf(mp);
          if (!a.cow()) {
            throw new FerriteException(
                ErrorCode.INVALID_ARGUMENT, "allocation " + a + " is not copy-on-write");
          }
          state.checkIntact(ns, a);
          if (first < 0 || count <= 0 || first > a.dataChunks - count) {
            throw new FerriteException(
                ErrorCode.OUT_OF_BOUNDS,
                "chunks "
                    + first
                    + " +"
                    + count
                    + " (expected: within the "
                    + a.dataChunks
                    + " chunks of "
                    + a
                    + ")");
          }
          MemoryState.Lease held = state.leases.get(a.lease);
          if (held != null && held.session() != session) {
            // §III-G: one writer with concurrent readers.
            throw new FerriteException(
                ErrorCode.CONFLICT,
                "allocation "
                    + a
                    + " has a writer (session "
                    + Long.toHexString(held.session())
                    + ") until its lease ends in "
                    + Math.max(0, held.deadline() - System.currentTimeMillis())
                    + " ms");
          }
          if (held != null) {
            m.commit(MemoryState.abort(held.id()));
          }
          if (count > ns.freeChunks) {
            throw new FerriteException(
                ErrorCode.NO_SPACE,
                "copy-on-write of "
                    + count
                    + " chunk(s) in namespace '"
                    + ns.name
                    + "': its reserve has "
                    + ns.freeChunks
                    + " free (reserve more first)");
          }
          List<MemoryState.Chunk> fresh = state.pickChunks(ns, count);
          MemoryState.Lease lease =
              new MemoryState.Lease(
                  state.nextLeaseId,
                  ns.id,
                  a.address,
                  session,
                  first,
                  System.currentTimeMillis() + leaseMillis,
                  fresh);
          m.commit(MemoryState.pending(lease));
          Locations loc = new Locations(ns);
          Wire.Writer chunks = loc.chunks(fresh);
          Wire.Writer w = new Wire.Writer().i64(lease.id()).i64(leaseMillis);
          loc.regions(w);
          return concat(w, chunks);
        });
  }

  private ByteBuffer cowPublish(Wire.Reader r) {
    long leaseId = r.i64("leaseId");
    long session = r.i64("session");
    long mapId = r.i64("mapId");
    r.end();
    return ctx.mutate(
        m -> {
          MemoryState.Lease l = state.leases.get(leaseId);
          if (l == null || l.session() != session) {
            throw new FerriteException(
                ErrorCode.SESSION_EXPIRED,
                "copy-on-write lease "
                    + leaseId
                    + " is gone (it expired, or the allocation was freed): nothing was published");
          }
          MemoryState.Ns ns = state.ns(l.nsId());
          MemoryState.Alloc a = ns.allocs.get(l.allocAddress());
          long generation = a.generation + 1;
          m.commit(MemoryState.publish(leaseId, generation));
          // The publisher's own mapping now sees the new generation.
          MemoryState.Mapping mp = state.mappings.get(mapId);
          if (mp != null && mp.session() == session) {
            m.commit(MemoryState.unmap(mapId));
            m.commit(
                MemoryState.map(
                    new MemoryState.Mapping(
                        mapId,
                        session,
                        mp.nsId(),
                        mp.allocAddress(),
                        mp.offset(),
                        mp.length(),
                        generation)));
          }
          reclaim(m, ns, a);
          return new Wire.Writer().i64(generation).toBuffer();
        });
  }

  private ByteBuffer unmap(Wire.Reader r) {
    long mapId = r.i64("mapId");
    long session = r.i64("session");
    r.end();
    return ctx.mutate(
        m -> {
          MemoryState.Mapping mp = state.mappings.get(mapId);
          if (mp == null || mp.session() != session) {
            throw new FerriteException(
                ErrorCode.NOT_FOUND,
                "no mapping " + mapId + " held by session " + Long.toHexString(session));
          }
          m.commit(MemoryState.unmap(mapId));
          reclaim(m, state.byId.get(mp.nsId()), allocOf(mp));
          return empty();
        });
  }

  private ByteBuffer stat(Wire.Reader r) {
    long nsId = r.i64("nsId");
    r.end();
    return ctx.mutate(
        m -> {
          MemoryState.Ns ns = state.ns(nsId);
          return new Wire.Writer()
              .i64(ns.reservedBytes())
              .i64(ns.freeChunks * ns.chunkSize)
              .i32(ns.allocs.size())
              .i32(state.mappingsOf(ns))
              .i32(state.cache.size())
              .i32((int) state.leases.values().stream().filter(l -> l.nsId() == ns.id).count())
              .toBuffer();
        });
  }

  @Override
  public void sessionClosed(long sessionId, MasterContext.Mutation m) {
    // §III-E: "When a client's connection aborts, the master cleans up the associate states and
    // references."
    for (MemoryState.Mapping mp : List.copyOf(state.mappings.values())) {
      if (mp.session() == sessionId) {
        m.commit(MemoryState.unmap(mp.id()));
        reclaim(m, state.byId.get(mp.nsId()), allocOf(mp));
      }
    }
    // A COW writer that dies leaves its last published data intact: its pending chunks go.
    for (MemoryState.Lease l : List.copyOf(state.leases.values())) {
      if (l.session() == sessionId) {
        m.commit(MemoryState.abort(l.id()));
      }
    }
    freeLost(m);
  }

  @Override
  public void serverDead(int serverId, MasterContext.Mutation m) {
    // Its memory may be gone: take its blocks out of every namespace and the cache; allocations
    // with a chunk there become lost until this process of the server comes back (see
    // MemoryState). Blocks nothing names go back to the kernel.
    if (state.holdsBlocksOf(serverId)) {
      long incarnation = state.incarnations.getOrDefault(serverId, 0L);
      m.commit(MemoryState.serverLost(serverId, incarnation));
      LOG.log(
          System.Logger.Level.WARNING,
          "memory server {0} is DEAD: its chunks left every namespace; allocations on it are lost"
              + (incarnation != 0 ? " unless the same process comes back" : ""),
          serverId);
    }
    freeLost(m);
  }

  @Override
  public void serverRegistered(int serverId, long incarnation, MasterContext.Mutation m) {
    if (incarnation != 0 && state.incarnations.getOrDefault(serverId, 0L) != incarnation) {
      m.commit(MemoryState.serverSeen(serverId, incarnation));
    }
    Long awaited = state.awaited.get(serverId);
    if (awaited == null) {
      return;
    }
    // The same process is back (it was paused, not restarted): its regions kept their rkeys and
    // bytes. Restore only if the kernel still holds every lost block as it was (a region it came
    // back without or changed dropped its blocks).
    java.util.Set<BlockRef> held = new java.util.HashSet<>(m.owned(MemoryState.OWNER));
    List<BlockRef> lost = state.lostOn(serverId);
    if (awaited == incarnation && held.containsAll(lost)) {
      m.commit(MemoryState.serverBack(serverId));
      LOG.log(
          System.Logger.Level.INFO,
          "memory server {0} is back with its memory: {1} block(s) and the allocations on them"
              + " restored",
          serverId,
          lost.size());
    } else {
      m.commit(MemoryState.serverGone(serverId));
      LOG.log(
          System.Logger.Level.WARNING,
          "memory server {0} came back as "
              + (awaited == incarnation ? "the same process without some regions" : "a new process")
              + ": allocations on its {1} lost block(s) stay lost",
          serverId,
          lost.size());
    }
    freeLost(m);
  }
}
