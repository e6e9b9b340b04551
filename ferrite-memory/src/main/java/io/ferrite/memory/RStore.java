package io.ferrite.memory;

import io.ferrite.fabric.Futures;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.memory.proto.MemoryProtocol;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * The memory face's client (RStore, paper Table I): namespaces of flat, byte-addressable remote
 * memory. A namespace is {@link #createNamespace created} or {@link #joinNamespace joined}; memory
 * is {@link Namespace#reserve reserved} on the memory servers, {@link Namespace#alloc allocated} to
 * a globally visible {@link RAddress}, and {@link RAddress#map mapped}; then {@link Mapping#read}
 * and {@link Mapping#write} are one-sided ops with no RPC (§III-D: path separation).
 *
 * <p>Thread-safe. Uses the given {@link FerriteClient} (its session holds this client's mappings:
 * when the session ends, the master drops them) and does not close it. With several master groups
 * (docs/RESILIENCE.md, "Master groups") a namespace lives in one group, by its name, and a {@link
 * Namespace} talks to that group's client (its session, its master) only.
 *
 * <p>Client-side resource cache (§IV-B): the local staging buffers of unmapped mappings are kept
 * (up to {@code bufferCacheBytes}) and reused by the next map of the same length.
 */
public final class RStore {
  /** Default bound of the staging buffers kept for reuse. */
  public static final long DEFAULT_BUFFER_CACHE_BYTES = 1L << 30;

  private final FerriteClient client;
  private final io.ferrite.kernel.client.MasterGroups groups;
  private final long bufferCacheBytes;
  private final Map<Integer, ArrayDeque<ByteBuffer>> buffers = new HashMap<>();
  private long cachedBytes;

  public RStore(FerriteClient client) {
    this(client, DEFAULT_BUFFER_CACHE_BYTES);
  }

  public RStore(FerriteClient client, long bufferCacheBytes) {
    this.client = client;
    this.groups = client.groups();
    this.bufferCacheBytes = bufferCacheBytes;
    io.ferrite.kernel.ops.FaceMeters m =
        io.ferrite.kernel.ops.FaceMeters.of(client.options().metrics(), "memory");
    this.metAlloc = m.op("alloc");
    this.metRead = m.op("read");
    this.metWrite = m.op("write");
  }

  /**
   * The client's ferrite.face.ops{face=memory} ({@link
   * io.ferrite.kernel.client.ClientOptions#metrics}; meters that do nothing without one): allocs,
   * and the mappings' reads and writes.
   */
  final io.ferrite.kernel.ops.FaceMeters.Op metAlloc;

  final io.ferrite.kernel.ops.FaceMeters.Op metRead;
  final io.ferrite.kernel.ops.FaceMeters.Op metWrite;

  public FerriteClient client() {
    return client;
  }

  /** Creates namespace {@code name} with chunks of the cluster's block size. */
  public Namespace createNamespace(String name) {
    return createNamespace(name, 0);
  }

  /**
   * Creates namespace {@code name} whose allocations are striped over the memory servers in chunks
   * of {@code chunkSize} bytes (0 = the block size; else a multiple of 8 dividing it).
   *
   * @throws io.ferrite.fabric.FerriteException CONFLICT if it exists; INVALID_ARGUMENT for a bad
   *     name or chunk size
   */
  public Namespace createNamespace(String name, int chunkSize) {
    MemoryProtocol.checkName(name);
    FerriteClient owner = clientOf(name, true);
    ByteBuffer b =
        call(owner, MemoryProtocol.CREATE_NS, new Wire.Writer().str(name).i32(chunkSize));
    Wire.Reader r = new Wire.Reader(b, "create namespace answer");
    return new Namespace(this, owner, name, r.i64("nsId"), r.i32("chunkSize"));
  }

  /**
   * Joins an existing namespace.
   *
   * @throws io.ferrite.fabric.FerriteException NOT_FOUND if there is none of that name
   */
  public Namespace joinNamespace(String name) {
    MemoryProtocol.checkName(name);
    FerriteClient owner = clientOf(name, false);
    ByteBuffer b = call(owner, MemoryProtocol.JOIN_NS, new Wire.Writer().str(name));
    Wire.Reader r = new Wire.Reader(b, "join namespace answer");
    return new Namespace(this, owner, name, r.i64("nsId"), r.i32("chunkSize"));
  }

  /**
   * Deletes a namespace with every allocation in it; its memory goes to the master's cache.
   *
   * @throws io.ferrite.fabric.FerriteException NOT_FOUND if there is none; CONFLICT while any of
   *     its allocations is mapped
   */
  public void deleteNamespace(String name) {
    MemoryProtocol.checkName(name);
    call(clientOf(name, false), MemoryProtocol.DELETE_NS, new Wire.Writer().str(name));
  }

  /**
   * The client of the master group that holds namespace {@code name} (docs/RESILIENCE.md, "Master
   * groups": placed by name, kind {@code memory}, as the nodes face's top-level names are): {@code
   * place} for a create, which places a new name first; otherwise a name never placed is group 0's
   * (made before the cluster had groups, or nowhere: group 0 then answers NOT_FOUND). With one
   * group it asks nothing.
   */
  private FerriteClient clientOf(String name, boolean place) {
    return groups.clientOf(io.ferrite.kernel.proto.PlacementProtocol.MEMORY, name, place);
  }

  /** Calls {@code opcode} on group 0's master (tests; a call about a namespace goes to its own). */
  ByteBuffer call(int opcode, Wire.Writer request) {
    return call(client, opcode, request);
  }

  ByteBuffer call(FerriteClient to, int opcode, Wire.Writer request) {
    return Futures.join(to.callMaster(MemoryProtocol.SERVICE, opcode, request.toBuffer()));
  }

  /**
   * As {@link #call}, without blocking: for the data path's failure handling (Mapping), on the
   * master of {@code to}'s group (the namespace's).
   */
  java.util.concurrent.CompletableFuture<ByteBuffer> callAsync(
      FerriteClient to, int opcode, Wire.Writer request) {
    return to.callMaster(MemoryProtocol.SERVICE, opcode, request.toBuffer());
  }

  // ---------------------------------------------------------------- staging buffer cache

  /** A direct buffer of {@code length} bytes: a cached one if there is one (warm), else new. */
  synchronized ByteBuffer takeBuffer(int length) {
    ArrayDeque<ByteBuffer> q = buffers.get(length);
    ByteBuffer b = q == null ? null : q.poll();
    if (b != null) {
      cachedBytes -= length;
      return b.clear();
    }
    return ByteBuffer.allocateDirect(length);
  }

  synchronized void giveBuffer(ByteBuffer b) {
    if (cachedBytes + b.capacity() > bufferCacheBytes) {
      return; // Dropped: freed by the garbage collector.
    }
    buffers.computeIfAbsent(b.capacity(), k -> new ArrayDeque<>()).push(b);
    cachedBytes += b.capacity();
  }
}
