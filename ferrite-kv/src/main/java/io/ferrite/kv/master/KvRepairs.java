package io.ferrite.kv.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kv.KvProtocol;
import io.ferrite.kv.KvReplicator;
import io.ferrite.kv.TableInfo;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Automatic repair of replicated kv shards (issue #20: "a replacement copy is built in the
 * background"): the master's kv directory gives every shard that has fewer complete copies than its
 * table's {@code replicas} a new one, with no operator action, by running {@link KvReplicator#copy}
 * on this class's own thread ({@code kv-repair}) over the master's own connections to the servers
 * ({@link MasterContext#connect}, SERVER role).
 *
 * <p><b>Why the master.</b> It is the one process that always runs, learns of every failover and
 * lost copy first ({@code serverDead}, {@code serverRegistered}), owns the placement the repair
 * changes ({@code ADD_COPY}/{@code END_COPY} become direct calls under the metadata lock) and holds
 * credentials for every server; memory servers never call each other (docs/KV.md "Moving shards"),
 * and an operator's process may not be running. The nodes face re-replicates the same way. The
 * cost: a repair's pairs pass through the master (page by page, {@link KvReplicator}).
 *
 * <p><b>When.</b> A pass runs when a server is declared DEAD or registers (a new copy may be
 * needed, or a new target is there), once at start, and every {@code kv.repair.period} (so a repair
 * that failed is tried again, and nothing depends on an event being seen). The shards to repair are
 * read from the directory under the metadata lock; the copying runs outside it. So after a master
 * restart the journal says what is under-replicated, and the first pass repairs it.
 *
 * <p><b>Failures.</b> A copy whose target cannot be reached ({@code UNAVAILABLE}, {@code TIMEOUT},
 * {@code DROPPED}) is aborted and its server avoided for {@value #AVOID_SECONDS} s: the next try
 * (the next pass) picks another one. A copy being filled that this repairer did not start is a
 * leftover of a repair that died (a master restart, an operator's process): those found at start
 * are dropped at once, others after {@value #STALE_SECONDS} s (an operator's repair may still be
 * filling it), and the shard is copied again.
 *
 * <p><b>Threads.</b> Callbacks under the metadata lock only {@link #kick} (an executor submit,
 * never blocking). Everything else runs on the worker thread: connects, pages, replicates, and its
 * short mutations.
 */
final class KvRepairs implements KvReplicator.Cluster, AutoCloseable {
  private static final System.Logger LOG = System.getLogger(KvRepairs.class.getName());
  static final int AVOID_SECONDS = 5;
  static final int STALE_SECONDS = 30;

  private final KvDirectory dir;
  private final MasterContext ctx;
  private final Duration deadline;
  private final ScheduledThreadPoolExecutor worker;
  private final AtomicBoolean queued = new AtomicBoolean();
  private final KvReplicator replicator;

  /** Servers whose link must be opened again (they registered, or a call to them failed). */
  private final Set<Integer> stale = ConcurrentHashMap.newKeySet();

  /** Servers not to pick as a new copy's target, until (nanoTime). Fabric threads add. */
  private final Map<Integer, Long> avoid = new ConcurrentHashMap<>();

  /**
   * Connections by server id; opened and replaced by the worker thread only, concurrent so that
   * {@link #close} can fail the calls a copy waits for (a join is not interruptible).
   */
  private final Map<Integer, FabricConnection> links = new ConcurrentHashMap<>();

  /** Copies being filled that this repairer did not start, by key, first seen (nanoTime). */
  private final Map<String, Long> foreign = new HashMap<>();

  /** Copies being filled found at start (keys): leftovers, dropped by the first pass. */
  private final Set<String> leftovers;

  /** What the last pass that could not repair everything logged; the worker's. */
  private String lastWait = "";

  /** Copies made, and copies that failed, since the master started (describe, tests). */
  volatile long made;

  volatile long failed;

  KvRepairs(KvDirectory dir, MasterContext ctx, Duration period, Set<String> leftovers) {
    this.dir = dir;
    this.ctx = ctx;
    this.deadline = ctx.config().rpcTimeout();
    this.leftovers = new java.util.HashSet<>(leftovers);
    this.replicator =
        new KvReplicator(this, line -> LOG.log(System.Logger.Level.INFO, "kv repair: " + line));
    worker = new ScheduledThreadPoolExecutor(1, new NamedThreadFactory("kv-repair", true));
    long ms = Math.max(1, period.toMillis());
    worker.scheduleWithFixedDelay(this::run, ms, ms, TimeUnit.MILLISECONDS);
  }

  /** Asks for a pass soon. Never blocks: safe under the metadata lock. */
  void kick() {
    if (queued.compareAndSet(false, true)) {
      try {
        worker.execute(this::run);
      } catch (RejectedExecutionException e) {
        queued.set(false); // closing
      }
    }
  }

  /** Server {@code serverId} registered (maybe a new process at a new address): reconnect. */
  void registered(int serverId) {
    stale.add(serverId);
    avoid.remove(serverId);
    kick();
  }

  private void run() {
    queued.set(false);
    try {
      pass();
    } catch (RuntimeException e) {
      // Never out of the periodic task (that would cancel it): the next period tries again.
      LOG.log(System.Logger.Level.WARNING, "kv repair pass failed; trying again", e);
    }
  }

  private void pass() {
    long now = System.nanoTime();
    avoid.values().removeIf(until -> until - now <= 0);
    Set<String> seen = new java.util.HashSet<>();
    List<KvDirectory.Need> needs =
        ctx.mutate(
            m ->
                dir.needs(
                    m,
                    key -> {
                      seen.add(key);
                      if (leftovers.remove(key)) {
                        return true;
                      }
                      long first = foreign.computeIfAbsent(key, k -> now);
                      return now - first > TimeUnit.SECONDS.toNanos(STALE_SECONDS);
                    }));
    foreign.keySet().retainAll(seen);
    boolean progress = false;
    int waiting = 0;
    String why = "";
    for (KvDirectory.Need n : needs) {
      if (worker.isShutdown()) {
        return;
      }
      try {
        replicator.copy(n.name(), n.shard());
        made++;
        progress = true;
      } catch (FerriteException e) {
        failed++;
        waiting++;
        why =
            why.isEmpty() ? "shard " + n.shard() + " of " + n.name() + ": " + e.getMessage() : why;
      }
    }
    String wait = waiting == 0 ? "" : waiting + " shard(s) short of copies, e.g. " + why;
    if (!wait.equals(lastWait) && !wait.isEmpty()) {
      // One line per pass, and only when it changes: shards waiting for a server to join (or a
      // cluster stopping) would log every period, per shard.
      LOG.log(System.Logger.Level.INFO, "kv repair not done yet (trying again): " + wait);
    }
    lastWait = wait;
    if (progress) {
      kick(); // a shard missing two copies gets the second at once
    }
  }

  // ------------------------------------------------ KvReplicator.Cluster (the worker thread)

  @Override
  public KvReplicator.AddedCopy addCopy(String name, int shard) {
    long now = System.nanoTime();
    Set<Integer> skip = new java.util.HashSet<>();
    avoid.forEach(
        (server, until) -> {
          if (until - now > 0) {
            skip.add(server);
          }
        });
    return ctx.mutate(m -> dir.addCopy(m, name, shard, skip));
  }

  @Override
  public TableInfo endCopy(String name, int shard, int server, boolean commit) {
    return ctx.mutate(m -> dir.endCopy(m, name, shard, server, commit));
  }

  @Override
  public CompletableFuture<ByteBuffer> call(int server, int opcode, ByteBuffer body) {
    FabricConnection c;
    try {
      c = link(server);
    } catch (FerriteException e) {
      suspect(server, e);
      return CompletableFuture.failedFuture(e);
    }
    return c.call(KvProtocol.SERVER_SERVICE, opcode, body, deadline)
        .whenComplete(
            (r, e) -> {
              if (e != null) {
                suspect(server, FerriteException.unwrap(e));
              }
            });
  }

  /** A server that did not answer is avoided as a target for a while, and reconnected. */
  private void suspect(int server, FerriteException e) {
    ErrorCode code = e.code();
    if (code == ErrorCode.UNAVAILABLE || code == ErrorCode.TIMEOUT || code == ErrorCode.DROPPED) {
      avoid.put(server, System.nanoTime() + TimeUnit.SECONDS.toNanos(AVOID_SECONDS));
      stale.add(server);
    }
  }

  private FabricConnection link(int server) {
    FabricConnection c = links.get(server);
    if (c != null && (stale.remove(server) || !c.isOpen())) {
      links.remove(server);
      c.close();
      c = null;
    }
    if (c == null) {
      stale.remove(server);
      c = ctx.connect(server); // blocks while it connects: the worker thread only
      links.put(server, c);
    }
    return c;
  }

  @Override
  public void close() {
    worker.shutdownNow();
    for (FabricConnection c : links.values()) {
      c.close(); // fails what a copy in progress waits for: the worker ends at once
    }
    try {
      if (!worker.awaitTermination(10, TimeUnit.SECONDS)) {
        LOG.log(System.Logger.Level.WARNING, "kv repair thread still running at close");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (FabricConnection c : links.values()) {
      c.close();
    }
    links.clear();
  }
}
