package io.ferrite.fabric.shm;

import io.ferrite.fabric.Counters;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.netty.NettyConnection;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;

/**
 * The client side of one connection's shm RPC rings: a call is a record written into the request
 * ring (no system call unless the server's poller sleeps), its answer a record read from the
 * response ring by whichever thread holds the <b>consumer role</b>:
 *
 * <ul>
 *   <li>a thread waiting for a call ({@link RingFuture#join}) takes the role if it is free and
 *       polls for up to {@link #SPIN_NANOS}, completing every call it finds answered;
 *   <li>when nobody holds the role, the client-asleep flag is up and the server rings the doorbell
 *       for each answer; the connection's I/O thread then takes the role and drains the ring, so
 *       answers nobody waits for (pure async use) still arrive promptly.
 * </ul>
 *
 * A holder that lets go raises the flag and drains once more (Dekker with the server's check, see
 * {@link RingFile}); a doorbell that arrives while the role is held is remembered ({@code
 * bellPending}) and honoured by the holder after it lets go, so no answer is stranded.
 *
 * <p>Deadlines are enforced by a sweep every {@link #SWEEP_MILLIS} ms on the fabric's timer thread
 * while calls are pending (a call can end up to that much late); a lost connection fails every
 * pending call with {@link ErrorCode#UNAVAILABLE}.
 */
final class RingClient implements MessageHandler {
  private static final System.Logger LOG = System.getLogger(RingClient.class.getName());

  /** How long a waiter polls for its answer before it blocks: spinning, then yielding. */
  static final long SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(50);

  /**
   * The first part of {@link #SPIN_NANOS} spent busy-spinning ({@link Thread#onSpinWait}), the rest
   * yielding between looks; 0 by default (see {@link RingServer} for why): {@link
   * io.ferrite.fabric.FabricTuning#shmWaiterSpinNanos}.
   */
  final long busySpinNanos;

  static final long SWEEP_MILLIS = 10;
  private static final int IDLE_SWEEPS = 10;

  /** The largest body a response may announce, as on the socket (a 4 MiB frame). */
  private final int maxResponse;

  private final NettyConnection control;
  private final RingFile file;
  private final Counters counters;
  private final ScheduledExecutorService timer;
  private final int maxRequest;
  private final int maxRecord;
  private final Map<Long, RingCall> pending = new ConcurrentHashMap<>();
  private final AtomicLong ids = new AtomicLong(1);

  private final AtomicReference<Thread> consumer = new AtomicReference<>();
  private int holds; // consumer role re-entries; touched only by the holder
  private final AtomicBoolean bellPending = new AtomicBoolean();
  private RingCall done; // answered during one read; touched only by the holder

  private final AtomicBoolean sweeping = new AtomicBoolean();
  private long sweptAt;
  private int idleSweeps;

  private volatile FerriteException closed;

  /** Doorbells this client rang (the server's poller slept) and heard (nobody polled answers). */
  final java.util.concurrent.atomic.LongAdder rang = new java.util.concurrent.atomic.LongAdder();

  final java.util.concurrent.atomic.LongAdder heard = new java.util.concurrent.atomic.LongAdder();

  /** Calls that found the request ring full and took the socket. */
  final java.util.concurrent.atomic.LongAdder full = new java.util.concurrent.atomic.LongAdder();

  RingClient(
      NettyConnection control,
      RingFile file,
      Counters counters,
      ScheduledExecutorService timer,
      int maxResponse,
      long busySpinNanos) {
    this.busySpinNanos = busySpinNanos;
    this.control = control;
    this.file = file;
    this.counters = counters;
    this.timer = timer;
    this.maxResponse = maxResponse;
    this.maxRecord = file.responses.maxMsgLength();
    this.maxRequest = file.requests.maxMsgLength() - RingRecords.REQUEST_HEADER;
  }

  /** The mapped rings (for tests). */
  RingFile file() {
    return file;
  }

  /** The largest request the ring carries; longer ones go on the socket. */
  int maxRequest() {
    return maxRequest;
  }

  // ---------------------------------------------------------------- calls

