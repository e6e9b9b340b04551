package io.ferrite.memory.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Copy-on-write writes (RStore §III-G) on the master: a writer's time-bounded lease on fresh chunks
 * ({@code COW_BEGIN}), the atomic swap that publishes them as the allocation's next generation
 * ({@code COW_PUBLISH}), the expiry of leases whose writer died or hung, and the reclaiming of
 * retired generations once no mapping reads them.
 */
final class CopyOnWrite implements AutoCloseable {
  private final MasterContext ctx;
  private final MemoryState state;
  private final long leaseMillis;
  private final ScheduledExecutorService expirer;

  /** Starts the lease expirer. */
  CopyOnWrite(MasterContext ctx, MemoryState state, long leaseMillis) {
    this.ctx = ctx;
    this.state = state;
    this.leaseMillis = leaseMillis;
    // §III-G: "When a lease expires (owing to a client's failure or inactivity), the master
    // garbage collects the lease's chunk locations."
    expirer =
        Executors.newSingleThreadScheduledExecutor(
            new NamedThreadFactory("memory-lease-expirer", true));
    long period = Math.max(10, Math.min(500, leaseMillis / 4));
    expirer.scheduleWithFixedDelay(this::expireLeases, period, period, TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() {
    expirer.shutdownNow();
  }

  private void expireLeases() {
    long now = System.currentTimeMillis();
    try {
      ctx.mutate(
          m -> {
            for (MemoryState.Lease l : List.copyOf(state.leases.values())) {
              if (l.deadline() < now) {
                m.commit(MemoryRecords.abort(l.id()));
              }
            }
            Failures.freeLost(state, m);
            return null;
          });
    } catch (RuntimeException e) {
      System.getLogger(CopyOnWrite.class.getName())
          .log(System.Logger.Level.WARNING, "expiring COW leases failed, will retry", e);
    }
  }

  /** Frees the retired COW chunks of {@code a} that no mapping needs any more. */
  static void reclaim(MemoryState state, MasterContext.Mutation m, Ns ns, Alloc a) {
    if (a == null || !a.cow()) {
      return;
    }
    for (long g : state.reclaimable(ns, a)) {
      m.commit(MemoryRecords.reclaim(ns.id, a.address, g));
    }
    Failures.freeLost(state, m);
  }

  static Alloc allocOf(MemoryState state, MemoryState.Mapping mp) {
    Ns ns = state.byId.get(mp.nsId());
    return ns == null ? null : ns.allocs.get(mp.allocAddress());
  }

  ByteBuffer begin(Wire.Reader r) {
    long mapId = r.i64("mapId");
    long session = r.i64("session");
    int first = r.i32("firstChunk");
    int count = r.i32("count");
    r.end();
    return ctx.mutate(
        m -> {
          MemoryState.Mapping mp = state.mappingOf(mapId, session);
          Ns ns = state.ns(mp.nsId());
          Alloc a = allocOf(state, mp);
          if (!a.cow()) {
            throw new FerriteException(
                ErrorCode.INVALID_ARGUMENT, "allocation " + a + " is not copy-on-write");
          }
          state.loss.checkIntact(ns, a);
          if (first < 0 || count <= 0 || first > a.dataChunks - count) {
            throw new FerriteException(
                ErrorCode.OUT_OF_BOUNDS,
                "chunks "
                    + first
                    + " +"
                    + count
                    + " (expected: within the "
                    + a.dataChunks
                    + " chunks of "
                    + a
                    + ")");
          }
          MemoryState.Lease held = state.leases.get(a.lease);
          if (held != null && held.session() != session) {
            // §III-G: one writer with concurrent readers.
            throw new FerriteException(
                ErrorCode.CONFLICT,
                "allocation "
                    + a
                    + " has a writer (session "
                    + Long.toHexString(held.session())
                    + ") until its lease ends in "
                    + Math.max(0, held.deadline() - System.currentTimeMillis())
                    + " ms");
          }
          if (held != null) {
            m.commit(MemoryRecords.abort(held.id()));
          }
          if (count > ns.freeChunks) {
            throw new FerriteException(
                ErrorCode.NO_SPACE,
                "copy-on-write of "
                    + count
                    + " chunk(s) in namespace '"
                    + ns.name
                    + "': its reserve has "
                    + ns.freeChunks
                    + " free (reserve more first)");
          }
          List<Chunk> fresh = ns.pickChunks(count);
          MemoryState.Lease lease =
              new MemoryState.Lease(
                  state.nextLeaseId,
                  ns.id,
                  a.address,
                  session,
                  first,
                  System.currentTimeMillis() + leaseMillis,
                  fresh);
          m.commit(MemoryRecords.pending(lease));
          Locations loc = new Locations(ns);
          Wire.Writer chunks = loc.chunks(fresh);
          Wire.Writer w = new Wire.Writer().i64(lease.id()).i64(leaseMillis);
          loc.regions(w);
          return Locations.concat(w, chunks);
        });
  }

  ByteBuffer publish(Wire.Reader r) {
    long leaseId = r.i64("leaseId");
    long session = r.i64("session");
    long mapId = r.i64("mapId");
    r.end();
    return ctx.mutate(
        m -> {
          MemoryState.Lease l = state.leases.get(leaseId);
          if (l == null || l.session() != session) {
            throw new FerriteException(
                ErrorCode.SESSION_EXPIRED,
                "copy-on-write lease "
                    + leaseId
                    + " is gone (it expired, or the allocation was freed): nothing was published");
          }
          Ns ns = state.ns(l.nsId());
          Alloc a = ns.allocs.get(l.allocAddress());
          long generation = a.generation + 1;
          m.commit(MemoryRecords.publish(leaseId, generation));
          // The publisher's own mapping now sees the new generation.
          MemoryState.Mapping mp = state.mappings.get(mapId);
          if (mp != null && mp.session() == session) {
            m.commit(MemoryRecords.unmap(mapId));
            m.commit(
                MemoryRecords.map(
                    new MemoryState.Mapping(
                        mapId,
                        session,
                        mp.nsId(),
                        mp.allocAddress(),
                        mp.offset(),
                        mp.length(),
                        generation)));
          }
          reclaim(state, m, ns, a);
          return new Wire.Writer().i64(generation).toBuffer();
        });
  }
}
