package io.ferrite.nodes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.HostIdentity;
import io.ferrite.kernel.server.MemoryServer;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Location hints (paper §4, location classes): a node's blocks come from the memory servers its
 * hint names, within its storage class, and from the others only once those are full.
 */
class NodesLocationTest {
  @TempDir Path dir;
  NodesCluster cluster;
  Nodes nodes;
  final Map<String, Integer> ids = new HashMap<>();

  @BeforeEach
  void start() throws Exception {
    // Three servers with 4 dram blocks of 64 KiB each, no disk. Nothing here dies or expires: a
    // long dead timeout and session lease keep a stall of a loaded machine from declaring a
    // server DEAD (which would change where blocks go) or ending the client's session.
    cluster =
        new NodesCluster(
            dir,
            Map.of(
                FerriteConfig.CAPACITY_DRAM, "256k",
                FerriteConfig.CAPACITY_DISK, "0",
                FerriteConfig.DEAD_TIMEOUT, "30s",
                FerriteConfig.SESSION_LEASE, "30s"));
    cluster.startMaster();
    for (String name : List.of("s1", "s2", "s3")) {
      MemoryServer s = cluster.startServer(name);
      ids.put(name, s.serverId());
    }
    cluster.awaitServers(3);
    nodes = cluster.nodes();
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  private Map<Integer, Integer> blocksPerServer(String path) {
    long id = nodes.lookup(path).id();
    Map<Integer, Integer> out = new HashMap<>();
    for (BlockRef b : cluster.master.state().owned("nodes:" + id)) {
      out.merge(b.serverId(), 1, Integer::sum);
    }
    return out;
  }

  private byte[] write(String path, CreateOptions o, int blocks, long seed) {
    byte[] data = new byte[blocks * 65536];
    new Random(seed).nextBytes(data);
    try (NodeWriter w = nodes.create(path, o)) {
      w.writeSync(ByteBuffer.wrap(data));
    }
    return data;
  }

  @Test
  void blocksGoToTheServerTheHintNames() {
    write("/near-s2", CreateOptions.at("s2"), 3, 1);
    assertEquals(Map.of(ids.get("s2"), 3), blocksPerServer("/near-s2"));
    assertEquals("s2", nodes.lookup("/near-s2").location());
    write("/anywhere", CreateOptions.DEFAULT, 3, 2);
    assertTrue(blocksPerServer("/anywhere").size() >= 2, "no hint: round-robin over servers");
  }

  @Test
  void aFullHintedServerSpillsToTheOthersAndNothingIsLost() {
    // s3 holds 4 blocks: 6 need 2 more from the others.
    byte[] data = write("/big", CreateOptions.at("s3"), 6, 3);
    Map<Integer, Integer> where = blocksPerServer("/big");
    assertEquals(4, where.get(ids.get("s3")), "the hinted server first, until full: " + where);
    assertEquals(6, where.values().stream().mapToInt(Integer::intValue).sum());
    assertArrayEquals(data, nodes.getBytes("/big"));
  }

  @Test
  void keyValuesFollowTheirHintToo() {
    nodes.createTable("/t", true);
    byte[] value = new byte[100_000]; // 2 blocks: not inline
    new Random(4).nextBytes(value);
    nodes.putAsync("/t/k", ByteBuffer.wrap(value), CreateOptions.at("s1")).join();
    assertEquals(Map.of(ids.get("s1"), 2), blocksPerServer("/t/k"));
    assertArrayEquals(value, nodes.getBytes("/t/k"));
  }

  @Test
  void aHostHintMatchesEveryServerOnThatHost() {
    // All three run here: the host's name (or identity) names them all, so round-robin over them.
    String host = HostIdentity.local();
    write("/on-this-host", CreateOptions.at(host.substring(0, host.indexOf('/'))), 3, 5);
    assertEquals(3, blocksPerServer("/on-this-host").size());
    write("/unknown-place", CreateOptions.at("nowhere"), 2, 6);
    assertEquals(2, blocksPerServer("/unknown-place").values().stream().mapToInt(i -> i).sum());
  }
}
