package io.ferrite.nodes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.proto.BlockRef;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** {@link Nodes#blocks}: where a node's bytes live, beyond the refs a lookup brings. */
@ExtendWith(SeedExtension.class)
class NodesBlocksTest {
  @TempDir Path dir;
  NodesCluster cluster;
  Nodes nodes;

  @BeforeEach
  void start() throws Exception {
    cluster = new NodesCluster(dir, Map.of());
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

  @Test
  void blocksPastTheLookupsRefsComeFromTheMaster(Random random) throws Exception {
    long bs = nodes.blockSize();
    int count = NodesProtocol.LOOKUP_BLOCKS + 5;
    byte[] data = new byte[(int) (bs * (count - 1) + 123)];
    random.nextBytes(data);
    try (OutputStream out = nodes.create("/f").outputStream()) {
      out.write(data);
    }
    NodeInfo info = nodes.lookup("/f");
    assertEquals(count, info.blockCount());
    assertEquals(NodesProtocol.LOOKUP_BLOCKS, info.blocks().size());

    List<BlockRef> all = nodes.blocks(info, 0, Integer.MAX_VALUE);
    assertEquals(count, all.size());
    assertEquals(info.blocks(), all.subList(0, NodesProtocol.LOOKUP_BLOCKS));
    List<BlockRef> owned = cluster.master.state().owned("nodes:" + info.id());
    assertEquals(Set.copyOf(owned), new HashSet<>(all));
    Set<Integer> servers = new HashSet<>();
    for (BlockRef b : all) {
      servers.add(b.serverId());
    }
    assertEquals(2, servers.size(), "round-robin over both servers: " + all);

    // A range inside the lookup's refs, one straddling them, and one past the end.
    assertEquals(all.subList(2, 5), nodes.blocks(info, 2, 3));
    assertEquals(all.subList(6, 11), nodes.blocks(info, 6, 5));
    assertEquals(all.subList(count - 2, count), nodes.blocks(info, count - 2, 10));
    assertTrue(nodes.blocks(info, count, 3).isEmpty());

    // Every block read through its ref holds the bytes of its offset.
    for (int i = 0; i < count; i++) {
      int len = (int) Math.min(bs, data.length - i * bs);
      java.nio.ByteBuffer got = java.nio.ByteBuffer.allocate(len);
      nodes.client().readSync(all.get(i), 0, got);
      for (int j = 0; j < len; j++) {
        if (got.get(j) != data[(int) (i * bs) + j]) {
          throw new AssertionError("block " + i + " byte " + j);
        }
      }
    }
  }

  @Test
  void blocksOfContainersAndInlineValues() {
    nodes.mkdir("/d");
    nodes.createTable("/t", true);
    nodes.put("/t/small", new byte[] {1, 2, 3});
    NodesException e =
        assertThrows(NodesException.class, () -> nodes.blocks(nodes.lookup("/d"), 0, 1));
    assertEquals(NodesException.Reason.WRONG_TYPE, e.reason());
    assertTrue(nodes.blocks(nodes.lookup("/t/small"), 0, 1).isEmpty());
    e = assertThrows(NodesException.class, () -> nodes.blocks(nodes.lookup("/t/small"), -1, 1));
    assertEquals(NodesException.Reason.INVALID_ARGUMENT, e.reason());
  }
}
