package io.ferrite.kv.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.config.Threads;
import io.ferrite.kernel.log.OpLog;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kv.KvProtocol;
import io.ferrite.kv.TableOptions;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import java.util.function.Supplier;

/**
 * The kv service's write path (PUT, DELETE, MULTI_PUT): every write is applied in the order it
 * arrived on its shard, where it landed when that cannot block, else on a writer thread.
 *
 * <h2>Order</h2>
 *
 * The fabric hands a connection's requests to {@link KvService#handleInline} one after the other,
 * in the order they arrived. There each write is either applied at once or appended to its shard's
 * FIFO queue ({@link KvShard#queued}), never handed to the fabric's executor (whose threads could
 * run two queued puts of one connection in either order). A write is applied inline only when its
 * shard's queue is empty, so nothing that arrived before it on that shard is still waiting; queued
 * writes are applied head first by one drainer at a time. So a client's writes to one key (one
 * shard) are applied in issue order, however many it pipelines. Writes of different connections are
 * concurrent, as before.
 *
 * <h2>When a write is applied inline (on the receiving thread)</h2>
 *
 * Only when nothing it needs can make it wait: the service's request lock taken with {@code
 * tryLock} (a compaction holds its write side for seconds), the shard's {@link KvShard#gate} with
 * {@code tryLock} (every slow holder of the shard's monitor — resize, freeze, export, retire,
 * release, drop, import — holds the gate first, so with the gate the monitor is only ever held by
 * microsecond operations), the queue empty, and no region to create: {@link #checkNonBlocking}
 * refuses a new extent region while a thread applies inline, by throwing {@link #WOULD_BLOCK} where
 * NO_SPACE would be thrown, which leaves the shard unchanged (the {@link KvShard} contract). The
 * log append is a write to the page cache. Anything else: the write is queued and a writer thread
 * ({@code kv-writer-N}, as many as the server's service threads) applies it.
 *
 * <h2>Durability</h2>
 *
 * Writes of an {@code always} table are answered only once the log's group commit covered them
 * ({@link OpLog#flush}): the returned future completes on the log's syncer thread; no thread of the
 * fabric or of the writers ever waits on an fsync.
 */
