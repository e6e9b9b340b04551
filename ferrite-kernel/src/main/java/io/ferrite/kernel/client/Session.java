package io.ferrite.kernel.client;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.config.Threads;
import io.ferrite.kernel.proto.MasterStub;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A client's session with the master: opened with the client, renewed in the background, closed
 * with it (which frees its session-scoped blocks).
 *
 * <h2>Renewal</h2>
 *
 * Renewal runs on a thread of its own ({@code ferrite-client-session-1}) that does nothing else: no
 * retry, connect or callback of an op shares it, so nothing a silent memory server does can delay
 * it. It renews every third of the lease, and each renewal (the master connect it may need, then
 * the RENEW call) waits at most a third of the lease (or the RPC timeout, if shorter): a renewal
 * that gets no answer gives up in time for the next to be made while the lease still runs, so two
 * of three renewals can be lost before the master expires the session. Nothing here holds a lock
 * across a network wait; a master reconnect runs on a connect thread ({@link Connections}).
 *
 * <p>Thread-safe.
 */
final class Session implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Session.class.getName());

  private final Connections connections;
  private final boolean wanted;
  private final ScheduledThreadPoolExecutor renewer;
  private final long renewNanos;
  private volatile long id;

  /**
   * Opens the session (if {@code options.session()}) and starts renewing it.
   *
   * @throws FerriteException if the master refuses or does not answer
   */
  Session(Connections connections, MasterCalls calls, ClientOptions options) {
    this.connections = connections;
    this.wanted = options.session();
    if (!wanted) {
      this.renewer = null;
      this.renewNanos = 0;
      return;
    }
    // A retry after a lost answer opens a second session: the first, never renewed, expires one
    // lease later with nothing in it.
    MasterStub.Session s =
        calls.sync(
            "open a session", m -> m.openSession(options.clientName(), options.leaseMillis()));
    this.id = s.sessionId();
    long period = Math.max(10, s.leaseMillis() / 3);
    this.renewNanos =
        TimeUnit.MILLISECONDS.toNanos(Math.min(period, options.rpcTimeout().toMillis()));
    this.renewer = Threads.scheduler("ferrite-client-session");
    // At a fixed rate: a renewal that waited out its deadline does not push the next one later.
    renewer.scheduleAtFixedRate(this::renew, period, period, TimeUnit.MILLISECONDS);
  }

  /** The session id, 0 if there is none (opened without one, expired, closed). */
  long id() {
    return id;
  }

  /**
   * The session id, for a call that needs one.
   *
   * @throws FerriteException {@link ErrorCode#SESSION_EXPIRED} if there is none
   */
  long require() {
    long v = id;
    if (v == 0) {
      throw new FerriteException(
          ErrorCode.SESSION_EXPIRED,
          wanted
              ? "this client's session expired; connect again"
              : "this client was opened without a session");
    }
    return v;
  }

  /** The longest one renewal waits for the master (connect and answer). */
  Duration renewDeadline() {
    return Duration.ofNanos(renewNanos);
  }

  /** One renewal, on the session thread; a failure is logged and the next renewal tries again. */
  void renew() {
    long v = id;
    if (v == 0) {
      return;
    }
    long deadline = System.nanoTime() + renewNanos;
    MasterStub m = null;
    try {
      m = await(connections.masterAsync(), deadline, "a master connection");
      await(m.renewSession(v), deadline, "the master's answer");
    } catch (FerriteException e) {
      if (m != null && e.code() == ErrorCode.TIMEOUT) {
        // A group's master cut off from the network stays silent on an open connection: leave it
        // (see Connections.masterSilent), or an idle client renews into the silence until its
        // session expires at the new leader.
        connections.masterSilent(m, e);
      }
      if (e.code() == ErrorCode.SESSION_EXPIRED) {
        LOG.log(
            System.Logger.Level.ERROR,
            "session {0} expired: its session-scoped blocks were freed by the master",
            Long.toHexString(v));
        id = 0;
      } else {
        LOG.log(
            System.Logger.Level.WARNING, "session renewal failed, will retry: {0}", e.getMessage());
      }
    } catch (RuntimeException e) {
      // Thrown out of a periodic task it would cancel every later renewal, silently.
      LOG.log(System.Logger.Level.ERROR, "session renewal failed, will retry", e);
    }
  }

  /** Waits for {@code f} until {@code deadline} (System.nanoTime); TIMEOUT after it. */
  private static <T> T await(CompletableFuture<T> f, long deadline, String what) {
    try {
      return f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      throw new FerriteException(
          ErrorCode.TIMEOUT, "no " + what + " within the renewal deadline", e);
    } catch (ExecutionException e) {
      throw FerriteException.unwrap(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // close() stopped the renewer
      throw new FerriteException(ErrorCode.UNAVAILABLE, "client is closed", e);
    }
  }

  /**
   * Stops renewing and closes the session on the master if the master connection is open (its
   * session-scoped blocks are freed at once rather than when the lease runs out).
   */
  @Override
  public void close() {
    if (renewer != null) {
      renewer.shutdownNow();
    }
    long v = id;
    id = 0;
    MasterStub m = connections.openMaster();
    if (v != 0 && m != null) {
      try {
        m.closeSession(v);
      } catch (FerriteException e) {
        LOG.log(System.Logger.Level.DEBUG, "closing session: {0}", e.getMessage());
      }
    }
  }
}
