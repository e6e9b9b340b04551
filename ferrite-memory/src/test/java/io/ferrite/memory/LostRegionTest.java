package io.ferrite.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.memory.master.MemoryMaster;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #20, lost memory is declared, never guessed: a memory server stopped cleanly and started
 * again comes back with new regions (new rkeys), and the kernel declares the old ones lost. The
 * face drops their blocks from its cache and reserves (no stale rkey is handed to the next reserve:
 * the issue's {@code BAD_RKEY}), allocations on them answer {@code DATA_LOST} naming the namespace
 * and the allocation, they can be freed, the rest keeps its data, and all of it survives a master
 * restart; a journal written before the face was told is repaired at start.
 */
@ExtendWith(SeedExtension.class)
class LostRegionTest {
  static final int BLOCK = MemoryCluster.BLOCK;
  static final int CHUNK = 16 << 10;

  @TempDir Path dir;
  @AutoClose MemoryCluster cluster;

  @Test
  void aServerBackWithNewRegionsDeclaresItsMemoryLost(Random random) throws Exception {
    cluster = new MemoryCluster(dir, 1, false, new MemoryMaster());
    RStore store = cluster.store();
    // On s0 only: the survivor.
    Namespace kept = store.createNamespace("kept", CHUNK);
    kept.reserve(BLOCK);
    RAddress keptAt = kept.alloc(CHUNK, 0);
    long keptValue = random.nextLong();
    write(keptAt, 0, keptValue);

    cluster.startServer("s1");
    cluster.awaitServers(2);
    Namespace victim = store.createNamespace("victim", CHUNK);
    victim.reserve(4L * BLOCK); // spread over both servers
    RAddress spread = victim.alloc(4L * BLOCK, 0); // a chunk on every block
    write(spread, 0, random.nextLong());
    Mapping open = spread.map(MemoryFlags.MAP_NO_BUFFER);
    Namespace gone = store.createNamespace("gone", CHUNK);
    gone.reserve(4L * BLOCK);
    write(gone.alloc(4L * BLOCK, 0), 8, random.nextLong());
    store.deleteNamespace("gone"); // its blocks go to the cache: 2 of them on s1
    assertEquals(4, victim.stat().cachedBlocks());

    restart("s1");

    NamespaceStat st = victim.stat();
    assertEquals(2, st.cachedBlocks(), "s1's cached blocks left the cache");
    assertEquals(2L * BLOCK, st.reservedBytes(), "s1's blocks left the reserve");
    assertEquals(1, st.lostAllocations());
    assertEquals(4L * BLOCK, st.lostBytes());
    assertLost(() -> spread.map(MemoryFlags.MAP_NO_BUFFER), spread);
    assertLost(() -> victim.raddress(spread.address() + 8, 8), spread);
    // A mapping open across the loss holds the old rkeys: the server refuses them, and the
    // synchronous write asks the master what that means.
    assertLost(() -> open.writeSync(0, ByteBuffer.allocate(4 * BLOCK)), spread);
    assertLost(() -> open.readSync(0, ByteBuffer.allocate(4 * BLOCK)), spread);
    // The asynchronous ones fail their future with the same DATA_LOST (one mapping of the error),
    // spread over both servers (batches) and, on the restarted server's chunks, inside one chunk
    // (a single op); the survivor's chunks read on.
    assertLost(() -> Futures.join(open.write(0, ByteBuffer.allocate(4 * BLOCK))), spread);
    assertLost(() -> Futures.join(open.read(0, ByteBuffer.allocate(4 * BLOCK))), spread);
    int refused = 0;
    for (long at = 0; at < 4L * BLOCK; at += CHUNK) {
      try {
        Futures.join(open.read(at, ByteBuffer.allocate(CHUNK))); // one op: inside one chunk
      } catch (FerriteException e) {
        assertLostMessage(e, spread);
        refused++;
      }
    }
    assertTrue(refused > 0, "some chunk lived on the restarted server");
    assertTrue(refused < 4L * BLOCK / CHUNK, "some on the survivor: " + refused);
    open.close(); // unmapped: the allocation can be freed
    assertEquals(keptValue, read(keptAt, 0), "a namespace on the surviving server is untouched");

    // The next reserve gets no stale block: all of it can be written and read back.
    Namespace after = store.createNamespace("after", CHUNK);
    after.reserve(4L * BLOCK);
    RAddress fresh = after.alloc(4L * BLOCK, 0);
    long v = random.nextLong();
    for (long at = 0; at < 4L * BLOCK; at += CHUNK) {
      write(fresh, at, v + at);
    }
    for (long at = 0; at < 4L * BLOCK; at += CHUNK) {
      assertEquals(v + at, read(fresh, at));
    }

    // A restarted master (log replay, then snapshot) keeps the lost marks.
    cluster.startMaster(new MemoryMaster());
    cluster.awaitServers(cluster.servers.size());
    Namespace back = cluster.store().joinNamespace("victim");
    assertLost(() -> back.raddress(spread.address(), 8), spread);
    cluster.master.snapshot();
    cluster.startMaster(new MemoryMaster());
    cluster.awaitServers(cluster.servers.size());
    RStore again = cluster.store();
    Namespace back2 = again.joinNamespace("victim");
    assertLost(() -> back2.raddress(spread.address(), 8), spread);
    assertEquals(1, back2.stat().lostAllocations());
    assertEquals(1L, cluster.master.faces().get("memory").get("lost allocations"), "status");

    // Freeing it and deleting its namespace work; lost chunks do not come back.
    back2.free(spread.address());
    assertEquals(0, back2.stat().lostAllocations());
    assertEquals(2L * BLOCK, back2.stat().freeBytes());
    again.deleteNamespace("victim");
    Namespace kept2 = again.joinNamespace("kept");
    assertEquals(keptValue, read(kept2.raddress(keptAt.address(), 8), 0));
    Namespace last = again.createNamespace("last", CHUNK);
    last.reserve(6L * BLOCK);
    RAddress all = last.alloc(6L * BLOCK, 0);
    for (long at = 0; at < 6L * BLOCK; at += CHUNK) {
      write(all, at, v ^ at);
    }
    for (long at = 0; at < 6L * BLOCK; at += CHUNK) {
      assertEquals(v ^ at, read(all, at));
    }
  }

  @Test
  void aJournalWithStaleBlocksIsRepairedAtStart(Random random) throws Exception {
    // A face that is never told about lost regions (nor about the clean stop's goodbye, which a
    // master from before the fix did not know either): the journal it writes is that master's.
    cluster = new MemoryCluster(dir, 1, false, new MemoryMaster());
    cluster.startMaster(
        List.of(new io.ferrite.kernel.testing.WithoutRegionsLost(new MemoryMaster(), true)));
    cluster.awaitServers(1);
    RStore store = cluster.store();
    Namespace victim = store.createNamespace("victim", CHUNK);
    victim.reserve(2L * BLOCK);
    RAddress lost = victim.alloc(CHUNK, 0);
    write(lost, 0, random.nextLong());
    Namespace gone = store.createNamespace("gone", CHUNK);
    gone.reserve(2L * BLOCK);
    store.deleteNamespace("gone");

    restart("s0");
    assertEquals(2, victim.stat().cachedBlocks(), "untold: the stale blocks are still cached");
    assertEquals(0, victim.stat().lostAllocations(), "untold: nothing looks lost");

    cluster.startMaster(new MemoryMaster());

    cluster.awaitServers(cluster.servers.size());
    RStore again = cluster.store();
    Namespace back = again.joinNamespace("victim");
    NamespaceStat st = back.stat();
    assertEquals(0, st.cachedBlocks(), "repaired: no stale block in the cache");
    assertEquals(0, st.reservedBytes(), "repaired: no stale block in the reserve");
    assertEquals(1, st.lostAllocations());
    assertLost(() -> back.raddress(lost.address(), 8), lost);
    Namespace fresh = again.createNamespace("fresh", CHUNK);
    fresh.reserve(2L * BLOCK);
    RAddress at = fresh.alloc(2L * BLOCK, 0);
    long v = random.nextLong();
    write(at, 2L * BLOCK - 8, v);
    assertEquals(v, read(at, 2L * BLOCK - 8));
    back.free(lost.address());
    again.deleteNamespace("victim");
    // Repaired once: a second start finds nothing to repair and the same state.
    cluster.startMaster(new MemoryMaster());
    cluster.awaitServers(cluster.servers.size());
    assertEquals(0, cluster.store().joinNamespace("fresh").stat().cachedBlocks());
  }

  /** Stops server {@code name} cleanly (its DRAM regions are deleted) and starts it again. */
  private void restart(String name) throws InterruptedException {
    int n = cluster.servers.size();
    MemoryServer s =
        cluster.servers.stream()
            .filter(x -> x.name().equals(name))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no server " + name));
    s.close();
    cluster.servers.remove(s);
    cluster.startServer(name);
    cluster.awaitServers(n);
  }

  private static void assertLost(org.junit.jupiter.api.function.Executable call, RAddress of) {
    assertLostMessage(assertThrows(FerriteException.class, call), of);
  }

  private static void assertLostMessage(FerriteException e, RAddress of) {
    assertEquals(ErrorCode.DATA_LOST, e.code(), e.getMessage());
    String msg = e.getMessage();
    assertTrue(msg.contains("'" + of.namespace().name() + "'"), msg);
    assertTrue(msg.contains("0x" + Long.toHexString(of.address())), msg);
    assertTrue(msg.contains("region"), msg);
  }

  private static void write(RAddress ra, long at, long value) {
    try (Mapping m = ra.map(MemoryFlags.MAP_NO_BUFFER)) {
      m.writeSync(at, ByteBuffer.allocate(8).putLong(0, value));
    }
  }

  private static long read(RAddress ra, long at) {
    try (Mapping m = ra.map(MemoryFlags.MAP_NO_BUFFER)) {
      ByteBuffer b = ByteBuffer.allocate(8);
      m.readSync(at, b);
      return b.getLong(0);
    }
  }
}