  /**
   * Sends a call through the request ring; null when the ring cannot take it (too large, full,
   * closed), and the caller should use the socket.
   */
  CompletableFuture<ByteBuffer> call(
      int service, int opcode, ByteBuffer request, Duration deadline) {
    if (service < 0 || service > 0xffff || opcode < 0 || opcode > 0xffff) {
      throw new IllegalArgumentException(
          "service: " + service + ", opcode: " + opcode + " (expected: 0 to 65535)");
    }
    int n = request.remaining();
    if (n > maxRequest || closed != null) {
      return null;
    }
    long millis = Math.max(1, Math.min(deadline.toMillis(), 0xffff_ffffL));
    long id = ids.getAndIncrement();
    long now = System.nanoTime();
    RingCall call =
        new RingCall(this, id, kind(service, opcode), n, now, now + millis * 1_000_000L);
    if (!file.acquire()) {
      return null;
    }
    try {
      ManyToOneRingBuffer ring = file.requests;
      // Registered before it can be answered.
      pending.put(id, call);
      int at = ring.tryClaim(RingRecords.REQUEST, RingRecords.REQUEST_HEADER + n);
      if (at < 0) {
        pending.remove(id);
        full.increment();
        return null; // full: the socket takes it (it has its own bound on what is in flight)
      }
      MutableDirectBuffer b = ring.buffer();
      try {
        b.putLong(at + RingRecords.REQ_ID, id);
        b.putShort(at + RingRecords.REQ_SERVICE, (short) service);
        b.putShort(at + RingRecords.REQ_OPCODE, (short) opcode);
        b.putInt(at + RingRecords.REQ_DEADLINE, (int) millis);
        b.putBytes(at + RingRecords.REQUEST_HEADER, request, request.position(), n);
      } catch (RuntimeException e) {
        ring.abort(at);
        pending.remove(id);
        throw e;
      }
      ring.commit(at);
      if (file.producerCheckAsleep(RingFile.SERVER_ASLEEP)) {
        rang.increment();
        control.doorbell();
      }
    } finally {
      file.release();
    }
    FerriteException lost = closed;
    if (lost != null && pending.remove(id) != null) {
      call.fail(lost); // lost() may have swept the table before this call was in it
    }
    ensureSweeping();
    InFlight.issued(this, id);
    return call;
  }

  /**
   * The ring calls a thread issued and has not seen answered, so that a wait for one of them also
   * polls the response rings of the others ({@link #await}). Without it, a thread that sends calls
   * to two servers and waits for one polls that one's ring only: the other's answer finds its
   * client-asleep flag up, and the server rings the doorbell (a frame on the socket, a wake-up of
   * the client's I/O thread) for an answer the waiting thread would have read itself a moment later
   * (a two-server tx commit, whose LOCKs are in flight together: docs/TX.md, Measurements).
   */
  static final class InFlight {
    /** Calls remembered per thread at most; older ones are forgotten (never waited for by this). */
    static final int MAX = 32;

    /**
     * A call by its ring client and id, not the call itself: an answered call leaves the client's
     * pending table, and nothing here keeps its answer reachable.
     */
    private record Issued(RingClient client, long id) {
      boolean answered() {
        return client.closed != null || !client.pending.containsKey(id);
      }
    }

    private static final ThreadLocal<ArrayList<Issued>> CALLS =
        ThreadLocal.withInitial(ArrayList::new);

    /** The rings whose consumer role {@link #poll} holds for the calling thread, between looks. */
    private static final ThreadLocal<ArrayList<RingClient>> HELD =
        ThreadLocal.withInitial(ArrayList::new);

    private InFlight() {}

    /**
     * Remembers call {@code id} of {@code client} as the calling thread's; forgets answered ones.
     */
    static void issued(RingClient client, long id) {
      ArrayList<Issued> calls = CALLS.get();
      calls.removeIf(Issued::answered);
      if (calls.size() >= MAX) {
        calls.remove(0);
      }
      calls.add(new Issued(client, id));
    }

