package io.ferrite.tree.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.config.Threads;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.ServiceContext;
import io.ferrite.tree.TreeConfig;
import io.ferrite.tree.TreeProtocol;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The tree service's half of meganode splits across memory servers (docs/TREE.md "Meganodes on
 * several servers"): where a new leaf meganode goes, the copy of a split's right half to another
 * server, and both sides' bookkeeping of the crash-safe protocol.
 *
 * <p><b>Source side</b> (the server splitting meganode x): a split to server T is named by a
 * <i>token</i>, a meganode id of this server that is never handed out again. The source logs
 * R_BEGIN (x, key, token, T), sends ADOPT and the pairs (ADOPT_PUT, ≤ {@link #CHUNK_BYTES} each),
 * logs R_END with the target's pointer, relinks x, and then owes T a CONFIRM; a split that failed
 * (or that a crash cut before R_END) owes T a DROP_ADOPTED instead. Owed messages are sent by this
 * class's thread until T answers (then R_DONE is logged). While owed, a token answers RESOLVE: KEEP
 * once ended, WAIT while the split runs, DROP otherwise.
 *
 * <p><b>Target side</b>: an adopted meganode is <i>pending</i> (logged ADOPTED) until its source's
 * CONFIRM (logged CONFIRMED). One that is still pending after a restart, or {@link #STALE_NANOS}
 * after its last copy message, is resolved by asking its source (RESOLVE): KEEP confirms it, DROP
 * frees it (FORGET), WAIT or no answer asks again later. Pending meganodes are served meanwhile:
 * nothing reaches one before its source's relink, which follows R_END. A guest tree (one whose home
 * is another server) found by the replay is checked with its home once (STATS): NOT_FOUND drops it
 * here, since its DROP_TREE was sent while this server was down.
 *
 * <p>Every peer call of the peers thread goes through that peer's {@link Backoff} (200 ms doubling
 * to 30 s while it does not answer). A DROP_ADOPTED owed to a server the master declares DEAD is
 * forgotten (its pending copy resolves DROP when it asks); a CONFIRM never is (its replay would ask
 * RESOLVE, and only the owed confirm answers KEEP).
 *
 * <p>Threads: the splitter calls {@link #place}, {@link #adopt} and the source-side steps; RPC
 * threads the target side; one named thread ({@code tree-peers-<id>}) sends owed messages, asks
 * about stale pending meganodes and tells guest servers of dropped trees. Peer calls block on
 * {@link ServiceContext#peer} connections (never on an inline handler).
 */
final class RemoteSplits {
  private static final System.Logger LOG = System.getLogger(RemoteSplits.class.getName());

  /** The most bytes of pairs one ADOPT_PUT carries (well under any fabric's frame). */
  static final int CHUNK_BYTES = 1 << 20;

  /** A pending meganode silent this long is resolved by asking its source. */
  static final long STALE_NANOS = TimeUnit.SECONDS.toNanos(30);

  /** RESOLVE answers. */
  static final int DROP = 0;

  static final int KEEP = 1;
  static final int WAIT = 2;

  /** A meganode this server made for a remote split (target side). */
  static final class Adoption {
    final int source;
    final int token;
    volatile boolean pending;

    /** When the source last sent part of the copy; 0: resolve at once (replayed). */
    volatile long touched;

    Adoption(int source, int token, boolean pending, long touched) {
      this.source = source;
      this.token = token;
      this.pending = pending;
      this.touched = touched;
    }
  }

  /**
   * The first wait after a peer did not answer; doubled at each failure up to {@link #MAX_WAIT}.
   */
  static final long FIRST_WAIT = TimeUnit.MILLISECONDS.toNanos(200);

  /** The longest wait between two tries of one peer. */
  static final long MAX_WAIT = TimeUnit.SECONDS.toNanos(30);

  /**
   * When the peers thread may try a server again (peers thread only). A peer that does not answer
   * is tried after 200 ms, 400 ms, ... up to 30 s between tries (each try of a dead server costs a
   * dial, and the dial a MEMBERS RPC to the master): a server down for good costs the master one
   * RPC per 30 s, not five a second. Every message owed to one server shares its wait, so a round
   * tries a silent server once, not once per owed message. The first failure after an answer is
   * logged at WARNING, the next answer at INFO; the retries in between are not logged.
   */
  static final class Backoff {
    private long wait;
    private long next;

    /** Whether the server may be tried at {@code now} (nanoTime). */
    boolean due(long now) {
      return wait == 0 || now - next >= 0;
    }

    /** A try failed at {@code now}; true if it is the first since the last answer (log it). */
    boolean failed(long now) {
      boolean first = wait == 0;
      wait = first ? FIRST_WAIT : Math.min(MAX_WAIT, wait * 2);
      next = now + wait;
      return first;
    }

    /** The server answered; true if it had failed before (log that it is back). */
    boolean answered() {
      boolean was = wait != 0;
      wait = 0;
      return was;
    }

    /** The wait after the last failure (0: none owed). */
    long waitNanos() {
      return wait;
    }
  }

  private final TreeService service;
  private final ServiceContext context;
  private final TreeConfig.Placement placement;
  private final Duration timeout;
  private final AtomicInteger next = new AtomicInteger();

  /** Source side: tokens of remote splits running now (RESOLVE answers WAIT). */
  private final Set<Integer> running = ConcurrentHashMap.newKeySet();

  /** Source side: owed CONFIRMs, token to the target meganode's pointer. */
  final Map<Integer, Long> owedConfirms = new ConcurrentHashMap<>();

  /** Source side: owed DROP_ADOPTEDs, token to the target server. */
  final Map<Integer, Integer> owedDrops = new ConcurrentHashMap<>();

  /** Target side: adopted meganodes by meganode id. */
  final Map<Integer, Adoption> adoptions = new ConcurrentHashMap<>();

  /** Trees dropped here whose other servers are still to be told (home side). */
  private final Map<Long, Set<Integer>> drops = new ConcurrentHashMap<>();

  /**
   * Guest trees found by the replay whose home is still to be asked whether the tree exists (tree
   * id to home): one dropped at home while this server was down is dropped here then (its DROP_TREE
   * was never delivered).
   */
  final Map<Long, Integer> guestsToCheck = new ConcurrentHashMap<>();

  /** Each peer's backoff, by server id (peers thread; read by tests). */
  final Map<Integer, Backoff> backoffs = new ConcurrentHashMap<>();

  /** The membership the peers thread fetched this round (null: not yet; fetched at most once). */
  private List<MemberInfo> roundMembers;

  /** Servers a try failed this round (peers thread): only those are asked about at the master. */
  private final Set<Integer> failedThisRound = new java.util.HashSet<>();

  private ScheduledExecutorService thread;

  /** The live servers in id order, as the master last told the splitter. */
  private volatile List<Integer> alive = List.of();

  /** When (nanoTime) {@link #alive} was last refreshed, and whether it ever was; splitter only. */
  private long aliveAt;

  private boolean asked;

  /** How often the splitter asks the master for the membership (under spread placement). */
  static final long MEMBERS_NANOS = TimeUnit.SECONDS.toNanos(1);

  RemoteSplits(TreeService service, ServiceContext context) {
    this.service = service;
    this.context = context;
    this.placement = TreeConfig.placement(context.config());
    this.timeout = context.config().rpcTimeout();
  }

  /**
   * Takes over what the replay found owed and pending (resolved at once: touched 0), and the guest
   * trees whose homes are to be asked whether they still exist.
   */
  void restore(TreeLog.Replay replay) {
    owedConfirms.putAll(replay.owedConfirms);
    owedDrops.putAll(replay.owedDrops);
    for (Map.Entry<Long, Integer> e : replay.guests.entrySet()) {
      if (e.getValue() != context.serverId() && !replay.roots.containsKey(e.getKey())) {
        guestsToCheck.put(e.getKey(), e.getValue());
      }
    }
    for (TreeLog.Image m : replay.meganodes.values()) {
      if (m.source >= 0) {
        adoptions.put(m.id, new Adoption(m.source, m.token, m.pending, 0));
      }
    }
  }

  /** Starts the peers thread. */
  void start() {
    thread = Threads.scheduler("tree-peers-" + context.serverId());
    thread.scheduleWithFixedDelay(this::tick, 0, 200, TimeUnit.MILLISECONDS);
  }

  void stop() {
    if (thread != null) {
      thread.shutdownNow();
      try {
        thread.awaitTermination(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  // ------------------------------------------------------------------ placement

  /**
   * The server for a new leaf meganode: this one under {@code local}; under {@code spread} the next
   * live memory server in id order, round-robin (this one included). Round-robin, not "most free
   * memory": every server runs the tree service, meganodes all have one size, so counting them
   * evenly spreads the bytes evenly, and it needs only the membership the master already serves,
   * asked at most once a second ({@link #MEMBERS_NANOS}: one MEMBERS RPC on the splitter). A server
   * that died within that second fails the split's copy (UNAVAILABLE naming it): the split is
   * aborted and tried again at a later write.
   */
  int place() {
    int self = context.serverId();
    if (placement == TreeConfig.Placement.LOCAL) {
      return self;
    }
    refreshMembers(System.nanoTime());
    List<Integer> servers = alive;
    if (servers.size() <= 1) {
      return self;
    }
    return servers.get(Math.floorMod(next.getAndIncrement(), servers.size()));
  }

  /** Refreshes {@link #alive} if older than a second (splitter): this server, every ALIVE one. */
  private void refreshMembers(long now) {
    if (asked && now - aliveAt < MEMBERS_NANOS) {
      return;
    }
    asked = true;
    aliveAt = now;
    List<Integer> servers = new ArrayList<>();
    try {
      for (MemberInfo m : context.master().members()) {
        if (m.state() == ServerState.ALIVE || m.serverId() == context.serverId()) {
          servers.add(m.serverId());
        }
      }
    } catch (FerriteException e) {
      return; // the master is away: keep the last answer
    }
    servers.sort(null);
    alive = List.copyOf(servers);
  }

  // ------------------------------------------------------------------ source side

  /** A remote split with {@code token} starts (before its R_BEGIN is logged). */
  void begun(int token) {
    running.add(token);
  }

  /** ... ended (R_END logged): the target is owed its CONFIRM, sent after the relink. */
  void ended(int token, long target) {
    owedConfirms.put(token, target);
    running.remove(token);
  }

  /** ... failed (R_ABORT logged): the target is owed a DROP_ADOPTED. */
  void aborted(int token, int target) {
    owedDrops.put(token, target);
    running.remove(token);
  }

  /** RESOLVE from a target: KEEP once the split ended, WAIT while it runs, DROP otherwise. */
  int resolve(int token) {
    if (owedConfirms.containsKey(token)) {
      return KEEP;
    }
    return running.contains(token) ? WAIT : DROP;
  }

  /**
   * Copies a split's right half to a new meganode on server {@code target}: ADOPT makes it there
   * (logged pending), ADOPT_PUT chunks carry the pairs in key order. Returns its pointer.
   *
   * @throws FerriteException UNAVAILABLE naming the target if it cannot be reached or refuses
   */
  long adopt(int target, TreeService.TreeState tree, int token, Meganode.SplitHalf half, int home) {
    try {
      FabricConnection c = context.peer(target);
      Wire.Writer w =
          new Wire.Writer()
              .i64(tree.id)
              .i32(home)
              .i32(context.serverId())
              .i32(token)
              .i32(half.level())
              .bytes(half.key());
      w.u8(half.high() == null ? 0 : 1);
      if (half.high() != null) {
        w.bytes(half.high());
      }
      w.i64(half.link());
      long pointer =
          new Wire.Reader(call(c, TreeProtocol.ADOPT, w), "tree ADOPT answer").i64("pointer");
      int i = 0;
      int n = half.keys().size();
      while (i < n) {
        int start = i;
        long bytes = 0;
        while (i < n && (i == start || bytes < CHUNK_BYTES)) {
          bytes += 8 + half.keys().get(i).length + half.values().get(i).length;
          i++;
        }
        Wire.Writer put = new Wire.Writer().i32(TreeProtocol.region(pointer)).i32(i - start);
        for (int k = start; k < i; k++) {
          put.bytes(half.keys().get(k)).bytes(half.values().get(k));
        }
        call(c, TreeProtocol.ADOPT_PUT, put);
      }
      return pointer;
    } catch (FerriteException e) {
      throw new FerriteException(
          ErrorCode.UNAVAILABLE,
          "meganode split: copying the right half to server " + target + " failed: " + e,
          e);
    }
  }

  /**
   * Tells the tree's home server the separator of a split made here (INSERT_CHILD, queued there on
   * its splitter). A failure is logged only: the new meganode is reached through its left
   * neighbour's link (a B-link tree needs no more); the next split of that level inserts around it.
   */
  void insertChild(int home, long tree, int level, byte[] key, long child) {
    try {
      call(
          context.peer(home),
          TreeProtocol.INSERT_CHILD,
          new Wire.Writer().i64(tree).i32(level).bytes(key).i64(child));
    } catch (FerriteException e) {
      LOG.log(
          System.Logger.Level.WARNING,
          "tree {0}: separator of meganode {1} not inserted at server {2} (reached by links): {3}",
          tree,
          Long.toHexString(child),
          home,
          e.getMessage());
    }
  }

  /** Tree {@code tree} was dropped at its home: the other servers drop their meganodes of it. */
  void droppedAtHome(long tree) {
    Set<Integer> others = ConcurrentHashMap.newKeySet();
    try {
      for (MemberInfo m : context.master().members()) {
        if (m.serverId() != context.serverId() && m.state() != ServerState.DEAD) {
          others.add(m.serverId());
        }
      }
    } catch (FerriteException e) {
      LOG.log(
          System.Logger.Level.WARNING,
          "tree {0} dropped: the other servers are not told (no membership): {1}",
          tree,
          e.getMessage());
      return;
    }
    if (!others.isEmpty()) {
      drops.put(tree, others);
    }
  }

  // ------------------------------------------------------------------ requests from peers

  /**
   * The server-to-server opcodes ({@link TreeProtocol}), the caller's role already checked
   * (SERVER): the target side of a split (ADOPT, ADOPT_PUT, CONFIRM, DROP_ADOPTED), the source
   * side's RESOLVE, and the home side's INSERT_CHILD. Runs on a service thread.
   */
  void handle(Wire.Reader r, Wire.Writer w, int opcode) {
    switch (opcode) {
      case TreeProtocol.ADOPT -> {
        long tree = r.i64("tree");
        int home = r.i32("home");
        int source = r.i32("source");
        int token = r.i32("token");
        int level = r.i32("level");
        byte[] low = r.bytes("low");
        byte[] high = r.u8("hasHigh") != 0 ? r.bytes("high") : null;
        long link = r.i64("link");
        r.end();
        if (level != 0) {
          throw new FerriteException(
              ErrorCode.INVALID_ARGUMENT, "ADOPT level " + level + " (expected: 0, a leaf)");
        }
        w.i64(service.adopt(tree, home, source, token, low, high, link).pointer());
      }
      case TreeProtocol.ADOPT_PUT -> {
        TreeService.Hosted h = service.hosted(r.i32("region"));
        Adoption a = adoptions.get(h.id());
        if (a == null || !a.pending) {
          throw new FerriteException(
              ErrorCode.CONFLICT, "ADOPT_PUT: meganode " + h.id() + " is not a pending adoption");
        }
        a.touched = System.nanoTime();
        int n = r.count("pairs", Integer.MAX_VALUE);
        for (int i = 0; i < n; i++) {
          byte[] key = r.bytes("key");
          byte[] value = r.bytes("value");
          Meganode.Write put = service.put(h, key, value);
          if (put.status() != Meganode.Write.Status.CREATED
              && put.status() != Meganode.Write.Status.REPLACED) {
            throw new FerriteException(ErrorCode.INTERNAL, "adopted copy: " + put);
          }
        }
        r.end();
      }
      case TreeProtocol.CONFIRM -> {
        int id = r.i32("region");
        r.end();
        service.confirm(id);
      }
      case TreeProtocol.DROP_ADOPTED -> {
        int source = r.i32("source");
        int token = r.i32("token");
        r.end();
        w.u8(service.dropAdopted(source, token) ? 1 : 0);
      }
      case TreeProtocol.RESOLVE -> {
        int token = r.i32("token");
        r.end();
        w.u8(resolve(token));
      }
      case TreeProtocol.INSERT_CHILD -> {
        TreeService.TreeState t = service.tree(r.i64("tree"));
        int level = r.i32("level");
        byte[] key = r.bytes("key");
        long child = r.i64("child");
        r.end();
        service.queueParent(t, level, key, child);
      }
      default ->
          throw new FerriteException(
              ErrorCode.UNKNOWN_OPCODE, "tree service: unknown opcode " + opcode);
    }
  }

  // ------------------------------------------------------------------ the peers thread

  private void tick() {
    roundMembers = null;
    failedThisRound.clear();
    long now = System.nanoTime();
    try {
      for (Map.Entry<Integer, Long> e : owedConfirms.entrySet()) {
        // Owed even to a DEAD server: its log keeps the adopted meganode (pending) and its replay
        // asks RESOLVE, which must answer KEEP (this entry) or keys reached by the relink are lost.
        long target = e.getValue();
        if (send(
            TreeProtocol.server(target),
            TreeProtocol.CONFIRM,
            new Wire.Writer().i32(TreeProtocol.region(target)),
            now)) {
          service.remoteDone(e.getKey(), () -> owedConfirms.remove(e.getKey()));
        }
      }
      Set<Integer> deadNow = new java.util.HashSet<>();
      for (Map.Entry<Integer, Integer> e : owedDrops.entrySet()) {
        int target = e.getValue();
        if (send(
            target,
            TreeProtocol.DROP_ADOPTED,
            new Wire.Writer().i32(context.serverId()).i32(e.getKey()),
            now)) {
          service.remoteDone(e.getKey(), () -> owedDrops.remove(e.getKey()));
        } else if (deadNow.contains(target) || (failedThisRound.contains(target) && dead(target))) {
          // Only a round whose try of the target failed (this message's, or an owed CONFIRM's
          // before it) asks the master, not every round while the backoff waits; and then every
          // drop owed to it goes, not one per backoff period.
          deadNow.add(target);
          // A drop need not be delivered: whatever the target made for the token is pending, and
          // a pending meganode asks RESOLVE (at its replay, or after 30 s of silence), which
          // answers DROP for a token neither running nor owed a confirm. So a DEAD target's drop
          // is forgotten, not retried until it returns.
          LOG.log(
              System.Logger.Level.INFO,
              "tree peers: server {0} is DEAD at the master: the DROP_ADOPTED of split {1} is"
                  + " no longer sent (its pending copy resolves DROP when it asks)",
              target,
              e.getKey());
          service.remoteDone(e.getKey(), () -> owedDrops.remove(e.getKey()));
        }
      }
      for (Map.Entry<Integer, Adoption> e : adoptions.entrySet()) {
        Adoption a = e.getValue();
        if (!a.pending || (a.touched != 0 && now - a.touched < STALE_NANOS)) {
          continue;
        }
        ByteBuffer b;
        try {
          b = ask(a.source, TreeProtocol.RESOLVE, new Wire.Writer().i32(a.token), now);
        } catch (FerriteException ex) {
          failed(a.source, backoffs.get(a.source), ex, now);
          continue;
        }
        if (b == null) {
          continue; // the source is away: ask again after its backoff
        }
        int answer = new Wire.Reader(b, "tree RESOLVE answer").u8("answer");
        if (answer == KEEP) {
          service.confirm(e.getKey());
        } else if (answer == DROP) {
          service.dropAdopted(a.source, a.token);
        } else {
          a.touched = now;
        }
      }
      for (Map.Entry<Long, Integer> e : guestsToCheck.entrySet()) {
        checkGuest(e.getKey(), e.getValue(), now);
      }
      for (Map.Entry<Long, Set<Integer>> e : drops.entrySet()) {
        e.getValue()
            .removeIf(
                s ->
                    send(s, TreeProtocol.DROP_TREE, new Wire.Writer().i64(e.getKey()), now)
                        || (failedThisRound.contains(s) && dead(s)));
        if (e.getValue().isEmpty()) {
          drops.remove(e.getKey());
        }
      }
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "tree peers: a round failed", e);
    }
  }

  /**
   * Asks guest tree {@code tree}'s home whether it still holds the tree (STATS): NOT_FOUND means it
   * was dropped while this server was down (its DROP_TREE never came), so its meganodes here are
   * dropped; any other answer settles it. Asked again after the home's backoff while it is away.
   */
  private void checkGuest(long tree, int home, long now) {
    ByteBuffer b;
    try {
      b = ask(home, TreeProtocol.STATS, new Wire.Writer().i64(tree), now);
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.NOT_FOUND) {
        failed(home, backoffs.get(home), e, now);
        return;
      }
      LOG.log(
          System.Logger.Level.WARNING,
          "tree {0}: its home server {1} no longer holds it (dropped while this server was down):"
              + " its meganodes here are dropped",
          tree,
          home);
      service.dropGuest(tree);
      guestsToCheck.remove(tree);
      return;
    }
    if (b != null) {
      guestsToCheck.remove(tree);
    }
  }

  /**
   * Whether the master declares {@code server} DEAD or does not know it; false when the master is
   * away (nothing is forgotten on a guess). One MEMBERS RPC per round at most.
   */
  private boolean dead(int server) {
    if (roundMembers == null) {
      try {
        roundMembers = context.master().members();
      } catch (FerriteException e) {
        return false;
      }
    }
    for (MemberInfo m : roundMembers) {
      if (m.serverId() == server) {
        return m.state() == ServerState.DEAD;
      }
    }
    return true;
  }

  /**
   * Sends one owed message, if {@code server}'s backoff allows; true once answered. An error answer
   * counts as no answer (retried after the backoff, as a silent server is).
   */
  private boolean send(int server, int opcode, Wire.Writer body, long now) {
    try {
      return ask(server, opcode, body, now) != null;
    } catch (FerriteException e) {
      failed(server, backoffs.get(server), e, now);
      return false;
    }
  }

  /**
   * Calls {@code server}, if its backoff allows: its answer, or null if it was not tried or could
   * not be reached (UNAVAILABLE or TIMEOUT: its backoff grows). Any other error is the server's own
   * answer and is thrown (a NOT_FOUND from a dial is impossible: dials fail UNAVAILABLE).
   */
  private ByteBuffer ask(int server, int opcode, Wire.Writer body, long now) {
    Backoff b = backoffs.computeIfAbsent(server, k -> new Backoff());
    if (!b.due(now)) {
      return null;
    }
    ByteBuffer answer;
    try {
      answer = call(context.peer(server), opcode, body);
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.UNAVAILABLE && e.code() != ErrorCode.TIMEOUT) {
        throw e;
      }
      failed(server, b, e, now);
      return null;
    }
    if (b.answered()) {
      LOG.log(System.Logger.Level.INFO, "tree peers: server {0} answers again", server);
    }
    return answer;
  }

  /** A try of {@code server} failed: its wait grows; logged at WARNING the first time only. */
  private void failed(int server, Backoff b, FerriteException e, long now) {
    failedThisRound.add(server);
    if (b.failed(now)) {
      LOG.log(
          System.Logger.Level.WARNING,
          "tree peers: server {0} does not answer ({1}); what is owed to it is retried, at most"
              + " {2} s apart",
          server,
          e.getMessage(),
          TimeUnit.NANOSECONDS.toSeconds(MAX_WAIT));
    }
  }

  private ByteBuffer call(FabricConnection c, int opcode, Wire.Writer body) {
    try {
      return c.callSync(TreeProtocol.SERVER_SERVICE, opcode, body.toBuffer(), timeout);
    } catch (FerriteException e) {
      throw e;
    } catch (RuntimeException e) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, String.valueOf(e), e);
    }
  }
}
