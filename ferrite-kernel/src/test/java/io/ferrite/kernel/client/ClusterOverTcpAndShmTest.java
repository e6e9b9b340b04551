package io.ferrite.kernel.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.server.MemoryServer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The kernel over the real fabrics in one JVM: master and servers on tcp and shm. */
@ExtendWith(SeedExtension.class)
class ClusterOverTcpAndShmTest {
  @TempDir Path dir;
  Path shm;
  final List<AutoCloseable> open = new ArrayList<>();
  FerriteConfig cfg;
  Master master;
  final List<MemoryServer> servers = new ArrayList<>();

  @BeforeEach
  void start() throws IOException {
    shm = Files.createTempDirectory(Path.of("/dev/shm"), "fk");
    cfg =
        FerriteConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, "k")
            .set(FerriteConfig.DATA_DIR, dir.toString())
            .set(FerriteConfig.SHM_DIR, shm.toString())
            .set(FerriteConfig.MASTER_PORT, "0")
            .set(FerriteConfig.REGION_SIZE, "16m")
            .set(FerriteConfig.BLOCK_SIZE, "16m")
            .set(FerriteConfig.CAPACITY_DRAM, "32m")
            .set(FerriteConfig.CAPACITY_DISK, "0")
            .set(FerriteConfig.HEARTBEAT_INTERVAL, "100ms")
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .build();
    Fabric tcp = fabric("tcp");
    Fabric shmFabric = fabric("shm");
    master = Master.start(cfg, LocalCluster.CREDENTIALS, List.of(tcp, shmFabric));
    open.add(master);
    for (String name : List.of("a", "b")) {
      MemoryServer s =
          MemoryServer.start(
              cfg.with(FerriteConfig.SERVER_NAME, name),
              LocalCluster.CREDENTIALS,
              List.of(tcp, shmFabric),
              master.addresses().get("tcp"),
              List.of());
      open.add(s);
      servers.add(s);
    }
  }

  private Fabric fabric(String name) {
    Fabric f = FabricFactory.standard().open(name);
    open.add(0, f); // closed last
    return f;
  }

  @AfterEach
  void stop() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
    FileTrees.delete(shm);
  }

  private FerriteClient client(String fabric) {
    FerriteClient c =
        Ferrite.connect(
            master.addresses().get("tcp"),
            ClientOptions.builder(LocalCluster.CREDENTIALS).fabric(fabric).build());
    open.add(c);
    return c;
  }

  @Test
  void autoUsesShmOnThisHostAndTcpWorksToo(Random random) {
    for (String fabric : List.of("auto", "tcp")) {
      FerriteClient c = client(fabric);
      List<BlockRef> blocks = c.allocate(2);
      assertEquals(2, blocks.stream().map(BlockRef::serverId).distinct().count());
      for (BlockRef b : blocks) {
        // Larger than one op's frame: sent as several ops on consecutive slices.
        byte[] data = new byte[9 << 20];
        random.nextBytes(data);
        c.writeSync(b, 4096, ByteBuffer.wrap(data));
        ByteBuffer back = ByteBuffer.allocateDirect(data.length);
        c.readSync(b, 4096, back);
        byte[] got = new byte[data.length];
        back.get(got);
        assertArrayEquals(data, got, fabric + " " + b);
        long cur = c.fetchAndAddSync(b, 0, 0);
        assertEquals(cur, c.compareAndSwapSync(b, 0, cur, cur + 7));
        assertEquals(cur + 7, c.fetchAndAddSync(b, 0, 1));
      }
      assertEquals(2, c.free(blocks));
      if (fabric.equals("auto")) {
        assertEquals(0, tcpReads(), "auto chose shm: the client mapped the files itself");
      }
    }
    assertTrue(tcpReads() >= 2 * 3, "the tcp client's reads, 3 slices each: " + tcpReads());
  }

  private long tcpReads() {
    long n = 0;
    for (MemoryServer s : servers) {
      for (var e : s.endpoints()) {
        if (e.address().startsWith("tcp://")) {
          n += e.counters().ops(OpKind.READ);
        }
      }
    }
    return n;
  }

  private long masterRpcs(String fabric) {
    long n = 0;
    for (FabricServer e : master.endpoints()) {
      if (e.address().startsWith(fabric + "://")) {
        n += e.counters().ops(OpKind.RPC);
      }
    }
    return n;
  }

  @Test
  void aClientOnTheMastersHostMovesToShmUnlessItWantsTcp() {
    assertTrue(master.addresses().containsKey("shm"), "the master serves shm");
    FerriteClient tcpClient = client("tcp");
    long shmBefore = masterRpcs("shm");
    for (int i = 0; i < 20; i++) {
      tcpClient.status();
    }
    assertEquals(shmBefore, masterRpcs("shm"), "client.fabric=tcp keeps the master on tcp");
    assertTrue(tcpClient.masterStub().connection().toString().startsWith("connection to tcp:"));
    FerriteClient auto = client("auto");
    for (int i = 0; i < 20; i++) {
      auto.status();
      auto.free(auto.allocate(1));
    }
    // (The memory servers' heartbeats keep coming over tcp.)
    assertTrue(
        auto.masterStub().connection().toString().startsWith("shm "),
        "auto reaches the master over shm: " + auto.masterStub().connection());
    assertTrue(masterRpcs("shm") >= shmBefore + 60, "shm RPCs: " + masterRpcs("shm"));
  }

  @Test
  void aMasterThatCannotServeShmStillServesTcp() throws IOException {
    for (AutoCloseable c : List.copyOf(open)) {
      if (c instanceof MemoryServer || c instanceof Master) {
        try {
          c.close();
        } catch (Exception e) {
          throw new AssertionError(e);
        }
        open.remove(c);
      }
    }
    Path notADir = Files.createFile(shm.resolve("not-a-directory"));
    Master m =
        Master.start(
            cfg.with(FerriteConfig.SHM_DIR, notADir.toString()),
            LocalCluster.CREDENTIALS,
            List.of(fabric("tcp"), fabric("shm")));
    open.add(m);
    assertEquals(List.of("tcp"), List.copyOf(m.addresses().keySet()));
    FerriteClient c =
        Ferrite.connect(
            m.addresses().get("tcp"), ClientOptions.builder(LocalCluster.CREDENTIALS).build());
    open.add(c);
    assertEquals("k", c.status().clusterId());
  }
}