final class KvWrites implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(KvWrites.class.getName());

  /**
   * Writes a shard may hold queued; past it a write is refused with BUSY at once, before any of it
   * is applied (a client retries it after a backoff), so an overloaded server sheds load instead of
   * growing its queues without bound.
   */
  static final int MAX_QUEUED = 16_384;

  /** Drainer passes apply at most this many queued writes before releasing the locks. */
  private static final int DRAIN_BATCH = 64;

  /**
   * Thrown (one shared instance, no stack) where a new region would be created while a write is
   * applied inline: caught by {@link #tryInline}, which queues the write instead. A
   * FerriteException so the shards' NO_SPACE clean-up paths run for it.
   */
  static final FerriteException WOULD_BLOCK =
      new FerriteException(ErrorCode.BUSY, "would block inline (a region to create)") {
        private static final long serialVersionUID = 1L;

        @Override
        public synchronized Throwable fillInStackTrace() {
          return this;
        }
      };

  /**
   * The log records (framed: {@link OpLog#appendFramed}) of the pairs a thread applies for one part
   * ({@link Part#apply}), appended together with one gathering write; null outside such a part (the
   * shard's write hook then appends each record at once).
   */
  static final ThreadLocal<List<byte[]>> LOG_BATCH = new ThreadLocal<>();

  private static final ThreadLocal<boolean[]> INLINE =
      ThreadLocal.withInitial(() -> new boolean[1]);

  /** Call before anything that may block (creating a region): refuses it on an inline thread. */
  static void checkNonBlocking() {
    if (INLINE.get()[0]) {
      throw WOULD_BLOCK;
    }
  }

  /** Where the service finds shards, its request lock, and its log. */
  interface Host {
    KvShard shard(long tableId, int shard);

    Lock requestLock();

    /**
     * Whether a thread waits for the request lock (a compaction waiting for its write side): then
     * nothing takes the read side inline, since {@code tryLock} would barge past the compaction and
     * a steady stream of inline writes could starve it.
     */
    boolean requestLockWanted();

    OpLog log();
  }

  private final Host host;
  private final ThreadPoolExecutor writers;
  private final boolean inline;

  /** Whether writes may be applied inline at all (configuration {@code kv.inline.writes}). */
  boolean inline() {
    return inline;
  }

  KvWrites(Host host, int threads, boolean inline) {
    this.host = host;
    this.inline = inline;
    this.writers =
        new ThreadPoolExecutor(
            threads,
            threads,
            0,
            TimeUnit.MILLISECONDS,
            new LinkedBlockingQueue<>(),
            Threads.named("kv-writer"));
  }

  static boolean isWrite(int opcode) {
    return opcode == KvProtocol.PUT
        || opcode == KvProtocol.DELETE
        || opcode == KvProtocol.MULTI_PUT
        || opcode == KvProtocol.REPLICATE;
  }

  // ------------------------------------------------------------------ requests

  /** One write RPC: its pairs, their outcomes, and the answer once every part is applied. */
  private final class Request {
    final int opcode;
    final byte[][] keys;

    /**
     * The values, each a view of the request's body (owned by the call: the fabric copied it out of
     * its receive buffer): the shard copies a value once, into its extent or slot.
     */
    final ByteBuffer[] values;

    final int mode;
    final byte[] expected;
    final int[] status;
    final FerriteException[] errors;

    /**
     * PUT and DELETE of a replicated shard: the sequence the write got (0: it changed nothing),
     * answered after the status; REPLICATE: the shipped write's sequence in [0]. Null otherwise.
     */
    long[] seqs;

    /** The placement version a replicated shard's PUT, DELETE or REPLICATE carried (0: none). */
    long version;

    /** Whether the request carried that version (a client older than it did not). */
    boolean versioned;

    final AtomicInteger parts = new AtomicInteger();
    final CompletableFuture<ByteBuffer> answer = new CompletableFuture<>();
    volatile boolean durable;

    Request(int opcode, int n, int mode, byte[] expected) {
      this.opcode = opcode;
      this.keys = new byte[n][];
      this.values = new ByteBuffer[n];
      this.mode = mode;
      this.expected = expected;
      this.status = new int[n];
      this.errors = new FerriteException[n];
    }

    /** After a part: the last one answers (for {@code always}, after the fsync covering it). */
    void partDone() {
      if (parts.decrementAndGet() != 0) {
        return;
      }
      if (durable) {
        // Registered after every part was applied and logged: the flush covers all of them
        // (and any write they read, e.g. a putIfAbsent that found a key not yet durable).
        host.log()
            .flush()
            .whenComplete(
                (v, err) -> {
                  if (err != null) {
                    answer.completeExceptionally(FerriteException.unwrap(err));
                  } else {
                    answer();
                  }
                });
      } else {
        answer();
      }
    }

    private void answer() {
      if (opcode != KvProtocol.MULTI_PUT) {
        if (errors[0] != null) {
          answer.completeExceptionally(errors[0]);
        } else {
          Wire.Writer w = new Wire.Writer(9).u8(status[0]);
          if (seqs != null && opcode != KvProtocol.REPLICATE) {
            w.i64(seqs[0]);
          }
          answer.complete(w.toBuffer());
        }
        return;
      }
      Wire.Writer w = new Wire.Writer(4 + status.length).i32(status.length);
      for (int i = 0; i < status.length; i++) {
        FerriteException e = errors[i];
        if (e == null) {
          w.u8(status[i]);
        } else {
          w.u8(KvProtocol.FAILED).u16(e.code().wire()).str(truncate(e.getMessage()));
        }
      }
      answer.complete(w.toBuffer());
    }
  }

  private static String truncate(String s) {
    String m = s == null ? "" : s;
    return m.length() > 1000 ? m.substring(0, 1000) : m;
  }

  /** The pairs of one request that go to one shard, applied in order, resumable. */
  final class Part {
    final Request request;
    final KvShard shard;
    final int[] pairs;
    int next;

    /** Whether applying it inline met a region to create: it goes to a writer thread. */
    boolean wouldBlock;

    Part(Request request, KvShard shard, int[] pairs) {
      this.request = request;
      this.shard = shard;
      this.pairs = pairs;
    }

    /**
     * Applies the remaining pairs; called with the request lock (read side) and the shard's gate
     * held. Returns false if one would block inline (the pairs before it are applied; the rest is
     * applied from there by a writer).
     *
     * <p>Several pairs of a MULTI_PUT to a logged shard are applied under one hold of the shard's
     * lock, and their log records appended with one write at the end, still under it (so the log
     * keeps the shard's apply order): one system call per part instead of one per pair. A failed
     * append fails the pairs it held (applied in memory and not logged, as a failed append of a
     * single put leaves its pair).
     */
    boolean apply() {
      if (request.opcode != KvProtocol.MULTI_PUT
          || pairs.length - next < 2
          || shard.options().durability() == TableOptions.Durability.NONE) {
        return applyPairs();
      }
      int from = next;
      List<byte[]> batch = new ArrayList<>(pairs.length - next);
      boolean done;
      synchronized (shard) {
        LOG_BATCH.set(batch);
        try {
          done = applyPairs();
        } finally {
          LOG_BATCH.remove();
        }
        try {
          host.log().appendAllFramed(batch);
        } catch (FerriteException e) {
          for (int k = from; k < next; k++) {
            if (request.errors[pairs[k]] == null) {
              request.errors[pairs[k]] = e;
            }
          }
        }
      }
      return done;
    }

    private boolean applyPairs() {
      Request r = request;
      KvShard s = shard;
      while (next < pairs.length) {
        int i = pairs[next];
        try {
          synchronized (s) {
            // Under the lock a freeze also takes: a write applies before the freeze's snapshot
            // (and is copied) or is refused (BUSY, retried by the client; MOVED once retired).
            s.checkWritable();
            if (r.opcode == KvProtocol.REPLICATE) {
              checkFence(r, s);
              r.status[i] = s.replicate(r.seqs[0], r.mode == 1, r.keys[i], r.values[i]);
            } else if (s.seqs != null && r.opcode == KvProtocol.MULTI_PUT) {
              throw new FerriteException(
                  ErrorCode.INVALID_ARGUMENT,
                  "MULTI_PUT to replicated kv shard "
                      + s.tableId()
                      + "/"
                      + s.shard()
                      + ": its pairs go one by one (each is shipped to the backups)");
            } else {
              checkFence(r, s);
              r.status[i] =
                  r.opcode == KvProtocol.DELETE
                      ? s.delete(r.keys[i])
                      : s.put(r.mode, r.keys[i], r.values[i], r.expected);
              if (s.seqs != null) {
                // Stamped under the lock the write applied under: sequences follow the apply
                // order, which is what lets a backup take shipped writes in any order.
                r.seqs = new long[1];
                r.seqs[0] = KvShard.changed(r.status[i]) ? s.seqs.stamp(r.keys[i]) : 0;
              }
            }
          }
        } catch (FerriteException e) {
          if (e == WOULD_BLOCK) {
            return false;
          }
          r.errors[i] = e;
        } catch (RuntimeException e) {
          LOG.log(System.Logger.Level.ERROR, "kv write failed", e);
          r.errors[i] = new FerriteException(ErrorCode.INTERNAL, "kv write: " + e, e);
        }
        next++;
      }
      return true;
    }
  }

  /**
   * A replicated shard's fence (docs/KV.md "Repairs"), checked under the shard's lock: a PUT,
   * DELETE or REPLICATE whose placement version is older than the shard's fence comes from a writer
   * that does not know of a copy a repair added (and whose pages may have passed this write's key
   * already), so it is refused: MOVED, the writer fetches the table and writes (or ships) again, to
   * the new copy too. Applied before the fence, a write is in every page read after it.
   *
   * <p>A request without the trailing version is from a client older than the version field (no
   * version is negotiated per service; the fabric's handshake versions only the frames): it reads
   * as version 0, which every shard no repair touched still takes, and is refused with UNSUPPORTED,
   * not MOVED, on a fenced one: no refetch would make it send one, and an old client would
   * otherwise retry MOVED to its deadline without saying why. Clients and servers of replicated
   * tables are upgraded together.
   */
  private static void checkFence(Request r, KvShard s) {
    if (s.seqs == null || r.version >= s.minVersion) {
      return;
    }
    String shard = "kv shard " + s.tableId() + "/" + s.shard();
    if (!r.versioned) {
      throw new FerriteException(
          ErrorCode.UNSUPPORTED,
          (r.opcode == KvProtocol.REPLICATE
                  ? "REPLICATE"
                  : r.opcode == KvProtocol.DELETE ? "DELETE" : "PUT")
              + " without a placement version to the repaired "
              + shard
              + " (fenced at "
              + s.minVersion
              + "): the client is older than the server; upgrade clients and servers of"
              + " replicated tables together");
    }
    throw new FerriteException(
        ErrorCode.MOVED,
        "the copies of "
            + shard
            + " changed (placement version "
            + r.version
            + " < "
            + s.minVersion
            + "): fetch the table");
  }

  /**
   * Decodes a PUT, DELETE or MULTI_PUT and applies or queues its parts (see the class comment);
   * {@code inlineAllowed}: the caller is the receiving thread and may apply them there. The future
   * answers the RPC.
   */
  CompletableFuture<ByteBuffer> submit(int opcode, ByteBuffer body, boolean inlineAllowed) {
    Request r;
    List<Part> parts = new ArrayList<>(1);
    Wire.Reader rd = new Wire.Reader(body, "kv write " + opcode);
    int base = body.position();
    int total = body.remaining();
    switch (opcode) {
      case KvProtocol.PUT -> {
        KvShard s = host.shard(rd.i64("tableId"), rd.i32("shard"));
        int mode = rd.u8("mode");
        byte[] key = rd.bytes("key");
        ByteBuffer value = view(body, base, total, rd, "value");
        byte[] expected = rd.bytes("expected");
        boolean versioned = rd.remaining() >= 8;
        long version = versioned ? rd.i64("version") : 0;
        rd.end();
        if (mode > KvProtocol.MODE_COMPARE_AND_SET) {
          throw new FerriteException(ErrorCode.INVALID_ARGUMENT, "put mode: " + mode);
        }
        r = new Request(opcode, 1, mode, expected);
        r.version = version;
        r.versioned = versioned;
        r.keys[0] = key;
        r.values[0] = value;
        parts.add(new Part(r, s, new int[] {0}));
      }
      case KvProtocol.DELETE -> {
        KvShard s = host.shard(rd.i64("tableId"), rd.i32("shard"));
        byte[] key = rd.bytes("key");
        boolean versioned = rd.remaining() >= 8;
        long version = versioned ? rd.i64("version") : 0;
        rd.end();
        r = new Request(opcode, 1, 0, null);
        r.version = version;
        r.versioned = versioned;
        r.keys[0] = key;
        parts.add(new Part(r, s, new int[] {0}));
      }
      case KvProtocol.REPLICATE -> {
        KvShard s = host.shard(rd.i64("tableId"), rd.i32("shard"));
        long seq = rd.i64("seq");
        int delete = rd.u8("delete");
        byte[] key = rd.bytes("key");
        ByteBuffer value = view(body, base, total, rd, "value");
        boolean versioned = rd.remaining() >= 8;
        long version = versioned ? rd.i64("version") : 0;
        rd.end();
        if (seq <= 0 || delete > 1) {
          throw new FerriteException(
              ErrorCode.INVALID_ARGUMENT,
              "replicate: seq "
                  + seq
                  + ", delete "
                  + delete
                  + " (expected: seq > 0, delete 0 or 1)");
        }
        r = new Request(opcode, 1, delete, null);
        r.version = version;
        r.versioned = versioned;
        r.seqs = new long[] {seq};
        r.keys[0] = key;
        r.values[0] = value;
        parts.add(new Part(r, s, new int[] {0}));
      }
      case KvProtocol.MULTI_PUT -> {
        long tableId = rd.i64("tableId");
        int n = rd.count("pairs", 1 << 20);
        r = new Request(opcode, n, KvProtocol.MODE_PUT, new byte[0]);
        int[] shardOf = new int[n];
        for (int i = 0; i < n; i++) {
          shardOf[i] = rd.i32("shard");
          r.keys[i] = rd.bytes("key");
          r.values[i] = view(body, base, total, rd, "value");
        }
        rd.end();
        // One part per shard, its pairs in request order (the shards of one server are few).
        boolean[] taken = new boolean[n];
        for (int i = 0; i < n; i++) {
          if (taken[i]) {
            continue;
          }
          int count = 0;
          for (int j = i; j < n; j++) {
            if (shardOf[j] == shardOf[i]) {
              count++;
            }
          }
          int[] idx = new int[count];
          int k = 0;
          for (int j = i; j < n; j++) {
            if (shardOf[j] == shardOf[i]) {
              idx[k++] = j;
              taken[j] = true;
            }
          }
          parts.add(new Part(r, host.shard(tableId, shardOf[i]), idx));
        }
      }
      default -> throw new IllegalArgumentException("not a write: " + opcode);
    }
    for (Part p : parts) {
      int queued = p.shard.queuedCount.get();
      if (queued >= MAX_QUEUED) {
        throw new FerriteException(
            ErrorCode.BUSY,
            "kv shard "
                + p.shard.tableId()
                + "/"
                + p.shard.shard()
                + " has "
                + queued
                + " writes queued (max "
                + MAX_QUEUED
                + "): nothing applied, retry later");
      }
    }
    boolean durable = false;
    for (Part p : parts) {
      durable |= p.shard.options().durability() == TableOptions.Durability.ALWAYS;
    }
    r.durable = durable;
    r.parts.set(parts.size());
    if (parts.isEmpty()) {
      r.parts.set(1);
      r.partDone();
    }
    if (!(inline && inlineAllowed)) {
      for (Part p : parts) {
        enqueue(p);
      }
      return r.answer;
    }
    // Parts of different shards are independent: one whose shard another thread is applying to
    // waits until the others are applied, then gets a second try (waiting briefly for the gate if
    // its holder is applying inline) before it goes to a writer thread. A queued part costs a
    // wake-up of a writer and an answer from there; with two receiving threads applying 16-pair
    // batches over the same four shards it was the common case (issue #19: up to 12 µs of writer
    // CPU per batch beside the receiving thread's 20).
    List<Part> later = null;
    for (Part p : parts) {
      if (!tryInline(p, false)) {
        if (later == null) {
          later = new ArrayList<>(parts.size());
        }
        later.add(p);
      }
    }
    if (later != null) {
      for (Part p : later) {
        if (p.wouldBlock || !tryInline(p, true)) {
          enqueue(p);
        }
      }
    }
    return r.answer;
  }

  /**
   * The next bytes field of {@code rd} as a view of {@code body} (which {@code rd} reads from
   * {@code base}, {@code total} bytes): its length checked as {@link Wire.Reader#bytes} checks it,
   * nothing copied.
   */
  private static ByteBuffer view(
      ByteBuffer body, int base, int total, Wire.Reader rd, String field) {
    int before = rd.remaining();
    rd.skipBytes(field);
    int n = before - rd.remaining() - 4;
    return body.slice(base + (total - before) + 4, n);
  }

  /**
   * Applies {@code p} on this thread if nothing can block (class comment); else false. {@code
   * wait}: if the shard's gate is held by another receiving thread applying inline, spin for it up
   * to {@link #GATE_SPIN_NANOS} (never for a writer thread or a slow operation holding it).
   */
  private boolean tryInline(Part p, boolean wait) {
    KvShard s = p.shard;
    if (!s.queued.isEmpty()) {
      return false;
    }
    Lock requests = host.requestLock();
    if (host.requestLockWanted() || !requests.tryLock()) {
      return false;
    }
    boolean done;
    try {
      if (!s.gate.tryLock() && !(wait && spinForGate(s))) {
        return false;
      }
      try {
        // Re-checked under the gate: a drainer removes a write only after applying it, holding
        // the gate, so an empty queue here means everything that arrived before is applied.
        if (!s.queued.isEmpty()) {
          return false;
        }
        boolean[] flag = INLINE.get();
        flag[0] = true;
        s.inlineHolder = true;
        try {
          done = p.apply();
        } finally {
          s.inlineHolder = false;
          flag[0] = false;
        }
      } finally {
        s.gate.unlock();
      }
    } finally {
      requests.unlock();
    }
    if (done) {
      p.request.partDone();
    } else {
      p.wouldBlock = true;
    }
    // Not done: the pairs before the blocking one are applied; the queue is empty and this is
    // the receiving thread, so queueing the rest now keeps the order.
    return done;
  }

  /**
   * How long a receiving thread spins for a shard's gate held by another receiving thread applying
   * inline (a part of a batch: a few µs) before it queues its write instead. Short: on a loaded
   * 2-vCPU machine the holder may be descheduled, and the spin is then CPU taken from it (20 µs was
   * no better in KvPutProbe's 16-thread batches, 0 no worse within the noise).
   */
  static final long GATE_SPIN_NANOS = 5_000;

  /**
   * Spins for {@code s}'s gate while its holder applies inline, up to {@link #GATE_SPIN_NANOS};
   * true if it took the gate. A holder that is not a receiving thread (a drainer, a resize, a move)
   * may hold it long: then it gives up at once.
   */
  private static boolean spinForGate(KvShard s) {
    long deadline = 0;
    while (s.inlineHolder) {
      if (s.gate.tryLock()) {
        return true;
      }
      long now = System.nanoTime();
      if (deadline == 0) {
        deadline = now + GATE_SPIN_NANOS;
      } else if (now - deadline > 0) {
        return false;
      }
      Thread.onSpinWait();
    }
    return s.gate.tryLock();
  }

  private void enqueue(Part p) {
    KvShard s = p.shard;
    s.queuedCount.incrementAndGet();
    s.queued.add(p);
    if (s.draining.compareAndSet(false, true)) {
      writers.execute(() -> drain(s));
    }
  }

  /**
   * Applies {@code s}'s queued writes head first until the queue is empty (one drainer at once).
   */
  private void drain(KvShard s) {
    while (true) {
      List<Part> finished = new ArrayList<>();
      Lock requests = host.requestLock();
      requests.lock();
      try {
        s.gate.lock();
        try {
          for (int i = 0; i < DRAIN_BATCH; i++) {
            Part p = s.queued.peek();
            if (p == null) {
              break;
            }
            p.apply(); // not inline: never WOULD_BLOCK
            s.queued.poll();
            s.queuedCount.decrementAndGet();
            finished.add(p);
          }
        } finally {
          s.gate.unlock();
        }
      } finally {
        requests.unlock();
      }
      for (Part p : finished) {
        p.request.partDone();
      }
      if (s.queued.isEmpty()) {
        s.draining.set(false);
        // A write queued between the check and the reset found draining set and left it to us.
        if (s.queued.isEmpty() || !s.draining.compareAndSet(false, true)) {
          return;
        }
      }
    }
  }

  /** Runs {@code op} holding {@code s}'s gate: for slow operations that take the shard's lock. */
  static <T> T gated(KvShard s, Supplier<T> op) {
    s.gate.lock();
    try {
      return op.get();
    } finally {
      s.gate.unlock();
    }
  }

  @Override
  public void close() {
    writers.shutdown();
    try {
      writers.awaitTermination(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
