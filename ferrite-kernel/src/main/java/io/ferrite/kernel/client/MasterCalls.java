package io.ferrite.kernel.client;

import io.ferrite.fabric.Backoff;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.MasterStub;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * How a client calls the master: every call waits out a master that is unreachable, restarting or
 * not the leader, and a call that changes something carries a request id, so that repeating it
 * never applies it twice.
 *
 * <h2>Riding through</h2>
 *
 * A call that fails with {@link #waitsOut a master-side failure} (UNAVAILABLE, DROPPED, TIMEOUT,
 * NOT_LEADER, BUSY) is made again, on a master connection made again if it was lost, with backoff
 * (50 ms doubling to 1 s), until {@link ClientOptions#masterDeadline} has passed since the call
 * began; then it fails with the last failure's code, saying how long it waited. Any other failure
 * is the call's answer. Blocking calls sleep on the caller's thread; asynchronous ones schedule the
 * next attempt on the retry thread ({@link Retry#later}), which only starts it: the connect runs on
 * a connect thread ({@link Connections#masterAsync}).
 *
 * <h2>Request ids</h2>
 *
 * ALLOCATE, FREE and every face call ({@link FerriteClient#callMaster}) carry a request id ({@link
 * MasterProtocol#REQUEST}): this client's session, a sequence number taken when the call begins and
 * kept by all its attempts, and the lowest sequence number still waiting for an answer (the master
 * forgets the answers below it). The master remembers the answer of every id whose call changed its
 * metadata, journaled with the change: a retry gets that answer instead of running again. A client
 * without a session, and a master that predates REQUEST (it answers UNKNOWN_OPCODE to it, once),
 * get calls without ids: as before, a retried mutation may then apply twice.
 *
 * <p>Thread-safe.
 */
final class MasterCalls {
  private static final System.Logger LOG = System.getLogger(MasterCalls.class.getName());

  /** Between attempts at the master: 50 ms doubling to 1 s, with jitter, until the deadline. */
  static final Backoff BACKOFF =
      Backoff.builder()
          .initial(Duration.ofMillis(50))
          .max(Duration.ofSeconds(1))
          .jitter(0.2)
          .build();

  private final Connections connections;
  private final Retry retry;
  private final Duration deadline;
  private final LongSupplier sessionId;

  /** The last sequence number taken (the first call gets 1). */
  private final AtomicLong seq = new AtomicLong();

  /** Sequence numbers of the calls still waiting for an answer (their lowest is ackedBelow). */
  private final ConcurrentSkipListSet<Long> outstanding = new ConcurrentSkipListSet<>();

  /**
   * Whether a call is waiting out the master: set by the first failure (which logs it, once per
   * outage, so that a user sees why a command hangs), cleared by the next success.
   */
  private volatile boolean waiting;

  /** False once the master answered a REQUEST with UNKNOWN_OPCODE (it predates request ids). */
  private volatile boolean ids = true;

  /**
   * @param sessionId the client's session id now (0: none, calls carry no id)
   */
  MasterCalls(Connections connections, Retry retry, Duration deadline, LongSupplier sessionId) {
    this.connections = connections;
    this.retry = retry;
    this.deadline = deadline;
    this.sessionId = sessionId;
  }

  /** Whether {@code e}, from the master, is waited out: the master may answer once it is back. */
  static boolean waitsOut(FerriteException e) {
    return switch (e.code()) {
      case UNAVAILABLE, DROPPED, TIMEOUT, NOT_LEADER, BUSY -> true;
      default -> false;
    };
  }

  // ---------------------------------------------------------------- blocking

  /**
   * {@code attempt} on the master connection, made again (with a new connection if needed) while it
   * fails with a failure {@link #waitsOut waited out}, until the deadline.
   *
   * @param what what the call does, for the error ("allocate 3 blocks")
   */
  <T> T sync(String what, Function<MasterStub, T> attempt) {
    long start = System.nanoTime();
    Backoff.Attempts pauses = BACKOFF.start(deadline);
    while (true) {
      MasterStub m = null;
      try {
        m = connections.master();
        T v = attempt.apply(m);
        answered();
        return v;
      } catch (FerriteException e) {
        failed(m, e);
        if (!waitsOut(e) || retry.isClosed()) {
          throw e;
        }
        waitingFor(e);
        long pause = pauses.next();
        if (pause < 0 || deadline.isZero()) {
          throw gaveUp(what, start, e);
        }
        try {
          java.util.concurrent.TimeUnit.NANOSECONDS.sleep(pause);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw gaveUp(what, start, e);
        }
      }
    }
  }

  /** A face's call, blocking, with a request id ({@link FerriteClient#callMasterSync}). */
  ByteBuffer callSync(int service, int opcode, ByteBuffer body) {
    long n = begin();
    try {
      return sync(
          "call " + service + "/" + opcode + " on the master",
          m -> withIds(n, id -> m.callSync(id, service, opcode, body)));
    } finally {
      end(n);
    }
  }

  // ---------------------------------------------------------------- asynchronous

  /** As {@link #sync}, without blocking: attempts after the first start on the retry thread. */
  <T> CompletableFuture<T> async(String what, Function<MasterStub, CompletableFuture<T>> attempt) {
    CompletableFuture<T> out = new CompletableFuture<>();
    new AsyncCall<>(what, attempt, out).attempt();
    return out;
  }

  /** A face's call, with a request id ({@link FerriteClient#callMaster}). */
  CompletableFuture<ByteBuffer> call(int service, int opcode, ByteBuffer body) {
    return withId(
        n ->
            async(
                "call " + service + "/" + opcode + " on the master",
                m -> withIdsAsync(n, id -> m.call(id, service, opcode, body))));
  }

  /** {@code call} with a sequence number taken now, given back when its future completes. */
  <T> CompletableFuture<T> withId(java.util.function.LongFunction<CompletableFuture<T>> call) {
    long n = begin();
    CompletableFuture<T> f;
    try {
      f = call.apply(n);
    } catch (RuntimeException e) {
      end(n);
      throw e;
    }
    return f.whenComplete((v, e) -> end(n));
  }

  private final class AsyncCall<T> {
    private final String what;
    private final Function<MasterStub, CompletableFuture<T>> attempt;
    private final CompletableFuture<T> out;
    private final long start = System.nanoTime();
    private final Backoff.Attempts pauses = BACKOFF.start(deadline);

    AsyncCall(
        String what, Function<MasterStub, CompletableFuture<T>> attempt, CompletableFuture<T> out) {
      this.what = what;
      this.attempt = attempt;
      this.out = out;
    }

    void attempt() {
      if (retry.isClosed()) {
        out.completeExceptionally(new FerriteException(ErrorCode.UNAVAILABLE, "client is closed"));
        return;
      }
      MasterStub[] used = new MasterStub[1];
      CompletableFuture<T> f;
      try {
        f =
            connections
                .masterAsync()
                .thenCompose(
                    m -> {
                      used[0] = m;
                      return attempt.apply(m);
                    });
      } catch (RuntimeException e) {
        f = CompletableFuture.failedFuture(e);
      }
      f.whenComplete(
          (v, t) -> {
            if (t == null) {
              answered();
              out.complete(v);
              return;
            }
            FerriteException e = FerriteException.unwrap(t);
            failed(used[0], e);
            if (!waitsOut(e) || retry.isClosed()) {
              out.completeExceptionally(e);
              return;
            }
            waitingFor(e);
            long pause = pauses.next();
            if (pause < 0 || deadline.isZero()) {
              out.completeExceptionally(gaveUp(what, start, e));
              return;
            }
            retry.later(this::attempt, Math.max(1, pause / 1_000_000));
          });
    }
  }

  // ---------------------------------------------------------------- ids

  /** Takes the next sequence number; it stays outstanding until {@link #end}. */
  long begin() {
    long n = seq.incrementAndGet();
    outstanding.add(n);
    return n;
  }

  void end(long n) {
    outstanding.remove(n);
  }

  /** The id of call {@code n} now, or null when calls carry none (no session, an older master). */
  private MasterProtocol.RequestId id(long n) {
    long session = sessionId.getAsLong();
    if (session == 0 || !ids) {
      return null;
    }
    Long lowest = outstanding.isEmpty() ? null : outstanding.first();
    long acked = lowest == null ? n : Math.min(lowest, n);
    return new MasterProtocol.RequestId(session, n, acked);
  }

  /**
   * {@code call} with the id of call {@code n}; made again without one if the master does not know
   * REQUEST (that answer comes from the master itself, before any face sees the call).
   */
  <T> T withIds(long n, Function<MasterProtocol.RequestId, T> call) {
    MasterProtocol.RequestId id = id(n);
    try {
      return call.apply(id);
    } catch (FerriteException e) {
      if (id != null && olderMaster(e)) {
        return call.apply(null);
      }
      throw e;
    }
  }

  /** As {@link #withIds}, for an asynchronous call. */
  <T> CompletableFuture<T> withIdsAsync(
      long n, Function<MasterProtocol.RequestId, CompletableFuture<T>> call) {
    MasterProtocol.RequestId id = id(n);
    CompletableFuture<T> f = call.apply(id);
    if (id == null) {
      return f;
    }
    return f.handle(
            (v, t) -> {
              if (t != null && olderMaster(FerriteException.unwrap(t))) {
                return call.apply(null);
              }
              return f;
            })
        .thenCompose(x -> x);
  }

  private boolean olderMaster(FerriteException e) {
    if (e.code() == ErrorCode.UNKNOWN_OPCODE
        && String.valueOf(e.detail()).contains("no opcode " + MasterProtocol.REQUEST)) {
      if (ids) {
        LOG.log(
            System.Logger.Level.WARNING,
            "the master predates request ids: a retried call may be applied twice");
      }
      ids = false;
      return true;
    }
    return false;
  }

  // ---------------------------------------------------------------- failures

  /** A call failed in a way that is waited out: says so once per outage (a volatile read else). */
  private void waitingFor(FerriteException e) {
    if (!waiting && !deadline.isZero()) {
      waiting = true;
      LOG.log(
          System.Logger.Level.WARNING,
          "the master does not answer ({0}): waiting up to {1} ms for it (client.master.deadline)",
          e.getMessage(),
          deadline.toMillis());
    }
  }

  /** A call was answered: the next failure is a new outage. */
  private void answered() {
    if (waiting) {
      waiting = false;
      LOG.log(System.Logger.Level.INFO, "the master answers again");
    }
  }

  /**
   * After a failed attempt on {@code m}: a master that is not the leader is left for another, and
   * so is a group's master that did not answer in time (it may be partitioned away).
   */
  private void failed(MasterStub m, FerriteException e) {
    if (m != null && e.code() == ErrorCode.NOT_LEADER) {
      connections.masterFailed(m, e);
    } else if (m != null && e.code() == ErrorCode.TIMEOUT) {
      connections.masterSilent(m, e);
    }
  }

  private FerriteException gaveUp(String what, long start, FerriteException last) {
    if (deadline.isZero()) {
      return last;
    }
    long waited = (System.nanoTime() - start) / 1_000_000;
    return new FerriteException(
        last.code(),
        "cannot "
            + what
            + ": the master did not answer within "
            + waited
            + " ms (client.master.deadline "
            + deadline.toMillis()
            + " ms): "
            + last.detail(),
        last);
  }
}
