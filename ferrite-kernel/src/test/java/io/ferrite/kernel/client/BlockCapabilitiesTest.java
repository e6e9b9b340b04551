package io.ferrite.kernel.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Capabilities;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kernel.testing.ClusterHarness;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Per-block capabilities end to end: a freed block's old ref is refused with BAD_RKEY on every
 * fabric while the block's next owner uses it; generations survive a master restart (journal and
 * snapshot); a restarted server re-installs the keys from REGISTER; a server the master cannot
 * reach keeps its freed blocks out of allocation.
 */
@ExtendWith(SeedExtension.class)
class BlockCapabilitiesTest {
  /** One server with exactly one block, so a freed block is the next one handed out. */
  private static final Map<String, String> ONE_BLOCK =
      Map.of(
          FerriteConfig.REGION_SIZE, "64k",
          FerriteConfig.BLOCK_SIZE, "64k",
          FerriteConfig.CAPACITY_DRAM, "64k",
          FerriteConfig.CAPACITY_DISK, "0");

  @TempDir Path dir;
  @AutoClose private ClusterHarness cluster;

  private ClusterHarness start(String fabric, Map<String, String> settings) throws Exception {
    cluster =
        fabric.equals("local")
            ? new LocalCluster(dir, settings)
            : new ClusterHarness(dir, LocalCluster.CREDENTIALS, true, settings);
    cluster.startMaster();
    cluster.startServer("s1");
    cluster.awaitServers(1);
    return cluster;
  }

  private static void assertFails(ErrorCode code, CompletableFuture<?> f, String what) {
    FerriteException e = assertThrows(FerriteException.class, () -> Futures.join(f), what);
    assertEquals(code, e.code(), what + ": " + e.getMessage());
  }

