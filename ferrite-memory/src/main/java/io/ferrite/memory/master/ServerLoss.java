package io.ferrite.memory.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.Wire;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The part of {@link MemoryState} that dead memory servers change: the blocks they took, where each
 * came from, and which server process may bring them back.
 *
 * <p>When the master declares a server DEAD its memory may be gone. {@code SERVER_LOST} takes its
 * blocks out of every namespace's reserve (so the reserve and free-chunk counts shrink) and out of
 * the cache. An allocation with a chunk there is <em>lost</em>: it can no longer be mapped (a clear
 * error instead of locations on a dead server), only looked up and freed. The lost blocks are kept
 * out of circulation ({@link #lost}, with the namespace each came from) while an allocation,
 * retired COW generation or lease still names them, so a client holding an old mapping can never
 * write into memory the kernel has handed to someone else; once unreferenced they go back to the
 * kernel ({@code LOST_FREE}).
 *
 * <p>DEAD is not final: a server that was only paused (a GC, an overloaded VM, SIGSTOP) comes back
 * as the same process ({@link #incarnations}, random per process) with its regions and their bytes
 * intact. Then {@code SERVER_BACK} puts every lost block of it that is still held back into its
 * namespace, and the allocations on them (current chunks and retired generations) map again. A
 * different incarnation (a restarted process: nothing says what its memory holds) ends the wait
 * with {@code SERVER_GONE}: its allocations stay lost, as do those freed meanwhile (their blocks
 * went back to the kernel). A COW lease with chunks on the dead server was dropped at {@code
 * SERVER_LOST} (its publish fails {@code SESSION_EXPIRED}) and stays dropped: what comes back is
 * the last published generation.
 */
final class ServerLoss {
  private final MemoryState state;

  /** Blocks of dead servers still named by an allocation, retired generation or lease. */
  final Map<Key, BlockRef> lost = new LinkedHashMap<>();

  /** The namespace a lost block was taken from (absent: the cache, unknown, or lost for good). */
  final Map<Key, Long> lostFrom = new HashMap<>();

  /** Per server, the incarnation (process) that registered last; absent: unknown. */
  final Map<Integer, Long> incarnations = new TreeMap<>();

  /** Per dead server whose blocks may come back, the incarnation that must return with them. */
  final Map<Integer, Long> awaited = new TreeMap<>();

  ServerLoss(MemoryState state) {
    this.state = state;
  }

  /** Applies one of the records {@code SERVER_LOST} to {@code LOST_FROM} (type read already). */
  void apply(int type, Wire.Reader r) {
    switch (type) {
      case MemoryRecords.SERVER_LOST -> {
        int server = r.i32("serverId");
        long incarnation = r.remaining() >= 8 ? r.i64("incarnation") : 0;
        lose(server, incarnation);
      }
      case MemoryRecords.LOST_ADD -> {
        for (BlockRef b : MasterProtocol.readBlocks(r)) {
          lost.put(Key.of(b), b);
        }
      }
      case MemoryRecords.LOST_FROM -> {
        long from = r.i64("nsId");
        for (BlockRef b : MasterProtocol.readBlocks(r)) {
          lost.put(Key.of(b), b);
          lostFrom.put(Key.of(b), from);
        }
      }
      case MemoryRecords.LOST_FREE -> {
        for (Key k : MemoryRecords.readKeys(r)) {
          lost.remove(k);
          lostFrom.remove(k);
        }
      }
      case MemoryRecords.SERVER_SEEN -> {
        int server = r.i32("serverId");
        incarnations.put(server, r.i64("incarnation"));
      }
      case MemoryRecords.SERVER_BACK -> back(r.i32("serverId"));
      case MemoryRecords.SERVER_GONE -> {
        int server = r.i32("serverId");
        awaited.remove(server);
        forget(server);
      }
      default -> throw new IllegalArgumentException("not a server-loss record: " + type);
    }
  }

  /**
   * Fails for an allocation that lost chunks with a dead memory server: its data cannot be read or
   * written any more (it can still be looked up, to be freed).
   */
  void checkIntact(Ns ns, Alloc a) {
    BlockLoss.check(ns, a);
    if (a.lost() && awaited.keySet().containsAll(a.lostServers)) {
      throw new FerriteException(
          ErrorCode.NOT_FOUND,
          "allocation "
              + a
              + " of namespace '"
              + ns.name
              + "' lost its data for now: memory server(s) "
              + a.lostServers
              + " holding some of its chunks were declared DEAD and may come back (if the same"
              + " server process returns with its memory, after a pause, the allocation maps again;"
              + " if it was restarted, its data is gone: free it and allocate again)");
    }
    if (a.lost()) {
      // Lost for good (another process of the server registered): declared, not guessed.
      throw new FerriteException(
          ErrorCode.DATA_LOST,
          "allocation "
              + a
              + " of namespace '"
              + ns.name
              + "' lost its data: memory server(s) "
              + a.lostServers
              + " holding some of its chunks were declared DEAD (free it and allocate again)");
    }
  }

  /** Applies {@code SERVER_LOST}: see the class comment. */
  private void lose(int server, long incarnation) {
    Long before = awaited.remove(server);
    if (before == null || before != incarnation) {
      forget(server); // what an earlier process lost can never come back with this one
    }
    if (incarnation != 0) {
      awaited.put(server, incarnation);
    }
    for (Ns ns : state.byId.values()) {
      List<Key> gone = new ArrayList<>();
      for (Key k : ns.blocks.keySet()) {
        if (k.server() == server) {
          gone.add(k);
        }
      }
      if (gone.isEmpty()) {
        continue;
      }
      for (Key k : gone) {
        lost.put(k, ns.removeBlock(k));
        lostFrom.put(k, ns.id);
      }
      for (Alloc a : ns.allocs.values()) {
        for (Chunk c : a.chunks) {
          if (c.block().server() == server) {
            a.lostServers.add(server);
            break;
          }
        }
      }
      // A COW writer's lease on chunks there can never be published: drop it (its publish fails
      // SESSION_EXPIRED, so the writer retries on live servers).
      for (MemoryState.Lease l : List.copyOf(state.leases.values())) {
        if (l.nsId() == ns.id && l.chunks().stream().anyMatch(c -> c.block().server() == server)) {
          state.leases.remove(l.id());
          Alloc a = ns.allocs.get(l.allocAddress());
          if (a != null) {
            a.lease = 0;
          }
          l.chunks().forEach(c -> ns.giveChunk(c));
        }
      }
    }
    for (Key k : List.copyOf(state.cache.keySet())) {
      if (k.server() == server) {
        lost.put(k, state.cache.remove(k));
        state.cacheFrom.remove(k);
      }
    }
  }

  /**
   * Applies {@code SERVER_BACK}: every lost block of {@code server} whose namespace still exists
   * goes back into it; the chunks allocations name there (current and retired generations) are
   * taken again, the rest are free; allocations whose chunks on it are all back are intact again.
   */
  private void back(int server) {
    awaited.remove(server);
    java.util.Set<Ns> touched = new java.util.LinkedHashSet<>();
    for (Key k : List.copyOf(lost.keySet())) {
      Long from = lostFrom.get(k);
      Ns ns = k.server() != server || from == null ? null : state.byId.get(from);
      if (ns != null) {
        ns.addBlock(k, lost.remove(k));
        lostFrom.remove(k);
        touched.add(ns);
      }
    }
    for (Ns ns : touched) {
      for (Alloc a : ns.allocs.values()) {
        boolean whole = true;
        for (Chunk c : a.chunks) {
          if (c.block().server() == server && !a.lostBlocks.contains(c.block())) {
            ns.takeChunk(c);
            whole &= ns.blocks.containsKey(c.block());
          }
        }
        for (List<Chunk> old : a.retired.values()) {
          for (Chunk c : old) {
            if (c.block().server() == server) {
              ns.takeChunk(c);
            }
          }
        }
        if (whole) {
          a.lostServers.remove(server);
        }
      }
    }
  }

  /**
   * Makes the lost blocks of {@code server} lost for good: without the namespace they came from,
   * {@code SERVER_BACK} leaves them alone (they go back to the kernel once nothing names them).
   */
  private void forget(int server) {
    lostFrom.keySet().removeIf(k -> k.server() == server);
  }

  /** The lost blocks of {@code server} that {@code SERVER_BACK} would put back. */
  List<BlockRef> restorable(int server) {
    List<BlockRef> out = new ArrayList<>();
    for (Map.Entry<Key, BlockRef> e : lost.entrySet()) {
      if (e.getKey().server() == server && lostFrom.containsKey(e.getKey())) {
        out.add(e.getValue());
      }
    }
    return out;
  }

  /** Whether any namespace or the cache holds a block of {@code server}. */
  boolean holdsBlocksOf(int server) {
    for (Key k : state.cache.keySet()) {
      if (k.server() == server) {
        return true;
      }
    }
    for (Ns ns : state.byId.values()) {
      for (Key k : ns.blocks.keySet()) {
        if (k.server() == server) {
          return true;
        }
      }
    }
    return false;
  }

  /** Lost blocks that no allocation, retired generation or lease names any more. */
  List<BlockRef> unreferencedLost() {
    if (lost.isEmpty()) {
      return List.of();
    }
    java.util.Set<Key> named = new java.util.HashSet<>();
    for (Ns ns : state.byId.values()) {
      for (Alloc a : ns.allocs.values()) {
        if (a.lost()) {
          a.chunks.forEach(c -> named.add(c.block()));
        }
        a.retired.values().forEach(old -> old.forEach(c -> named.add(c.block())));
      }
    }
    for (MemoryState.Lease l : state.leases.values()) {
      l.chunks().forEach(c -> named.add(c.block()));
    }
    List<BlockRef> out = new ArrayList<>();
    for (Map.Entry<Key, BlockRef> e : lost.entrySet()) {
      if (!named.contains(e.getKey())) {
        out.add(e.getValue());
      }
    }
    return out;
  }

  /**
   * The records that rebuild this part, before the namespaces' (see {@link MemoryState#snapshot}).
   */
  void snapshot(List<byte[]> out) {
    incarnations.forEach((server, inc) -> out.add(MemoryRecords.serverSeen(server, inc)));
    // Applied to an empty state, SERVER_LOST only records the incarnation awaited.
    awaited.forEach((server, inc) -> out.add(MemoryRecords.serverLost(server, inc)));
    Map<Long, List<BlockRef>> byFrom = new TreeMap<>();
    List<BlockRef> unknown = new ArrayList<>();
    for (Map.Entry<Key, BlockRef> e : lost.entrySet()) {
      Long from = lostFrom.get(e.getKey());
      if (from == null) {
        unknown.add(e.getValue());
      } else {
        byFrom.computeIfAbsent(from, f -> new ArrayList<>()).add(e.getValue());
      }
    }
    if (!unknown.isEmpty()) {
      out.add(MemoryRecords.lostAdd(unknown));
    }
    byFrom.forEach((from, blocks) -> out.add(MemoryRecords.lostFrom(from, blocks)));
  }
}
