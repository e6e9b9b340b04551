package io.ferrite.memory.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.memory.proto.MemoryProtocol;
import java.nio.ByteBuffer;
import java.util.List;
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
 *
 * <p>Here: the RPC service and the namespace, allocation and mapping operations. Elsewhere: {@link
 * Reserves} (reserve, release, the cache), {@link CopyOnWrite} (leases, publish, reclaim), {@link
 * Failures} (ended sessions, dead and returning servers), {@link BlockLoss} (regions the kernel
 * declared lost, and the reconcile at start), {@link Locations} (chunk locations on the wire); the
 * state is {@link MemoryState}, its records {@link MemoryRecords}.
 */
public final class MemoryMaster implements MasterExtension {
  /** Cached blocks kept by default: beyond this, released memory goes back to the kernel. */
  public static final int DEFAULT_CACHE_LIMIT_BLOCKS = 8192;

  /** Flag bits {@code alloc} understands. */
  static final int KNOWN_ALLOC_FLAGS = Alloc.FLAG_COW;

  /** The default time a COW writer's lease on fresh chunks lasts (§III-G: 10 s). */
  public static final long DEFAULT_LEASE_MILLIS = 10_000;

  private final long leaseMillis;
  private CopyOnWrite cow;
  private Reserves reserves;

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

  /**
   * A namespace of this master (asked by group 0's placement directory under the metadata lock,
   * which guards the state): a namespace made before the cluster had several master groups stays in
   * group 0 (docs/RESILIENCE.md, "Master groups").
   */
  @Override
  public boolean holdsName(String kind, String name) {
    return kind.equals(io.ferrite.kernel.proto.PlacementProtocol.MEMORY)
        && state.byName.containsKey(name);
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
    this.cow = new CopyOnWrite(context, state, leaseMillis);
    this.reserves = new Reserves(context, state, cacheLimitBlocks);
    this.meters =
        io.ferrite.kernel.ops.FaceMeters.of(context.metrics(), "memory")
            .byOpcode(
                java.util.Map.ofEntries(
                    java.util.Map.entry(MemoryProtocol.CREATE_NS, "create_ns"),
                    java.util.Map.entry(MemoryProtocol.JOIN_NS, "join_ns"),
                    java.util.Map.entry(MemoryProtocol.DELETE_NS, "delete_ns"),
                    java.util.Map.entry(MemoryProtocol.RESERVE, "reserve"),
                    java.util.Map.entry(MemoryProtocol.RELEASE, "release"),
                    java.util.Map.entry(MemoryProtocol.ALLOC, "alloc"),
                    java.util.Map.entry(MemoryProtocol.FREE, "free"),
                    java.util.Map.entry(MemoryProtocol.LOOKUP, "lookup"),
                    java.util.Map.entry(MemoryProtocol.MAP, "map"),
                    java.util.Map.entry(MemoryProtocol.UNMAP, "unmap"),
                    java.util.Map.entry(MemoryProtocol.STAT, "stat"),
                    java.util.Map.entry(MemoryProtocol.COW_BEGIN, "cow_begin"),
                    java.util.Map.entry(MemoryProtocol.COW_PUBLISH, "cow_publish")));
    reconcile();
  }

  /**
   * Issue #20: the kernel does not repeat a loss it journaled before this master started, and a
   * journal written before the face was told about lost regions still holds their blocks (the stale
   * rkeys of {@code BAD_RKEY}). So every block the replayed state holds that the kernel no longer
   * lists as owned by the face is declared lost here, once (the record makes it so).
   */
  private void reconcile() {
    ctx.mutate(
        m -> {
          List<io.ferrite.kernel.proto.BlockRef> stale =
              BlockLoss.notOwned(state, m.owned(MemoryState.OWNER));
          if (!stale.isEmpty()) {
            m.commit(MemoryRecords.blocksLost(stale));
            LOG.log(
                System.Logger.Level.WARNING,
                "memory face: {0} block(s) held in its state are no longer owned in the kernel"
                    + " (their regions were lost): dropped; allocations on them are lost",
                stale.size());
            Failures.freeLost(state, m);
          }
          return null;
        });
  }

