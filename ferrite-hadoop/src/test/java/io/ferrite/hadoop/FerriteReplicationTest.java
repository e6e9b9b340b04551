package io.ferrite.hadoop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.nodes.Nodes;
import java.io.IOException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Hadoop's replication maps to a File's copies on a two-server cluster: {@code create}'s argument
 * (clamped to the ALIVE servers), the configured default, {@code setReplication}, and {@code
 * getReplication} reporting what the nodes face holds.
 */
@ExtendWith(SeedExtension.class)
class FerriteReplicationTest {
  static TestCluster cluster;
  static FileSystem fs;
  static Nodes nodes;

  @BeforeAll
  static void start() throws Exception {
    cluster = TestCluster.start("tcp");
    fs = FileSystem.get(cluster.uri, cluster.configuration());
    nodes = ((FerriteFileSystem) fs).nodes();
  }

  @AfterAll
  static void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  /** Writes {@code data} to {@code p} asking for {@code replication}; reads it back. */
  private static FileStatus write(FileSystem on, Path p, short replication, byte[] data)
      throws IOException {
    try (FSDataOutputStream out =
        on.create(p, true, 4096, replication, on.getDefaultBlockSize(p))) {
      out.write(data);
    }
    byte[] back = new byte[data.length];
    try (FSDataInputStream in = on.open(p)) {
      in.readFully(0, back);
    }
    assertArrayEquals(data, back);
    return on.getFileStatus(p);
  }

  private static byte[] data(Random random) {
    byte[] b = new byte[(int) (2 * TestCluster.BLOCK_SIZE + 5)];
    random.nextBytes(b);
    return b;
  }

  @Test
  void createMakesTheCopiesAskedFor(Random random) throws Exception {
    FileStatus two = write(fs, new Path("/rep/two"), (short) 2, data(random));
    assertEquals(2, two.getReplication());
    assertEquals(2, nodes.lookup("/rep/two").replicas(), "the nodes face holds 2 copies");
    for (BlockLocation l : fs.getFileBlockLocations(two, 0, two.getLen())) {
      assertEquals(2, new HashSet<>(Arrays.asList(l.getNames())).size(), l.toString());
    }
    FileStatus one = write(fs, new Path("/rep/one"), (short) 1, data(random));
    assertEquals(1, one.getReplication());
    assertEquals(1, nodes.lookup("/rep/one").replicas());
  }

  @Test
  void moreCopiesThanAliveServersAreClampedToThem(Random random) throws Exception {
    // Two servers ALIVE: HDFS's 3 and MapReduce's 10 for job files both get 2 copies, not a
    // refusal.
    for (short asked : new short[] {3, 10}) {
      Path p = new Path("/clamped/r" + asked);
      assertEquals(2, write(fs, p, asked, data(random)).getReplication(), "asked " + asked);
      assertEquals(2, nodes.lookup(p.toUri().getPath()).replicas());
    }
    assertEquals(1, write(fs, new Path("/clamped/r0"), (short) 0, data(random)).getReplication());
  }

  /** A file system of its own with {@code key}s set (the cached one keeps its configuration). */
  private static FileSystem withConf(String... keyValues) throws IOException {
    Configuration conf = cluster.configuration();
    for (int i = 0; i < keyValues.length; i += 2) {
      conf.set(keyValues[i], keyValues[i + 1]);
    }
    return FileSystem.newInstance(cluster.uri, conf);
  }

  @Test
  void theDefaultIsFerriteReplicationThenDfsReplicationThenOne(Random random) throws Exception {
    Path p = new Path("/defaults/f");
    assertEquals(1, fs.getDefaultReplication(p));
    try (FileSystem dfs = withConf(FerriteFsConfig.DFS_REPLICATION, "2")) {
      assertEquals(2, dfs.getDefaultReplication(p));
      try (FSDataOutputStream out = dfs.create(p, true)) { // the caller asks for the default
        out.write(data(random));
      }
      assertEquals(2, dfs.getFileStatus(p).getReplication());
      assertEquals(2, nodes.lookup("/defaults/f").replicas());
    }
    try (FileSystem both =
        withConf(FerriteFsConfig.REPLICATION, "1", FerriteFsConfig.DFS_REPLICATION, "3")) {
      assertEquals(1, both.getDefaultReplication(p), "fs.ferrite.replication wins");
    }
    try (FileSystem many = withConf(FerriteFsConfig.REPLICATION, "7")) {
      assertEquals(3, many.getDefaultReplication(p), "at most 3 copies");
    }
    IOException bad =
        assertThrows(IOException.class, () -> withConf(FerriteFsConfig.REPLICATION, "two"));
    assertTrue(bad.getMessage().contains(FerriteFsConfig.REPLICATION), bad.getMessage());
    bad = assertThrows(IOException.class, () -> withConf(FerriteFsConfig.DFS_REPLICATION, "0"));
    assertTrue(bad.getMessage().contains(FerriteFsConfig.DFS_REPLICATION), bad.getMessage());
  }

  @Test
  void setReplicationIsTrueOnlyForTheCopiesAFileHas(Random random) throws Exception {
    Path p = new Path("/setrep/f");
    write(fs, p, (short) 2, data(random));
    assertTrue(fs.setReplication(p, (short) 2));
    assertTrue(fs.setReplication(p, (short) 3), "3 on two ALIVE servers is 2: what it has");
    assertFalse(fs.setReplication(p, (short) 1), "a File's copies are fixed at create");
    assertEquals(2, fs.getFileStatus(p).getReplication(), "unchanged");
    assertFalse(fs.setReplication(new Path("/setrep"), (short) 2), "a directory");
    assertThrows(
        java.io.FileNotFoundException.class, () -> fs.setReplication(new Path("/none"), (short) 1));
  }
}
