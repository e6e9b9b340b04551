package io.ferrite.memory.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.proto.BlockRef;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The rules of a dead memory server on the face's state, record by record (see {@link ServerLoss}):
 * what {@code SERVER_LOST} takes away, what {@code SERVER_BACK} gives back (current chunks, retired
 * COW generations, not a dropped lease), what {@code SERVER_GONE} keeps lost, and that a snapshot
 * taken at any point rebuilds the same state.
 */
class ServerLossTest {
  static final int CHUNK = 16;
  static final int BLOCK = 64; // 4 chunks
  static final long NS = 1;
  static final long PLAIN = 16;
  static final long COW = 48;
  static final long SESSION = 5;

  // Server 1 holds block A; server 2 holds blocks B and C.
  final BlockRef a = block(1, 0);
  final BlockRef b = block(2, 0);
  final BlockRef c = block(2, BLOCK);
  MemoryState state;

  static BlockRef block(int server, long offset) {
    return new BlockRef(new RegionRef(server, 1, 1000 + server, 4 * BLOCK), offset, BLOCK, "dram");
  }

  static Chunk chunk(BlockRef block, long inBlock) {
    return new Chunk(Key.of(block), inBlock);
  }

  static void apply(MemoryState s, byte[] record) {
    s.apply(ByteBuffer.wrap(record));
  }

  static MemoryState rebuilt(MemoryState s) {
    MemoryState out = new MemoryState();
    for (byte[] r : s.snapshot()) {
      apply(out, r);
    }
    return out;
  }

  /**
   * A plain allocation (A@0, B@0); a COW allocation whose generation 1 (data B@32, metadata B@16)
   * replaced A@16, still mapped at generation 0 by a reader; a pending lease on C@0.
   */
  @BeforeEach
  void build() {
    state = new MemoryState();
    apply(state, MemoryRecords.serverSeen(2, 77));
    apply(state, MemoryRecords.nsCreate(NS, "n", CHUNK, CHUNK));
    apply(state, MemoryRecords.reserve(NS, List.of(a, b, c)));
    apply(state, MemoryRecords.alloc(NS, PLAIN, 2 * CHUNK, 0, List.of(chunk(a, 0), chunk(b, 0))));
    apply(
        state,
        MemoryRecords.alloc(NS, COW, CHUNK, Alloc.FLAG_COW, List.of(chunk(a, 16), chunk(b, 16))));
    apply(state, MemoryRecords.map(new MemoryState.Mapping(1, SESSION, NS, COW, 0, CHUNK, 0)));
    apply(
        state,
        MemoryRecords.pending(
            new MemoryState.Lease(1, NS, COW, SESSION, 0, Long.MAX_VALUE, List.of(chunk(b, 32)))));
    apply(state, MemoryRecords.publish(1, 1));
    apply(
        state,
        MemoryRecords.pending(
            new MemoryState.Lease(2, NS, COW, SESSION, 0, Long.MAX_VALUE, List.of(chunk(c, 0)))));
    assertEquals(12 - 2 - 2 - 1 - 1, ns(state).freeChunks);
  }

  static Ns ns(MemoryState s) {
    return s.byId.get(NS);
  }

  static void assertIntact(MemoryState s, long address) {
    s.loss.checkIntact(ns(s), ns(s).allocs.get(address));
  }

  static String lostMessage(MemoryState s, long address) {
    FerriteException e =
        assertThrows(
            FerriteException.class, () -> s.loss.checkIntact(ns(s), ns(s).allocs.get(address)));
    // May come back: NOT_FOUND for now; lost for good: DATA_LOST.
    assertEquals(
        e.getMessage().contains("may come back") ? ErrorCode.NOT_FOUND : ErrorCode.DATA_LOST,
        e.code(),
        e.getMessage());
    return e.getMessage();
  }

