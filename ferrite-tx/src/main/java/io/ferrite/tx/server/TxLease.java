package io.ferrite.tx.server;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.kernel.server.ServerLease;
import io.ferrite.kernel.server.ServiceContext;
import io.ferrite.tx.TxLeaseWord;
import io.ferrite.tx.TxProtocol;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/**
 * A tx server's master lease over its primary regions (docs/TX.md "Leases"; the kernel's {@link
 * ServerLease}, the one kv uses). A primary, or a promoted copy, serves a region only while it is
 * valid: the region's RPCs answer UNAVAILABLE "lease lapsed" ({@link #check}), and so do the
 * one-sided ops on its memory ({@link MappedRegion.Lease}, checked by every fabric that serves the
 * op), and same-host readers that map the region read the lease word ({@link TxLeaseWord}).
 *
 * <p>After a lapse (and before the first grant) the lease is granted again only once every region
 * this server holds as primary was checked with the master ({@code verify}): those the master no
 * longer names this server primary of are dropped (MOVED to RPCs); and every region the service no
 * longer holds, whatever dropped it (a backup that answered MOVED, a refreshed placement), is
 * <b>retired</b> here: its one-sided ops are refused for good (UNAVAILABLE), its lease word is 0
 * and never written again. A region the master promoted away can only have been promoted after this
 * server's lease ran out (the master waits {@code server.dead.timeout}, the lease is at most half
 * of it), so the retirement always comes before this server serves anything again.
 */
final class TxLease implements AutoCloseable {
  /** The RPCs a region's primary serves only under the lease (the brief's list; not REPLICATE). */
  static boolean guards(int opcode) {
    return switch (opcode) {
      case TxProtocol.LOCK,
              TxProtocol.COMMIT,
              TxProtocol.COMMIT_LOCAL,
              TxProtocol.ALLOC,
              TxProtocol.SHIP,
              TxProtocol.OPEN_REGION,
              TxProtocol.OUTCOME,
              TxProtocol.UNRESOLVED ->
          true;
      default -> false;
    };
  }

  /** One region's hook: valid while the lease is and the region was not retired. */
  private static final class Hook implements MappedRegion.Lease {
    private final ServerLease lease;
    private volatile boolean retired;

    Hook(ServerLease lease) {
      this.lease = lease;
    }

    @Override
    public boolean valid() {
      return !retired && lease.valid();
    }
  }

  private final ServerLease lease;
  private final Map<MappedRegion, Hook> attached = new ConcurrentHashMap<>();

  /**
   * @param verify drops, from the service's map, the regions the master no longer names this server
   *     primary of, then calls {@link #retireAllBut} with the regions left, both under the lock
   *     that {@link #attach} is called under; throws FerriteException if the master cannot answer
   */
  TxLease(ServiceContext ctx, Duration period, Runnable verify) {
    this.lease = new ServerLease(ctx, "tx", period, verify);
  }

  /** Throws UNAVAILABLE, "lease lapsed" (retryable: ask the master), unless the lease is valid. */
  void check() {
    if (!lease.valid()) {
      throw new FerriteException(ErrorCode.UNAVAILABLE, lease.toString());
    }
  }

  boolean valid() {
    return lease.valid();
  }

  /**
   * Serves {@code r}'s memory only under the lease from now on: its one-sided ops, and its lease
   * word for same-host readers (the current deadline, or 0). Called before any client can learn of
   * the region (before it is in the service's map), under the lock {@code verify} holds.
   */
  void attach(TxRegion r) {
    MappedRegion m = r.memory();
    Hook h = attached.computeIfAbsent(m, k -> new Hook(lease));
    m.lease(h);
    lease.publish(m, TxLeaseWord.offset(m.length()));
  }

  /** Retires every attached region not in {@code live}: one-sided ops refused, word 0, for good. */
  void retireAllBut(Collection<TxRegion> live) {
    Set<MappedRegion> keep = live.stream().map(TxRegion::memory).collect(Collectors.toSet());
    for (Map.Entry<MappedRegion, Hook> e : attached.entrySet()) {
      if (!keep.contains(e.getKey()) && attached.remove(e.getKey(), e.getValue())) {
        e.getValue().retired = true;
        lease.withdraw(e.getKey());
      }
    }
  }

  /** For tests: whether {@code r}'s memory is served (attached and not retired). */
  boolean serves(TxRegion r) {
    Hook h = attached.get(r.memory());
    return h != null && h.valid();
  }

  @Override
  public void close() {
    lease.close();
  }
}
