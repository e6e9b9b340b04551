package io.ferrite.memory.master;

import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.proto.BlockRef;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What the face does when a client or a memory server fails: a session that ends loses its mappings
 * and COW leases (§III-E: "the master cleans up the associate states and references"); a server
 * declared DEAD takes its blocks out of circulation until the same process comes back with them
 * (see {@link ServerLoss}); lost blocks nothing names any more go back to the kernel.
 */
final class Failures {
  private static final System.Logger LOG = System.getLogger(Failures.class.getName());

  private Failures() {}

  static void sessionClosed(MemoryState state, long sessionId, MasterContext.Mutation m) {
    // §III-E: "When a client's connection aborts, the master cleans up the associate states and
    // references."
    for (MemoryState.Mapping mp : List.copyOf(state.mappings.values())) {
      if (mp.session() == sessionId) {
        m.commit(MemoryRecords.unmap(mp.id()));
        CopyOnWrite.reclaim(state, m, state.byId.get(mp.nsId()), CopyOnWrite.allocOf(state, mp));
      }
    }
    // A COW writer that dies leaves its last published data intact: its pending chunks go.
    for (MemoryState.Lease l : List.copyOf(state.leases.values())) {
      if (l.session() == sessionId) {
        m.commit(MemoryRecords.abort(l.id()));
      }
    }
    freeLost(state, m);
  }

  static void serverDead(MemoryState state, int serverId, MasterContext.Mutation m) {
    // Its memory may be gone: take its blocks out of every namespace and the cache; allocations
    // with a chunk there become lost until this process of the server comes back (see
    // MemoryState). Blocks nothing names go back to the kernel.
    if (state.loss.holdsBlocksOf(serverId)) {
      long incarnation = state.loss.incarnations.getOrDefault(serverId, 0L);
      m.commit(MemoryRecords.serverLost(serverId, incarnation));
      LOG.log(
          System.Logger.Level.WARNING,
          "memory server {0} is DEAD: its chunks left every namespace; allocations on it are lost"
              + (incarnation != 0 ? " unless the same process comes back" : ""),
          serverId);
    }
    freeLost(state, m);
  }

  static void serverRegistered(
      MemoryState state, int serverId, long incarnation, MasterContext.Mutation m) {
    if (incarnation != 0 && state.loss.incarnations.getOrDefault(serverId, 0L) != incarnation) {
      m.commit(MemoryRecords.serverSeen(serverId, incarnation));
    }
    Long awaited = state.loss.awaited.get(serverId);
    if (awaited == null) {
      return;
    }
    // The same process is back (it was paused, not restarted): its regions kept their rkeys and
    // bytes. Restore only if the kernel still holds every lost block as it was (a region it came
    // back without or changed dropped its blocks).
    Set<BlockRef> held = new HashSet<>(m.owned(MemoryState.OWNER));
    List<BlockRef> lost = state.loss.restorable(serverId);
    if (awaited == incarnation && held.containsAll(lost)) {
      m.commit(MemoryRecords.serverBack(serverId));
      LOG.log(
          System.Logger.Level.INFO,
          "memory server {0} is back with its memory: {1} block(s) and the allocations on them"
              + " restored",
          serverId,
          lost.size());
    } else {
      m.commit(MemoryRecords.serverGone(serverId));
      LOG.log(
          System.Logger.Level.WARNING,
          "memory server {0} came back as "
              + (awaited == incarnation ? "the same process without some regions" : "a new process")
              + ": allocations on its {1} lost block(s) stay lost",
          serverId,
          lost.size());
    }
    freeLost(state, m);
  }

  /**
   * Gives the blocks of dead servers that nothing names any more back to the kernel (those the
   * kernel still has: a server that re-registered without its regions took its blocks with it).
   */
  static void freeLost(MemoryState state, MasterContext.Mutation m) {
    List<BlockRef> done = state.loss.unreferencedLost();
    if (done.isEmpty()) {
      return;
    }
    Set<Key> owned = new HashSet<>();
    for (BlockRef b : m.owned(MemoryState.OWNER)) {
      owned.add(Key.of(b));
    }
    List<BlockRef> give = new ArrayList<>();
    List<Key> keys = new ArrayList<>();
    for (BlockRef b : done) {
      keys.add(Key.of(b));
      if (owned.contains(Key.of(b))) {
        give.add(b);
      }
    }
    if (!give.isEmpty()) {
      m.free(MemoryState.OWNER, give);
    }
    m.commit(MemoryRecords.lostFree(keys));
  }
}
