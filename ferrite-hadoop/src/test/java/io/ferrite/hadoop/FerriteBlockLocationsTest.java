package io.ferrite.hadoop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.server.MemoryServer;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code getFileBlockLocations} on a two-server cluster over tcp: every location names the memory
 * server whose region really holds that block's bytes (checked in the servers' own mapped regions,
 * not through the code under test), with the block's offset and length.
 */
@ExtendWith(SeedExtension.class)
class FerriteBlockLocationsTest {
  static TestCluster cluster;
  static FileSystem fs;

  @BeforeAll
  static void start() throws Exception {
    cluster = TestCluster.start("tcp");
    fs = FileSystem.get(cluster.uri, cluster.configuration());
  }

  @AfterAll
  static void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  /** The server whose tcp endpoint is {@code host:port}. */
  private static MemoryServer serverNamed(String name) {
    for (MemoryServer s : cluster.harness.servers) {
      URI tcp = URI.create(s.addresses().get("tcp"));
      if ((tcp.getHost() + ":" + tcp.getPort()).equals(name)) {
        return s;
      }
    }
    throw new AssertionError("no server is " + name);
  }

  /** How many block-aligned slots of {@code s}'s regions hold exactly {@code bytes}. */
  private static int copiesOn(MemoryServer s, byte[] bytes) {
    int found = 0;
    ByteBuffer slot = ByteBuffer.allocate(bytes.length);
    for (MappedRegion r : s.regions().all()) {
      for (long off = 0; off + bytes.length <= r.length(); off += TestCluster.BLOCK_SIZE) {
        slot.clear();
        r.readInto(off, slot);
        if (Arrays.equals(slot.array(), bytes)) {
          found++;
        }
      }
    }
    return found;
  }

  @Test
  void everyBlockIsLocatedOnTheServerThatHoldsIt(Random random) throws Exception {
    long bs = TestCluster.BLOCK_SIZE;
    byte[] data = new byte[(int) (5 * bs + bs / 2)];
    random.nextBytes(data);
    Path file = new Path("/locality/f");
    try (FSDataOutputStream out = fs.create(file)) {
      out.write(data);
    }
    FileStatus status = fs.getFileStatus(file);
    assertEquals(bs, status.getBlockSize());

    BlockLocation[] locs = fs.getFileBlockLocations(status, 0, status.getLen());
    assertEquals(6, locs.length, Arrays.toString(locs));
    Set<String> servers = new HashSet<>();
    for (int i = 0; i < locs.length; i++) {
      BlockLocation l = locs[i];
      assertEquals(i * bs, l.getOffset(), "offset of block " + i);
      assertEquals(Math.min(bs, data.length - i * bs), l.getLength(), "length of block " + i);
      assertEquals(1, l.getHosts().length);
      assertEquals(1, l.getNames().length);
      assertEquals("127.0.0.1", l.getHosts()[0]);
      MemoryServer holder = serverNamed(l.getNames()[0]);
      byte[] block =
          Arrays.copyOfRange(data, (int) l.getOffset(), (int) (l.getOffset() + l.getLength()));
      assertEquals(1, copiesOn(holder, block), "block " + i + " on " + l.getNames()[0]);
      for (MemoryServer other : cluster.harness.servers) {
        if (other != holder) {
          assertEquals(0, copiesOn(other, block), "block " + i + " also on " + other.name());
        }
      }
      servers.add(l.getNames()[0]);
    }
    assertEquals(2, servers.size(), "blocks go round-robin over both servers");

    // A range: the blocks it overlaps, with their whole offsets and lengths.
    BlockLocation[] mid = fs.getFileBlockLocations(status, bs + 10, bs);
    assertEquals(2, mid.length);
    assertEquals(locs[1].toString(), mid[0].toString());
    assertEquals(locs[2].toString(), mid[1].toString());
    BlockLocation[] last = fs.getFileBlockLocations(status, data.length - 1, 100);
    assertEquals(1, last.length);
    assertEquals(locs[5].toString(), last[0].toString());
    assertEquals(0, fs.getFileBlockLocations(status, data.length, 10).length);
    BlockLocation[] zero = fs.getFileBlockLocations(status, 2 * bs, 0);
    assertEquals(1, zero.length);
    assertEquals(locs[2].toString(), zero[0].toString());

    // The path form and the located listing say the same.
    BlockLocation[] byPath = fs.getFileBlockLocations(file, 0, Long.MAX_VALUE);
    assertArrayEquals(strings(locs), strings(byPath));
    RemoteIterator<LocatedFileStatus> it = fs.listFiles(new Path("/locality"), false);
    assertTrue(it.hasNext());
    LocatedFileStatus located = it.next();
    assertArrayEquals(strings(locs), strings(located.getBlockLocations()));
  }

  @Test
  void aReplicatedFilesBlocksNameEveryCopysServer(Random random) throws Exception {
    long bs = TestCluster.BLOCK_SIZE;
    byte[] data = new byte[(int) (3 * bs + 17)];
    random.nextBytes(data);
    io.ferrite.nodes.Nodes nodes = new io.ferrite.nodes.Nodes(cluster.harness.client());
    nodes.mkdir("/replicated");
    try (io.ferrite.nodes.NodeWriter w =
        nodes.create("/replicated/f", io.ferrite.nodes.CreateOptions.replicated(2))) {
      w.writeSync(ByteBuffer.wrap(data));
    }
    FileStatus status = fs.getFileStatus(new Path("/replicated/f"));
    assertEquals(2, status.getReplication());
    BlockLocation[] locs = fs.getFileBlockLocations(status, 0, status.getLen());
    assertEquals(4, locs.length, Arrays.toString(locs));
    for (int i = 0; i < locs.length; i++) {
      BlockLocation l = locs[i];
      assertEquals(i * bs, l.getOffset(), "offset of block " + i);
      assertEquals(2, l.getNames().length, Arrays.toString(l.getNames()));
      assertEquals(2, new HashSet<>(Arrays.asList(l.getNames())).size(), "two servers");
      byte[] block =
          Arrays.copyOfRange(data, (int) l.getOffset(), (int) (l.getOffset() + l.getLength()));
      for (String name : l.getNames()) {
        assertEquals(1, copiesOn(serverNamed(name), block), "block " + i + " on " + name);
      }
    }
    assertEquals(1, fs.getFileStatus(new Path("/replicated")).getReplication());
  }

  @Test
  void emptyFilesAndDirectoriesHaveNoBlocks() throws Exception {
    Path empty = new Path("/locality/empty");
    fs.create(empty).close();
    assertEquals(0, fs.getFileBlockLocations(fs.getFileStatus(empty), 0, 10).length);
    Path dir = new Path("/locality/dir");
    fs.mkdirs(dir);
    assertEquals(0, fs.getFileBlockLocations(fs.getFileStatus(dir), 0, 10).length);
    assertNull(fs.getFileBlockLocations((FileStatus) null, 0, 1));
  }

  private static String[] strings(BlockLocation[] locs) throws IOException {
    List<String> out = new ArrayList<>();
    for (BlockLocation l : locs) {
      out.add(l.toString() + " " + Arrays.toString(l.getNames()));
    }
    return out.toArray(new String[0]);
  }
}
