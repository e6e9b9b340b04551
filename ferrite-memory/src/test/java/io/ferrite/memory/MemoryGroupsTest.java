package io.ferrite.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.PlacementProtocol;
import io.ferrite.kernel.testing.GroupsHarness;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Memory namespaces across master groups (issue #20, docs/RESILIENCE.md "Master groups"): a
 * namespace lives in the group its name is placed in (its blocks are that group's), one client
 * reaches every group's namespaces, one group's master down leaves the others' served, and a
 * namespace made before the cluster had groups stays in group 0.
 */
@ExtendWith(SeedExtension.class)
class MemoryGroupsTest {
  static final int SIZE = 3 * MemoryCluster.BLOCK + 4321;

  @TempDir Path dir;
  GroupsHarness cluster;

  @BeforeEach
  void start() throws Exception {
    Map<String, String> settings = new HashMap<>();
    // 4 pool regions of 1 MiB per server: 2 per group.
    settings.put(FerriteConfig.REGION_SIZE, "1m");
    settings.put(FerriteConfig.CAPACITY_DRAM, "4m");
    settings.put(FerriteConfig.CAPACITY_DISK, "0");
    settings.put(FerriteConfig.DEAD_TIMEOUT, "5s");
    cluster = new GroupsHarness(dir, MemoryCluster.CREDENTIALS, settings, 2);
    cluster.startMaster();
    cluster.startGroup(1);
    cluster.startServer("s1");
    cluster.startServer("s2");
    cluster.awaitServers(0, 2);
    cluster.awaitServers(1, 2);
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  private static int ruled(String ns, int groups) {
    return PlacementProtocol.choose(PlacementProtocol.key(PlacementProtocol.MEMORY, ns), groups);
  }

  /** {@code count} names per group that the rule places there (random, seeded). */
  private static List<String> namesPerGroup(Random random, int count, String prefix) {
    List<String> out = new ArrayList<>();
    int[] have = new int[2];
    while (out.size() < 2 * count) {
      String name = prefix + Integer.toHexString(random.nextInt());
      int g = ruled(name, 2);
      if (have[g] < count) {
        have[g]++;
        out.add(name);
      }
    }
    return out;
  }

  /** What one namespace holds: an allocation's address and its bytes. */
  record Written(long address, byte[] bytes) {}

  private static Written fill(RStore store, String name, Random random) {
    Namespace ns = store.createNamespace(name);
    ns.reserve(SIZE);
    RAddress ra = ns.alloc(SIZE, MemoryFlags.ALLOC_DEFAULT);
    byte[] b = new byte[SIZE];
    random.nextBytes(b);
    try (Mapping m = ra.map(MemoryFlags.MAP_DEFAULT)) {
      m.writeSync(0, ByteBuffer.allocateDirect(SIZE).put(b).flip());
    }
    return new Written(ra.address(), b);
  }

  private static void assertReadable(RStore store, Map<String, Written> written) {
    for (Map.Entry<String, Written> e : written.entrySet()) {
      Namespace ns = store.joinNamespace(e.getKey());
      RAddress ra = RAddress.init(ns, e.getValue().address(), SIZE);
      ByteBuffer dst = ByteBuffer.allocateDirect(SIZE);
      try (Mapping m = ra.map(MemoryFlags.MAP_DEFAULT)) {
        m.readSync(0, dst);
      }
      assertArrayEquals(e.getValue().bytes(), NamespaceTest.bytes(dst), e.getKey());
    }
  }

  /** Whether group {@code g} alone (a client of its master only) has namespace {@code name}. */
  private boolean holds(int g, String name) {
    try {
      new RStore(cluster.groupClient(g)).joinNamespace(name);
      return true;
    } catch (FerriteException e) {
      assertEquals(ErrorCode.NOT_FOUND, e.code(), e.getMessage());
      return false;
    }
  }

  @Test
  void namespacesLandInTheirGroupsAndAFreshClientReadsThemAll(Random random) throws Exception {
    RStore store = new RStore(cluster.client(2));
    Map<String, Written> written = new LinkedHashMap<>();
    for (String name : namesPerGroup(random, 2, "ns-")) {
      written.put(name, fill(store, name, random));
    }
    for (String name : written.keySet()) {
      int g = ruled(name, 2);
      assertEquals(true, holds(g, name), name + " in group " + g);
      assertEquals(false, holds(1 - g, name), name + " not in group " + (1 - g));
    }
    assertReadable(new RStore(cluster.client(2)), written);

    // Deleting goes to the namespace's group.
    String gone = written.keySet().iterator().next();
    new RStore(cluster.client(2)).deleteNamespace(gone);
    assertEquals(false, holds(ruled(gone, 2), gone));
  }

  @Test
  void oneGroupsMasterDownLeavesTheOtherGroupsNamespacesServed(Random random) throws Exception {
    RStore store = new RStore(cluster.client(2));
    Map<String, Written> in0 = new LinkedHashMap<>();
    for (String name : namesPerGroup(random, 2, "d-")) {
      Written w = fill(store, name, random);
      if (ruled(name, 2) == 0) {
        in0.put(name, w);
      }
    }
    cluster.stopGroup(1);
    assertReadable(new RStore(cluster.client(2)), in0);
    // A new namespace the rule gives group 0 is made while group 1 is down.
    String more =
        namesPerGroup(random, 1, "more-").stream()
            .filter(n -> ruled(n, 2) == 0)
            .findFirst()
            .orElseThrow();
    in0.put(more, fill(new RStore(cluster.client(2)), more, random));
    assertReadable(new RStore(cluster.client(2)), in0);
  }

  @Test
  void aNamespaceMadeBeforeTheClusterHadGroupsStaysInGroupZero(Random random) throws Exception {
    String legacy =
        namesPerGroup(random, 1, "legacy-").stream()
            .filter(n -> ruled(n, 2) == 1)
            .findFirst()
            .orElseThrow();
    Map<String, Written> written = new LinkedHashMap<>();
    written.put(legacy, fill(new RStore(cluster.groupClient(0)), legacy, random));
    RStore two = new RStore(cluster.client(2));
    assertReadable(two, written);
    // Creating it again through both groups finds it in group 0: CONFLICT, not a second one in 1.
    FerriteException x = assertThrows(FerriteException.class, () -> two.createNamespace(legacy));
    assertEquals(ErrorCode.CONFLICT, x.code(), x.getMessage());
    assertEquals(false, holds(1, legacy));
  }
}
