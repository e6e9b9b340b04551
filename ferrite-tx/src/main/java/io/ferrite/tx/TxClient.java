package io.ferrite.tx;

import io.ferrite.fabric.Batch;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * The tx face's client: the cached region map, transactions ({@link #txBegin}) and lock-free reads
 * ({@link #lockFreeRead}). Thread-safe; a {@link Transaction} is not (one thread each).
 *
 * <p>The region map (region → primary, with the primary's read capability for the region) is
 * fetched from the master's {@code TxDirectory} and the primary ({@code OPEN_REGION}) on first use
 * and cached. A server that is no longer a region's primary answers {@code MOVED}; a capability
 * that no longer opens the region fails with {@code BAD_RKEY} or {@code NO_SUCH_REGION}; a primary
 * that died does not answer: in each case the entry is dropped, fetched again (the master promotes
 * a backup once it declared the primary DEAD), and the operation retried, for a bounded time.
 */
public final class TxClient {
  /** Torn or locked copies read again before a read gives up with {@code BUSY}. */
  /**
   * How long a read retries an object it finds locked or torn before it answers BUSY: longer than
   * any lock is held by a live committer (microseconds) or outlives a dead one (the server reaps it
   * after {@code tx.lock.lease}, 300 ms by default), short enough that an object that never reads
   * consistently (a bug) fails the caller instead of hanging it.
   */
  static final long READ_PATIENCE_NANOS = 2_000_000_000L;

  /** Reads of one primary in one batch at most ({@link #readAll}). */
  static final int READ_BATCH = 32;

  /** A region as this client knows it. */
  record RegionView(int region, int primary, RegionRef ref) {}

  /** A verified copy of an object: its version and payload. */
  record Copy(long version, byte[] payload) {}

  /** A new object and the version its allocation gave it. */
  record Allocated(FatPointer ptr, long version) {}

  /**
   * How long an operation on a region whose primary does not answer waits for the master's map to
   * name another (the master declares a silent server DEAD after {@code server.dead.timeout}, and
   * promotes a backup), fetching the map again, before it gives up with the last error.
   */
  static final long FAILOVER_PATIENCE_NANOS = 30_000_000_000L;

  private final FerriteClient client;
  private final Map<Integer, RegionView> regions = new ConcurrentHashMap<>();
  private final LongAdder oneSidedReads = new LongAdder();
  private volatile int allocRegion = -1;

  public TxClient(FerriteClient client) {
    this.client = client;
  }

  FerriteClient ferrite() {
    return client;
  }

  /** Starts a transaction (FaRM §3.4). */
  public Transaction txBegin() {
    return new Transaction(this, ThreadLocalRandom.current().nextLong());
  }

  /**
   * Reads {@code p} outside any transaction with one one-sided read (FaRM §3.5), read again while
   * the copy is locked or torn.
   *
   * @return the object's first {@code p.size()} payload bytes, as committed by some transaction
   * @throws FerriteException NOT_FOUND if the object was freed (another incarnation lives there);
   *     NO_SUCH_REGION if {@code p}'s region is not in the map (no capability); BUSY, retryable, if
   *     every attempt found it locked or torn
   */
  public byte[] lockFreeRead(FatPointer p) {
    return read(p).payload();
  }

  /**
   * Ships {@code function} (a {@link TxFunction} installed on the memory servers) to the primary of
   * {@code address} and runs it there as a single-server transaction (FaRM §3.4, function
   * shipping): one round trip, conflicts retried at the server ({@code Shipping.ATTEMPTS} times).
   *
   * @return committed with the function's output, or the abort of its last attempt (LOCKED: an
   *     object stayed locked by other transactions; VALIDATION: it kept changing)
   * @throws FerriteException NOT_FOUND for a function the server does not have (the message lists
   *     those it has) or a freed object; INVALID_ARGUMENT if the function touched an object whose
   *     primary is another server, or threw; TIMEOUT/UNAVAILABLE/DROPPED when no answer came: the
   *     outcome is then unknown, as for a commit
   */
  public Shipped ship(String function, FatPointer address, byte[] argument) {
    Wire.Writer w = new Wire.Writer().str(function);
    FatPointer.writeTo(w, address);
    w.bytes(argument);
    Wire.Reader r =
        new Wire.Reader(callPrimary(address.region(), TxProtocol.SHIP, w.toBuffer()), "tx ship");
    int st = r.u8("status");
    byte[] out = r.bytes("output");
    r.end();
    if (st == TxProtocol.OK) {
      return new Shipped(TxResult.COMMITTED, out);
    }
    String where = "shipped '" + function + "' at the primary of " + address;
    return new Shipped(
        st == TxProtocol.LOCKED
            ? TxResult.abort(TxResult.Reason.LOCKED, where + ": an object stayed locked")
            : TxResult.abort(TxResult.Reason.VALIDATION, where + ": its objects kept changing"),
        out);
  }

  /** One-sided reads this client issued for objects (lock-free, transactional, validation). */
  public long oneSidedReads() {
    return oneSidedReads.sum();
  }

  /** A consistent copy of {@code p} (see {@link #lockFreeRead}). */
  Copy read(FatPointer p) {
    int lines = ObjectLayout.lines(p.size());
    ByteBuffer copy = ByteBuffer.allocate(lines * ObjectLayout.LINE);
    long firstRetry = 0; // nanoTime, taken only when a read must retry: none on the clean path
    int attempt = 0;
    for (; patient(attempt, firstRetry); attempt++) {
      fetch(p, copy.clear());
      long v = ObjectLayout.verify(copy.clear(), lines, p.incarnation());
      if (v >= 0) {
        return new Copy(v, ObjectLayout.payload(copy, p.size()));
      }
      if (v == ObjectLayout.FREED) {
        throw freed(p);
      }
      firstRetry = attempt == 0 ? System.nanoTime() : firstRetry;
      backoff(attempt);
    }
    throw new FerriteException(
        ErrorCode.BUSY,
        p
            + ": locked or torn in "
            + attempt
            + " reads over "
            + READ_PATIENCE_NANOS / 1_000_000
            + " ms (retryable; a lock outlives its holder only until tx.lock.lease)");
  }

  /**
   * Consistent copies of {@code ptrs} (distinct), their one-sided reads all issued before any is
   * waited for: one {@link Batch} per primary, every batch but the last flushed asynchronously and
   * the last waited for on this thread (over tcp: a blocking lane when the connection allows it),
   * so the reads of a transaction cost one round trip, not one each. Each copy is verified as
   * {@link #read} verifies it; one found locked or torn, or a batch that failed (a stale
   * capability, an unreachable primary), is read again alone by {@link #read}, with its retries and
   * its failover.
   *
   * @throws FerriteException NOT_FOUND if an object was freed; as {@link #read} otherwise
   */
  Copy[] readAll(List<FatPointer> ptrs) {
    Copy[] out = new Copy[ptrs.size()];
    if (ptrs.size() == 1) {
      out[0] = read(ptrs.get(0));
      return out;
    }
    Map<Integer, List<Integer>> byPrimary = new LinkedHashMap<>();
    RegionView[] views = new RegionView[ptrs.size()];
    for (int i = 0; i < ptrs.size(); i++) {
      try {
        views[i] = view(ptrs.get(i).region());
      } catch (FerriteException e) {
        continue; // read alone below: its failover, or its error
      }
      byPrimary.computeIfAbsent(views[i].primary(), k -> new ArrayList<>()).add(i);
    }
    // One batch per primary, of at most READ_BATCH reads (a batch's ops hold in-flight permits).
    List<Integer> primaries = new ArrayList<>();
    List<List<Integer>> groups = new ArrayList<>();
    byPrimary.forEach(
        (server, is) -> {
          for (int from = 0; from < is.size(); from += READ_BATCH) {
            primaries.add(server);
            groups.add(is.subList(from, Math.min(is.size(), from + READ_BATCH)));
          }
        });
    ByteBuffer[] copies = new ByteBuffer[ptrs.size()];
    List<CompletableFuture<Void>> sent = new ArrayList<>(groups.size());
    List<FabricConnection> conns = new ArrayList<>(groups.size());
    for (int g = 0; g < groups.size(); g++) {
      boolean last = g == groups.size() - 1;
      CompletableFuture<Void> f;
      FabricConnection c = null;
      try {
        c = client.connection(primaries.get(g));
        Batch b = c.batch();
        for (int i : groups.get(g)) {
          FatPointer p = ptrs.get(i);
          copies[i] = ByteBuffer.allocate(ObjectLayout.lines(p.size()) * ObjectLayout.LINE);
          oneSidedReads.increment();
          b.read(views[i].ref(), p.offset(), copies[i]);
        }
        if (last) {
          b.flushSync();
          f = CompletableFuture.completedFuture(null);
        } else {
          f = b.flush();
        }
      } catch (FerriteException x) {
        f = CompletableFuture.failedFuture(x);
      }
      sent.add(f);
      conns.add(c);
    }
    for (int k = 0; k < groups.size(); k++) {
      boolean ok;
      try {
        sent.get(k).join();
        FabricConnection c = conns.get(k);
        if (c.mapsRegions()) {
          for (int i : groups.get(k)) {
            TxLeaseWord.check(c, views[i].ref()); // after the data, as in fetch
          }
        }
        ok = true;
      } catch (CompletionException | FerriteException x) {
        ok = false; // read alone below, with read's failover
      }
      if (!ok) {
        continue;
      }
      for (int i : groups.get(k)) {
        FatPointer p = ptrs.get(i);
        int lines = ObjectLayout.lines(p.size());
        long v = ObjectLayout.verify(copies[i].clear(), lines, p.incarnation());
        if (v >= 0) {
          out[i] = new Copy(v, ObjectLayout.payload(copies[i], p.size()));
        } else if (v == ObjectLayout.FREED) {
          throw freed(p);
        }
      }
    }
    for (int i = 0; i < out.length; i++) {
      if (out[i] == null) {
        out[i] = read(ptrs.get(i)); // locked, torn, or its batch failed: alone, as a single read
      }
    }
    return out;
  }

  /**
   * The version {@code p} holds now, for VALIDATE: -1 if it is locked (by another transaction: the
   * caller holds no lock on it) or freed, else its committed version.
   */
  long probe(FatPointer p) {
    int lines = ObjectLayout.lines(p.size());
    ByteBuffer copy = ByteBuffer.allocate(lines * ObjectLayout.LINE);
    long firstRetry = 0;
    for (int attempt = 0; patient(attempt, firstRetry); attempt++) {
      fetch(p, copy.clear());
      copy.clear(); // whether the fabric advanced the position or not: the copy is [0, capacity)
      if (ObjectLayout.locked(copy)) {
        return -1;
      }
      long v = ObjectLayout.verify(copy, lines, p.incarnation());
      if (v != ObjectLayout.RETRY) {
        return v;
      }
      firstRetry = attempt == 0 ? System.nanoTime() : firstRetry;
      backoff(attempt);
    }
    return -1;
  }

  /**
   * Whether a read that first retried at {@code firstRetry} tries again ({@link
   * #READ_PATIENCE_NANOS}).
   */
  private static boolean patient(int attempt, long firstRetry) {
    return attempt < 64 || System.nanoTime() - firstRetry < READ_PATIENCE_NANOS;
  }

  private static void backoff(int attempt) {
    if (attempt > 16) {
      LockSupport.parkNanos(Math.min(1_000_000L, 1_000L << Math.min(attempt - 16, 10)));
    } else {
      Thread.onSpinWait();
    }
  }

  /**
   * One one-sided read of {@code p}'s lines; a stale capability or an unreachable primary is
   * fetched again from the master ({@link #onPrimary}).
   */
  private void fetch(FatPointer p, ByteBuffer dst) {
    onPrimary(
        p.region(),
        v -> {
          dst.clear();
          oneSidedReads.increment();
          FabricConnection c = client.connection(v.primary());
          c.readSync(v.ref(), p.offset(), dst);
          if (c.mapsRegions()) {
            TxLeaseWord.check(c, v.ref()); // after the data: shm reads bypass the server's check
          }
          return null;
        });
  }

  /** Whether an operation failed because the map entry is stale or its primary is unreachable. */
  private static boolean failover(ErrorCode code) {
    return code == ErrorCode.UNAVAILABLE
        || code == ErrorCode.TIMEOUT
        || code == ErrorCode.DROPPED
        || code == ErrorCode.MOVED
        || code == ErrorCode.BAD_RKEY
        || code == ErrorCode.NO_SUCH_REGION;
  }

  /**
   * Runs {@code op} against region {@code region}'s primary as the cached map names it; when it
   * fails because the entry is stale (MOVED, a capability that no longer opens the region) or the
   * primary does not answer (UNAVAILABLE, TIMEOUT, DROPPED), the entry is dropped, fetched again
   * from the master (which names a promoted backup once it declared the primary DEAD) and {@code
   * op} retried, for up to {@link #FAILOVER_PATIENCE_NANOS}. {@code op} must be safe to repeat.
   */
  <T> T onPrimary(int region, java.util.function.Function<RegionView, T> op) {
    long first = 0;
    for (int attempt = 0; ; attempt++) {
      FerriteException failed;
      try {
        RegionView v = view(region);
        try {
          return op.apply(v);
        } catch (FerriteException e) {
          // A dropped message is the network's, not the map's: the same entry is tried again
          // (the master is not asked: a dropped GET_REGION would only cost more).
          if (e.code() != ErrorCode.DROPPED) {
            regions.remove(region, v);
          }
          failed = e;
        }
      } catch (FerriteException e) {
        if (e.code() == ErrorCode.NO_SUCH_REGION) {
          throw e; // not in the master's map: no capability for it
        }
        failed = e;
      }
      if (!failover(failed.code())) {
        throw failed;
      }
      first = attempt == 0 ? System.nanoTime() : first;
      if (attempt > 0 && System.nanoTime() - first > FAILOVER_PATIENCE_NANOS) {
        throw failed;
      }
      if (attempt > 0) {
        LockSupport.parkNanos(Math.min(50_000_000L, 1_000_000L << Math.min(attempt, 6)));
      }
    }
  }

  /** The error for a read of a freed object through a stale fat pointer {@code p}. */
  public static FerriteException freed(FatPointer p) {
    return new FerriteException(
        ErrorCode.NOT_FOUND,
        p + " was freed: its slot holds another incarnation (a stale fat pointer)");
  }

  /** Region {@code id} from the cache, or fetched from the master and its primary. */
  RegionView view(int id) {
    RegionView v = regions.get(id);
    if (v != null) {
      return v;
    }
    ByteBuffer b;
    try {
      b =
          client.callMasterSync(
              TxProtocol.MASTER_SERVICE,
              TxProtocol.GET_REGION,
              new Wire.Writer().i32(id).toBuffer());
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.NO_SUCH_REGION) {
        throw new FerriteException(
            ErrorCode.NO_SUCH_REGION,
            "tx region " + id + ": not in the region map, so this client has no capability for it");
      }
      throw e;
    }
    int primary = TxPlacement.read(b).primary();
    Wire.Reader r =
        new Wire.Reader(
            client.callSync(
                primary,
                TxProtocol.SERVER_SERVICE,
                TxProtocol.OPEN_REGION,
                new Wire.Writer().i32(id).toBuffer()),
            "tx region capability");
    RegionRef ref =
        new RegionRef(primary, r.i32("fabricRegion"), r.i64("readKey"), r.i64("length"));
    r.end();
    RegionView made = new RegionView(id, primary, ref);
    regions.put(id, made);
    return made;
  }

  /**
   * The master's placement of region {@code region} now (primary, backups, epoch), asked afresh:
   * for tools, tests and benchmarks; transactions use their cached map.
   *
   * @throws FerriteException NO_SUCH_REGION if the map has no such region
   */
  public TxPlacement placement(int region) {
    return TxPlacement.read(
        client.callMasterSync(
            TxProtocol.MASTER_SERVICE,
            TxProtocol.GET_REGION,
            new Wire.Writer().i32(region).toBuffer()));
  }

  /**
   * A new region from the master, its primary {@code nearServer} while that server is alive (else
   * the live server with the fewest regions); objects go in it by a hint into it (a {@link
   * FatPointer} of that region). For tools and tests that place data on a chosen server.
   */
  public TxPlacement newRegionNear(int nearServer) {
    return TxPlacement.read(
        client.callMasterSync(
            TxProtocol.MASTER_SERVICE,
            TxProtocol.NEW_REGION,
            new Wire.Writer().i32(nearServer).toBuffer()));
  }

  /**
   * The read capability of {@code region} at its primary, as this client holds it (its cached map;
   * fetched if missing): one-sided reads of the region's memory, nothing else. For benchmarks that
   * set a raw read beside a lock-free read.
   */
  public RegionRef readCapability(int region) {
    return view(region).ref();
  }

  /** Puts {@code v} in the cache as if fetched (tests: a stale map or capability). */
  void cache(RegionView v) {
    regions.put(v.region(), v);
  }

  /** Drops region {@code id} from the cache (its primary answered MOVED). */
  void forget(int id) {
    regions.remove(id);
  }

  /**
   * Calls the primary of region {@code region}; on a stale map or an unreachable primary the entry
   * is fetched again and the call retried ({@link #onPrimary}).
   */
  ByteBuffer callPrimary(int region, int opcode, ByteBuffer body) {
    return onPrimary(
        region,
        v -> client.callSync(v.primary(), TxProtocol.SERVER_SERVICE, opcode, body.duplicate()));
  }

  /**
   * Allocates an object of {@code size} bytes: in {@code hint}'s region when given (FaRM's locality
   * hint: beside that object, on its server), else in this client's current region, or a new one
   * from the master when that is full.
   *
   * @throws FerriteException TOO_LARGE over {@code tx.object.max}; NO_SPACE naming the region when
   *     the hint's region is full (nothing is allocated)
   */
  Allocated allocate(int size, FatPointer hint) {
    if (size < 1) {
      throw new IllegalArgumentException("tx object size: " + size + " (expected: >= 1)");
    }
    if (hint != null) {
      return allocateIn(hint.region(), size);
    }
    for (int attempt = 0; attempt < 3; attempt++) {
      int region = allocRegion;
      if (region < 0) {
        region = newRegion(-1);
      }
      try {
        return allocateIn(region, size);
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.NO_SPACE) {
          throw e;
        }
        synchronized (this) {
          if (allocRegion == region) {
            allocRegion = -1;
          }
        }
      }
    }
    throw new FerriteException(
        ErrorCode.NO_SPACE, "tx: no region with room for " + size + " bytes");
  }

  private synchronized int newRegion(int near) {
    if (allocRegion >= 0) {
      return allocRegion;
    }
    ByteBuffer b =
        client.callMasterSync(
            TxProtocol.MASTER_SERVICE,
            TxProtocol.NEW_REGION,
            new Wire.Writer().i32(near).toBuffer());
    Wire.Reader r = new Wire.Reader(b.duplicate(), "tx new region");
    allocRegion = r.i32("region");
    return allocRegion;
  }

  private Allocated allocateIn(int region, int size) {
    Wire.Reader r =
        new Wire.Reader(
            callPrimary(
                region, TxProtocol.ALLOC, new Wire.Writer().i32(region).i32(size).toBuffer()),
            "tx alloc");
    FatPointer p = new FatPointer(region, r.i64("offset"), size, r.i64("incarnation"));
    long version = r.i64("version");
    r.end();
    return new Allocated(p, version);
  }
}