  private static ByteBuffer sentinel(int n) {
    ByteBuffer b = ByteBuffer.allocate(n);
    for (int i = 0; i < n; i++) {
      b.put(i, (byte) 0x5A);
    }
    return b;
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "tcp", "shm"})
  void aFreedBlocksOldRefIsRefusedWhileTheNextOwnerUsesIt(String fabric, Random random)
      throws Exception {
    start(fabric, ONE_BLOCK);
    FerriteClient first = cluster.client(fabric.equals("local") ? "local" : fabric);
    FerriteClient next = cluster.client(fabric.equals("local") ? "local" : fabric);
    BlockRef old = first.allocate(1).get(0);
    first.writeSync(old, 0, ByteBuffer.wrap(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}));
    assertEquals(1, first.free(List.of(old)));

    BlockRef mine = next.allocate(1).get(0);
    assertEquals(old.regionId(), mine.regionId(), "the one block is handed out again");
    assertEquals(old.offset(), mine.offset());
    assertNotEquals(old.region().rkey(), mine.region().rkey(), "a new generation, a new key");
    byte[] theirs = new byte[4096];
    random.nextBytes(theirs);
    next.writeSync(mine, 0, ByteBuffer.wrap(theirs));

    ByteBuffer dst = sentinel(4096);
    assertFails(ErrorCode.BAD_RKEY, first.read(old, 0, dst), fabric + " stale read");
    for (int i = 0; i < dst.capacity(); i++) {
      assertEquals((byte) 0x5A, dst.get(i), fabric + ": a refused read wrote byte " + i);
    }
    assertFails(
        ErrorCode.BAD_RKEY, first.write(old, 0, ByteBuffer.allocate(8)), fabric + " stale write");
    assertFails(ErrorCode.BAD_RKEY, first.fetchAndAdd(old, 0, 1), fabric + " stale FAA");

    // The block's read-only key reads it and cannot write it.
    BlockRef readOnly =
        new BlockRef(
            new RegionRef(
                mine.serverId(),
                mine.regionId(),
                Capabilities.readOnly(mine.region().rkey()),
                mine.region().length()),
            mine.offset(),
            mine.length(),
            mine.storageClass());
    ByteBuffer ro = ByteBuffer.allocate(4096);
    first.readSync(readOnly, 0, ro);
    assertArrayEquals(theirs, ro.array(), fabric);
    assertFails(
        ErrorCode.PERMISSION_DENIED,
        first.write(readOnly, 0, ByteBuffer.allocate(8)),
        fabric + " read-only write");

    ByteBuffer back = ByteBuffer.allocate(4096);
    next.readSync(mine, 0, back);
    assertArrayEquals(theirs, back.array(), fabric + ": the next owner's data changed");
  }

  @Test
  void generationsSurviveAMasterRestartFromJournalAndSnapshot() throws Exception {
    start("local", ONE_BLOCK);
    FerriteClient c = cluster.client();
    BlockRef g0 = c.allocate(1).get(0);
    c.free(List.of(g0));
    cluster.master.snapshot(); // generation 1 in the snapshot
    BlockRef g1 = c.allocate(1).get(0);
    c.free(List.of(g1)); // generation 2 in the log after it
    int server = g0.serverId();
    int[] before = cluster.master.state().generations(server).get(g0.regionId());
    assertEquals(2, before[0]);

    cluster.master.close();
    cluster.startMaster();
    assertArrayEquals(before, cluster.master.state().generations(server).get(g0.regionId()));
    awaitTrue(
        "server back",
        () ->
            cluster.master.state().serverState(server) == ServerState.ALIVE
                && cluster.master.state().quarantinedBlocks() == 0);
    FerriteClient c2 = cluster.client();
    BlockRef g2 = c2.allocate(1).get(0);
    assertNotEquals(g0.region().rkey(), g2.region().rkey());
    assertNotEquals(g1.region().rkey(), g2.region().rkey());
    c2.writeSync(g2, 0, ByteBuffer.wrap(new byte[] {9}));
    assertFails(ErrorCode.BAD_RKEY, c2.read(g1, 0, ByteBuffer.allocate(8)), "generation 1");
    assertFails(ErrorCode.BAD_RKEY, c2.read(g0, 0, ByteBuffer.allocate(8)), "generation 0");
  }

  @Test
  void aRestartedServerReinstallsTheKeysFromRegister() throws Exception {
    // Disk regions survive a server restart with their rkeys, and so do blocks owned in them.
    start(
        "local",
        Map.of(
            FerriteConfig.REGION_SIZE, "64k",
            FerriteConfig.BLOCK_SIZE, "64k",
            FerriteConfig.CAPACITY_DRAM, "0",
            FerriteConfig.CAPACITY_DISK, "128k"));
    FerriteClient c = cluster.client();
    BlockRef stale = c.allocate(1, "disk", true, "").get(0);
    c.free(List.of(stale));
    List<BlockRef> kept = c.allocate(2, "disk", true, "app");
    byte[] data = {4, 2, 4, 2};
    for (BlockRef b : kept) {
      c.writeSync(b, 0, ByteBuffer.wrap(data));
    }

    MemoryServer s = cluster.servers.remove(0);
    s.close();
    MemoryServer back = cluster.startServer("s1");
    awaitTrue(
        "server re-registered",
        () -> cluster.master.state().serverState(back.serverId()) == ServerState.ALIVE);
    FerriteClient c2 = cluster.client();
    for (BlockRef b : c2.owned("app")) {
      ByteBuffer got = ByteBuffer.allocate(4);
      c2.readSync(b, 0, got);
      assertArrayEquals(data, got.array(), "owned block " + b + " after the server restart");
    }
    BlockRef sameBlockAsStale =
        kept.stream().filter(b -> b.offset() == stale.offset()).findFirst().orElseThrow();
    assertNotEquals(stale.region().rkey(), sameBlockAsStale.region().rkey());
    assertFails(
        ErrorCode.BAD_RKEY, c2.read(stale, 0, ByteBuffer.allocate(8)), "stale after restart");
  }

  @Test
  void aServerTheMasterCannotReachKeepsItsFreedBlocksQuarantined() throws Exception {
    start("local", ONE_BLOCK);
    FerriteClient c = cluster.client();
    BlockRef b = c.allocate(1).get(0);
    // The server's endpoint dies (the master's REVOKE cannot reach it); its own connection to
    // the master lives on, so the master still counts it ALIVE and would hand its blocks out.
    cluster.network.kill(cluster.servers.get(0).addresses().get("local"));
    assertEquals(1, c.free(List.of(b)), "the free is answered all the same");
    assertEquals(1, cluster.master.state().quarantinedBlocks());
    assertEquals(ServerState.ALIVE, cluster.master.state().serverState(b.serverId()));
    FerriteException e = assertThrows(FerriteException.class, () -> c.allocate(1));
    assertEquals(ErrorCode.NO_SPACE, e.code(), e.getMessage());
  }

  private static void awaitTrue(String what, BooleanSupplier cond) throws InterruptedException {
    for (int i = 0; i < 1000; i++) {
      if (cond.getAsBoolean()) {
        return;
      }
      Thread.sleep(10);
    }
    assertTrue(cond.getAsBoolean(), what);
  }
}
