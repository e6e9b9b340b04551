package io.ferrite.tree.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Threads;
import io.ferrite.kernel.extent.ExtentAllocator;
import io.ferrite.kernel.log.OpLog;
import io.ferrite.kernel.ops.LogMeters;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.FerriteService;
import io.ferrite.kernel.server.MasterWait;
import io.ferrite.kernel.server.ServiceContext;
import io.ferrite.tree.MeganodeReader;
import io.ferrite.tree.TreeConfig;
import io.ferrite.tree.TreeProtocol;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The tree face's memory-server half (service 44, {@link TreeProtocol}): it holds meganodes ({@link
 * Meganode}, one service region each, with their extent regions), answers server-side searches
 * (Cell §2.2: the value, or the pointer to the next meganode; inline, and on through the meganodes
 * it holds, see {@link #handleInline} and {@link #search}), takes the writes, and splits meganodes
 * that pass half full on one named thread of its own (the splitter), so no RPC thread ever waits
 * for a split unless its meganode is full.
 *
 * <p>A tree's internal meganodes live on its <b>home</b> server (the one the directory placed it
 * on); a leaf meganode split puts the new right meganode where {@code tree.placement} says,
 * possibly on another server ({@link RemoteSplits}: the copy, the crash-safe protocol, the
 * separator sent home). A server holding leaf meganodes of a tree homed elsewhere knows the tree as
 * a <i>guest</i>.
 *
 * <h2>Durability ({@code tree.log.sync}, docs/TREE.md)</h2>
 *
 * Under {@code interval} or {@code always} every put and delete on a meganode, every tree made or
 * dropped, every meganode made, every child entry and root change, and each split's start and end
 * are appended to the server's tree log ({@link TreeLog} records in the kv face's {@link OpLog}),
 * replayed into new regions before the service serves. A meganode pointer names a meganode by a
 * <b>meganode id</b> this server hands out and logs, not by its region: the replay maps each id to
 * its new region, so the directory's roots, the links and child entries, and clients' pointers stay
 * valid across a restart. A write is appended under its meganode's structure lock (shared: no split
 * of it begins in between) and under a lock striped by key (two writes of one key are appended in
 * the order they applied); the log's compaction takes {@link #logging} exclusively.
 */
public final class TreeService implements FerriteService {
  private static final System.Logger LOG = System.getLogger(TreeService.class.getName());

  /** One tree's meganodes on this server. */
  static final class TreeState {
    final long id;

    /** The server holding the tree's internal meganodes and root (this one, or a guest's home). */
    final int home;

    volatile long root;
    final AtomicLong splits = new AtomicLong();

    TreeState(long id, int home) {
      this.id = id;
      this.home = home;
    }
  }

  /** A meganode this server holds, by its meganode id, with its tree and extent regions. */
  record Hosted(int id, TreeState tree, Meganode meganode, ExtentAllocator extents, long pointer) {}

  /**
   * For tests only: told of each step of every split ({@code "begun"} once SPLIT_BEGIN is logged,
   * {@code "copied"} once the right half is in the new meganode, {@code "ended"} once SPLIT_END is
   * logged, before the relink; {@code "remote-begun"}, {@code "remote-copied"}, {@code
   * "remote-ended"} for the same steps of a split whose new meganode is on another server). A
   * {@link Crash} thrown there stands for the process dying: the split stops with nothing more
   * logged or undone (the meganode's lock is released so the test can go on, the new meganode stays
   * as an unreachable orphan), as a SIGKILL would leave the log.
   */
  static volatile java.util.function.Consumer<String> testSplitStep;

  /**
   * For tests only: run by every logged put and delete after it applied, just before its record is
   * appended (a test widens that window to show the key's stripe keeps the log in apply order).
   */
  static volatile Runnable testBeforeAppend;

  /** For tests only: told of every service started from now on (after its replay). */
  static volatile java.util.function.Consumer<TreeService> testStarted;

  /** For tests only: run before a durable service's log replay (the master may be taken away). */
  static volatile Runnable testBeforeReplay;

  /**
   * How long a write to the right half of a split in progress is held before it is answered {@code
   * BUSY} (the client tries again): well inside the client's RPC deadline (5 s by default), so a
   * long copy never makes a write time out.
   */
  static final long SPLIT_WAIT_MILLIS = 1000;

  /**
   * A write found its key in the right half of a split in progress ({@link
   * Meganode.Write.Status#SPLITTING}): {@link #handle} answers it when the split ends, holding no
   * thread meanwhile.
   */
  private static final class SplitWait extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final transient Hosted hosted;
    final transient byte[] key;