  @Test
  void lostThenBackGivesTheAllocationsAndRetiredGenerationsBack() {
    apply(state, MemoryRecords.serverLost(2, 77));
    for (MemoryState s : List.of(state, rebuilt(state))) {
      assertEquals(List.of(Key.of(a)), List.copyOf(ns(s).blocks.keySet()), "only A is left");
      assertEquals(2, ns(s).freeChunks, "A@32 and A@48; A@16 is a retired generation");
      assertTrue(lostMessage(s, PLAIN).contains("may come back"));
      assertTrue(lostMessage(s, COW).contains("may come back"));
      assertTrue(s.leases.isEmpty(), "the lease on C was dropped");
      assertEquals(Map.of(2, 77L), s.loss.awaited);
      assertEquals(
          List.of(),
          s.loss.unreferencedLost().stream().map(Key::of).toList().stream()
              .filter(k -> !k.equals(Key.of(c)))
              .toList(),
          "B is still named; C is not");
    }
    MemoryState restarted = rebuilt(state);
    for (MemoryState s : List.of(state, restarted)) {
      apply(s, MemoryRecords.serverBack(2));
      assertEquals(3, ns(s).blocks.size(), "B and C are back in the reserve");
      assertIntact(s, PLAIN);
      assertIntact(s, COW);
      // B: @0 plain, @16 metadata, @32 generation 1 taken, @48 free; C all free (the lease
      // stayed dropped); A: @32, @48 free.
      assertEquals(1 + 4 + 2, ns(s).freeChunks);
      assertEquals(List.of(chunk(a, 16)), ns(s).allocs.get(COW).retired.get(1L));
      assertTrue(s.loss.lost.isEmpty());
      assertTrue(s.loss.awaited.isEmpty());
      assertEquals(ns(s).freeChunks, ns(rebuilt(s)).freeChunks);
      // Free chunks are really free: the next picks are the 7 untaken ones, nothing named twice.
      List<Chunk> picked = ns(s).pickChunks(7);
      assertEquals(7, picked.size());
      assertFalse(picked.contains(chunk(b, 0)) || picked.contains(chunk(b, 32)));
      assertFalse(picked.contains(chunk(b, 16)) || picked.contains(chunk(a, 16)));
    }
  }

  @Test
  void anotherIncarnationKeepsItLostForGood() {
    apply(state, MemoryRecords.serverLost(2, 77));
    apply(state, MemoryRecords.serverGone(2));
    for (MemoryState s : List.of(state, rebuilt(state))) {
      String m = lostMessage(s, PLAIN);
      assertTrue(m.contains("lost its data:") && !m.contains("may come back"), m);
      assertTrue(s.loss.awaited.isEmpty());
      assertEquals(
          List.of(Key.of(c)),
          s.loss.unreferencedLost().stream().map(Key::of).toList(),
          "C goes back to the kernel; B stays out of circulation while allocations name it");
    }
    // A later loss of that new process does not bring the old blocks back.
    apply(state, MemoryRecords.serverSeen(2, 78));
    apply(state, MemoryRecords.serverLost(2, 78));
    apply(state, MemoryRecords.serverBack(2));
    assertFalse(ns(state).blocks.containsKey(Key.of(b)));
    assertTrue(lostMessage(state, PLAIN).contains("lost its data"));
  }

  @Test
  void aFreedAllocationStaysFreed() {
    apply(state, MemoryRecords.serverLost(2, 77));
    apply(state, MemoryRecords.free(NS, PLAIN));
    // The block of the plain allocation is still named by the COW allocation (B), so it comes
    // back; the freed allocation does not.
    apply(state, MemoryRecords.serverBack(2));
    assertFalse(ns(state).allocs.containsKey(PLAIN));
    assertIntact(state, COW);
    // A: @0 (freed), @32, @48; B: @0 (freed), @48; C: all 4 (the lease stayed dropped).
    assertEquals(3 + 2 + 4, ns(state).freeChunks);
  }

  @Test
  void aServerWithoutIncarnationIsNeverWaitedFor() {
    apply(state, MemoryRecords.serverLost(1, 0));
    assertTrue(state.loss.awaited.isEmpty());
    assertFalse(lostMessage(state, PLAIN).contains("may come back"));
  }
}