    /**
     * For a thread that polls anyway and never waits for its calls (a server's ring poller, whose
     * inline handlers forward requests to other servers and answer once those answer: a tx commit
     * with backups, docs/TX.md "Measurements"): one look at the response ring of each of the
     * calling thread's unanswered calls, completing what it finds there (running the calls'
     * callbacks on this thread). The consumer role of each such ring is taken if free and
     * <em>kept</em> (its client-asleep flag down) from one look to the next while the thread has a
     * call there, so its answers need no doorbell; it is let go (flag up, a last drain) once the
     * thread's calls there are answered, or by {@link #letGo}, which the thread must call before it
     * stops polling. Other threads' calls on a held ring are completed by these looks too (a thread
     * waiting for one meanwhile cannot take the role, and blocks after its spin until this
     * completes it). Returns how many looks found answers (0: nothing arrived).
     */
    static int poll() {
      ArrayList<Issued> calls = CALLS.get();
      ArrayList<RingClient> held = HELD.get();
      if (calls.isEmpty() && held.isEmpty()) {
        return 0;
      }
      calls.removeIf(Issued::answered);
      for (int i = 0; i < calls.size(); i++) {
        RingClient r = calls.get(i).client();
        if (!held.contains(r) && r.closed == null && r.tryConsume()) {
          held.add(r);
          if (r.holds == 1) {
            r.setAsleep(false); // polled now: the server need not ring
          }
        }
      }
      int found = 0;
      for (int i = 0; i < held.size(); i++) {
        RingClient r = held.get(i);
        found += r.read();
        finish(r.takeDone()); // callbacks may issue calls: they join CALLS, read next look
      }
      calls.removeIf(Issued::answered);
      for (int i = held.size() - 1; i >= 0; i--) {
        RingClient r = held.get(i);
        boolean mine = false;
        for (Issued c : calls) {
          mine |= c.client() == r;
        }
        if (!mine) {
          held.remove(i);
          finish(r.release());
        }
      }
      return found;
    }

    /** Lets go of every role {@link #poll} holds for the calling thread (before it sleeps). */
    static void letGo() {
      ArrayList<RingClient> held = HELD.get();
      while (!held.isEmpty()) {
        finish(held.remove(held.size() - 1).release());
      }
    }

    /**
     * The rings of the calling thread's other unanswered calls, besides {@code own}, each once;
     * null when there are none (the common case: one call at a time).
     */
    static List<RingClient> others(RingClient own) {
      ArrayList<Issued> calls = CALLS.get();
      calls.removeIf(Issued::answered);
      List<RingClient> out = null;
      for (Issued c : calls) {
        RingClient r = c.client();
        if (r != own && (out == null || !out.contains(r))) {
          if (out == null) {
            out = new ArrayList<>(2);
          }
          out.add(r);
        }
      }
      return out;
    }
  }

  // ---------------------------------------------------------------- consumer role

  private boolean tryConsume() {
    Thread me = Thread.currentThread();
    if (consumer.get() == me) {
      holds++;
      return true;
    }
    if (consumer.compareAndSet(null, me)) {
      holds = 1;
      return true;
    }
    return false;
  }

  /**
   * Lets go of the consumer role. The outermost release raises the client-asleep flag and reads
   * once more (an answer written before the server could see the flag is not rung for), then
   * honours a doorbell that came while the role was held. Returns the calls those reads answered,
   * for the caller to complete once the role is free (so that a thread they wake can take it).
   */
  private RingCall release() {
    if (holds > 1) {
      holds--;
      return null;
    }
    RingCall answered = null;
    for (; ; ) {
      setAsleep(true);
      // Everything, not one batch: what is left now was written while the flag was down, and no
      // doorbell will come for it.
      while (read() > 0) {
        // until empty
      }
      answered = join(answered, takeDone());
      holds = 0;
      consumer.set(null);
      if (!bellPending.get() || !tryConsume()) {
        return answered;
      }
      bellPending.set(false);
      while (read() > 0) {
        // until empty
      }
    }
  }

  private void setAsleep(boolean asleep) {
    if (!file.acquire()) {
      return;
    }
    try {
      if (asleep) {
        file.setAsleep(RingFile.CLIENT_ASLEEP);
      } else {
        file.setAwake(RingFile.CLIENT_ASLEEP);
      }
    } finally {
      file.release();
    }
  }

