package io.ferrite.fabric.shm;

import io.ferrite.fabric.Access;
import io.ferrite.fabric.Batch;
import io.ferrite.fabric.BlockKeys;
import io.ferrite.fabric.Capabilities;
import io.ferrite.fabric.Counters;
import io.ferrite.fabric.DeferredBatch;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.netty.MapAnswer;
import io.ferrite.fabric.netty.NettyConnection;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * A shm client connection: MAP goes over the control socket ({@link NettyConnection}), RPCs through
 * the connection's shared-memory rings ({@link RingClient}; on the socket when the server offers no
 * rings or a request does not fit them); one-sided ops are memory accesses on the client's own
 * mapping of the region file, with no work by the server's CPU.
 *
 * <p>The first op on a region asks the server to MAP it; the server checks that the key grants
 * something in the region and names the region file and its block key file ({@link BlockKeys}),
 * which this connection maps and caches, one mapping per region. From then on every op's key,
 * rights and bounds are checked here ({@link MappedRegion#check}): against the region-wide keys the
 * server confirmed (owner, read) and against the block key table, which the server rewrites when a
 * block is freed, so a revoked key fails at its next op. Futures are returned already completed. A
 * key the mapping does not know (a region-wide key not shown yet, or a stale one) asks the server
 * again, which answers {@link ErrorCode#BAD_RKEY} unless it grants something.
 *
 * <p>Ordering: a read is followed by an acquire fence and a write preceded by a release fence, so a
 * read that observes a word written by an earlier op (of any process mapping the file) also
 * observes what that op's writer did before it. Reads and writes are not atomic (torn reads are
 * possible, as on every fabric); atomics are the CPU's.
 *
 * <p>Once the control connection is lost, memory ops fail with {@link ErrorCode#UNAVAILABLE} too,
 * as they would on an RDMA queue pair whose peer went away.
 *
 * <p>A mapping is dropped when the caller {@link #release releases} its region, when a MAP of its
 * id fails with {@link ErrorCode#NO_SUCH_REGION} (the server freed it), when a re-MAP replaces it,
 * and when the sweep ({@link #SWEEP_MILLIS}) finds its file gone: a server unlinks the file of
 * every region it frees (a dropped kv table, a retired pool region), but the file's memory stays
 * held by every process that still maps it, so a client that never touched the region again would
 * hold that memory (the host's RAM, a full tmpfs for the server's next region) until it
 * disconnects. Dropping never unmaps under a racing op: the mapping is {@link
 * MappedRegion#release() released} (ops that already hold it finish on mapped memory, later ones
 * fail with {@code NO_SUCH_REGION}, which kv readers take for a stale layout) and the JVM unmaps it
 * once no op refers to it. A server never truncates a region file it frees (it unlinks it), so a
 * mapping of a freed region still reads the bytes it had (a kv shard's {@code MOVED} poison) and
 * never faults.
 *
 * <p>{@link #close()} may race with ops in flight on other threads: it releases every mapping the
 * same way (never {@link MappedRegion#close()}, which would unmap memory a racing op is copying and
 * crash the JVM). An op that passed its check before the close finishes on mapped memory and
 * completes; one that checks after it fails with {@link ErrorCode#UNAVAILABLE}. That costs an op
 * nothing: the check it already made (the mapping's volatile {@code closed}) is the only gate, and
 * the op's own reference to the mapping keeps it mapped (see {@link MappedRegion}'s reachability
 * fences). The rings are reference-counted ({@link RingFile#acquire}) and unmapped by their last
 * user.
 */
final class ShmConnection implements FabricConnection {
  private static final System.Logger LOG = System.getLogger(ShmConnection.class.getName());

  private final NettyConnection control;
  private final RingClient rings;
  private final Counters counters;
  private final ConcurrentHashMap<Integer, MappedRegion> mappings = new ConcurrentHashMap<>();

  /**
   * The mapping most recently used, to skip the map lookup when ops stay on one region. Always one
   * that is (or was, until replaced) in {@link #mappings}; a re-MAP sets it to the new one, so a
   * replaced mapping stops being used here as it does there. Plain, not volatile: a volatile store
   * is a full fence on x86, paid by every op that alternates between regions (a kv get reads a
   * table and an extent region). A thread that sees a stale or null value falls back to the map; a
   * released mapping is refused by its own volatile {@code isClosed}; and {@link MappedRegion}'s
   * fields are final, so a racy read of this field sees it whole.
   */
  private MappedRegion last;

  private volatile boolean closed;

  /**
   * How often mappings are checked against their files (one {@code stat} each, on the fabric's
   * timer thread): how long, at most, a client holds the memory of a region its server freed.
   */
  static final long SWEEP_MILLIS = 1000;

  /** Volatile: set after scheduling, read by the task itself (on the timer thread) and by close. */
  private volatile ScheduledFuture<?> sweep;

  private final ScheduledExecutorService timer;

  /**
   * Wraps an authenticated control connection; with {@code useRings}, asks the server for RPC rings
   * (within {@code timeout}) and carries RPCs through them, a waiter busy-spinning {@code
   * waiterSpinNanos} before it yields. A server without rings, or any failure setting them up,
   * leaves RPCs on the socket.
   */
  ShmConnection(
      NettyConnection control,
      boolean useRings,
      ScheduledExecutorService timer,
      Duration timeout,
      long waiterSpinNanos) {
    this.control = control;
    this.counters = control.counters();
    this.rings = useRings ? openRings(timeout, timer, waiterSpinNanos) : null;
    this.timer = timer;
    this.sweep =
        timer.scheduleWithFixedDelay(
            this::dropUnlinked, SWEEP_MILLIS, SWEEP_MILLIS, TimeUnit.MILLISECONDS);
  }

  /**
   * Drops every mapping whose file is gone: its server freed the region (region files are never
   * recreated under a freed id, so a missing file is final). Released, not unmapped: an op may be
   * copying from it right now (see the class comment); so the memory goes back once the JVM unmaps
   * it, after a collection, which this asks for when it dropped any (rare: a table dropped or a
   * pool region retired while this client had it mapped), as the server does for what it frees.
   */
  private void dropUnlinked() {
    if (closed || !control.isOpen()) {
      // The server is gone (or this was closed): no mapping is vouched for any more, and the
      // connection must not stay reachable from the timer. close() is idempotent.
      close();
      return;
    }
    boolean dropped = false;
    for (Map.Entry<Integer, MappedRegion> e : mappings.entrySet()) {
      if (!Files.exists(e.getValue().file())) {
        drop(e.getKey());
        dropped = true;
      }
    }
    if (dropped) {
      // As a task of its own: this frame may still hold the last mapping dropped (a dead local
      // that the interpreter keeps), which a collection asked for from here would not unmap.
      try {
        timer.execute(System::gc);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        // The fabric is closing: its connections' mappings go with it.
      }
    }
  }

  private RingClient openRings(
      Duration timeout, ScheduledExecutorService timer, long waiterSpinNanos) {
    RingFile file;
    try {
      String path = control.rings().get(Math.max(1, timeout.toMillis()), TimeUnit.MILLISECONDS);
      file = RingFile.open(Path.of(path));
    } catch (ExecutionException | TimeoutException | RuntimeException e) {
      LOG.log(
          System.Logger.Level.DEBUG,
          "no RPC rings on {0}, RPCs use the socket: {1}",
          control.address(),
          String.valueOf(e));
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
    // Both ends have it mapped (the server since it answered): nothing needs the name any more.
    file.unlink();
    RingClient r =
        new RingClient(
            control,
            file,
            counters,
            timer,
            ServerSpec.DEFAULT_MAX_FRAME - io.ferrite.fabric.Frames.HEADER_AFTER_LENGTH,
            waiterSpinNanos);
    control.onDoorbell(r::onDoorbell);
    control.onClosed(
        () ->
            r.lost(
                new FerriteException(
                    ErrorCode.UNAVAILABLE, "connection to " + control.address() + " closed")));
    return r;
  }

  /** The connection's rings, or null if its RPCs use the socket (for tests). */
  RingClient rings() {
    return rings;
  }

  @Override
  public int remoteId() {
    return control.remoteId();
  }

  @Override
  public Counters counters() {
    return counters;
  }

  @Override
  public boolean isOpen() {
    return !closed && control.isOpen();
  }

  // ---- mapping

  /** Asks the server to MAP {@code ref} (under its key) and installs or extends the mapping. */
  private CompletableFuture<MappedRegion> mapping(RegionRef ref) {
    // Memory ops need the server only for MAP, but they stop with the control connection: a
    // server that is gone (or dropped this client) no longer vouches for its region files.
    if (closed || !control.isOpen()) {
      return Futures.failed(
          ErrorCode.UNAVAILABLE, "connection to " + control.address() + " is closed");
    }
    return control
        .map(ref)
        .whenComplete(
            (answer, e) -> {
              if (e != null && FerriteException.unwrap(e).code() == ErrorCode.NO_SUCH_REGION) {
                // The server freed the region: a mapping of the id (under any rkey) is garbage.
                drop(ref.regionId());
              }
            })
        .thenApply(answer -> install(ref, answer));
  }

  /** Drops the mapping of the region (whatever key {@code region} carries). */
  @Override
  public void release(RegionRef region) {
    drop(region.regionId());
  }

  /**
   * Drops the mapping of region {@code id} without unmapping it under a racing op: see the class
   * comment.
   */
  private synchronized void drop(int id) {
    MappedRegion m = mappings.get(id);
    if (m == null) {
      return;
    }
    mappings.remove(id, m);
    m.release();
    if (last == m) {
      last = null;
    }
  }

  /** Reads, writes and atomics run on this process's own mappings, never by the server. */
  @Override
  public boolean mapsRegions() {
    return true;
  }

  @Override
  public long mappedLongAcquire(RegionRef region, long offset) {
    if ((offset & 7) != 0) {
      throw new FerriteException(
          ErrorCode.MISALIGNED, "offset: " + offset + " (expected: a multiple of 8)");
    }
    MappedRegion m = mapped(region);
    ErrorCode code = m == null ? null : fastCheck(m, region.rkey(), offset, 8, Access.READ);
    if (code == null) {
      return Futures.join(
          on(
              region,
              OpKind.READ,
              r -> {
                check(r, region.rkey(), offset, 8, Access.READ);
                return wordAcquire(r, offset);
              }));
    }
    if (code != ErrorCode.OK) {
      counters.recordError(OpKind.READ);
      throw failure(m, code, offset, 8);
    }
    return wordAcquire(m, offset);
  }

  private static long wordAcquire(MappedRegion m, long offset) {
    // Every earlier read of this thread (plain copies) completes before the word's load: a read
    // ends with an acquire fence already (readChecked); this one keeps the contract for any
    // caller. Then one volatile load (a plain aligned mov on x86: atomic, never torn). No count:
    // a counter add is a locked instruction, and this is a fence word, not data.
    VarHandle.acquireFence();
    return m.getLongAcquire(offset);
  }

  /** For tests: how many regions this connection has mapped. */
  int mappedRegions() {
    return mappings.size();
  }

  private synchronized MappedRegion install(RegionRef ref, MapAnswer answer) {
    if (closed) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE, "connection to " + control.address() + " is closed");
    }
    Path path = Path.of(answer.path());
    long key = ref.rkey();
    MappedRegion m = mappings.get(ref.regionId());
    boolean same = m != null && !m.isClosed() && m.file().equals(path);
    if (same
        && switch (answer.grant()) {
          case OWNER -> m.rkey() == key;
          case READ -> m.readKey() == key;
          default -> m.blockKeys() != null || answer.keysPath().isEmpty();
        }) {
      return m;
    }
    // A new mapping knowing the union of what the server confirmed for this region so far.
    long owner = same ? m.rkey() : 0;
    long read = same ? m.readKey() : 0;
    if (answer.grant() == MappedRegion.Grant.OWNER) {
      owner = key;
      read = Capabilities.readOnly(key);
    } else if (answer.grant() == MappedRegion.Grant.READ) {
      read = key;
    }
    MappedRegion fresh;
    try {
      fresh = MappedRegion.open(path, ref.regionId(), answer.length(), owner, read);
      if (!answer.keysPath().isEmpty()) {
        try {
          fresh.attachBlockKeys(BlockKeys.openReadOnly(Path.of(answer.keysPath())));
        } catch (RuntimeException e) {
          fresh.close();
          throw e;
        }
      }
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.NOT_FOUND) {
        throw e;
      }
      // The server freed the region between its MAP answer and this open (it unlinks the file;
      // region files are never recreated under a freed id).
      throw new FerriteException(
          ErrorCode.NO_SUCH_REGION, "region " + ref.regionId() + " was freed: " + e.detail(), e);
    }
    MappedRegion old = mappings.put(ref.regionId(), fresh);
    last = fresh;
    if (old != null) {
      // Ops may still hold it: the JVM unmaps it once they are done.
      old.release();
    }
    return fresh;
  }

  /**
   * Runs {@code op} on the region's mapping. With the mapping cached that is now, and the future is
   * returned complete. Otherwise this thread waits for the MAP answer (so that its ops still take
   * effect in issue order), except on an I/O thread, which must not block: there the op runs when
   * the answer arrives.
   */
  private <T> CompletableFuture<T> on(RegionRef ref, OpKind kind, Function<MappedRegion, T> op) {
    CompletableFuture<MappedRegion> m = mapping(ref);
    if (!m.isDone() && !control.inEventLoop()) {
      try {
        m.join();
      } catch (RuntimeException e) {
        // Reported through the future below.
      }
    }
    if (m.isDone()) {
      try {
        return CompletableFuture.completedFuture(op.apply(m.join()));
      } catch (RuntimeException e) {
        counters.recordError(kind);
        return CompletableFuture.failedFuture(FerriteException.unwrap(e));
      }
    }
    return m.thenApply(op)
        .whenComplete(
            (v, e) -> {
              if (e != null) {
                counters.recordError(kind);
              }
            })
        .exceptionallyCompose(e -> CompletableFuture.failedFuture(FerriteException.unwrap(e)));
  }

  private void check(MappedRegion m, long key, long offset, long len, Access access) {
    ErrorCode code = m.check(key, offset, len, access);
    if (code != ErrorCode.OK) {
      throw failure(m, code, offset, len);
    }
  }

  /** The exception a failed check of {@code m} ends an op with. */
  private FerriteException failure(MappedRegion m, ErrorCode code, long offset, long len) {
    if (code == ErrorCode.NO_SUCH_REGION && closed) {
      // Released by close(), not by the server: the connection is gone, not the region. close()
      // sets closed before it releases, so a release seen here implies closed is seen too.
      return new FerriteException(
          ErrorCode.UNAVAILABLE, "connection to " + control.address() + " is closed");
    }
    return new FerriteException(code, m.describe(code, offset, len));
  }

  /**
   * The fast path's check: OK to go on, or the code that fails the op here. BAD_RKEY is not final
   * (null: take the slow path): the key may be a region-wide key not shown to this mapping yet, so
   * the server is asked; a stale block key comes back BAD_RKEY from there.
   */
  private ErrorCode fastCheck(MappedRegion m, long key, long offset, long len, Access access) {
    ErrorCode code = m.check(key, offset, len, access);
    return code == ErrorCode.BAD_RKEY ? null : code;
  }

  private <T> CompletableFuture<T> failHere(
      MappedRegion m, OpKind kind, ErrorCode code, long offset, long len) {
    counters.recordError(kind);
    return CompletableFuture.failedFuture(failure(m, code, offset, len));
  }

  // ---- one-sided ops: memory accesses on the client's own mapping
  //
  // Each op first tries the fast path: the region's mapping is installed, the connection open and
  // the key known to the mapping, so the op is the key, rights and bounds check
  // (MappedRegion#check, once), the access, and a count — no lambda, no map lookup when the
  // region is the last one used, and for reads and writes no new future. Anything else (first
  // use, a key this mapping does not know, a closed connection) takes on(), which maps the region
  // under the op's key or reports why not.

  @Override
  public CompletableFuture<Void> read(RegionRef region, long offset, ByteBuffer dst) {
    if (dst.isReadOnly()) {
      return Futures.failed(ErrorCode.INVALID_ARGUMENT, "read into a read-only buffer");
    }
    MappedRegion m = mapped(region);
    ErrorCode code =
        m == null ? null : fastCheck(m, region.rkey(), offset, dst.remaining(), Access.READ);
    if (code == null) {
      return on(region, OpKind.READ, r -> readOn(r, region.rkey(), offset, dst));
    }
    if (code != ErrorCode.OK) {
      return failHere(m, OpKind.READ, code, offset, dst.remaining());
    }
    readChecked(m, offset, dst);
    return DONE;
  }

  private Void readOn(MappedRegion m, long key, long offset, ByteBuffer dst) {
    check(m, key, offset, dst.remaining(), Access.READ);
    return readChecked(m, offset, dst);
  }

  private Void readChecked(MappedRegion m, long offset, ByteBuffer dst) {
    int n = dst.remaining();
    // Counted before the copy: a counter add is a locked instruction, and after the copy it would
    // wait for the copy's stores to drain (a visible share of a 1 KiB kv get).
    counters.record(OpKind.READ, n);
    m.readInto(offset, dst);
    VarHandle.acquireFence();
    return null;
  }

  @Override
  public CompletableFuture<Void> write(RegionRef region, long offset, ByteBuffer src) {
    MappedRegion m = mapped(region);
    ErrorCode code =
        m == null ? null : fastCheck(m, region.rkey(), offset, src.remaining(), Access.WRITE);
    if (code == null) {
      return on(region, OpKind.WRITE, r -> writeOn(r, region.rkey(), offset, src));
    }
    if (code != ErrorCode.OK) {
      return failHere(m, OpKind.WRITE, code, offset, src.remaining());
    }
    writeChecked(m, offset, src);
    return DONE;
  }

  private Void writeOn(MappedRegion m, long key, long offset, ByteBuffer src) {
    check(m, key, offset, src.remaining(), Access.WRITE);
    return writeChecked(m, offset, src);
  }

  private Void writeChecked(MappedRegion m, long offset, ByteBuffer src) {
    int n = src.remaining();
    counters.record(OpKind.WRITE, n); // before the copy, as reads count
    VarHandle.releaseFence();
    m.writeFrom(offset, src);
    return null;
  }

  @Override
  public CompletableFuture<Long> compareAndSwap(
      RegionRef region, long offset, long expect, long update) {
    MappedRegion m = mapped(region);
    ErrorCode code = m == null ? null : fastCheck(m, region.rkey(), offset, 8, Access.ATOMIC);
    if (code == null) {
      return on(
          region, OpKind.COMPARE_AND_SWAP, r -> casOn(r, region.rkey(), offset, expect, update));
    }
    if (code != ErrorCode.OK) {
      return failHere(m, OpKind.COMPARE_AND_SWAP, code, offset, 8);
    }
    long previous = m.compareAndSwap(offset, expect, update);
    counters.record(OpKind.COMPARE_AND_SWAP, 8);
    return CompletableFuture.completedFuture(previous);
  }

  private Long casOn(MappedRegion m, long key, long offset, long expect, long update) {
    check(m, key, offset, 8, Access.ATOMIC);
    long previous = m.compareAndSwap(offset, expect, update);
    counters.record(OpKind.COMPARE_AND_SWAP, 8);
    return previous;
  }

  @Override
  public CompletableFuture<Long> fetchAndAdd(RegionRef region, long offset, long delta) {
    MappedRegion m = mapped(region);
    ErrorCode code = m == null ? null : fastCheck(m, region.rkey(), offset, 8, Access.ATOMIC);
    if (code == null) {
      return on(region, OpKind.FETCH_AND_ADD, r -> faaOn(r, region.rkey(), offset, delta));
    }
    if (code != ErrorCode.OK) {
      return failHere(m, OpKind.FETCH_AND_ADD, code, offset, 8);
    }
    long previous = m.fetchAndAdd(offset, delta);
    counters.record(OpKind.FETCH_AND_ADD, 8);
    return CompletableFuture.completedFuture(previous);
  }

  private Long faaOn(MappedRegion m, long key, long offset, long delta) {
    check(m, key, offset, 8, Access.ATOMIC);
    long previous = m.fetchAndAdd(offset, delta);
    counters.record(OpKind.FETCH_AND_ADD, 8);
    return previous;
  }

  /**
   * The installed mapping of {@code ref}'s region, if the connection is open; null sends the op
   * down the slow path ({@link #on}), which maps, re-asks the server, or fails it. The key is the
   * op's to check.
   */
  private MappedRegion mapped(RegionRef ref) {
    if (closed || !control.isOpen()) {
      return null;
    }
    MappedRegion m = last;
    if (m == null || m.id() != ref.regionId() || m.isClosed()) {
      m = mappings.get(ref.regionId());
      if (m == null || m.isClosed()) {
        return null;
      }
      last = m;
    }
    return m;
  }

  /**
   * The one future every successful read and write returns: it is already complete, so {@code
   * complete} and {@code cancel} do nothing; {@code obtrude*} would change it for every holder, so
   * they throw.
   */
  private static final CompletableFuture<Void> DONE = new Done();

  private static final class Done extends CompletableFuture<Void> {
    Done() {
      super.complete(null);
    }

    @Override
    public void obtrudeValue(Void value) {
      throw new UnsupportedOperationException("a shared completed future");
    }

    @Override
    public void obtrudeException(Throwable ex) {
      throw new UnsupportedOperationException("a shared completed future");
    }
  }

  // ---- RPC: through the rings, else over the control socket

  @Override
  public CompletableFuture<ByteBuffer> call(
      int service, int opcode, ByteBuffer request, Duration deadline) {
    RingClient r = rings;
    if (r != null && !closed) {
      CompletableFuture<ByteBuffer> f = r.call(service, opcode, request, deadline);
      if (f != null) {
        return f;
      }
    }
    return control.call(service, opcode, request, deadline);
  }

  @Override
  public Batch batch() {
    // Memory ops need no doorbell: they run in issue order at flush().
    return new DeferredBatch(this);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    ScheduledFuture<?> s = sweep;
    if (s != null) {
      s.cancel(false);
    }
    if (rings != null) {
      rings.lost(
          new FerriteException(
              ErrorCode.UNAVAILABLE, "connection to " + control.address() + " is closed"));
    }
    control.close();
    synchronized (this) {
      for (MappedRegion m : mappings.values()) {
        // Not close(): another thread may be copying from it right now (see the class comment).
        m.release();
      }
      mappings.clear();
      last = null;
    }
  }

  @Override
  public String toString() {
    return "shm " + control + (rings == null ? "" : ", " + rings);
  }
}
