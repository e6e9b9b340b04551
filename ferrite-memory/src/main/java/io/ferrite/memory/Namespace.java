package io.ferrite.memory;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.memory.proto.MemoryProtocol;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A namespace: a flat, 64-bit, byte-addressable address space whose allocations are striped over
 * the memory servers in chunks of {@link #chunkSize()} bytes (RStore §III-C). Thread-safe; every
 * call here is a control-path RPC to the master.
 */
public final class Namespace {
  /** Largest one-sided op the data path issues; longer pieces are split (fabric frame bound). */
  static final int MAX_OP = 4 << 20;

  private final RStore store;

  /**
   * The client of the master group that holds this namespace (the store's own with one group): its
   * session holds this namespace's mappings and reservations, its master every call about it.
   */
  private final FerriteClient client;

  private final String name;
  private final long id;
  private final int chunkSize;

  Namespace(RStore store, FerriteClient client, String name, long id, int chunkSize) {
    this.store = store;
    this.client = client;
    this.name = name;
    this.id = id;
    this.chunkSize = chunkSize;
  }

  public String name() {
    return name;
  }

  public int chunkSize() {
    return chunkSize;
  }

  long id() {
    return id;
  }

  RStore store() {
    return store;
  }

  /** The client of this namespace's master group. */
  FerriteClient client() {
    return client;
  }

  /** Calls {@code opcode} of the memory face on this namespace's master. */
  ByteBuffer call(int opcode, Wire.Writer request) {
    return store.call(client, opcode, request);
  }

  /** As {@link #call}, without blocking (the data path's failure handling). */
  java.util.concurrent.CompletableFuture<ByteBuffer> callAsync(int opcode, Wire.Writer request) {
    return store.callAsync(client, opcode, request);
  }

  /**
   * Reserves at least {@code bytes} more memory for this namespace (whole blocks). Blocks come from
   * the master's cache of ready memory when it has some (warm, §IV-B), else fresh from the memory
   * servers, which this client then prepares: it writes zeros over them, so their pages are
   * committed on the servers now and not on the data path later (cold). Cached blocks that another
   * namespace used are zeroed the same way before this returns (no data crosses namespaces); this
   * namespace's own released blocks come back as they were, like chunks after {@code free}.
   *
   * @return the namespace's reserve in bytes, after this call
   * @throws FerriteException NO_SPACE if the cluster has not enough memory, INVALID_ARGUMENT if
   *     {@code bytes <= 0}
   */
  public long reserve(long bytes) {
    checkPositive("reserve bytes", bytes);
    ByteBuffer b =
        call(MemoryProtocol.RESERVE, new Wire.Writer().i64(id).i64(bytes).i64(client.sessionId()));
    Wire.Reader r = new Wire.Reader(b, "reserve answer");
    long reserved = r.i64("reserved");
    r.i32("cached");
    List<BlockRef> fresh = MasterProtocol.readBlocks(r);
    prepare(fresh);
    return reserved;
  }

  /** Zeroes {@code fresh} blocks on their servers: one batch per server, flushed together. */
  private void prepare(List<BlockRef> fresh) {
    if (fresh.isEmpty()) {
      return;
    }
    int zeroLen = (int) Math.min(MAX_OP, fresh.get(0).length());
    ByteBuffer zeros = ByteBuffer.allocateDirect(zeroLen);
    Map<Integer, Batch> batches = new LinkedHashMap<>();
    for (BlockRef block : fresh) {
      Batch batch = batches.computeIfAbsent(block.serverId(), s -> client.batch(s));
      for (long at = 0; at < block.length(); at += zeroLen) {
        int n = (int) Math.min(zeroLen, block.length() - at);
        batch.write(block.region(), block.offset() + at, zeros.slice(0, n));
      }
    }
    List<CompletableFuture<Void>> all = new ArrayList<>();
    for (Batch batch : batches.values()) {
      all.add(batch.flush());
    }
    Futures.join(CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0])));
  }

  /**
   * Gives back {@code bytes} (rounded up to whole blocks) of this namespace's reserve; the memory
   * stays ready in the master's cache for the next reserve.
   *
   * @return the namespace's reserve in bytes, after this call
   * @throws FerriteException CONFLICT if fewer unallocated whole blocks are reserved
   */
  public long release(long bytes) {
    checkPositive("release bytes", bytes);
    ByteBuffer b = call(MemoryProtocol.RELEASE, new Wire.Writer().i64(id).i64(bytes));
    return new Wire.Reader(b, "release answer").i64("reserved");
  }

  /**
   * Binds a globally visible range of {@code bytes} bytes of this namespace to reserved chunks,
   * striped round-robin over the memory servers (§III-E).
   *
   * @param flags {@link MemoryFlags#ALLOC_DEFAULT}
   * @throws FerriteException NO_SPACE if the reserve has too few free chunks, UNSUPPORTED for
   *     unknown flags
   */
  public RAddress alloc(long bytes, int flags) {
    checkPositive("alloc bytes", bytes);
    store.metAlloc.count();
    ByteBuffer b = call(MemoryProtocol.ALLOC, new Wire.Writer().i64(id).i64(bytes).i32(flags));
    Wire.Reader r = new Wire.Reader(b, "alloc answer");
    return new RAddress(this, r.i64("address"), r.i64("length"));
  }

  /**
   * Frees the allocation that starts at {@code raddr}'s address; its chunks return to this
   * namespace's reserve.
   *
   * @throws FerriteException NOT_FOUND if no allocation starts there, CONFLICT while it is mapped
   */
  public void free(RAddress raddr) {
    if (raddr.namespace() != this && !raddr.namespace().name.equals(name)) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          raddr + " belongs to namespace '" + raddr.namespace().name + "', not '" + name + "'");
    }
    free(raddr.address());
  }

  /**
   * Frees the allocation that starts at {@code address}, without looking it up first: the way to
   * free an allocation whose memory was lost ({@link #raddress} answers {@code DATA_LOST} for it).
   * Its chunks on memory that still exists return to this namespace's reserve; lost ones do not.
   *
   * @throws FerriteException NOT_FOUND if no allocation starts there, CONFLICT while it is mapped
   */
  public void free(long address) {
    call(MemoryProtocol.FREE, new Wire.Writer().i64(id).i64(address));
  }

  /** {@link RAddress#init}: a checked raddress for a range inside one allocation. */
  public RAddress raddress(long address, long length) {
    return RAddress.init(this, address, length);
  }

  public NamespaceStat stat() {
    ByteBuffer b = call(MemoryProtocol.STAT, new Wire.Writer().i64(id));
    Wire.Reader r = new Wire.Reader(b, "stat answer");
    return new NamespaceStat(
        r.i64("reserved"),
        r.i64("free"),
        r.i32("allocations"),
        r.i32("mappings"),
        r.i32("cached"),
        r.i32("pendingWrites"),
        r.i32("lostAllocations"),
        r.i64("lostBytes"));
  }

  static void checkPositive(String what, long v) {
    if (v <= 0) {
      throw new FerriteException(ErrorCode.INVALID_ARGUMENT, what + ": " + v + " (expected: > 0)");
    }
  }

  @Override
  public String toString() {
    return "namespace '" + name + "'";
  }
}
