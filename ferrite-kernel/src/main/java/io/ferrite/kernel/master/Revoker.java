package io.ferrite.kernel.master;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.config.Threads;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerProtocol;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Carries the master's revocations to memory servers: after a mutation freed blocks, {@link
 * #revokeNow} sends each server a REVOKE ({@link ServerProtocol}) with the blocks' new generations,
 * and the answer that freed them leaves only once every REVOKE sent so far is done (acknowledged or
 * failed). A block leaves quarantine when its server acknowledged; a server that cannot be reached
 * keeps its freed blocks quarantined (never reallocated) until a retry from the ticker ({@link
 * #retry}) succeeds or the server registers again. The FREE is answered either way (and the failure
 * logged): the client's free did happen.
 *
 * <p>One fabric connection per server, opened lazily with the master's credentials (the root
 * secret, as the servers' own connections to the master) on one of the master's fabrics that the
 * server listens on. Connecting blocks, so every send runs on this class's own thread, never on an
 * RPC or ticker thread, and never under the metadata lock.
 */
final class Revoker implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Revoker.class.getName());

  private final MasterState state;
  private final List<Fabric> fabrics;
  private final ConnectOptions options;
  private final Duration timeout;
  private final java.util.concurrent.ScheduledThreadPoolExecutor sender =
      Threads.scheduler("ferrite-master-revoke");

  /** Guarded by {@code this}: the sends so far, complete when all of them are. */
  private CompletableFuture<Void> sent = CompletableFuture.completedFuture(null);

  /** Connections by server id; touched only by the sender thread. */
  private final Map<Integer, FabricConnection> links = new HashMap<>();

  Revoker(MasterState state, List<Fabric> fabrics, ConnectOptions options, Duration timeout) {
    this.state = state;
    this.fabrics = List.copyOf(fabrics);
    this.options = options;
    this.timeout = timeout;
  }

  /**
   * Sends the revokes owed now; the future completes when they and every earlier send are done.
   * Never fails. Draining and chaining under one lock: a caller whose mutation's revokes another
   * caller drained still waits for them.
   */
  synchronized CompletableFuture<Void> revokeNow() {
    if (!state.revokesPending()) {
      // Nothing freed since the last drain (the usual RPC): no metadata lock. Under this lock,
      // so a drain by another caller has also set sent already.
      return sent;
    }
    Map<Integer, List<MasterState.ServerRevoke>> owed = state.drainRevokes();
    if (!owed.isEmpty()) {
      CompletableFuture<Void> f = send(owed, true);
      sent = sent.isDone() ? f : CompletableFuture.allOf(sent, f);
    }
    return sent;
  }

  /** Set while a retry is queued or running: retries never pile up behind a slow connect. */
  private final java.util.concurrent.atomic.AtomicBoolean retrying =
      new java.util.concurrent.atomic.AtomicBoolean();

  /** Retries the revokes of quarantined blocks (the ticker's; quietly; one at a time). */
  void retry() {
    if (!retrying.compareAndSet(false, true)) {
      return;
    }
    Map<Integer, List<MasterState.ServerRevoke>> owed = state.quarantinedRevokes();
    if (owed.isEmpty()) {
      retrying.set(false);
      return;
    }
    send(owed, false).whenComplete((v, e) -> retrying.set(false));
  }

  private CompletableFuture<Void> send(
      Map<Integer, List<MasterState.ServerRevoke>> owed, boolean loud) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    try {
      sender.execute(
          () -> {
            for (Map.Entry<Integer, List<MasterState.ServerRevoke>> e : owed.entrySet()) {
              sendTo(e.getKey(), e.getValue(), loud);
            }
            done.complete(null);
          });
    } catch (RejectedExecutionException e) {
      done.complete(null); // closing: the blocks stay quarantined
    }
    return done;
  }

  private void sendTo(int serverId, List<MasterState.ServerRevoke> revokes, boolean loud) {
    List<ServerProtocol.Revoke> body = new ArrayList<>(revokes.size());
    for (MasterState.ServerRevoke r : revokes) {
      body.add(new ServerProtocol.Revoke(r.block().regionId(), r.block().index(), r.generation()));
    }
    try {
      FabricConnection c = link(serverId);
      ByteBuffer req = ServerProtocol.writeRevokes(body).toBuffer();
      c.call(ServerProtocol.SERVICE, ServerProtocol.REVOKE, req, timeout)
          .get(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
      state.revoked(revokes);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      FabricConnection c = links.remove(serverId);
      if (c != null) {
        c.close();
      }
      LOG.log(
          loud ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG,
          "cannot revoke {0} freed block(s) on server {1}: they stay quarantined (not"
              + " reallocated) until a revoke succeeds or the server registers again: {2}",
          revokes.size(),
          serverId,
          String.valueOf(FerriteException.unwrap(e)));
    }
  }

  private FabricConnection link(int serverId) {
    FabricConnection c = links.get(serverId);
    if (c != null && c.isOpen()) {
      return c;
    }
    c = open(serverId);
    links.put(serverId, c);
    return c;
  }

  /**
   * A new connection to {@code serverId} with the master's credentials, on a fabric it listens on
   * (shm last): the revokes' links, and {@link MasterContext#connect}. Blocks while it connects.
   */
  FabricConnection open(int serverId) {
    MemberInfo member = null;
    for (MemberInfo m : state.members()) {
      if (m.serverId() == serverId) {
        member = m;
      }
    }
    return io.ferrite.kernel.proto.ServerDialer.open(fabrics, options, serverId, member);
  }

  @Override
  public void close() {
    sender.shutdownNow();
    try {
      sender.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (FabricConnection c : links.values()) {
      c.close();
    }
    links.clear();
  }
}
