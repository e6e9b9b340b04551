package io.ferrite.memory.master;

import static io.ferrite.memory.master.ServerLossTest.apply;
import static io.ferrite.memory.master.ServerLossTest.chunk;
import static io.ferrite.memory.master.ServerLossTest.ns;
import static io.ferrite.memory.master.ServerLossTest.rebuilt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.proto.BlockRef;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code BLOCKS_LOST} record by record (see {@link BlockLoss}): what it takes from the cache and
 * the reserves, which allocations it makes lost (and that a snapshot keeps them lost), the leases
 * it drops, and that a lost block's key coming back with a new rkey is a different block: freeing
 * the lost allocation gives nothing of it away.
 */
class BlockLossTest {
  static final int CHUNK = ServerLossTest.CHUNK;
  static final int BLOCK = ServerLossTest.BLOCK; // 4 chunks
  static final long NS = ServerLossTest.NS;
  static final long LOST = 16;
  static final long KEPT = 80;

  // Server 1 holds A (region 1, rkey 1001); server 2 holds B; C (server 1) is in the cache.
  final BlockRef a = block(1, 1001, 0);
  final BlockRef b = block(2, 1002, 0);
  final BlockRef c = block(1, 1001, BLOCK);
  // A again after server 1 came back with a new region 1: same key, another rkey.
  final BlockRef a2 = block(1, 7001, 0);
  MemoryState state;

  static BlockRef block(int server, long rkey, long offset) {
    return new BlockRef(new RegionRef(server, 1, rkey, 4 * BLOCK), offset, BLOCK, "dram");
  }

  @BeforeEach
  void build() {
    state = new MemoryState();
    apply(state, MemoryRecords.cacheAdd(List.of(c)));
    apply(state, MemoryRecords.nsCreate(NS, "n", CHUNK, CHUNK));
    apply(state, MemoryRecords.reserve(NS, List.of(a, b)));
    apply(state, MemoryRecords.alloc(NS, LOST, 2 * CHUNK, 0, List.of(chunk(a, 0), chunk(b, 0))));
    apply(state, MemoryRecords.alloc(NS, KEPT, CHUNK, 0, List.of(chunk(b, 16))));
    apply(
        state,
        MemoryRecords.pending(
            new MemoryState.Lease(
                1, NS, KEPT, 5, 0, Long.MAX_VALUE, List.of(chunk(a, 16), chunk(b, 32)))));
    assertEquals(8 - 3 - 2, ns(state).freeChunks);
  }

  @Test
  void lostBlocksLeaveTheCacheAndReservesAndTheirAllocationsAreLost() {
    apply(state, MemoryRecords.blocksLost(List.of(a, c)));
    for (MemoryState s : List.of(state, rebuilt(state))) {
      assertTrue(s.cache.isEmpty(), "C left the cache");
      assertEquals(Set.of(Key.of(b)), ns(s).blocks.keySet(), "A left the reserve");
      assertTrue(s.leases.isEmpty(), "the lease with a chunk on A was dropped");
      assertEquals(2, ns(s).freeChunks, "B@32 (the lease's) and B@48");
      FerriteException e =
          assertThrows(
              FerriteException.class, () -> s.loss.checkIntact(ns(s), ns(s).allocs.get(LOST)));
      assertEquals(ErrorCode.DATA_LOST, e.code());
      assertTrue(e.getMessage().contains("'n'"), e.getMessage());
      assertTrue(e.getMessage().contains("0x10"), e.getMessage());
      assertTrue(e.getMessage().contains("server 1 region 1"), e.getMessage());
      s.loss.checkIntact(ns(s), ns(s).allocs.get(KEPT));
      assertEquals(1L, BlockLoss.lostOf(ns(s))[0]);
      assertEquals(2L * CHUNK, BlockLoss.lostOf(ns(s))[1]);
    }
  }

  @Test
  void aBlockWithTheSameKeyAndAnotherRkeyIsNotLostAndFreeingTheLostAllocationKeepsItsChunks() {
    apply(state, MemoryRecords.blocksLost(List.of(a)));
    // The same key, fresh from the kernel with a new rkey, reserved again by the namespace.
    apply(state, MemoryRecords.reserve(NS, List.of(a2)));
    apply(state, MemoryRecords.alloc(NS, 1024, CHUNK, 0, List.of(chunk(a2, 0))));
    for (MemoryState s : List.of(state, rebuilt(state))) {
      assertEquals(a2, ns(s).blocks.get(Key.of(a2)));
      assertEquals(ErrorCode.DATA_LOST, lostCode(s, LOST));
      s.loss.checkIntact(ns(s), ns(s).allocs.get(1024L));
      long free = ns(s).freeChunks;
      apply(s, MemoryRecords.free(NS, LOST));
      assertEquals(free + 1, ns(s).freeChunks, "only B@0 came back: A@0 is another block's now");
      assertFalse(ns(s).free.get(1).contains(chunk(a2, 0)), "the new allocation keeps A'@0");
      // A late BLOCKS_LOST naming the old A leaves the new A' alone.
      apply(s, MemoryRecords.blocksLost(List.of(a)));
      assertEquals(a2, ns(s).blocks.get(Key.of(a2)));
      s.loss.checkIntact(ns(s), ns(s).allocs.get(1024L));
    }
  }

  @Test
  void deletingANamespaceWithLostAllocationsCachesOnlyWhatExists() {
    apply(state, MemoryRecords.blocksLost(List.of(a)));
    apply(state, MemoryRecords.nsDelete(NS));
    assertEquals(Set.of(Key.of(c), Key.of(b)), state.cache.keySet());
  }

  private static ErrorCode lostCode(MemoryState s, long address) {
    return assertThrows(
            FerriteException.class, () -> s.loss.checkIntact(ns(s), ns(s).allocs.get(address)))
        .code();
  }
}