  /** On the I/O thread: the server wrote answers while no thread polled. */
  void onDoorbell() {
    heard.increment();
    bellPending.set(true);
    if (!tryConsume()) {
      return; // the holder sees bellPending when it lets go
    }
    bellPending.set(false);
    RingCall answered;
    try {
      while (read() > 0) {
        // until empty
      }
    } finally {
      answered = join(takeDone(), release());
    }
    finish(answered);
  }

  // ---- how long answers take, per kind of call

  /**
   * Recent answer times (ns, smoothed) per kind of call (service and opcode, hashed): a wait spins
   * only for calls that usually answer within {@link #SPIN_NANOS} (an inline lookup), and blocks at
   * once for those that do not (a journaled create: spinning would only take the core the service
   * thread needs). Racy by design: a heuristic.
   */
  private final long[] answerNanos = new long[256];

  private final java.util.concurrent.atomic.AtomicInteger probes =
      new java.util.concurrent.atomic.AtomicInteger();

  static int kind(int service, int opcode) {
    return (service * 31 + opcode) & 255;
  }

  void answered(int kind, long nanos) {
    answerNanos[kind] = nextEstimate(answerNanos[kind], nanos);
  }

  /**
   * The usual answer time of a kind after one more answer: a smoothed average, except that a kind
   * judged slow that answers within the spin budget (a probe caught it) is fast again at once.
   * Averaged in, it would take ~10 probes (hundreds of calls) to cross back, every call meanwhile
   * paying the doorbell round trip: the state a cold start (JIT, a parked dispatch thread) leaves a
   * client in. A slow answer after it turns it back at once: (7 x fast + slow) / 8.
   */
  static long nextEstimate(long old, long nanos) {
    if (old == 0 || (nanos <= SPIN_NANOS && old > SPIN_NANOS)) {
      return nanos;
    }
    return (old * 7 + nanos) / 8;
  }

  /** The spin budget of a wait for a call of {@code kind}: 0 for calls that answer slowly. */
  private long budget(int kind) {
    long usual = answerNanos[kind];
    if (usual <= SPIN_NANOS) {
      return SPIN_NANOS;
    }
    // Now and then (one call in 8) spin anyway, so that a kind that became fast is noticed.
    return (probes.incrementAndGet() & 7) == 0 ? SPIN_NANOS : 0;
  }

  /**
   * Helps {@code f} along: polls the response ring (holding the consumer role if it is free) until
   * {@code f} is done or the spin budget (or {@code maxNanos}) is spent. Never on an I/O thread.
   * The response rings of the calling thread's other calls in flight ({@link InFlight}) are polled
   * too, each while its role is free, so their answers need no doorbell either.
   */
  void await(RingFuture<?> f, long maxNanos) {
    if (f.isDone() || closed != null || control.inEventLoop()) {
      return;
    }
    long budget = Math.min(maxNanos, budget(f.kind));
    if (budget == 0) {
      return;
    }
    List<RingClient> others = InFlight.others(this);
    long start = System.nanoTime();
    boolean mine = false;
    // Which of the others this wait holds the consumer role of (bit i: others.get(i)).
    long held = 0;
    try {
      while (!f.isDone()) {
        if (!mine && tryConsume()) {
          mine = true;
          if (holds == 1) {
            // Polling now: the server need not ring. (A nested wait, in a callback run while this
            // thread already holds the role, leaves the flag to the outer holder.)
            setAsleep(false);
          }
        }
        int n = 0;
        if (mine) {
          n = read();
          finish(takeDone());
        }
        if (others != null) {
          held = helpOthers(others, held);
        }
        if (n > 0) {
          continue;
        }
        long spent = System.nanoTime() - start;
        if (spent > budget) {
          return;
        }
        if (spent < busySpinNanos) {
          Thread.onSpinWait();
        } else {
          // Loaded machine: let the server's poller (or whoever) have this core meanwhile.
          Thread.yield();
        }
      }
    } finally {
      if (mine) {
        finish(release());
      }
      for (int i = 0; held != 0; i++, held >>>= 1) {
        if ((held & 1) != 0) {
          RingClient o = others.get(i);
          finish(o.release());
        }
      }
    }
  }