  @Override
  public void regionsLost(
      int serverId, List<MasterExtension.LostRegion> lost, MasterContext.Mutation m) {
    java.util.Set<Integer> regionIds = new java.util.HashSet<>();
    java.util.Set<io.ferrite.kernel.proto.BlockRef> blocks = new java.util.LinkedHashSet<>();
    for (MasterExtension.LostRegion l : lost) {
      regionIds.add(l.region().ref().regionId());
      blocks.addAll(l.blocksByOwner().getOrDefault(MemoryState.OWNER, List.of()));
    }
    // What the kernel listed, and anything else the face still holds in those regions (a stale
    // block of an older loss, journaled before this fix): none of it exists any more.
    blocks.addAll(BlockLoss.heldIn(state, serverId, regionIds));
    if (blocks.isEmpty()) {
      return;
    }
    m.commit(MemoryRecords.blocksLost(List.copyOf(blocks)));
    LOG.log(
        System.Logger.Level.WARNING,
        "memory server {0} lost region(s) {1}: {2} block(s) of the memory face dropped;"
            + " allocations on them answer DATA_LOST",
        serverId,
        regionIds,
        blocks.size());
    Failures.freeLost(state, m);
  }

  private static final System.Logger LOG = System.getLogger(MemoryMaster.class.getName());

  /** ferrite.face.ops{face=memory} of the served opcodes; set in start, before any request. */
  private io.ferrite.kernel.ops.FaceMeters.ByOpcode meters;

  @Override
  public void stop() {
    if (cow != null) {
      cow.close();
    }
  }

  @Override
  public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
    meters.count(opcode);
    try {
      Wire.Reader r = new Wire.Reader(request, "memory opcode " + opcode);
      ByteBuffer out =
          switch (opcode) {
            case MemoryProtocol.CREATE_NS -> create(r);
            case MemoryProtocol.JOIN_NS -> join(r);
            case MemoryProtocol.DELETE_NS -> delete(r);
            case MemoryProtocol.RESERVE -> reserves.reserve(r);
            case MemoryProtocol.RELEASE -> reserves.release(r);
            case MemoryProtocol.ALLOC -> alloc(r);
            case MemoryProtocol.FREE -> free(r);
            case MemoryProtocol.LOOKUP -> lookup(r);
            case MemoryProtocol.MAP -> map(r);
            case MemoryProtocol.UNMAP -> unmap(r);
            case MemoryProtocol.STAT -> stat(r);
            case MemoryProtocol.COW_BEGIN -> cow.begin(r);
            case MemoryProtocol.COW_PUBLISH -> cow.publish(r);
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

  /**
   * The console's view: each namespace (at most {@value #DESCRIBE_LIMIT} listed) with its chunk
   * size, allocations and their bytes, reserved blocks and free chunks; the mappings clients hold
   * and the cache of ready blocks. Under the metadata lock, like {@code apply}.
   */
  @Override
  public java.util.Map<String, Object> describe() {
    List<Object> list = new java.util.ArrayList<>();
    long lostAllocs = 0;
    for (Ns ns : state.byId.values()) {
      if (list.size() == DESCRIBE_LIMIT) {
        for (Alloc a : ns.allocs.values()) {
          lostAllocs += a.lost() ? 1 : 0;
        }
        continue;
      }
      long bytes = 0;
      for (Alloc a : ns.allocs.values()) {
        bytes += a.length;
      }
      java.util.Map<String, Object> row = new java.util.LinkedHashMap<>();
      row.put("namespace", ns.name);
      row.put("chunk size", ns.chunkSize);
      row.put("allocations", ns.allocs.size());
      row.put("allocated bytes", bytes);
      row.put("blocks", ns.blocks.size());
      row.put("free chunks", ns.freeChunks);
      long[] lost = BlockLoss.lostOf(ns);
      row.put("lost allocations", lost[0]);
      row.put("lost bytes", lost[1]);
      lostAllocs += lost[0];
      list.add(row);
    }
    java.util.Map<String, Object> out = new java.util.LinkedHashMap<>();
    out.put("namespaces", state.byId.size());
    out.put("mappings", state.mappings.size());
    out.put("cached blocks", state.cache.size());
    out.put("lost allocations", lostAllocs);
    out.put("list", list);
    return out;
  }

  @Override
  public java.util.Map<String, Long> lost() {
    long allocations = 0;
    long bytes = 0;
    for (Ns ns : state.byId.values()) {
      long[] l = BlockLoss.lostOf(ns);
      allocations += l[0];
      bytes += l[1];
    }
    return allocations == 0
        ? java.util.Map.of()
        : java.util.Map.of("allocations", allocations, "bytes", bytes);
  }

  private static final int DESCRIBE_LIMIT = 100;

  private static ByteBuffer empty() {
    return ByteBuffer.allocate(0);
  }

  static long positive(String what, long v) {
    if (v <= 0) {
      throw new FerriteException(ErrorCode.INVALID_ARGUMENT, what + ": " + v + " (expected: > 0)");
    }
    return v;
  }

  static void session(MasterContext.Mutation m, long session) {
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
          m.commit(MemoryRecords.nsCreate(id, name, cs, cs));
          return new Wire.Writer().i64(id).i32(cs).toBuffer();
        });
  }

