package io.ferrite.nodes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.ClusterStatus;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Storage classes (paper §3.2.4): a node's blocks come from its preferred class, spill to the next
 * class only when the preferred one is full cluster-wide, and a write with no class left fails with
 * NO_SPACE while everything written before stays readable.
 */
class NodesStorageClassTest {
  @TempDir Path dir;
  NodesCluster cluster;
  Nodes nodes;

  @BeforeEach
  void start() throws Exception {
    // Two servers with 4 dram and 4 disk blocks of 64 KiB each: 8 + 8 blocks in the cluster.
    cluster =
        new NodesCluster(
            dir, Map.of(FerriteConfig.CAPACITY_DRAM, "256k", FerriteConfig.CAPACITY_DISK, "256k"));
    cluster.startMaster();
    cluster.startServer("s1");
    cluster.startServer("s2");
    cluster.awaitServers(2);
    nodes = cluster.nodes();
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  private List<String> classes(String path) {
    long id = nodes.lookup(path).id();
    List<String> out = new ArrayList<>();
    for (BlockRef b : cluster.master.state().owned("nodes:" + id)) {
      out.add(b.storageClass());
    }
    return out;
  }

  private static long count(List<String> l, String c) {
    return l.stream().filter(c::equals).count();
  }

  @Test
  void affinitySpillAndNoSpaceWithNothingLost() {
    byte[] a = new byte[3 * 65536];
    new Random(1).nextBytes(a);
    try (NodeWriter w = nodes.create("/on-disk", CreateOptions.inClass("disk"))) {
      w.writeSync(ByteBuffer.wrap(a));
    }
    assertEquals(List.of("disk", "disk", "disk"), classes("/on-disk"), "affinity");

    // Default order: dram first; 10 blocks do not fit the 8 dram blocks, so 2 spill to disk.
    byte[] b = new byte[10 * 65536];
    new Random(2).nextBytes(b);
    try (NodeWriter w = nodes.create("/big")) {
      w.writeSync(ByteBuffer.wrap(b));
    }
    List<String> big = classes("/big");
    assertEquals(8, count(big, "dram"), big.toString());
    assertEquals(2, count(big, "disk"), big.toString());

    ClusterStatus st = nodes.client().status();
    long diskUsed = 0;
    for (ClusterStatus.Member m : st.members()) {
      for (ClusterStatus.ClassUsage u : m.usage()) {
        if (u.storageClass().equals("disk")) {
          diskUsed += u.usedBytes();
        }
      }
    }
    assertEquals(5 * 65536, diskUsed, "status shows use per class");

    // 3 disk blocks left. Write 2 and flush, then 2 more: NO_SPACE, the flushed part stays.
    NodeWriter w = nodes.create("/overflow");
    byte[] first = new byte[2 * 65536];
    Arrays.fill(first, (byte) 7);
    w.writeSync(ByteBuffer.wrap(first));
    w.flush();
    w.writeSync(ByteBuffer.wrap(new byte[65536]));
    NodesException e =
        assertThrows(NodesException.class, () -> w.writeSync(ByteBuffer.wrap(new byte[65536])));
    assertEquals(NodesException.Reason.NO_SPACE, e.reason(), e.getMessage());
    assertTrue(e.getMessage().contains("dram"), e.getMessage());
    assertArrayEquals(first, nodes.getBytes("/overflow"));
    assertArrayEquals(a, nodes.getBytes("/on-disk"));
    assertArrayEquals(b, nodes.getBytes("/big"));
    w.abort();
    assertArrayEquals(first, nodes.getBytes("/overflow"), "abort keeps what was published");

    // A KeyValue put that does not fit is all or none: the old value stays.
    nodes.createTable("/t", true);
    nodes.put("/t/k", new byte[] {1, 2});
    e = assertThrows(NodesException.class, () -> nodes.put("/t/k", new byte[20 * 65536]));
    assertEquals(NodesException.Reason.NO_SPACE, e.reason());
    assertArrayEquals(new byte[] {1, 2}, nodes.getBytes("/t/k"));
  }
}