  /**
   * One look at each of {@code others}' response rings whose consumer role is free (or held by this
   * wait: bit i of {@code held}), completing what it finds; returns the roles now held. A ring this
   * wait holds has its client-asleep flag down, like its own.
   */
  private static long helpOthers(List<RingClient> others, long held) {
    for (int i = 0; i < others.size() && i < 64; i++) {
      RingClient o = others.get(i);
      long bit = 1L << i;
      if ((held & bit) == 0) {
        if (o.closed != null || o.pending.isEmpty() || !o.tryConsume()) {
          continue;
        }
        held |= bit;
        if (o.holds == 1) {
          o.setAsleep(false);
        }
      }
      o.read();
      finish(o.takeDone());
    }
    return held;
  }

  /**
   * Holder only: reads up to a batch of what the response ring has; answered calls collect in
   * {@link #done}. Returns 0 only when the ring had nothing: a read that consumed just the padding
   * at the ring's end (records may follow after the wrap) counts as progress.
   */
  private int read() {
    if (!file.acquire()) {
      return 0;
    }
    try {
      long before = file.responses.consumerPosition();
      int n = file.responses.read(this, ServerRings.BATCH);
      return n > 0 || file.responses.consumerPosition() != before ? Math.max(1, n) : 0;
    } catch (RuntimeException e) {
      protocolError("unreadable response ring: " + e);
      return 0;
    } finally {
      file.release();
    }
  }

  /** Holder only: the calls answered since the last take. */
  private RingCall takeDone() {
    RingCall d = done;
    done = null;
    return d;
  }

  private static RingCall join(RingCall a, RingCall b) {
    if (a == null) {
      return b;
    }
    RingCall t = a;
    while (t.nextDone != null) {
      t = t.nextDone;
    }
    t.nextDone = b;
    return a;
  }

  /** Completes answered calls (running their callbacks on this thread). */
  private static void finish(RingCall c) {
    while (c != null) {
      RingCall next = c.nextDone;
      c.nextDone = null;
      c.finish();
      c = next;
    }
  }

  @Override
  public void onMessage(int msgTypeId, MutableDirectBuffer buffer, int index, int length) {
    if (msgTypeId != RingRecords.RESPONSE
        || length < RingRecords.RESPONSE_HEADER
        || length > maxRecord) {
      throw new IllegalStateException(
          "response record of type " + msgTypeId + " and " + length + " B");
    }
    long id = buffer.getLong(index + RingRecords.RSP_ID);
    int status = buffer.getShort(index + RingRecords.RSP_STATUS) & 0xffff;
    int total = buffer.getInt(index + RingRecords.RSP_TOTAL);
    int offset = buffer.getInt(index + RingRecords.RSP_OFFSET);
    int n = length - RingRecords.RESPONSE_HEADER;
    RingCall c = pending.get(id);
    if (c == null) {
      return; // a late answer to a call that timed out
    }
    if (status != ErrorCode.OK.wire()) {
      if (pending.remove(id) == null) {
        return; // ended meanwhile (deadline, loss)
      }
      byte[] msg = new byte[Math.min(n, RingRecords.MAX_ERROR_MESSAGE)];
      buffer.getBytes(index + RingRecords.RESPONSE_HEADER, msg);
      c.error =
          new FerriteException(ErrorCode.fromWire(status), new String(msg, StandardCharsets.UTF_8));
      c.nextDone = done;
      done = c;
      return;
    }
    if (offset == 0 && c.body == null) {
      if (total < 0 || total > maxResponse) {
        throw new IllegalStateException("response of " + total + " B");
      }
      c.body = ByteBuffer.allocate(total);
    }
    ByteBuffer body = c.body;
    if (body == null || offset != body.position() || n > body.remaining()) {
      throw new IllegalStateException(
          "response chunk of " + n + " B at " + offset + " of call " + id);
    }
    buffer.getBytes(index + RingRecords.RESPONSE_HEADER, body, n);
    if (!body.hasRemaining()) {
      if (pending.remove(id) == null) {
        return; // ended meanwhile (deadline, loss)
      }
      body.flip();
      c.nextDone = done;
      done = c;
    }
  }

