package io.ferrite.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.OpKind;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.memory.master.MemoryMaster;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A memory server declared DEAD: its chunks leave every namespace and the cache, the reserve
 * shrinks by what it held, allocations with a chunk on it fail to map with a clear error (the
 * others keep their data), and its blocks go back to the kernel once nothing names them; all of it
 * survives a master restart.
 */
class DeadServerTest {
  static final int BLOCK = MemoryCluster.BLOCK;
  static final int CHUNK = 16 << 10;

  @TempDir Path dir;
  MemoryCluster cluster;
  RStore store;

  @BeforeEach
  void start() throws Exception {
    cluster = new MemoryCluster(dir, 3, false, new MemoryMaster(), "1500ms");
    store = cluster.store();
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  @Test
  void aDeadServersChunksLeaveTheNamespacesAndItsAllocationsAreLost() throws Exception {
    Namespace ns = store.createNamespace("victim", CHUNK);
    ns.reserve(6 * BLOCK); // 2 blocks on each of the 3 servers
    RAddress spread = ns.alloc(3 * CHUNK, 0); // one chunk on each server
    List<RAddress> singles = new ArrayList<>();
    List<Integer> serverOf = new ArrayList<>();
    FerriteClient c = store.client();
    for (int i = 0; i < 6; i++) {
      RAddress ra = ns.alloc(CHUNK, 0);
      try (Mapping m = ra.map(MemoryFlags.MAP_NO_BUFFER)) {
        long[] before = reads(c);
        m.writeSync(0, ByteBuffer.allocate(8).putLong(0, 1000 + i));
        m.readSync(0, ByteBuffer.allocate(8));
        long[] after = reads(c);
        int server = -1;
        for (int s = 0; s < 3; s++) {
          if (after[s] != before[s]) {
            server = c.members().get(s).serverId();
          }
        }
        assertTrue(server > 0, "allocation " + i + " read from no server");
        serverOf.add(server);
      }
      singles.add(ra);
    }
    Namespace other = store.createNamespace("cached");
    other.reserve(3 * BLOCK);
    other.release(3 * BLOCK);
    assertEquals(3, ns.stat().cachedBlocks());

    MemoryServer victim = cluster.servers.get(1);
    int dead = victim.serverId();
    cluster.network.kill(victim.addresses().get("local"));
    victim.close();
    await(() -> cluster.master.state().serverState(dead) == ServerState.DEAD);

    NamespaceStat st = ns.stat();
    assertEquals(4L * BLOCK, st.reservedBytes(), "the dead server's 2 blocks left the reserve");
    long used = (3 + 6) * (long) CHUNK;
    long survivorsUsed = used - (1 + count(serverOf, dead)) * (long) CHUNK;
    assertEquals(4L * BLOCK - survivorsUsed, st.freeBytes(), "free chunks: live servers only");
    assertEquals(2, st.cachedBlocks(), "the dead server's cached block left the cache");

    FerriteException e =
        assertThrows(FerriteException.class, () -> spread.map(MemoryFlags.MAP_NO_BUFFER));
    assertEquals(ErrorCode.NOT_FOUND, e.code());
    assertTrue(e.getMessage().contains("lost its data"), e.getMessage());
    assertTrue(e.getMessage().contains("[" + dead + "]"), e.getMessage());
    ns.raddress(spread.address(), 10); // it can still be looked up, to be freed
    for (int i = 0; i < singles.size(); i++) {
      RAddress ra = singles.get(i);
      if (serverOf.get(i) == dead) {
        assertThrows(FerriteException.class, () -> ra.map(MemoryFlags.MAP_NO_BUFFER));
      } else {
        try (Mapping m = ra.map(MemoryFlags.MAP_NO_BUFFER)) {
          ByteBuffer got = ByteBuffer.allocate(8);
          m.readSync(0, got);
          assertEquals(1000 + i, got.getLong(0), "an allocation on live servers keeps its data");
        }
      }
    }
    assertTrue(ownedOn(dead) > 0, "lost allocations still name blocks of the dead server");

    // A restarted master (snapshot, then log) knows the same.
    cluster.master.snapshot();
    ns.free(spread);
    cluster.startMaster(new MemoryMaster());
    RStore again = cluster.store();
    Namespace back = again.joinNamespace("victim");
    assertEquals(4L * BLOCK, back.stat().reservedBytes());
    for (int i = 0; i < singles.size(); i++) {
      RAddress ra = singles.get(i);
      if (serverOf.get(i) == dead) {
        FerriteException lost =
            assertThrows(
                FerriteException.class,
                () -> back.raddress(ra.address(), CHUNK).map(MemoryFlags.MAP_NO_BUFFER));
        assertTrue(lost.getMessage().contains("lost its data"), lost.getMessage());
      }
      back.free(back.raddress(ra.address(), 1));
    }
    assertEquals(0, ownedOn(dead), "nothing names the dead server's blocks: back to the kernel");
    assertEquals(4L * BLOCK, back.stat().freeBytes());
    RAddress fresh = back.alloc(4L * BLOCK, 0);
    try (Mapping m = fresh.map(MemoryFlags.MAP_NO_BUFFER)) {
      m.writeSync(4L * BLOCK - 8, ByteBuffer.allocate(8).putLong(0, 7));
    }
    assertFalse(back.stat().freeBytes() > 0);
  }

  private int ownedOn(int server) {
    int n = 0;
    for (BlockRef b : cluster.master.state().owned("memory")) {
      if (b.serverId() == server) {
        n++;
      }
    }
    return n;
  }

  private static int count(List<Integer> list, int v) {
    int n = 0;
    for (int x : list) {
      if (x == v) {
        n++;
      }
    }
    return n;
  }

  private static long[] reads(FerriteClient c) {
    long[] out = new long[3];
    for (int s = 0; s < 3; s++) {
      out[s] = c.connection(c.members().get(s).serverId()).counters().ops(OpKind.READ);
    }
    return out;
  }

  private static void await(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("condition not met within 10 s");
      }
      Thread.sleep(10);
    }
  }
}
