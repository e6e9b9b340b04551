package io.ferrite.memory.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.BlockRef;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Blocks the kernel declared lost (issue #20: lost memory is declared, never guessed): a memory
 * server came back without a region, or with it changed (a clean stop or a reboot deletes its DRAM
 * region files, a new process makes new ones with new rkeys), and the kernel freed every block of
 * it; or, at start, a block the face holds that {@code owned("memory")} no longer lists (a journal
 * written before the face was told). {@code BLOCKS_LOST} takes them out of the cache (whose stale
 * rkeys would be handed to the next reserve), out of every namespace's reserve and out of the dead
 * servers' held blocks; an allocation with a current chunk in one is lost for good ({@link
 * Alloc#lostBlocks}: map and lookup answer {@code DATA_LOST}, free works); a COW lease with a chunk
 * there is dropped (its publish fails {@code SESSION_EXPIRED}); retired COW generations forget
 * their chunks there (their reclaim must not free a block key that may come back to someone else).
 *
 * <p>Identity is the whole {@link BlockRef} (rkey included): the same (server, region, offset) key
 * comes back with a new rkey after a restart, and may already be a fresh block of the face.
 */
final class BlockLoss {
  private BlockLoss() {}

  /** Applies {@code BLOCKS_LOST}: see the class comment. Deterministic, never fails. */
  static void apply(MemoryState state, List<BlockRef> blocks) {
    Map<Key, BlockRef> gone = new HashMap<>();
    for (BlockRef b : blocks) {
      gone.put(Key.of(b), b);
    }
    for (Map.Entry<Key, BlockRef> e : gone.entrySet()) {
      Key k = e.getKey();
      if (e.getValue().equals(state.cache.get(k))) {
        state.cache.remove(k);
        state.cacheFrom.remove(k);
      }
      if (e.getValue().equals(state.loss.lost.get(k))) {
        state.loss.lost.remove(k);
        state.loss.lostFrom.remove(k);
      }
    }
    for (Ns ns : state.byId.values()) {
      // Lost for this namespace: its own copy of the block, or a key it no longer holds (an
      // allocation naming it points at memory that is gone). A key it holds with another rkey is
      // a fresh block that only shares the address.
      Set<Key> lost = new HashSet<>();
      for (Map.Entry<Key, BlockRef> e : gone.entrySet()) {
        BlockRef held = ns.blocks.get(e.getKey());
        if (held == null) {
          lost.add(e.getKey());
        } else if (held.equals(e.getValue())) {
          ns.removeBlock(e.getKey());
          lost.add(e.getKey());
        }
      }
      for (Alloc a : ns.allocs.values()) {
        for (Chunk c : a.chunks) {
          if (lost.contains(c.block())) {
            a.lostBlocks.add(c.block());
          }
        }
        for (List<Chunk> old : a.retired.values()) {
          old.removeIf(c -> lost.contains(c.block()));
        }
      }
      for (MemoryState.Lease l : List.copyOf(state.leases.values())) {
        if (l.nsId() == ns.id && l.chunks().stream().anyMatch(c -> lost.contains(c.block()))) {
          state.leases.remove(l.id());
          Alloc a = ns.allocs.get(l.allocAddress());
          if (a != null) {
            a.lease = 0;
          }
          l.chunks().forEach(ns::giveChunk); // no-op for the lost ones: their blocks are gone
        }
      }
    }
  }

  /** Fails with {@code DATA_LOST} for an allocation with chunks in lost blocks. */
  static void check(Ns ns, Alloc a) {
    if (!a.lostBlocks.isEmpty()) {
      throw new FerriteException(
          ErrorCode.DATA_LOST,
          "allocation "
              + a
              + " of namespace '"
              + ns.name
              + "' is lost: "
              + a.lostBlocks.size()
              + " of its block(s) were in memory the kernel declared lost (clean loss of "
              + a.lostRegions()
              + ": the server came back without that region, as after a stop or a reboot); free"
              + " it (or delete the namespace) and allocate again");
    }
  }

  /** Every block the face holds (cache, reserves, dead servers' held blocks). */
  static List<BlockRef> held(MemoryState state) {
    List<BlockRef> out = new ArrayList<>(state.cache.values());
    for (Ns ns : state.byId.values()) {
      out.addAll(ns.blocks.values());
    }
    out.addAll(state.loss.lost.values());
    return out;
  }

  /** The blocks the face holds in regions {@code regionIds} of server {@code serverId}. */
  static List<BlockRef> heldIn(MemoryState state, int serverId, Set<Integer> regionIds) {
    List<BlockRef> out = new ArrayList<>();
    for (BlockRef b : held(state)) {
      if (b.serverId() == serverId && regionIds.contains(b.regionId())) {
        out.add(b);
      }
    }
    return out;
  }

  /** Held blocks (rkey included) that the kernel does not list in {@code owned}: they are gone. */
  static List<BlockRef> notOwned(MemoryState state, List<BlockRef> owned) {
    Set<BlockRef> own = new HashSet<>(owned);
    List<BlockRef> out = new ArrayList<>();
    for (BlockRef b : held(state)) {
      if (!own.contains(b)) {
        out.add(b);
      }
    }
    return out;
  }

  /** How many allocations of {@code ns} are lost (either way), and their bytes. */
  static long[] lostOf(Ns ns) {
    long n = 0;
    long bytes = 0;
    for (Alloc a : ns.allocs.values()) {
      if (a.lost()) {
        n++;
        bytes += a.length;
      }
    }
    return new long[] {n, bytes};
  }
}