  private void protocolError(String reason) {
    LOG.log(Level.WARNING, "closing connection to {0}: {1}", control.address(), reason);
    lost(
        new FerriteException(
            ErrorCode.PROTOCOL, "connection to " + control.address() + " closed: " + reason));
    control.close();
  }

  // ---------------------------------------------------------------- deadlines, loss

  private void ensureSweeping() {
    if (!sweeping.get() && sweeping.compareAndSet(false, true)) {
      schedule();
    }
  }

  private void schedule() {
    try {
      timer.schedule(this::sweep, SWEEP_MILLIS, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      // The fabric is closing: it closes this connection too, which fails what is pending.
      sweeping.set(false);
    }
  }

  private void sweep() {
    long now = System.nanoTime();
    for (RingCall c : pending.values()) {
      if (now - c.deadlineNanos >= 0 && pending.remove(c.id, c)) {
        c.fail(
            new FerriteException(
                ErrorCode.TIMEOUT,
                "no answer to ring call "
                    + c.id
                    + " from "
                    + control.address()
                    + " within its deadline ("
                    + state()
                    + ")"));
      }
    }
    long issued = ids.get();
    if (issued != sweptAt || !pending.isEmpty()) {
      sweptAt = issued;
      idleSweeps = 0;
    } else {
      idleSweeps++;
    }
    if (closed == null && idleSweeps < IDLE_SWEEPS) {
      schedule();
      return;
    }
    sweeping.set(false);
    // A call made after the check above saw the flag still set: pick it up.
    if (closed == null && !pending.isEmpty() && sweeping.compareAndSet(false, true)) {
      idleSweeps = 0;
      schedule();
    }
  }

  /** The connection is gone: fails what is pending and releases the rings. Idempotent. */
  void lost(FerriteException cause) {
    synchronized (this) {
      if (closed != null) {
        return;
      }
      closed = cause;
    }
    for (Long id : pending.keySet()) {
      RingCall c = pending.remove(id);
      if (c != null) {
        c.fail(cause);
      }
    }
    file.close();
  }

  boolean isClosed() {
    return closed != null;
  }

  /** The rings' positions and flags, for a diagnosis of a call that got no answer. */
  private String state() {
    if (!file.acquire()) {
      return "closed";
    }
    try {
      Thread holder = consumer.get();
      return "requests "
          + file.requests.consumerPosition()
          + ".."
          + file.requests.producerPosition()
          + ", responses "
          + file.responses.consumerPosition()
          + ".."
          + file.responses.producerPosition()
          + ", server asleep "
          + file.isAsleep(RingFile.SERVER_ASLEEP)
          + ", client asleep "
          + file.isAsleep(RingFile.CLIENT_ASLEEP)
          + ", consumer "
          + (holder == null ? "none" : holder.getName())
          + ", bell pending "
          + bellPending.get()
          + ", "
          + this;
    } finally {
      file.release();
    }
  }

  @Override
  public String toString() {
    return "rings ("
        + pending.size()
        + " pending, rang "
        + rang.sum()
        + ", heard "
        + heard.sum()
        + ")";
  }

  /** Calls sent and not yet answered (for tests). */
  int pendingCalls() {
    return pending.size();
  }

  // ---------------------------------------------------------------- one call

  /** One call through the rings: its future, and what its answer needs to find it. */
  static final class RingCall extends RingFuture<ByteBuffer> {
    final long id;
    final int requestBytes;
    final long startNanos;
    final long deadlineNanos;
    ByteBuffer body;
    FerriteException error;
    RingCall nextDone;

    RingCall(
        RingClient client,
        long id,
        int kind,
        int requestBytes,
        long startNanos,
        long deadlineNanos) {
      super(client, kind);
      this.id = id;
      this.requestBytes = requestBytes;
      this.startNanos = startNanos;
      this.deadlineNanos = deadlineNanos;
    }

    void finish() {
      client.answered(kind, System.nanoTime() - startNanos);
      if (error != null) {
        fail(error);
      } else {
        client.counters.record(OpKind.RPC, (long) requestBytes + body.remaining());
        complete(body);
      }
    }

    void fail(FerriteException e) {
      client.counters.recordError(OpKind.RPC);
      completeExceptionally(e);
    }
  }
}
