package io.ferrite.kernel.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.local.LocalFabric;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.RegionInfo;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.testing.ClusterHarness;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A memory server in a cluster of several master groups (docs/RESILIENCE.md, "Master groups")
 * registers with each, under one id, and splits its block pool between them by region.
 */
class ServerGroupsTest {
  static final Credentials CREDENTIALS =
      new Credentials("groups", "0123456789abcdef-groups".getBytes(StandardCharsets.UTF_8));

  /** Group 0 is the harness's master; the others are started here, each over its own journal. */
  static final class Groups extends ClusterHarness {
    final List<Master> others = new ArrayList<>();
    final List<Fabric> otherFabrics = new ArrayList<>();

    Groups(Path dir) throws IOException {
      // 4 dram and 4 disk regions of 256 KiB per server.
      super(
          dir,
          CREDENTIALS,
          false,
          Map.of(FerriteConfig.CAPACITY_DRAM, "1m", FerriteConfig.CAPACITY_DISK, "1m"));
    }

    void addGroup() {
      Fabric f = new LocalFabric(network);
      otherFabrics.add(f);
      FerriteConfig c =
          config.with(
              FerriteConfig.DATA_DIR, dataDir.resolve("group-" + (others.size() + 1)).toString());
      others.add(Master.start(c, credentials, List.of(f), List.of()));
    }

    Master group(int g) {
      return g == 0 ? master : others.get(g - 1);
    }

    @Override
    public String masterAddress() {
      StringBuilder b = new StringBuilder(super.masterAddress());
      for (Master m : others) {
        b.append(';').append(m.addresses().get("local"));
      }
      return b.toString();
    }

    FerriteClient clientOf(int g) {
      return closeLater(
          io.ferrite.kernel.client.Ferrite.connect(
              group(g).addresses().get("local"),
              io.ferrite.kernel.client.ClientOptions.builder(credentials)
                  .fabric("local")
                  .fabrics(fabrics())
                  .build()));
    }

    @Override
    public void close() throws IOException {
      try {
        super.close();
      } finally {
        for (Master m : others) {
          m.close();
        }
        for (Fabric f : otherFabrics) {
          f.close();
        }
      }
    }
  }

  @TempDir Path dir;
  Groups cluster;