  private ByteBuffer join(Wire.Reader r) {
    String name = MemoryProtocol.checkName(r.str("name"));
    r.end();
    return ctx.mutate(
        m -> {
          Ns ns = state.ns(name);
          return new Wire.Writer().i64(ns.id).i32(ns.chunkSize).toBuffer();
        });
  }

  private ByteBuffer delete(Wire.Reader r) {
    String name = MemoryProtocol.checkName(r.str("name"));
    r.end();
    return ctx.mutate(
        m -> {
          Ns ns = state.ns(name);
          int maps = state.mappingsOf(ns);
          if (maps > 0) {
            throw new FerriteException(
                ErrorCode.CONFLICT,
                "namespace '" + name + "' has " + maps + " mapping(s) open; unmap them first");
          }
          m.commit(MemoryRecords.nsDelete(ns.id));
          reserves.trimCache(m);
          Failures.freeLost(state, m);
          return empty();
        });
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
          Ns ns = state.ns(nsId);
          long data = (bytes + ns.chunkSize - 1) / ns.chunkSize;
          // COW: 8 B of metadata per data chunk, in chunks of their own (§III-G).
          long meta =
              (flags & Alloc.FLAG_COW) == 0 ? 0 : (8 * data + ns.chunkSize - 1) / ns.chunkSize;
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
          List<Chunk> chunks = ns.pickChunks((int) n);
          long address = ns.nextAddress;
          m.commit(MemoryRecords.alloc(ns.id, address, bytes, flags, chunks));
          return new Wire.Writer().i64(address).i64(bytes).toBuffer();
        });
  }

  private ByteBuffer free(Wire.Reader r) {
    long nsId = r.i64("nsId");
    long address = r.i64("address");
    r.end();
    return ctx.mutate(
        m -> {
          Ns ns = state.ns(nsId);
          Alloc a = ns.allocs.get(address);
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
          m.commit(MemoryRecords.free(ns.id, address));
          Failures.freeLost(state, m);
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
          Ns ns = state.ns(nsId);
          Alloc a = MemoryState.allocFor(ns, address, length);
          BlockLoss.check(ns, a);
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
          Ns ns = state.ns(nsId);
          Alloc a = MemoryState.allocFor(ns, address, length);
          state.loss.checkIntact(ns, a);
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
          m.commit(MemoryRecords.map(mp));
          List<Chunk> data = a.chunks.subList((int) first, (int) last + 1);
          List<Chunk> meta = a.cow() ? a.chunks.subList(a.dataChunks, a.chunks.size()) : List.of();
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
          return Locations.concat(w, chunks, metaChunks);
        });
  }

  private ByteBuffer unmap(Wire.Reader r) {
    long mapId = r.i64("mapId");
    long session = r.i64("session");
    r.end();
    return ctx.mutate(
        m -> {
          MemoryState.Mapping mp = state.mappingOf(mapId, session);
          m.commit(MemoryRecords.unmap(mapId));
          CopyOnWrite.reclaim(state, m, state.byId.get(mp.nsId()), CopyOnWrite.allocOf(state, mp));
          return empty();
        });
  }

  private ByteBuffer stat(Wire.Reader r) {
    long nsId = r.i64("nsId");
    r.end();
    return ctx.mutate(
        m -> {
          Ns ns = state.ns(nsId);
          return new Wire.Writer()
              .i64(ns.reservedBytes())
              .i64(ns.freeChunks * ns.chunkSize)
              .i32(ns.allocs.size())
              .i32(state.mappingsOf(ns))
              .i32(state.cache.size())
              .i32((int) state.leases.values().stream().filter(l -> l.nsId() == ns.id).count())
              .i32((int) BlockLoss.lostOf(ns)[0])
              .i64(BlockLoss.lostOf(ns)[1])
              .toBuffer();
        });
  }

  @Override
  public void sessionClosed(long sessionId, MasterContext.Mutation m) {
    Failures.sessionClosed(state, sessionId, m);
  }

  @Override
  public void serverDead(int serverId, MasterContext.Mutation m) {
    Failures.serverDead(state, serverId, m);
  }

  @Override
  public void serverRegistered(int serverId, long incarnation, MasterContext.Mutation m) {
    Failures.serverRegistered(state, serverId, incarnation, m);
  }
}