    SplitWait(Hosted hosted, byte[] key) {
      super("write waits for a meganode split", null, false, false);
      this.hosted = hosted;
      this.key = key;
    }
  }

  /** A simulated crash between the logged steps of a split ({@link #testSplitStep}). */
  static final class Crash extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Crash(String step) {
      super("simulated crash at split step " + step, null, false, false);
    }
  }

  /** Stripes of {@link #stripe}: writes of keys in one stripe apply and log one at a time. */
  private static final int STRIPES = 64;

  /** Torn copies or restarts an inline search spins through before it declines (see below). */
  static final int INLINE_RETRIES = 64;

  /** The largest SCAN limit answered inline: a few tens of microseconds of copying at most. */
  static final int INLINE_SCAN_LIMIT = 256;

  /** The most keys a MULTI_SEARCH answered inline holds (each a search: a few microseconds). */
  static final int INLINE_MULTI_KEYS = 32;

  /** The most keys one MULTI_SEARCH may hold ({@link TreeProtocol#MULTI_SEARCH}). */
  static final int MAX_MULTI_KEYS = TreeProtocol.MAX_MULTI_KEYS;

  /** Meganodes of this server one SEARCH or SCAN goes through before it answers the pointer. */
  static final int MAX_LOCAL_HOPS = 64;

  private final Map<Long, TreeState> trees = new ConcurrentHashMap<>();

  /** Meganodes by meganode id (the low word of their pointers; kept across restarts). */
  private final Map<Integer, Hosted> hosted = new ConcurrentHashMap<>();

  /**
   * Meganodes here that a meganode on another server links to (a remote split's right half took
   * their left neighbour's link): kept by the replay though no pointer here reaches them, so a
   * compaction writes them as LINKED ({@link TreeLog}).
   */
  private final Set<Integer> linkedFromAfar = ConcurrentHashMap.newKeySet();

  private final AtomicInteger nextId = new AtomicInteger(1);
  private final Object[] stripes = new Object[STRIPES];

  /** The tree log; null under {@code tree.log.sync=none} (nothing is logged). */
  private OpLog log;

  private TreeConfig.LogSync sync = TreeConfig.LogSync.NONE;

  /** Shared by every logged change, exclusive for the log's compaction (a consistent snapshot). */
  private final ReentrantReadWriteLock logging = new ReentrantReadWriteLock();

  private ScheduledExecutorService logTimer;

  /** A test's {@link Crash} closed the log ({@link #testSplitStep}). */
  private volatile boolean simulatedCrash;

  private long compactBytes;
  private volatile long compactedBytes;
  private volatile TreeLog.Replay lastReplay;
  private final Map<Integer, CompletableFuture<Void>> pending = new ConcurrentHashMap<>();
  private final LinkedBlockingQueue<Integer> splitQueue = new LinkedBlockingQueue<>();

  /** Queued on {@link #splitQueue} (never a meganode id): run the {@link #parentTasks}. */
  private static final int PARENTS = 0;

  /** Separators other servers' splits sent here (INSERT_CHILD), run by the splitter. */
  private final java.util.concurrent.ConcurrentLinkedQueue<Runnable> parentTasks =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  private RemoteSplits remote;
  private ServiceContext context;
  private long meganodeSize;
  private int nodeSize;
  private long extentRegionSize;
  private int extentRegions;
  private Thread splitter;

  /**
   * Answers {@code BUSY} to the right-half writes a split holds past {@link #SPLIT_WAIT_MILLIS}.
   */
  private ScheduledExecutorService splitWaits;

  private volatile boolean stopping;

  /** For {@link java.util.ServiceLoader}. */
  public TreeService() {}

  @Override
  public int id() {
    return TreeProtocol.SERVER_SERVICE;
  }

  @Override
  public String name() {
    return "tree";
  }

  @Override
  public void start(ServiceContext context) {
    this.context = context;
    FerriteConfig cfg = context.config();
    meganodeSize = cfg.getSize(TreeConfig.MEGANODE_SIZE);
    nodeSize = (int) cfg.getSize(TreeConfig.NODE_SIZE);
    extentRegionSize = cfg.getSize(TreeConfig.EXTENT_REGION_SIZE);
    extentRegions = cfg.getInt(TreeConfig.EXTENT_REGIONS);
    for (int i = 0; i < STRIPES; i++) {
      stripes[i] = new Object();
    }
    sync = TreeConfig.logSync(cfg);
    remote = new RemoteSplits(this, context);
    if (sync != TreeConfig.LogSync.NONE) {
      // Replay before anyone can connect: meganodes come back (new regions, same ids).
      Runnable beforeReplay = testBeforeReplay;
      if (beforeReplay != null) {
        beforeReplay.run();
      }
      TreeLog.Replay replay = new TreeLog.Replay(context.serverId());
      log = OpLog.open("tree", context.directory().resolve("tree.log"), replay, OpLog.Fsync.DATA);
      replay.finish();
      rebuild(replay);
      lastReplay = replay;
      remote.restore(replay); // before the compaction below: it writes what is owed and pending
      compactBytes = TreeConfig.logCompactBytes(cfg);
      compactedBytes = log.bytes();
      if (!replay.unfinished.isEmpty() || replay.unreachable > 0) {
        compactLog(); // the log then says what was recovered, not the crash's open split
      }
      LogMeters.register(
          context.metrics(), "tree", this, s -> s.log.appended(), s -> s.log.fsyncs());
      // The interval fsync and the compaction check; `always` writes wait for the group commit
      // of the log's own syncer thread.
      logTimer = Threads.scheduler("tree-log-interval");
      logTimer.scheduleWithFixedDelay(this::syncQuietly, 100, 100, TimeUnit.MILLISECONDS);
    }
    remote.start();
    splitWaits = Threads.scheduler("tree-split-waits-" + context.serverId());
    splitter = new Thread(this::splitLoop, "tree-splitter-" + context.serverId());
    splitter.setDaemon(true);
    splitter.start();
    java.util.function.Consumer<TreeService> started = testStarted;
    if (started != null) {
      started.accept(this);
    }
  }

  /**
   * Makes the meganodes the log rebuilt: for each, a new region formatted with its logged header
   * (level, range, link) and its entries built bottom-up in key order ({@link Meganode#fill}: nodes
   * about 70 % full as random inserts leave them, fuller when that would not fit), so a meganode
   * that held its entries before the crash holds them again. (Inserting them one by one, even in a
   * shuffled order, did not: a meganode that left-half writes had filled during a split came back
   * NO_SPACE.)
   */
  private void rebuild(TreeLog.Replay replay) {
    Map<Long, TreeState> byId = new java.util.HashMap<>();
    for (Map.Entry<Long, Long> e : replay.roots.entrySet()) {
      TreeState t = new TreeState(e.getKey(), context.serverId());
      t.root = e.getValue();
      byId.put(t.id, t);
    }
    for (Map.Entry<Long, Integer> e : replay.guests.entrySet()) {
      byId.putIfAbsent(e.getKey(), new TreeState(e.getKey(), e.getValue()));
    }
    long pairs = 0;
    for (TreeLog.Image m : replay.meganodes.values()) {
      TreeState t = byId.get(m.tree);
      List<byte[]> keys = new ArrayList<>(m.entries.size());
      List<byte[]> values = new ArrayList<>(m.entries.size());
      List<Long> children = new ArrayList<>(m.entries.size());
      for (Map.Entry<byte[], Object> e : m.entries.entrySet()) { // key order (unsigned)
        keys.add(e.getKey());
        if (m.level == 0) {
          values.add((byte[]) e.getValue());
        } else {
          children.add((Long) e.getValue());
        }
      }
      // Its regions come from the master (at boot the capacity is block pool): waited for while
      // the master is away, as the kv replay does, instead of failing the server's start.
      MasterWait.untilAnswered(
          LOG,
          () -> "tree log: meganode " + m.id + " of tree " + m.tree,
          () -> {
            Hosted h = makeMeganode(t, m.id, m.level, m.low, m.high, m.link);
            try {
              h.meganode().fill(keys, values, children);
            } catch (RuntimeException e) {
              free(h); // made again whole on the next attempt
              throw e;
            }
            return h;
          });
      pairs += keys.size();
    }
    for (int id : replay.linkedFromAfar) {
      if (hosted.containsKey(id)) {
        linkedFromAfar.add(id);
      }
    }
    trees.putAll(byId);
    nextId.set(replay.nextId);
    for (String s : replay.unfinished) {
      LOG.log(System.Logger.Level.WARNING, "tree log recovery: {0}", s);
    }
    LOG.log(
        System.Logger.Level.INFO,
        "tree log replayed: {0} records, {1} tree(s), {2} meganode(s), {3} entries;"
            + " {4} unfinished split(s) undone, {5} unreachable meganode(s) dropped",
        replay.records,
        byId.size(),
        replay.meganodes.size(),
        pairs,
        replay.unfinished.size(),
        replay.unreachable);
  }

  /** This server's id (for tests). */
  int serverId() {
    return context.serverId();
  }

  /** The meganodes here only another server may link to (for tests). */
  Set<Integer> linkedFromAfar() {
    return linkedFromAfar;
  }

  /** The remote half (for tests): owed messages, adoptions. */
  RemoteSplits remote() {
    return remote;
  }

  /** The tree log (for tests): null under {@code tree.log.sync=none}. */
  OpLog log() {
    return log;
  }

  /** For tests: the key from which writes wait for a split in progress here, or null if none. */
  byte[] splittingKey() {
    for (Hosted h : hosted.values()) {
      byte[] key = h.meganode().splittingKey();
      if (key != null) {
        return key;
      }
    }
    return null;
  }

  /** For probes: the longest relink of any meganode here (every write to it waiting), in ns. */
  long longestRelinkNanos() {
    long longest = 0;
    for (Hosted h : hosted.values()) {
      longest = Math.max(longest, h.meganode().relinkNanos);
    }
    return longest;
  }

  /** What the last replay found (for tests): null when nothing is logged. */
  TreeLog.Replay lastReplay() {
    return lastReplay;
  }

  private void syncQuietly() {
    if (simulatedCrash) {
      return;
    }
    try {
      if (sync == TreeConfig.LogSync.INTERVAL) {
        log.sync();
      }
      long size = log.bytes();
      if (size > compactBytes && size > 2 * compactedBytes) {
        compactLog();
      }
    } catch (FerriteException e) {
      LOG.log(System.Logger.Level.ERROR, "tree log fsync or compaction failed", e);
    }
  }

  /**
   * Rewrites the log as the records that rebuild what this server holds now: NEXT_ID, then per tree
   * TREE, each meganode's MEGANODE and its PUT or CHILD entries, ROOT. Every logged change waits
   * meanwhile (it holds {@link #logging} shared; splits hold it for their whole length, so none is
   * half done here). The bound on the log: it is rewritten once past {@code tree.log.compact} and
   * twice its size after the last rewrite, so it stays within about twice the live data's records.
   * Returns the log's size after.
   */
  long compactLog() {
    logging.writeLock().lock();
    try {
      long before = log.bytes();
      log.rewrite(this::snapshot);
      compactedBytes = log.bytes();
      LOG.log(
          System.Logger.Level.INFO,
          "tree log compacted: {0} B -> {1} B ({2} meganodes)",
          before,
          compactedBytes,
          hosted.size());
      return compactedBytes;
    } finally {
      logging.writeLock().unlock();
    }
  }

  private void snapshot(java.util.function.Consumer<byte[]> sink) {
    sink.accept(TreeLog.nextId(nextId.get()));
    for (Map.Entry<Integer, Long> e : remote.owedConfirms.entrySet()) {
      sink.accept(TreeLog.owe(e.getKey(), true, e.getValue()));
    }
    for (Map.Entry<Integer, Integer> e : remote.owedDrops.entrySet()) {
      sink.accept(TreeLog.owe(e.getKey(), false, e.getValue()));
    }
    for (TreeState t : trees.values()) {
      sink.accept(t.home == context.serverId() ? TreeLog.tree(t.id) : TreeLog.guest(t.id, t.home));
      for (Hosted h : hosted.values()) {
        if (h.tree() != t) {
          continue;
        }
        io.ferrite.tree.Node header = new MeganodeReader(h.meganode().source()).header();
        sink.accept(
            TreeLog.meganode(
                h.id(),
                t.id,
                header.incarnation,
                header.low,
                header.highInfinite() ? null : header.high,
                header.link));
        if (linkedFromAfar.contains(h.id())) {
          sink.accept(TreeLog.linked(h.id()));
        }
        RemoteSplits.Adoption a = remote.adoptions.get(h.id());
        if (a != null) {
          sink.accept(TreeLog.adopted(h.id(), a.source, a.token));
          if (!a.pending) {
            sink.accept(TreeLog.confirmed(h.id()));
          }
        }
        int id = h.id();
        h.meganode()
            .forEachEntry(
                (key, value, child) ->
                    sink.accept(
                        value != null
                            ? TreeLog.put(id, key, value)
                            : TreeLog.child(id, key, child)));
      }
      if (t.home == context.serverId()) {
        sink.accept(TreeLog.root(t.id, t.root));
      }
    }
  }

  /** Appends {@code record} to the log, if there is one (the caller holds {@link #logging}). */
  private void append(byte[] record) {
    if (log != null) {
      log.append(record);
    }
  }

  private void lockLogging() {
    if (log != null) {
      logging.readLock().lock();
    }
  }

  private void unlockLogging() {
    if (log != null) {
      logging.readLock().unlock();
    }
  }

  private Object stripe(byte[] key) {
    return stripes[Arrays.hashCode(key) & (STRIPES - 1)];
  }

  @Override
  public void stop() {
    stopping = true;
    if (remote != null) {
      remote.stop();
    }
    splitter.interrupt();
    try {
      splitter.join(TimeUnit.SECONDS.toMillis(10));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    splitWaits.shutdownNow();
    if (logTimer != null) {
      logTimer.shutdownNow();
      try {
        // A compaction in progress finishes (or fails whole) before the log closes.
        logTimer.awaitTermination(60, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (log != null && !simulatedCrash) {
      log.close();
    }
  }

  /**
   * SEARCH, SCAN of up to {@link #INLINE_SCAN_LIMIT} pairs and MULTI_SEARCH of up to {@link
   * #INLINE_MULTI_KEYS} keys, answered on the thread that received them (an I/O thread or the shm
   * ring poller), saving the hand-off to a service thread and back, as the nodes face's lookups
   * are. They cannot block: a search takes no lock (it copies nodes and checks their version words,
   * Cell §2.3, so a concurrent writer or split never makes it see a torn node), and gives up after
   * {@link #INLINE_RETRIES} torn copies or restarts, which spin only ({@link
   * MeganodeReader#backoff}); that is declined (the request read from a duplicate, so untouched)
   * and searched again from the start on a service thread, with the full bound and its parking
   * backoff. Everything else, which may wait for a split or a lock, declines.
   */
  @Override
  public CompletableFuture<ByteBuffer> handleInline(
      RpcContext caller, int opcode, ByteBuffer request) {
    if (opcode != TreeProtocol.SEARCH
        && opcode != TreeProtocol.SCAN
        && opcode != TreeProtocol.MULTI_SEARCH) {
      return null;
    }
    Wire.Reader r = new Wire.Reader(request.duplicate(), "tree request " + opcode);
    try {
      ByteBuffer answer =
          switch (opcode) {
            case TreeProtocol.SEARCH -> search(r, INLINE_RETRIES);
            case TreeProtocol.SCAN -> scan(r, INLINE_SCAN_LIMIT, INLINE_RETRIES);
            default -> multiSearch(r, INLINE_MULTI_KEYS, INLINE_RETRIES);
          };
      return answer == null ? null : CompletableFuture.completedFuture(answer);
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.BUSY) {
        return null;
      }
      return CompletableFuture.failedFuture(e);
    }
  }

  @Override
  public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
    try {
      ByteBuffer answer = dispatch(caller, opcode, request);
      if (sync == TreeConfig.LogSync.ALWAYS && logs(opcode)) {
        // Answered once the group commit made every record appended so far durable (this
        // request's included); no RPC thread waits on an fsync.
        return log.flush().thenApply(v -> answer);
      }
      return CompletableFuture.completedFuture(answer);
    } catch (SplitWait e) {
      return afterSplit(e.hosted, e.key);
    } catch (FerriteException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * The answer to a write of {@code key} to the right half of leaf meganode {@code h}'s split in
   * progress (Cell §2.2: that range is locked while it is copied): once the split ends, the key is
   * past the meganode's new high key and the answer is RIGHT with the new meganode, which the
   * client writes to (nothing was written here, so nothing to log or flush). It is worked out on
   * the thread that ends the split, after the relink (a header read, no lock), and no thread waits
   * meanwhile, so writes to the left half are never queued behind right-half writes on the service
   * threads. A split given up, or one that takes longer than {@link #SPLIT_WAIT_MILLIS}, answers
   * {@code BUSY} (nothing written; {@code Tree} tries again).
   */
  private CompletableFuture<ByteBuffer> afterSplit(Hosted h, byte[] key) {
    Meganode m = h.meganode();
    CompletableFuture<ByteBuffer> answer = new CompletableFuture<>();
    java.util.concurrent.ScheduledFuture<?> timeout =
        splitWaits.schedule(
            () ->
                answer.completeExceptionally(
                    new FerriteException(
                        ErrorCode.BUSY,
                        "meganode "
                            + h.id()
                            + " is splitting and the key is in the half being moved: its split"
                            + " took over "
                            + SPLIT_WAIT_MILLIS
                            + " ms; retry")),
            SPLIT_WAIT_MILLIS,
            TimeUnit.MILLISECONDS);
    m.splitDone()
        .whenComplete(
            (v, failure) -> {
              timeout.cancel(false);
              Meganode.Write moved = m.outside(key);
              if (moved != null) {
                Wire.Writer w = new Wire.Writer();
                answer(w, moved);
                answer.complete(w.toBuffer());
              } else {
                answer.completeExceptionally(
                    new FerriteException(
                        ErrorCode.BUSY,
                        "meganode "
                            + h.id()
                            + "'s split was given up before the key moved; retry"));
              }
            });
    return answer;
  }

  /** Whether {@code opcode} may append to the log (its answer then waits under {@code always}). */
  private static boolean logs(int opcode) {
    return opcode == TreeProtocol.PUT
        || opcode == TreeProtocol.DELETE
        || opcode == TreeProtocol.OPEN_TREE
        || opcode == TreeProtocol.DROP_TREE
        || opcode == TreeProtocol.ADOPT
        || opcode == TreeProtocol.ADOPT_PUT
        || opcode == TreeProtocol.CONFIRM
        || opcode == TreeProtocol.DROP_ADOPTED;
  }

  private ByteBuffer dispatch(RpcContext caller, int opcode, ByteBuffer request) {
    Wire.Reader r = new Wire.Reader(request, "tree request " + opcode);
    Wire.Writer w = new Wire.Writer();
    if (opcode >= TreeProtocol.ADOPT && opcode <= TreeProtocol.INSERT_CHILD) {
      // Server to server only (docs/SECURITY.md): a client must not make or drop meganodes.
      io.ferrite.kernel.proto.Permissions.require(
          caller, io.ferrite.fabric.Role.SERVER, "tree server-to-server opcode " + opcode);
      remote.handle(r, w, opcode);
      return w.toBuffer();
    }
    switch (opcode) {
      case TreeProtocol.OPEN_TREE -> {
        long id = r.i64("id");
        r.end();
        w.i64(open(id));
      }
      case TreeProtocol.LAYOUT -> {
        Hosted h = hosted(r.i32("region"));
        r.end();
        w.i32(nodeSize);
        ref(w, context.readRef(h.meganode().region()));
        List<MappedRegion> regions;
        synchronized (h.extents()) {
          regions = List.copyOf(h.extents().regions());
        }
        w.u16(regions.size());
        for (MappedRegion m : regions) {
          ref(w, context.readRef(m));
        }
      }
      case TreeProtocol.SEARCH -> {
        return search(r, MeganodeReader.MAX_RETRIES);
      }
      case TreeProtocol.MULTI_SEARCH -> {
        return multiSearch(r, MAX_MULTI_KEYS, MeganodeReader.MAX_RETRIES);
      }
      case TreeProtocol.PUT -> {
        Hosted h = hosted(r.i32("region"));
        byte[] key = r.bytes("key");
        byte[] value = r.bytes("value");
        r.end();
        write(w, h, key, value);
      }
      case TreeProtocol.DELETE -> {
        Hosted h = hosted(r.i32("region"));
        byte[] key = r.bytes("key");
        r.end();
        if (h.meganode().level() > 0) {
          down(w, h, h.meganode().limits().key(key));
        } else {
          Meganode.Write result = remove(h, key);
          if (result.status() == Meganode.Write.Status.SPLITTING) {
            throw new SplitWait(h, key);
          }
          answer(w, result);
        }
      }
      case TreeProtocol.SCAN -> {
        return scan(r, Integer.MAX_VALUE, MeganodeReader.MAX_RETRIES);
      }
      case TreeProtocol.STATS -> {
        long id = r.i64("id");
        r.end();
        TreeState t = tree(id);
        int count = 0;
        int pendingCount = 0;
        long used = 0;
        long capacity = 0;
        for (Hosted h : hosted.values()) {
          if (h.tree() == t) {
            count++;
            RemoteSplits.Adoption a = remote.adoptions.get(h.id());
            pendingCount += a != null && a.pending ? 1 : 0;
            int[] u = h.meganode().nodeUsage();
            used += u[0];
            capacity += u[1];
          }
        }
        Hosted root = t.root != 0 ? local(t.root) : null;
        int levels = root != null ? root.meganode().level() + 1 : 1; // a guest: its leaves
        w.i32(count).i32(levels).i64(t.splits.get()).i64(used).i64(capacity).i32(pendingCount);
      }
      case TreeProtocol.DROP_TREE -> {
        long id = r.i64("id");
        r.end();
        TreeState t = trees.get(id);
        boolean dropped = drop(id);
        if (dropped && t != null && t.home == context.serverId()) {
          remote.droppedAtHome(id);
        }
        w.u8(dropped ? 1 : 0);
      }
      default ->
          throw new FerriteException(
              ErrorCode.UNKNOWN_OPCODE, "tree service: unknown opcode " + opcode);
    }
    return w.toBuffer();
  }

  /**
   * SEARCH from the meganode the request names, on through the meganodes this server holds (Cell
   * §2.2 answers each meganode's pointer to the client; when the next meganode is on this server
   * that round trip buys nothing, so a get of a tree on one server is one RPC). Each meganode's
   * search is linearizable on its own and the B-link links make any interleaving with splits
   * correct, as when the client walks the same pointers. A RIGHT of the first meganode goes back to
   * the client, which learns from it that its root split; a pointer to another server, or past
   * {@link #MAX_LOCAL_HOPS}, goes back as NEXT.
   */
  private ByteBuffer search(Wire.Reader r, int maxRetries) {
    Hosted h = hosted(r.i32("region"));
    byte[] key = h.meganode().limits().key(r.bytes("key"));
    r.end();
    MeganodeReader.Outcome o = searchFrom(h, key, maxRetries);
    Wire.Writer w = new Wire.Writer(o.value() != null ? 5 + o.value().length : 9);
    outcome(w, o);
    return w.toBuffer();
  }

  /**
   * MULTI_SEARCH: each key searched as by {@link #search} from the same meganode, the answers in
   * the keys' order. Returns null if the request holds more than {@code maxKeys} keys.
   */
  private ByteBuffer multiSearch(Wire.Reader r, int maxKeys, int maxRetries) {
    Hosted h = hosted(r.i32("region"));
    int n = r.count("keys", MAX_MULTI_KEYS);
    if (n > maxKeys) {
      return null;
    }
    byte[][] keys = new byte[n][];
    for (int i = 0; i < n; i++) {
      keys[i] = h.meganode().limits().key(r.bytes("key"));
    }
    r.end();
    MeganodeReader.Outcome[] found = new MeganodeReader.Outcome[n];
    int size = 4;
    for (int i = 0; i < n; i++) {
      found[i] = searchFrom(h, keys[i], maxRetries);
      size += found[i].value() != null ? 5 + found[i].value().length : 9;
    }
    Wire.Writer w = new Wire.Writer(size).i32(n);
    for (MeganodeReader.Outcome o : found) {
      outcome(w, o);
    }
    return w.toBuffer();
  }

  /**
   * {@code key} searched from meganode {@code h} on through the meganodes this server holds: VALUE,
   * ABSENT, RESTART, RIGHT (of {@code h} itself only) or NEXT (the first meganode off this server,
   * or past {@link #MAX_LOCAL_HOPS}).
   */
  private MeganodeReader.Outcome searchFrom(Hosted h, byte[] key, int maxRetries) {
    for (int hop = 0; ; hop++) {
      MeganodeReader.Outcome o = h.meganode().search(key, maxRetries);
      switch (o.kind()) {
        case VALUE, ABSENT, RESTART -> {
          return o;
        }
        default -> {
          if (hop == 0 && o.kind() == MeganodeReader.Outcome.Kind.RIGHT) {
            return o;
          }
          Hosted next = hop < MAX_LOCAL_HOPS ? local(o.pointer()) : null;
          if (next == null) {
            return new MeganodeReader.Outcome(MeganodeReader.Outcome.Kind.NEXT, null, o.pointer());
          }
          h = next;
        }
      }
    }
  }

  /** A SEARCH answer: {@code u8 outcome [bytes value | i64 pointer]}. */
  private static void outcome(Wire.Writer w, MeganodeReader.Outcome o) {
    switch (o.kind()) {
      case VALUE -> w.u8(TreeProtocol.VALUE).bytes(o.value());
      case ABSENT -> w.u8(TreeProtocol.ABSENT);
      case RESTART -> w.u8(TreeProtocol.RESTART);
      case RIGHT -> w.u8(TreeProtocol.RIGHT).i64(o.pointer());
      case NEXT -> w.u8(TreeProtocol.NEXT).i64(o.pointer());
    }
  }

  /**
   * SCAN from the meganode the request names: down through internal meganodes and then along leaf
   * meganodes this server holds (as {@link #search}), gathering up to the request's limit. A scan
   * stays linearizable per leaf, each part read as the client would read it. Returns null if the
   * request asks for more than {@code maxLimit} pairs.
   */
  private ByteBuffer scan(Wire.Reader r, int maxLimit, int maxRetries) {
    Hosted h = hosted(r.i32("region"));
    byte[] from = r.bytes("from");
    byte[] to = r.u8("hasTo") != 0 ? r.bytes("to") : null;
    int limit = r.i32("limit");
    r.end();
    // A resume key may be a key with a 0 byte appended (MeganodeReader.scan): one over.
    if (from.length > h.meganode().limits().maxKey() + 1) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "from: "
              + from.length
              + " bytes (expected: 0 to "
              + h.meganode().limits().maxKey()
              + " bytes)");
    }
    h.meganode().limits().scan(null, to, limit);
    if (to != null && java.util.Arrays.compareUnsigned(from, to) > 0) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "scan: from > to (expected: from <= to, unsigned bytes)");
    }
    if (limit > maxLimit) {
      return null;
    }
    int hop = 0;
    while (!h.meganode().leaf()) {
      MeganodeReader.Outcome o = h.meganode().search(from, maxRetries);
      if (o.kind() == MeganodeReader.Outcome.Kind.RESTART) {
        return new Wire.Writer(1).u8(TreeProtocol.RESTART).toBuffer();
      }
      if (hop == 0 && o.kind() == MeganodeReader.Outcome.Kind.RIGHT) {
        return new Wire.Writer(9).u8(TreeProtocol.RIGHT).i64(o.pointer()).toBuffer();
      }
      Hosted next = hop < MAX_LOCAL_HOPS ? local(o.pointer()) : null;
      if (next == null) {
        return new Wire.Writer(9).u8(TreeProtocol.NEXT).i64(o.pointer()).toBuffer();
      }
      h = next;
      hop++;
    }
    List<Map.Entry<byte[], byte[]>> pairs = new ArrayList<>(Math.min(limit, 1024));
    byte[] at = from;
    MeganodeReader.ScanPart part;
    while (true) {
      part = h.meganode().scanPart(at, to, limit - pairs.size(), maxRetries);
      pairs.addAll(part.pairs());
      if (part.next() == 0 || pairs.size() >= limit || ++hop > MAX_LOCAL_HOPS) {
        break;
      }
      Hosted next = local(part.next());
      if (next == null || !next.meganode().leaf()) {
        break;
      }
      h = next;
      at = part.resume();
    }
    // Sized to the answer: no copying as it grows.
    int size = 1 + 4 + 8 + (part.next() != 0 ? 4 + part.resume().length : 0);
    for (Map.Entry<byte[], byte[]> e : pairs) {
      size += 8 + e.getKey().length + e.getValue().length;
    }
    Wire.Writer w = new Wire.Writer(size).u8(TreeProtocol.PART).i32(pairs.size());
    for (Map.Entry<byte[], byte[]> e : pairs) {
      w.bytes(e.getKey()).bytes(e.getValue());
    }
    w.i64(part.next());
    if (part.next() != 0) {
      w.bytes(part.resume());
    }
    return w.toBuffer();
  }

  /** The meganode {@code pointer} names if this server holds it, else null. */
  private Hosted local(long pointer) {
    return TreeProtocol.server(pointer) == context.serverId()
        ? hosted.get(TreeProtocol.region(pointer))
        : null;
  }

  private static void ref(Wire.Writer w, RegionRef ref) {
    w.i32(ref.serverId()).i32(ref.regionId()).i64(ref.rkey()).i64(ref.length());
  }

  /** An internal meganode's answer to a write or scan: the child to go on at. */
  private static void down(Wire.Writer w, Hosted h, byte[] key) {
    MeganodeReader.Outcome o = h.meganode().search(key);
    if (o.kind() == MeganodeReader.Outcome.Kind.NEXT) {
      w.u8(TreeProtocol.NEXT).i64(o.pointer());
    } else if (o.kind() == MeganodeReader.Outcome.Kind.RIGHT) {
      w.u8(TreeProtocol.RIGHT).i64(o.pointer());
    } else {
      w.u8(TreeProtocol.RESTART);
    }
  }

  private static void answer(Wire.Writer w, Meganode.Write result) {
    switch (result.status()) {
      case CREATED -> w.u8(TreeProtocol.CREATED);
      case REPLACED -> w.u8(TreeProtocol.REPLACED);
      case DELETED -> w.u8(TreeProtocol.DELETED);
      case ABSENT -> w.u8(TreeProtocol.ABSENT);
      case RIGHT -> w.u8(TreeProtocol.RIGHT).i64(result.next());
      case RESTART -> w.u8(TreeProtocol.RESTART);
      case SPLITTING ->
          throw new FerriteException(ErrorCode.INTERNAL, "a split's wait answered as a write");
    }
  }

  /**
   * A put at meganode {@code h}: passed down if it is internal; else written, and the meganode
   * queued for a split once past half full. A put that finds it full waits for that split (on the
   * splitter thread), then tries again: after the split it may be answered RIGHT. A put to the
   * right half of a split in progress throws {@link SplitWait}: answered when the split ends.
   */
  private void write(Wire.Writer w, Hosted h, byte[] key, byte[] value) {
    Meganode m = h.meganode();
    if (m.level() > 0) {
      down(w, h, m.limits().key(key));
      return;
    }
    for (int attempt = 0; ; attempt++) {
      try {
        Meganode.Write result = put(h, key, value);
        if (result.status() == Meganode.Write.Status.SPLITTING) {
          throw new SplitWait(h, key);
        }
        if (result.status() == Meganode.Write.Status.CREATED && m.wantsSplit()) {
          requestSplit(h);
        }
        answer(w, result);
        return;
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.NO_SPACE || !m.wantsSplit() || attempt >= 8) {
          throw e;
        }
        awaitSplit(requestSplit(h));
      }
    }
  }

  /**
   * Writes the pair into leaf meganode {@code h}, logged: under the key's stripe (so two writes of
   * one key are logged in the order they applied) and {@link #logging} shared, the record appended
   * inside the meganode's structure lock ({@link Meganode#write(byte[], byte[], Runnable)}). Not
   * held across a wait for a split (the caller waits outside).
   */
  Meganode.Write put(Hosted h, byte[] key, byte[] value) {
    if (log == null) {
      return h.meganode().write(key, value);
    }
    logging.readLock().lock();
    try {
      synchronized (stripe(key)) {
        return h.meganode().write(key, value, () -> logWrite(TreeLog.put(h.id(), key, value)));
      }
    } finally {
      logging.readLock().unlock();
    }
  }

  /** Deletes the key from leaf meganode {@code h}, logged as {@link #put} is. */
  private Meganode.Write remove(Hosted h, byte[] key) {
    if (log == null) {
      return h.meganode().remove(key);
    }
    logging.readLock().lock();
    try {
      synchronized (stripe(key)) {
        return h.meganode().remove(key, () -> logWrite(TreeLog.delete(h.id(), key)));
      }
    } finally {
      logging.readLock().unlock();
    }
  }

  /** Appends a put's or delete's record (in its meganode's structure lock and its key's stripe). */
  private void logWrite(byte[] record) {
    Runnable hook = testBeforeAppend;
    if (hook != null) {
      hook.run();
    }
    log.append(record);
  }

  private static void awaitSplit(CompletableFuture<Void> split) {
    try {
      split.get(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new FerriteException(ErrorCode.UNAVAILABLE, "interrupted waiting for a meganode split");
    } catch (ExecutionException e) {
      // A split to another server that failed names that server: UNAVAILABLE, as its own error.
      ErrorCode code =
          e.getCause() instanceof FerriteException f && f.code() == ErrorCode.UNAVAILABLE
              ? ErrorCode.UNAVAILABLE
              : ErrorCode.BUSY;
      throw new FerriteException(
          code, "meganode full and its split did not finish: " + e.getCause(), e.getCause());
    } catch (TimeoutException e) {
      throw new FerriteException(
          ErrorCode.BUSY, "meganode full and its split did not finish: " + e, e);
    }
  }

  // ------------------------------------------------------------------ trees and meganodes

  private long open(long id) {
    TreeState t;
    lockLogging();
    try {
      synchronized (trees) {
        t = trees.get(id);
        if (t == null) {
          t = new TreeState(id, context.serverId());
          append(TreeLog.tree(id));
          Hosted root = newMeganode(t, 0, new byte[0], null, 0);
          t.root = root.pointer();
          append(TreeLog.root(id, t.root));
          trees.put(id, t);
        }
      }
    } finally {
      unlockLogging();
    }
    reportRoot(t);
    return t.root;
  }

  /**
   * Tells the directory tree {@code t}'s root. The server knows a tree by id, not by name, so not
   * its master group (docs/RESILIENCE.md "Master groups"): with several groups it tells every
   * group, and the directories that do not hold the id ignore it (ids are random 63-bit numbers).
   * Costs one RPC per group per root change (a tree's first meganode, a root split: rare). With
   * several groups a group that does not answer is skipped: the root is a hint (a handle whose
   * directory entry has none asks the server, OPEN_TREE); with one group its failure is the
   * caller's, as before.
   */
  private void reportRoot(TreeState t) {
    int groups = context.groups();
    for (int g = 0; g < groups; g++) {
      try {
        context
            .master(g)
            .callSync(
                null,
                TreeProtocol.MASTER_SERVICE,
                TreeProtocol.SET_ROOT,
                new Wire.Writer().i64(t.id).i64(t.root).toBuffer());
      } catch (FerriteException e) {
        if (groups == 1) {
          throw e;
        }
        LOG.log(
            System.Logger.Level.DEBUG,
            "tree {0}: root not told to master group {1}: {2}",
            t.id,
            g,
            e.getMessage());
      }
    }
  }

  TreeState tree(long id) {
    TreeState t = trees.get(id);
    if (t == null) {
      throw new FerriteException(
          ErrorCode.NOT_FOUND, "tree " + id + " has no meganodes on server " + context.serverId());
    }
    return t;
  }

  Hosted hosted(int region) {
    Hosted h = hosted.get(region);
    if (h == null) {
      throw new FerriteException(
          ErrorCode.NOT_FOUND,
          "no meganode in region "
              + region
              + " on server "
              + context.serverId()
              + " (its tree was dropped, or the server restarted)");
    }
    return h;
  }

  /** A new meganode with the next meganode id, logged (the caller holds {@link #logging}). */
  private Hosted newMeganode(TreeState t, int level, byte[] low, byte[] high, long link) {
    return newMeganode(t, nextId.getAndIncrement(), level, low, high, link);
  }

  private Hosted newMeganode(TreeState t, int id, int level, byte[] low, byte[] high, long link) {
    append(TreeLog.meganode(id, t.id, level, low, high, link));
    return makeMeganode(t, id, level, low, high, link);
  }

  /** Makes meganode {@code id} in a new region (not logged: new, or rebuilt from the log). */
  private Hosted makeMeganode(TreeState t, int id, int level, byte[] low, byte[] high, long link) {
    MappedRegion region = context.createRegion("dram", meganodeSize);
    ExtentAllocator extents;
    try {
      // An internal meganode holds no extents; its allocator only bounds the (unused) values.
      long size = level == 0 ? extentRegionSize : 4096;
      extents =
          new ExtentAllocator(
              context.createRegion("dram", size),
              extentRegions,
              () -> context.createRegion("dram", size));
    } catch (FerriteException e) {
      context.freeRegion(region);
      throw e;
    }
    Meganode m = new Meganode(region, nodeSize, extents, level, low, high, link);
    Hosted h = new Hosted(id, t, m, extents, TreeProtocol.pointer(context.serverId(), id));
    hosted.put(id, h);
    return h;
  }

  private void free(Hosted h) {
    hosted.remove(h.id());
    linkedFromAfar.remove(h.id());
    remote.adoptions.remove(h.id()); // nothing left to confirm or drop (its tree was dropped)
    context.freeRegion(h.meganode().region());
    synchronized (h.extents()) {
      h.extents().regions().forEach(context::freeRegion);
    }
  }

  /**
   * Drops guest tree {@code id} (its home no longer holds it: dropped while this server was down),
   * logged as any drop; a tree this server is home of is never dropped here.
   */
  void dropGuest(long id) {
    TreeState t = trees.get(id);
    if (t != null && t.home != context.serverId()) {
      drop(id);
    }
  }

  private boolean drop(long id) {
    lockLogging();
    try {
      TreeState t = trees.remove(id);
      if (t == null) {
        return false;
      }
      append(TreeLog.drop(id));
      for (Hosted h : new ArrayList<>(hosted.values())) {
        if (h.tree() == t) {
          free(h);
        }
      }
      return true;
    } finally {
      unlockLogging();
    }
  }

  // ------------------------------------------------------------------ other servers' requests

  /**
   * Queues the separator an INSERT_CHILD brought (tree {@code t}, {@code level}) for the splitter,
   * behind this server's own splits and root growth, so it never races them.
   */
  void queueParent(TreeState t, int level, byte[] key, long child) {
    parentTasks.add(() -> insertParent(t, level, key, child));
    splitQueue.add(PARENTS);
  }

  /** Runs the queued INSERT_CHILDs (splitter thread), each logged as the splitter's own. */
  private void runParentTasks() {
    Runnable task;
    while ((task = parentTasks.poll()) != null) {
      lockLogging();
      try {
        task.run();
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "tree: a separator from another server failed", e);
      } finally {
        unlockLogging();
      }
    }
  }

  /**
   * A new pending leaf meganode for a split of {@code source}'s (ADOPT): its tree known here as a
   * guest if it is not homed here; MEGANODE and ADOPTED logged before any of its pairs, so a crash
   * during the copy leaves a pending meganode the source resolves, never an orphan.
   */
  Hosted adopt(long treeId, int home, int source, int token, byte[] low, byte[] high, long link) {
    lockLogging();
    try {
      TreeState t;
      synchronized (trees) {
        t = trees.get(treeId);
        if (t == null) {
          t = new TreeState(treeId, home);
          append(TreeLog.guest(treeId, home));
          trees.put(treeId, t);
        }
      }
      int id = nextId.getAndIncrement();
      remote.adoptions.put(id, new RemoteSplits.Adoption(source, token, true, System.nanoTime()));
      Hosted h = newMeganode(t, id, 0, low, high, link);
      append(TreeLog.adopted(id, source, token));
      return h;
    } finally {
      unlockLogging();
    }
  }

  /** Adopted meganode {@code id}'s source ended its split: no longer pending (logged once). */
  void confirm(int id) {
    RemoteSplits.Adoption a = remote.adoptions.get(id);
    if (a == null || !a.pending || !hosted.containsKey(id)) {
      return; // confirmed already (a resent CONFIRM), freed since (tree dropped), or stale
    }
    lockLogging();
    try {
      append(TreeLog.confirmed(id));
      a.pending = false;
    } finally {
      unlockLogging();
    }
  }

  /** Frees the pending meganode a remote split {@code token} of {@code source} made, if any. */
  boolean dropAdopted(int source, int token) {
    for (Map.Entry<Integer, RemoteSplits.Adoption> e : remote.adoptions.entrySet()) {
      RemoteSplits.Adoption a = e.getValue();
      if (a.source != source || a.token != token || !a.pending) {
        continue;
      }
      lockLogging();
      try {
        Hosted h = hosted.get(e.getKey());
        if (h != null) {
          free(h);
        }
        append(TreeLog.forget(e.getKey()));
        remote.adoptions.remove(e.getKey());
      } finally {
        unlockLogging();
      }
      LOG.log(
          System.Logger.Level.INFO,
          "tree: meganode {0} dropped (its source server {1} did not end split {2})",
          e.getKey(),
          source,
          token);
      return true;
    }
    return false;
  }

  /** An owed CONFIRM or DROP was answered: logs R_DONE, then forgets it ({@code forget}). */
  void remoteDone(int token, Runnable forget) {
    lockLogging();
    try {
      append(TreeLog.remoteDone(token));
      forget.run();
    } finally {
      unlockLogging();
    }
  }

  // ------------------------------------------------------------------ meganode splits

  private CompletableFuture<Void> requestSplit(Hosted h) {
    int region = h.id();
    CompletableFuture<Void> f = new CompletableFuture<>();
    CompletableFuture<Void> old = pending.putIfAbsent(region, f);
    if (old != null) {
      return old;
    }
    splitQueue.add(region);
    return f;
  }

  private void splitLoop() {
    while (!stopping) {
      int region;
      try {
        region = splitQueue.take();
      } catch (InterruptedException e) {
        return;
      }
      if (region == PARENTS) {
        runParentTasks();
        continue;
      }
      CompletableFuture<Void> f = pending.remove(region);
      try {
        Hosted h = hosted.get(region);
        if (h != null && trees.get(h.tree().id) == h.tree()) {
          lockLogging();
          try {
            split(h);
          } finally {
            unlockLogging();
          }
        }
        if (f != null) {
          f.complete(null);
        }
      } catch (RuntimeException e) {
        LOG.log(
            System.Logger.Level.WARNING, "tree: split of meganode region " + region + " failed", e);
        if (f != null) {
          f.completeExceptionally(e);
        }
      }
    }
  }

  /**
   * Splits meganode {@code x} (Cell §2.2): writes to its right half wait while that half is copied
   * into a new meganode (writes to the left half go on, and are logged between SPLIT_BEGIN and
   * SPLIT_END: see {@link TreeLog} for why the replay is exact either way), then it is relinked and
   * trimmed ({@link Meganode#finishSplit}, every write waiting for that alone); the separator is
   * then inserted one meganode level up, or a new root is made over the whole level.
   */
  private void split(Hosted x) {
    if (!x.meganode().wantsSplit()) {
      return;
    }
    Meganode.SplitHalf half = x.meganode().beginSplit();
    if (half == null) {
      return;
    }
    Hosted y = null;
    int yid = nextId.getAndIncrement();
    // Leaf meganodes go where tree.placement says; internal ones stay home (RemoteSplits).
    int target = half.level() == 0 ? remote.place() : context.serverId();
    long yp;
    try {
      if (target != context.serverId()) {
        // The same steps with the copy on another server; yid is the split's token there.
        remote.begun(yid);
        append(TreeLog.remoteSplit(TreeLog.R_BEGIN, x.id(), half.key(), yid, target));
        step("remote-begun");
        yp = remote.adopt(target, x.tree(), yid, half, x.tree().home);
        step("remote-copied");
        append(TreeLog.remoteSplit(TreeLog.R_END, x.id(), half.key(), yid, yp));
        if (half.link() != 0 && TreeProtocol.server(half.link()) == context.serverId()) {
          // The new meganode took x's old link: its right neighbour here is reached from afar.
          linkedFromAfar.add(TreeProtocol.region(half.link()));
        }
        step("remote-ended");
        remote.ended(yid, yp);
      } else {
        // Cell §2.2: the split's start is logged (source, key, target) before the target exists.
        append(TreeLog.split(TreeLog.SPLIT_BEGIN, x.id(), half.key(), yid));
        step("begun");
        y = newMeganode(x.tree(), yid, half.level(), half.key(), half.high(), half.link());
        y.meganode().fill(half.keys(), half.values(), half.children());
        step("copied");
        // ... and its end, before the relink: a crash before this line leaves a split the replay
        // undoes (target deleted, source whole), after it one the replay completes. Writes to x's
        // right half and to y resume only after the relink, so their records follow this one; x's
        // left half's may come before or after it (TreeLog: either way they stay in x).
        append(TreeLog.split(TreeLog.SPLIT_END, x.id(), half.key(), yid));
        step("ended");
        yp = y.pointer();
      }
    } catch (Crash e) {
      // In-process only. The log ends here, as a killed process's would: every later append
      // fails (UNAVAILABLE), so nothing the test does next reaches the log. The lock is released
      // only so that the test's threads are not stuck on it.
      simulatedCrash = true;
      if (log != null) {
        log.close();
      }
      remote.stop(); // a dead process sends no owed message either
      x.meganode().abortSplit();
      throw e;
    } catch (RuntimeException e) {
      x.meganode().abortSplit();
      if (y != null) {
        free(y);
      }
      if (target != context.serverId()) {
        append(TreeLog.remoteSplit(TreeLog.R_ABORT, x.id(), half.key(), yid, target));
        remote.aborted(yid, target); // what the target made is dropped by the peers thread
      } else {
        append(TreeLog.split(TreeLog.SPLIT_ABORT, x.id(), half.key(), yid));
      }
      throw e;
    }
    x.meganode().finishSplit(half.key(), yp);
    x.tree().splits.incrementAndGet();
    insertParent(x.tree(), half.level() + 1, half.key(), yp);
    for (Hosted h : y != null ? List.of(x, y) : List.of(x)) {
      if (h.meganode().wantsSplit()) {
        requestSplit(h);
      }
    }
  }

  private static void step(String step) {
    java.util.function.Consumer<String> hook = testSplitStep;
    if (hook != null) {
      hook.accept(step);
    }
  }

  /**
   * Puts {@code (key -> child)} into internal meganode {@code m}, logged (splitter thread only).
   */
  private Meganode.Write putChild(Hosted m, byte[] key, long child) {
    Meganode.Write w = m.meganode().putChild(key, child);
    if (w.status() == Meganode.Write.Status.CREATED
        || w.status() == Meganode.Write.Status.REPLACED) {
      append(TreeLog.child(m.id(), key, child));
    }
    return w;
  }

  /**
   * Inserts the separator {@code key} for the new meganode {@code child} at meganode level {@code
   * level}. Only the splitter thread runs this, so splits and root growth of this server's trees
   * never race each other; searches and writes run alongside.
   */
  private void insertParent(TreeState t, int level, byte[] key, long child) {
    if (t.home != context.serverId()) {
      remote.insertChild(t.home, t.id, level, key, child); // a guest: the parents are at home
      return;
    }
    Hosted m = hosted(TreeProtocol.region(t.root));
    if (m.meganode().level() < level) {
      // The root split: a new root over every meganode of its level, from the old root (the
      // leftmost) along the right links. Clients still starting at the old root find every key
      // through those links until they learn the new root.
      Hosted root = newMeganode(t, level, new byte[0], null, 0);
      long p = t.root;
      boolean first = true;
      while (p != 0) {
        Hosted h = local(p);
        if (h == null) {
          // A leaf meganode on another server (level 0 only): its header is not here. The one
          // just made is entered below; any right of it arrive by INSERT_CHILD, queued behind this.
          break;
        }
        io.ferrite.tree.Node header = new MeganodeReader(h.meganode().source()).header();
        putChild(root, first ? new byte[0] : header.low, p);
        first = false;
        p = header.link;
      }
      putChild(root, key, child); // its low key is key (a second entry for it only replaces)
      t.root = root.pointer();
      append(TreeLog.root(t.id, t.root));
      reportRoot(t);
      return;
    }
    while (true) {
      if (m.meganode().level() == level) {
        Meganode.Write w = putChild(m, key, child);
        if (w.status() == Meganode.Write.Status.RIGHT) {
          m = hosted(TreeProtocol.region(w.next()));
          continue;
        }
        if (m.meganode().wantsSplit()) {
          requestSplit(m);
        }
        return;
      }
      MeganodeReader.Outcome o = m.meganode().search(key);
      m = hosted(TreeProtocol.region(o.pointer()));
    }
  }
}
