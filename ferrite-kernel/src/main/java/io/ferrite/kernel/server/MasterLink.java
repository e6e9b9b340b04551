package io.ferrite.kernel.server;

import io.ferrite.fabric.Backoff;
import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.MasterStub;
import io.ferrite.kernel.proto.ServerLoad;
import java.time.Duration;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * A memory server's connection to the master: connects with backoff, registers, heartbeats, and
 * starts over (reconnect, register again) whenever the master is gone or has forgotten the server
 * (a restarted master, or one that marked it DEAD). Runs on its own named thread.
 *
 * <p>A master group: the address is every master's, comma-separated ({@code tcp://a:7100,tcp://b:
 * 7100,...}, what {@link io.ferrite.kernel.client.Ferrite#masterAddresses} parses). A connect tries
 * the leader last named first, then each master in turn, and asks each its role (MASTER_INFO): a
 * follower names the leader, which is tried next. A NOT_LEADER answer (the master it talks to lost
 * its leadership) notes the leader it names and starts over there: register again, as after a
 * master restart (the new leader treats every server as UNKNOWN until it hears from it).
 */
final class MasterLink implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(MasterLink.class.getName());

  /** Reconnecting to the master: 50 ms doubling to 2 s, from 50 ms again after a success. */
  static final Backoff BACKOFF =
      Backoff.builder().initial(Duration.ofMillis(50)).max(Duration.ofSeconds(2)).build();

  /** The pause before asking the group again after a NOT_LEADER. */
  static final long NOT_LEADER_PAUSE_MILLIS = 50;

  private final Fabric fabric;
  private final Supplier<String> address;
  private final ConnectOptions options;
  private final Duration rpcTimeout;
  private final long heartbeatMillis;
  private final Function<MasterStub, Integer> register;
  private final Consumer<Integer> onRegistered;
  private volatile MasterStub stub;

  /** The master connected now (for messages), and the leader a master last named (or null). */
  private volatile String current = "";

  private volatile String leaderHint;
  private volatile boolean closed;
  private Thread thread;

  /**
   * @param register registers the server on the given stub and returns its id
   * @param onRegistered told every time a registration succeeded
   */
  MasterLink(
      Fabric fabric,
      Supplier<String> address,
      ConnectOptions options,
      Duration rpcTimeout,
      Duration heartbeat,
      Function<MasterStub, Integer> register,
      Consumer<Integer> onRegistered) {
    this.fabric = fabric;
    this.address = address;
    this.options = options;
    this.rpcTimeout = rpcTimeout;
    this.heartbeatMillis = heartbeat.toMillis();
    this.register = register;
    this.onRegistered = onRegistered;
  }

  /** The current master connection. */
  MasterStub stub() {
    MasterStub s = stub;
    if (s == null || !s.connection().isOpen()) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE, "not connected to the master at " + current + " (reconnecting)");
    }
    return s;
  }

  /**
   * Runs {@code call} once on the connection to the master. After {@link #start} that is {@link
   * #stub()}: the heartbeat thread replaces a lost connection. Before it (services replaying their
   * logs at boot) nothing else would, so a lost connection is opened again here (one leader seek,
   * no retry), and one that a retryable failure came over is dropped (a master that lost its
   * leadership answers NOT_LEADER on it for good): the caller's next attempt seeks the leader.
   */
  <T> T call(Function<MasterStub, T> call) {
    if (started) {
      return call.apply(stub());
    }
    try {
      return call.apply(connect());
    } catch (FerriteException e) {
      if (e.retryable()) {
        noteLeader(e);
        drop();
      }
      throw e;
    }
  }

  /** Set by {@link #start}: the heartbeat thread keeps the connection from then on. */
  private volatile boolean started;

  /**
   * Connects (retrying with backoff until it works or the link is closed) and runs {@code call} on
   * the connection; used once at start, before the heartbeat thread runs.
   */
  <T> T callWithRetry(Function<MasterStub, T> call) {
    Backoff.Attempts pauses = BACKOFF.start();
    while (!closed) {
      try {
        MasterStub s = connect();
        return call.apply(s);
      } catch (FerriteException e) {
        if (!e.retryable()) {
          throw e;
        }
        noteLeader(e);
        drop();
        if (pauses.failures() % 20 == 0) {
          LOG.log(
              System.Logger.Level.WARNING,
              "master at {0} not reachable ({1}); retrying",
              address.get(),
              e.getMessage());
        }
        pause(pauses);
      }
    }
    throw new FerriteException(
        ErrorCode.UNAVAILABLE, "closed while connecting to " + address.get());
  }

  private MasterStub connect() {
    return connect(options, rpcTimeout);
  }

  /** The connection to the master that serves, opened with {@code opts} and {@code rpc}. */
  private MasterStub connect(ConnectOptions opts, Duration rpc) {
    MasterStub s = stub;
    if (s != null && s.connection().isOpen()) {
      return s;
    }
    java.util.List<String> all = io.ferrite.kernel.client.Ferrite.masterAddresses(address.get());
    io.ferrite.kernel.proto.LeaderSeek.Found f =
        io.ferrite.kernel.proto.LeaderSeek.seek(all, leaderHint, a -> fabric.connect(a, opts), rpc);
    current = f.address();
    if (all.size() > 1) {
      leaderHint = f.address();
    }
    s = new MasterStub(f.connection(), rpc);
    stub = s;
    return s;
  }

  /** True if the master address names a group (several masters). */
  private boolean group() {
    return address.get().indexOf(',') >= 0;
  }

  /** Notes the leader a NOT_LEADER answer names, for the next connect. */
  private void noteLeader(FerriteException e) {
    if (e.code() == ErrorCode.NOT_LEADER) {
      leaderHint = MasterStub.leaderNamedIn(e);
    } else if (e.code() == ErrorCode.TIMEOUT && current.equals(leaderHint)) {
      // The leader went silent (cut off, paused): ask the others first, not its silence again.
      leaderHint = null;
    }
  }

  private void drop() {
    MasterStub s = stub;
    stub = null;
    if (s != null) {
      s.connection().close();
    }
  }

  /** Starts the heartbeat thread; the server is registered already. */
  void start(String threadName) {
    start(threadName, true);
  }

  /**
   * Starts the heartbeat thread; unless {@code registered}, it registers first (with backoff, as
   * after a lost master): a master group other than the first, which the server does not wait for.
   */
  void start(String threadName, boolean registered) {
    startRegistered = registered;
    started = true;
    thread = new Thread(this::run, threadName);
    thread.setDaemon(true);
    thread.start();
  }

  private volatile boolean startRegistered = true;

  private void run() {
    boolean registered = startRegistered;
    Backoff.Attempts pauses = BACKOFF.start();
    boolean warned = false;
    while (!closed) {
      try {
        if (!registered) {
          MasterStub m = connect();
          long sent = System.nanoTime();
          int id = register.apply(m);
          acked(sent);
          onRegistered.accept(id);
          registered = true;
          masterTakesLoad = true; // perhaps another master now
          if (warned) {
            LOG.log(
                System.Logger.Level.INFO, "re-registered with the master at {0}", address.get());
          }
          warned = false;
          pauses.reset();
        }
        sleep(heartbeatMillis);
        if (closed) {
          return;
        }
        long sent = System.nanoTime();
        heartbeat(stub());
        acked(sent);
        pauses.reset();
      } catch (FerriteException e) {
        if (closed) {
          return;
        }
        registered = false;
        noteLeader(e);
        if (e.code() == ErrorCode.NOT_LEADER) {
          // A leader change: the named leader next, after a short pause (not the backoff's
          // doubling: the new leader counts the silence against us; an election takes ~1 s).
          drop();
          sleep(NOT_LEADER_PAUSE_MILLIS);
        } else if (e.code() != ErrorCode.NOT_FOUND) {
          drop();
          if (group()) {
            // A group: another master takes over within an election; ask again soon rather
            // than after the doubling backoff (up to 2 s) a lone master's restart warrants.
            sleep(2 * NOT_LEADER_PAUSE_MILLIS);
          } else {
            pause(pauses);
          }
        }
        if (!warned) {
          LOG.log(
              System.Logger.Level.WARNING,
              "lost the master at {0} ({1}); reconnecting and registering again",
              address.get(),
              e.getMessage());
          warned = true;
        }
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.ERROR, "master link failed", e);
        registered = false;
        drop();
        sleep(BACKOFF.delayMillis(Integer.MAX_VALUE));
      }
    }
  }

  /**
   * When (System.nanoTime()) the newest registration or heartbeat the master acknowledged was sent,
   * valid once {@link #acked} is true: the master heard from this server after that instant, so it
   * cannot declare it DEAD before {@code server.dead.timeout} has passed since (a face's lease,
   * docs/KV.md "Leases"). Written by the link's thread (and the first registration's caller), one
   * at a time; only ever moves forward.
   */
  private volatile long ackSentNanos;

  private volatile boolean everAcked;

  /** Notes that the master acknowledged a request sent at {@code sentNanos}. */
  void acked(long sentNanos) {
    if (!everAcked || sentNanos - ackSentNanos > 0) {
      ackSentNanos = sentNanos; // before the flag: a reader that sees the flag sees a real time
      everAcked = true;
    }
  }

  /** {@link #ackSentNanos}, or empty before the first acknowledgement. */
  java.util.OptionalLong lastAckSentNanos() {
    return everAcked ? java.util.OptionalLong.of(ackSentNanos) : java.util.OptionalLong.empty();
  }

  private volatile int idForHeartbeat;

  /** What each heartbeat reports (null: nothing); see {@link ServerLoad}. */
  private volatile Supplier<ServerLoad> load;

  /** Cleared once a master refused the load block (older than it): plain heartbeats from then. */
  private boolean masterTakesLoad = true;

  /** Reports {@code load}'s value with every heartbeat from now on. */
  void load(Supplier<ServerLoad> load) {
    this.load = load;
  }

  private void heartbeat(MasterStub s) {
    int id = idForHeartbeat;
    Supplier<ServerLoad> l = load;
    if (l != null && masterTakesLoad) {
      ServerLoad value;
      try {
        value = l.get();
      } catch (RuntimeException e) {
        // The load is for the console; the heartbeat keeps the server alive: never lose that.
        LOG.log(System.Logger.Level.DEBUG, "no load for the heartbeat", e);
        value = null;
      }
      if (value != null) {
        try {
          s.heartbeat(id, value);
          return;
        } catch (FerriteException e) {
          if (e.code() != ErrorCode.INVALID_ARGUMENT) {
            throw e;
          }
          masterTakesLoad = false;
          LOG.log(
              System.Logger.Level.INFO,
              "the master at {0} does not take loads in heartbeats (older); sending none",
              address.get());
        }
      }
    }
    s.heartbeat(id);
  }

  void serverId(int id) {
    idForHeartbeat = id;
  }

  /** Sleeps the next pause; an interrupt closes the link (as in {@link #sleep}). */
  private void pause(Backoff.Attempts pauses) {
    try {
      pauses.sleep();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      closed = true;
    }
  }

  private void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      closed = true;
    }
  }

  /**
   * Stops heartbeating (a clean stop's first step: nothing of the link runs after it but {@link
   * #leave}). Idempotent.
   */
  void stopHeartbeats() {
    closed = true;
    // Closing the connection first fails a heartbeat in flight at once (joins do not interrupt).
    drop();
    if (thread != null) {
      thread.interrupt();
      try {
        thread.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * A clean stop's goodbye ({@link MasterStub#leave}): tells the master that serves (the group's
   * leader, following NOT_LEADER answers) that this server process is leaving, so that it declares
   * the server DEAD now rather than after its dead timeout. Heartbeats stop first: one after the
   * goodbye would find the server DEAD and register it again. Bounded: gives up at {@code
   * deadlineNanos} ({@link System#nanoTime}), each connect and call bounded by what is left, and
   * says so in the log; the master then declares the server DEAD after its timeout, as before.
   *
   * @return true if the master answered the goodbye (also when it had declared the server DEAD
   *     already)
   */
  boolean leave(long incarnation, long deadlineNanos) {
    stopHeartbeats();
    int id = idForHeartbeat;
    if (id <= 0) {
      return false; // never registered: nothing to say
    }
    FerriteException last = null;
    while (true) {
      long left = deadlineNanos - System.nanoTime();
      if (left <= 0) {
        break;
      }
      Duration bound = Duration.ofNanos(Math.min(left, rpcTimeout.toNanos()));
      try {
        MasterStub s = connect(new ConnectOptions(options.credentials(), bound, bound), bound);
        boolean now = new MasterStub(s.connection(), bound).leave(id, incarnation);
        LOG.log(
            System.Logger.Level.INFO,
            "said goodbye to the master at {0}{1}",
            current,
            now
                ? ""
                : " (it had declared this server DEAD already, or another process of it"
                    + " registered since)");
        drop();
        return true;
      } catch (FerriteException e) {
        last = e;
        drop();
        if (!e.retryable() && e.code() != ErrorCode.NOT_LEADER) {
          break; // an older master (UNKNOWN_OPCODE), or one that does not know the server
        }
        noteLeader(e);
        long pause =
            Math.min(NOT_LEADER_PAUSE_MILLIS, (deadlineNanos - System.nanoTime()) / 1_000_000);
        if (pause > 0) {
          try {
            Thread.sleep(pause);
          } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            break;
          }
        }
      }
    }
    LOG.log(
        System.Logger.Level.WARNING,
        "could not say goodbye to the master at {0} ({1}): stopping anyway; it declares this server"
            + " DEAD after its dead timeout",
        address.get(),
        last == null ? "no time left" : last.getMessage());
    return false;
  }

  @Override
  public void close() {
    stopHeartbeats();
    drop();
  }
}
