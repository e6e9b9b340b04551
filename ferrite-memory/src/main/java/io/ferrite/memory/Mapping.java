package io.ferrite.memory;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.memory.proto.MemoryProtocol;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A mapped range of a namespace: the data path (RStore §III-F). {@link #read} and {@link #write}
 * take any byte offset and length inside the mapping; they are split at chunk boundaries into
 * one-sided ops, one batch per memory server, all issued before any is awaited, so one large read
 * uses every server at once. They make no RPC and allocate no buffer: the chunk locations were
 * fetched and every connection and region made ready by {@code map}; the ops read into and write
 * from the caller's buffer (slices of it), zero-copy on the client side.
 *
 * <p>No synchronization: reads and writes are not atomic, and a read racing a write (by any client)
 * may return a mix of old and new bytes. Clients coordinate themselves (e.g. with {@link Barrier}).
 *
 * <p>Thread-safe: reads and writes may run concurrently from many threads. {@link #unmap()} must
 * not race with ops in flight; on a copy-on-write mapping, a write (which moves this mapping to the
 * new chunk locations) must not race with reads through the same {@code Mapping} object (other
 * mappings, in this client or any other, read their own generation undisturbed).
 */
public final class Mapping implements AutoCloseable {
  private final Namespace namespace;
  private final FerriteClient client;
  private final long mapId;
  private final long address;
  private final long length;

  /** Offset of the mapping's first byte within its first chunk. */
  private final long head;

  private final long chunkSize;

  // Per chunk of the mapping (index 0 = the chunk holding the first mapped byte).
  private final RegionRef[] chunkRegion;
  private final long[] chunkOffset;
  private final int[] chunkSlot;

  /** Memory server of each slot. */
  private int[] slotServer;

  private final ByteBuffer buffer;
  private volatile boolean unmapped;

  // Copy-on-write (§III-G): null cow = an in-place allocation.
  private Cow cow;

  /** A COW mapping's state: its generation and where the per-chunk metadata words live. */
  private static final class Cow {
    long firstChunk;
    volatile long generation;
    RegionRef[] metaRegion;
    long[] metaOffset;
  }

  private Mapping(
      Namespace namespace,
      long mapId,
      long address,
      long length,
      long head,
      long chunkSize,
      RegionRef[] chunkRegion,
      long[] chunkOffset,
      int[] chunkSlot,
      int[] slotServer,
      ByteBuffer buffer) {
    this.namespace = namespace;
    this.client = namespace.client();
    this.mapId = mapId;
    this.address = address;
    this.length = length;
    this.head = head;
    this.chunkSize = chunkSize;
    this.chunkRegion = chunkRegion;
    this.chunkOffset = chunkOffset;
    this.chunkSlot = chunkSlot;
    this.slotServer = slotServer;
    this.buffer = buffer;
  }

  static Mapping open(Namespace ns, long address, long length, int flags) {
    FerriteClient client = ns.client();
    ByteBuffer b =
        ns.call(
            MemoryProtocol.MAP,
            new Wire.Writer()
                .i64(ns.id())
                .i64(address)
                .i64(length)
                .i64(client.sessionId())
                .i32(flags));
    Wire.Reader r = new Wire.Reader(b, "map answer");
    long mapId = r.i64("mapId");
    int chunkSize = r.i32("chunkSize");
    long firstChunk = r.i64("firstChunk");
    long generation = r.i64("generation");
    int allocFlags = r.i32("allocFlags");
    int nRegions = r.count("regions", MemoryProtocol.MAX_REGIONS);
    RegionRef[] regions = new RegionRef[nRegions];
    for (int i = 0; i < nRegions; i++) {
      regions[i] = MemoryProtocol.readRegion(r);
    }
    int n = r.count("chunks", MemoryProtocol.MAX_CHUNKS);
    RegionRef[] chunkRegion = new RegionRef[n];
    long[] chunkOffset = new long[n];
    int[] chunkSlot = new int[n];
    Map<Integer, Integer> slots = new HashMap<>();
    List<Integer> servers = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      int ri = r.i32("regionIndex");
      if (ri < 0 || ri >= nRegions) {
        throw new FerriteException(
            ErrorCode.PROTOCOL, "map answer: region index " + ri + " of " + nRegions);
      }
      chunkRegion[i] = regions[ri];
      chunkOffset[i] = r.i64("offset");
      int server = regions[ri].serverId();
      chunkSlot[i] =
          slots.computeIfAbsent(
              server,
              s -> {
                servers.add(s);
                return servers.size() - 1;
              });
    }
    int nMeta = r.count("metaChunks", MemoryProtocol.MAX_CHUNKS);
    Cow cow = null;
    if ((allocFlags & MemoryFlags.ALLOC_COW) != 0) {
      cow = new Cow();
      cow.firstChunk = firstChunk;
      cow.generation = generation;
      cow.metaRegion = new RegionRef[nMeta];
      cow.metaOffset = new long[nMeta];
      for (int i = 0; i < nMeta; i++) {
        cow.metaRegion[i] = regionAt(regions, r.i32("regionIndex"));
        cow.metaOffset[i] = r.i64("offset");
      }
    }
    r.end();
    Mapping m = null;
    try {
      // Make every region ready now (connections opened, shm files mapped), so that the data path
      // needs nothing from any server's CPU or the master.
      ByteBuffer probe = ByteBuffer.allocateDirect(8);
      List<CompletableFuture<Void>> ready = new ArrayList<>();
      for (RegionRef region : regions) {
        FabricConnection c = client.connection(region.serverId());
        // At a chunk of the entry: an entry's ref carries one block's key, valid in that block
        // only (a copy-on-write mapping's metadata chunks have entries of their own).
        long at = chunkOffsetOf(region, chunkRegion, chunkOffset);
        if (at < 0 && cow != null) {
          at = chunkOffsetOf(region, cow.metaRegion, cow.metaOffset);
        }
        ready.add(c.read(region, Math.max(at, 0), probe.duplicate()));
      }
      Futures.join(CompletableFuture.allOf(ready.toArray(new CompletableFuture<?>[0])));
      ByteBuffer buffer =
          (flags & MemoryFlags.MAP_NO_BUFFER) != 0 ? null : ns.store().takeBuffer((int) length);
      m =
          new Mapping(
              ns,
              mapId,
              address,
              length,
              headOf(address, chunkSize),
              chunkSize,
              chunkRegion,
              chunkOffset,
              chunkSlot,
              servers.stream().mapToInt(Integer::intValue).toArray(),
              buffer);
      m.cow = cow;
      return m;
    } catch (RuntimeException e) {
      if (m == null) {
        unmapAtMaster(ns, mapId);
      }
      throw e;
    }
  }

  private static RegionRef regionAt(RegionRef[] regions, int i) {
    if (i < 0 || i >= regions.length) {
      throw new FerriteException(
          ErrorCode.PROTOCOL, "map answer: region index " + i + " of " + regions.length);
    }
    return regions[i];
  }

  private static long chunkOffsetOf(RegionRef region, RegionRef[] chunkRegion, long[] offsets) {
    for (int i = 0; i < chunkRegion.length; i++) {
      if (chunkRegion[i] == region) {
        return offsets[i];
      }
    }
    return -1;
  }

  /**
   * Where the mapping starts within its first chunk. Allocations start on chunk boundaries of the
   * namespace's address space, so the address alone tells.
   */
  private static long headOf(long address, long chunkSize) {
    return Math.floorMod(address, chunkSize);
  }

  private static void unmapAtMaster(Namespace ns, long mapId) {
    ns.call(MemoryProtocol.UNMAP, new Wire.Writer().i64(mapId).i64(ns.client().sessionId()));
  }

  public Namespace namespace() {
    return namespace;
  }

  /** The namespace address of the mapping's first byte. */
  public long address() {
    return address;
  }

  public long length() {
    return length;
  }

  /**
   * The local staging buffer (RStore's mapped local memory): {@link #length()} bytes, byte {@code
   * i} staging mapped byte {@code i}; see {@link #readToBuffer} and {@link #writeFromBuffer}.
   *
   * @throws FerriteException INVALID_ARGUMENT if mapped with {@link MemoryFlags#MAP_NO_BUFFER}
   */
  public ByteBuffer buffer() {
    if (buffer == null) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "this mapping was made with MAP_NO_BUFFER: no staging buffer");
    }
    return buffer;
  }

  // ---------------------------------------------------------------- data path

  private void check(long offset, long len, String op) {
    if (unmapped) {
      throw new FerriteException(
          ErrorCode.NOT_FOUND,
          op + " on an unmapped mapping of 0x" + Long.toHexString(address) + " in " + namespace);
    }
    if (offset < 0 || len < 0 || offset > length - len) {
      throw new FerriteException(
          ErrorCode.OUT_OF_BOUNDS,
          op
              + " offset: "
              + offset
              + ", length: "
              + len
              + " (expected: 0 <= offset and offset + length <= "
              + length
              + ", the mapping's length)");
    }
  }

  /**
   * Reads {@code dst.remaining()} bytes at {@code offset} of the mapping into {@code dst} (position
   * and limit unchanged; do not touch it until the future completes).
   */
  public CompletableFuture<Void> read(long offset, ByteBuffer dst) {
    try {
      check(offset, dst.remaining(), "read");
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    }
    namespace.store().metRead.count();
    return lostTyped(io(offset, dst, false));
  }

  /** Writes {@code src.remaining()} bytes of {@code src} at {@code offset} of the mapping. */
  public CompletableFuture<Void> write(long offset, ByteBuffer src) {
    try {
      check(offset, src.remaining(), "write");
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    }
    namespace.store().metWrite.count();
    return lostTyped(cow == null ? io(offset, src, true) : cowWrite(offset, src));
  }

  long mapIdForTests() {
    return mapId;
  }

  /** Whether this is a mapping of a copy-on-write allocation. */
  public boolean copyOnWrite() {
    return cow != null;
  }

  /** COW: the published generation this mapping reads (0 for an in-place allocation). */
  public long generation() {
    return cow == null ? 0 : cow.generation;
  }

  /**
   * COW (§III-G): whether a newer generation of any mapped chunk has been published since this
   * mapping was made, read from the per-chunk metadata words on the memory servers (one-sided, no
   * RPC). This mapping still reads its own generation, consistently; map again to read the new
   * data. Always false for an in-place allocation.
   */
  public boolean stale() {
    if (cow == null) {
      return false;
    }
    ByteBuffer word = ByteBuffer.allocateDirect(8).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < chunkRegion.length; i++) {
      long meta = (cow.firstChunk + i) * 8;
      int mc = (int) (meta / chunkSize);
      word.clear();
      Futures.join(
          client
              .connection(cow.metaRegion[mc].serverId())
              .read(cow.metaRegion[mc], cow.metaOffset[mc] + meta % chunkSize, word));
      if (word.getLong(0) > cow.generation) {
        return true;
      }
    }
    return false;
  }

  /**
   * A write to a copy-on-write allocation (§III-G): the master leases fresh chunks for every chunk
   * the write touches; this client writes each whole chunk there (the old bytes around the written
   * range copied over), then the master publishes them atomically; last, the per-chunk metadata
   * words tell readers of older generations that newer data exists. A writer that dies before the
   * publish leaves the last published data as it was; the lease's chunks are freed when it expires.
   * This path makes RPCs and allocates a chunk-sized staging buffer: it is the price of atomicity.
   */
  private synchronized CompletableFuture<Void> cowWrite(long offset, ByteBuffer src) {
    try {
      int len = src.remaining();
      if (len == 0) {
        return CompletableFuture.completedFuture(null);
      }
      long at = head + offset;
      int c0 = (int) (at / chunkSize);
      int c1 = (int) ((at + len - 1) / chunkSize);
      int count = c1 - c0 + 1;
      long session = client.sessionId();
      ByteBuffer b =
          namespace.call(
              MemoryProtocol.COW_BEGIN,
              new Wire.Writer()
                  .i64(mapId)
                  .i64(session)
                  .i32((int) (cow.firstChunk + c0))
                  .i32(count));
      Wire.Reader r = new Wire.Reader(b, "copy-on-write lease");
      long leaseId = r.i64("leaseId");
      r.i64("leaseMillis");
      int nRegions = r.count("regions", MemoryProtocol.MAX_REGIONS);
      RegionRef[] regions = new RegionRef[nRegions];
      for (int i = 0; i < nRegions; i++) {
        regions[i] = MemoryProtocol.readRegion(r);
      }
      int n = r.count("chunks", count);
      RegionRef[] freshRegion = new RegionRef[n];
      long[] freshOffset = new long[n];
      for (int i = 0; i < n; i++) {
        freshRegion[i] = regionAt(regions, r.i32("regionIndex"));
        freshOffset[i] = r.i64("offset");
      }
      r.end();
      ByteBuffer chunk = ByteBuffer.allocateDirect((int) chunkSize);
      for (int k = 0; k < count; k++) {
        int ci = c0 + k;
        long chunkStart = (long) ci * chunkSize - head; // mapping offset of the chunk's byte 0
        chunk.clear();
        Futures.join(
            client
                .connection(slotServer[chunkSlot[ci]])
                .read(chunkRegion[ci], chunkOffset[ci], chunk));
        long from = Math.max(offset, chunkStart);
        long to = Math.min(offset + len, chunkStart + chunkSize);
        chunk.put(
            (int) (from - chunkStart),
            src,
            src.position() + (int) (from - offset),
            (int) (to - from));
        Futures.join(
            client
                .connection(freshRegion[k].serverId())
                .write(freshRegion[k], freshOffset[k], chunk));
      }
      ByteBuffer pb =
          namespace.call(
              MemoryProtocol.COW_PUBLISH, new Wire.Writer().i64(leaseId).i64(session).i64(mapId));
      long generation = new Wire.Reader(pb, "publish answer").i64("generation");
      for (int k = 0; k < count; k++) {
        int ci = c0 + k;
        chunkRegion[ci] = freshRegion[k];
        chunkOffset[ci] = freshOffset[k];
        chunkSlot[ci] = slotOf(freshRegion[k].serverId());
      }
      cow.generation = generation;
      // Taint: the metadata word of each rewritten chunk says which generation is current.
      ByteBuffer word = ByteBuffer.allocateDirect(8).order(java.nio.ByteOrder.LITTLE_ENDIAN);
      word.putLong(0, generation);
      for (int k = 0; k < count; k++) {
        long meta = (cow.firstChunk + c0 + k) * 8;
        int mc = (int) (meta / chunkSize);
        Futures.join(
            client
                .connection(cow.metaRegion[mc].serverId())
                .write(cow.metaRegion[mc], cow.metaOffset[mc] + meta % chunkSize, word.clear()));
      }
      return CompletableFuture.completedFuture(null);
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  private int slotOf(int server) {
    for (int i = 0; i < slotServer.length; i++) {
      if (slotServer[i] == server) {
        return i;
      }
    }
    int[] grown = java.util.Arrays.copyOf(slotServer, slotServer.length + 1);
    grown[slotServer.length] = server;
    slotServer = grown;
    return grown.length - 1;
  }

  public void readSync(long offset, ByteBuffer dst) {
    Futures.join(read(offset, dst));
  }

  public void writeSync(long offset, ByteBuffer src) {
    Futures.join(write(offset, src));
  }

  /**
   * The one mapping of a data op's failure, for the asynchronous {@link #read}/{@link #write} and
   * every blocking path alike: a server that refuses the mapping's key or region ({@code BAD_RKEY},
   * {@code NO_SUCH_REGION}) may have lost the memory with a restart: then the master is asked once
   * (a LOOKUP, asynchronously: never blocking the fabric thread that completed the op) and its
   * {@code DATA_LOST}, naming the namespace and allocation, fails {@code f}'s result instead, the
   * server's refusal suppressed in it. Any other failure, or a lookup that finds the allocation
   * whole, keeps the server's code.
   *
   * <p>Cost: nothing for an op already completed successfully (shm completes inline); one dependent
   * stage otherwise.
   */
  private CompletableFuture<Void> lostTyped(CompletableFuture<Void> f) {
    if (f.isDone() && !f.isCompletedExceptionally()) {
      return f;
    }
    return f.exceptionallyCompose(
        t -> {
          FerriteException e = FerriteException.unwrap(t);
          if (e.code() != ErrorCode.BAD_RKEY && e.code() != ErrorCode.NO_SUCH_REGION) {
            return CompletableFuture.failedFuture(e);
          }
          CompletableFuture<ByteBuffer> lookup;
          try {
            lookup =
                namespace.callAsync(
                    MemoryProtocol.LOOKUP,
                    new Wire.Writer().i64(namespace.id()).i64(address).i64(1));
          } catch (RuntimeException notAsked) {
            return CompletableFuture.failedFuture(e);
          }
          return lookup
              .handle(
                  (ok, lt) -> {
                    FerriteException lost = lt == null ? null : FerriteException.unwrap(lt);
                    if (lost != null && lost.code() == ErrorCode.DATA_LOST) {
                      lost.addSuppressed(e);
                      return CompletableFuture.<Void>failedFuture(lost);
                    }
                    return CompletableFuture.<Void>failedFuture(e);
                  })
              .thenCompose(x -> x);
        });
  }

  /**
   * Reads {@code [offset, offset + len)} of the mapping into the same range of {@link #buffer()}.
   */
  public void readToBuffer(long offset, int len) {
    ByteBuffer b = buffer();
    check(offset, len, "read");
    namespace.store().metRead.count();
    Futures.join(lostTyped(io(offset, b.slice((int) offset, len), false)));
  }

  /**
   * Writes {@code [offset, offset + len)} of {@link #buffer()} to the same range of the mapping.
   */
  public void writeFromBuffer(long offset, int len) {
    ByteBuffer b = buffer();
    check(offset, len, "write");
    namespace.store().metWrite.count();
    Futures.join(lostTyped(io(offset, b.slice((int) offset, len), true)));
  }

  private CompletableFuture<Void> io(long offset, ByteBuffer buf, boolean write) {
    int len = buf.remaining();
    long at = head + offset;
    int chunk = (int) (at / chunkSize);
    long in = at - chunk * chunkSize;
    if (in + len <= chunkSize && len <= Namespace.MAX_OP) {
      // Common case: inside one chunk, one op on the server's connection.
      FabricConnection c = client.connection(slotServer[chunkSlot[chunk]]);
      return write
          ? c.write(chunkRegion[chunk], chunkOffset[chunk] + in, buf)
          : c.read(chunkRegion[chunk], chunkOffset[chunk] + in, buf);
    }
    long pieces = (in + len + chunkSize - 1) / chunkSize;
    if (pieces > (long) WINDOW_PER_SERVER * slotServer.length) {
      return new Window(buf, write, chunk, in).start();
    }
    Batch[] batches = new Batch[slotServer.length];
    int pos = buf.position();
    int done = 0;
    while (done < len) {
      int n = (int) Math.min(len - done, Math.min(chunkSize - in, Namespace.MAX_OP));
      ByteBuffer piece = buf.slice(pos + done, n);
      int slot = chunkSlot[chunk];
      Batch b = batches[slot];
      if (b == null) {
        b = client.batch(slotServer[slot]);
        batches[slot] = b;
      }
      long remote = chunkOffset[chunk] + in;
      if (write) {
        b.write(chunkRegion[chunk], remote, piece);
      } else {
        b.read(chunkRegion[chunk], remote, piece);
      }
      done += n;
      in += n;
      if (in == chunkSize) {
        in = 0;
        chunk++;
      }
    }
    // Flush every server's batch before waiting on any: the servers work in parallel.
    CompletableFuture<?>[] flushed = new CompletableFuture<?>[batches.length];
    int k = 0;
    for (Batch b : batches) {
      if (b != null) {
        flushed[k++] = b.flush();
      }
    }
    return k == 1
        ? flushed[0].thenApply(v -> null)
        : CompletableFuture.allOf(java.util.Arrays.copyOf(flushed, k));
  }

  /**
   * Ops kept in flight per server by a transfer of many chunks: enough to keep every server busy,
   * few enough that a fabric's queues (and a tcp socket's buffers) do not fill with one caller's
   * megabytes. Measured by {@code bench memory}: a 64 MiB read over tcp issued all at once (32 ops
   * per connection) moved a third of what the same read did with a window.
   */
  static final int WINDOW_PER_SERVER = 4;

  /**
   * A transfer of many chunk pieces with at most {@link #WINDOW_PER_SERVER} per server in flight:
   * each completion issues the next piece. Pieces go out in address order, which round-robin
   * striping spreads over the servers. A drain loop (one thread at a time, by {@code wip}) issues
   * pieces, so a fabric that completes ops inline (shm) does not recurse.
   */
  private final class Window implements java.util.function.BiConsumer<Object, Throwable> {
    private final ByteBuffer buf;
    private final boolean write;
    private final int len;
    private final int window = WINDOW_PER_SERVER * slotServer.length;
    private final java.util.concurrent.atomic.AtomicInteger wip =
        new java.util.concurrent.atomic.AtomicInteger();
    private final java.util.concurrent.atomic.AtomicInteger outstanding =
        new java.util.concurrent.atomic.AtomicInteger();
    private final CompletableFuture<Void> result = new CompletableFuture<>();
    private volatile Throwable failure;
    // The cursor: touched only inside the drain loop.
    private int done;
    private int chunk;
    private long in;

    Window(ByteBuffer buf, boolean write, int chunk, long in) {
      this.buf = buf;
      this.write = write;
      this.len = buf.remaining();
      this.chunk = chunk;
      this.in = in;
    }

    CompletableFuture<Void> start() {
      drain();
      return result;
    }

    private void drain() {
      if (wip.getAndIncrement() != 0) {
        return;
      }
      do {
        while (failure == null && done < len && outstanding.get() < window) {
          int n = (int) Math.min(len - done, Math.min(chunkSize - in, Namespace.MAX_OP));
          ByteBuffer piece = buf.slice(buf.position() + done, n);
          long remote = chunkOffset[chunk] + in;
          RegionRef region = chunkRegion[chunk];
          int server = slotServer[chunkSlot[chunk]];
          done += n;
          in += n;
          if (in == chunkSize) {
            in = 0;
            chunk++;
          }
          outstanding.incrementAndGet();
          CompletableFuture<Void> f;
          try {
            FabricConnection c = client.connection(server);
            f = write ? c.write(region, remote, piece) : c.read(region, remote, piece);
          } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
          }
          f.whenComplete(this);
        }
        if (outstanding.get() == 0 && (done == len || failure != null) && !result.isDone()) {
          Throwable t = failure;
          if (t == null) {
            result.complete(null);
          } else {
            result.completeExceptionally(FerriteException.unwrap(t));
          }
        }
      } while (wip.decrementAndGet() != 0);
    }

    @Override
    public void accept(Object ignored, Throwable t) {
      if (t != null && failure == null) {
        failure = t;
      }
      outstanding.decrementAndGet();
      drain();
    }
  }

  // ---------------------------------------------------------------- control

  /**
   * Drops this client's reference at the master and keeps the staging buffer for the next map
   * (§IV-B). Idempotent.
   */
  public void unmap() {
    if (unmapped) {
      return;
    }
    unmapped = true;
    try {
      unmapAtMaster(namespace, mapId);
    } finally {
      if (buffer != null) {
        namespace.store().giveBuffer(buffer);
      }
    }
  }

  @Override
  public void close() {
    unmap();
  }

  @Override
  public String toString() {
    return "mapping 0x" + Long.toHexString(address) + " +" + length + " of " + namespace;
  }
}