  @BeforeEach
  void start() throws Exception {
    cluster = new Groups(dir);
    cluster.startMaster(List.of());
    cluster.addGroup();
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  private static void awaitAlive(Master m, int serverId) throws InterruptedException {
    for (int i = 0; i < 1000; i++) {
      if (m.state().members().stream()
          .anyMatch(x -> x.serverId() == serverId && x.state() == ServerState.ALIVE)) {
        return;
      }
      Thread.sleep(10);
    }
    throw new AssertionError("server " + serverId + " never ALIVE in " + m.addresses());
  }

  /** Region id -> group, from what each group's master was told. */
  private Map<Integer, Integer> regionGroups(int serverId, int groups) {
    Map<Integer, Integer> out = new TreeMap<>();
    for (int g = 0; g < groups; g++) {
      for (RegionInfo r : cluster.group(g).state().regions(serverId)) {
        Integer before = out.put(r.ref().regionId(), g);
        assertEquals(null, before, "region " + r.ref().regionId() + " in two groups");
      }
    }
    return out;
  }

  @Test
  void aServerRegistersWithEveryGroupUnderOneIdAndSplitsItsPool() throws Exception {
    MemoryServer s = cluster.startServer("s1");
    int id = s.serverId();
    awaitAlive(cluster.group(0), id);
    awaitAlive(cluster.group(1), id);
    Map<Integer, Integer> split = regionGroups(id, 2);
    assertEquals(8, split.size(), "every pool region in exactly one group: " + split);
    assertEquals(2, new TreeSet<>(split.values()).size(), "both groups have regions: " + split);
    // Each group hands out blocks of its own regions only, and they work.
    for (int g = 0; g < 2; g++) {
      FerriteClient c = cluster.clientOf(g);
      List<BlockRef> got = c.allocate(3);
      for (BlockRef b : got) {
        assertEquals(id, b.serverId());
        assertEquals(g, split.get(b.regionId()), "group " + g + " handed out " + b);
        java.nio.ByteBuffer src = java.nio.ByteBuffer.wrap(new byte[] {1, 2, 3, (byte) g});
        c.writeSync(b, 0, src);
        java.nio.ByteBuffer dst = java.nio.ByteBuffer.allocate(4);
        c.readSync(b, 0, dst);
        assertEquals(g, dst.get(3));
      }
    }
  }

  @Test
  void aRegionKeepsItsGroupWhenAGroupIsAdded() throws Exception {
    MemoryServer s = cluster.startServer("s1");
    int id = s.serverId();
    awaitAlive(cluster.group(1), id);
    Map<Integer, Integer> before = new TreeMap<>();
    regionGroups(id, 2)
        .forEach(
            (r, g) -> {
              if (isDisk(id, r)) {
                before.put(r, g);
              }
            });
    assertEquals(4, before.size(), "disk regions: " + before);
    s.close();
    cluster.servers.remove(s);
    // The clean stop said goodbye to every group it registered with: DEAD in each at once.
    for (int g = 0; g < 2; g++) {
      assertEquals(
          io.ferrite.kernel.master.MasterState.REASON_LEFT,
          cluster.group(g).state().deadReason(id),
          "group " + g);
    }
    cluster.addGroup();
    MemoryServer back = cluster.startServer("s1");
    assertEquals(id, back.serverId());
    awaitAlive(cluster.group(2), id);
    awaitAlive(cluster.group(1), id);
    Map<Integer, Integer> after = regionGroups(id, 3);
    // The disk regions (kept across the restart) stay with their groups: none was lost.
    for (Map.Entry<Integer, Integer> e : before.entrySet()) {
      assertEquals(e.getValue(), after.get(e.getKey()), "disk region " + e.getKey() + " moved");
    }
    assertTrue(after.size() >= 8, "every region registered somewhere: " + after);
    // The DRAM regions were made anew (a clean stop deletes them): new memory, spread over all
    // three groups by id, so the added group gets its share.
    assertTrue(after.containsValue(2), "the added group got no region: " + after);
  }

  private boolean isDisk(int serverId, int regionId) {
    for (int g = 0; g < cluster.others.size() + 1; g++) {
      for (RegionInfo r : cluster.group(g).state().regions(serverId)) {
        if (r.ref().regionId() == regionId) {
          return r.storageClass().equals("disk");
        }
      }
    }
    return false;
  }

  private static RegionInfo pool(int id) {
    return new RegionInfo(new io.ferrite.fabric.RegionRef(1, id, 42, 1 << 18), "dram", "");
  }

  @Test
  void aRegionMadeAnewWithARecordedIdIsGivenByItsIdAgain() throws Exception {
    Path serverDir = java.nio.file.Files.createDirectories(dir.resolve("unit"));
    RegionGroups two = new RegionGroups(serverDir, 2);
    two.sync(List.of(pool(4), pool(5), pool(6)));
    assertEquals(0, two.groupOf(pool(4)));
    assertEquals(1, two.groupOf(pool(5)));
    // Restarted with three groups: region 5 survived (kept: group 1), 4 and 6 were made anew.
    RegionGroups three = new RegionGroups(serverDir, 3);
    three.keepOnly(List.of(pool(5)));
    assertEquals(1, three.groupOf(pool(5)));
    assertEquals(1, three.groupOf(pool(4)), "4 mod 3");
    assertEquals(0, three.groupOf(pool(6)), "6 mod 3");
    // A service region is always group 0's.
    assertEquals(
        0,
        three.groupOf(
            new RegionInfo(new io.ferrite.fabric.RegionRef(1, 7, 42, 1 << 18), "dram", "kv")));
  }
}
