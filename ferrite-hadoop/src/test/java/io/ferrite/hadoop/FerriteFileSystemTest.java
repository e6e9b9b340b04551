package io.ferrite.hadoop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.NamedThreadFactory;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.config.ClusterFile;
import io.ferrite.nodes.Nodes;
import io.ferrite.nodes.NodesException;
import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FsShell;
import org.apache.hadoop.fs.FsStatus;
import org.apache.hadoop.fs.ParentNotDirectoryException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathIOException;
import org.apache.hadoop.fs.PathIsNotEmptyDirectoryException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the contract tests do not cover: discovery through {@code META-INF/services}, finding the
 * cluster and its secret, the other node types seen through Hadoop, the exception types, and
 * positioned reads from several threads. One cluster for the class; clients over tcp.
 */
@ExtendWith(SeedExtension.class)
class FerriteFileSystemTest {
  static TestCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster = TestCluster.start("tcp");
  }

  @AfterAll
  static void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static FileSystem fs() throws IOException {
    return FileSystem.get(cluster.uri, cluster.configuration());
  }

  private static byte[] read(FileSystem fs, Path p) throws IOException {
    try (FSDataInputStream in = fs.open(p)) {
      return in.readAllBytes();
    }
  }

  @Test
  void fileSystemGetFindsItThroughTheServiceFile() throws Exception {
    Configuration conf = cluster.configuration();
    assertNull(conf.get("fs.ferrite.impl"), "found without fs.ferrite.impl");
    assertEquals(FerriteFileSystem.class, FileSystem.getFileSystemClass("ferrite", conf));
    URI uri = URI.create("ferrite://127.0.0.1:" + cluster.uri.getPort() + "/");
    FileSystem fs = FileSystem.get(uri, conf);
    assertInstanceOf(FerriteFileSystem.class, fs);
    assertEquals("ferrite", fs.getScheme());
    assertEquals(uri, fs.getUri());
    Path p = new Path("/service/hello");
    try (FSDataOutputStream out = fs.create(p)) {
      out.write("hello".getBytes(StandardCharsets.UTF_8));
    }
    assertEquals("hello", new String(read(fs, p), StandardCharsets.UTF_8));
    assertEquals(new Path(uri.toString() + "service/hello"), fs.getFileStatus(p).getPath());
  }

  @Test
  void statusIsTheCapacityAndUseOfTheLiveServers() throws Exception {
    FileSystem fs = fs();
    FsStatus before = fs.getStatus();
    assertEquals(2 * 8 << 20, before.getCapacity(), "two servers of 8 MiB dram");
    Path p = new Path("/status/f");
    try (FSDataOutputStream out = fs.create(p)) {
      out.write(new byte[(int) (3 * TestCluster.BLOCK_SIZE)]);
    }
    FsStatus after = fs.getStatus();
    assertTrue(
        after.getUsed() >= before.getUsed() + 3 * TestCluster.BLOCK_SIZE,
        before.getUsed() + " -> " + after.getUsed());
    assertEquals(after.getCapacity() - after.getUsed(), after.getRemaining());
    assertTrue(fs.delete(p.getParent(), true));
  }

  @Test
  void hadoopsShellWorksOnFerritePaths(@TempDir java.nio.file.Path local) throws Exception {
    String base = cluster.uri + "shell";
    java.nio.file.Path in = local.resolve("in.txt");
    Files.writeString(in, "hello shell\n", StandardCharsets.UTF_8);
    FsShell shell = new FsShell(cluster.configuration());
    try {
      assertEquals(0, shell.run(new String[] {"-mkdir", "-p", base + "/a/b"}));
      // put writes a ._COPYING_ file, then renames it into place
      assertEquals(0, shell.run(new String[] {"-put", in.toString(), base + "/a/b/in.txt"}));
      assertEquals(0, shell.run(new String[] {"-mv", base + "/a/b/in.txt", base + "/a/in.txt"}));
      assertEquals(0, shell.run(new String[] {"-ls", "-R", base}));
      assertEquals(0, shell.run(new String[] {"-df", base}));
      java.nio.file.Path out = local.resolve("out.txt");
      assertEquals(0, shell.run(new String[] {"-get", base + "/a/in.txt", out.toString()}));
      assertEquals("hello shell\n", Files.readString(out, StandardCharsets.UTF_8));
      assertEquals(0, shell.run(new String[] {"-rm", "-r", base}));
      assertFalse(fs().exists(new Path("/shell")));
    } finally {
      shell.close();
    }
  }

  @Test
  void aUriWithoutHostMeansTheClusterFile() throws Exception {
    Path p = new Path("/clusterfile/x");
    fs().mkdirs(p);
    java.nio.file.Path file = cluster.dir.resolve("cluster");
    new ClusterFile(
            "ferrite://127.0.0.1:" + cluster.uri.getPort(),
            TestCluster.CREDENTIALS.clusterId(),
            cluster.secretFile)
        .write(file);
    Configuration conf = new Configuration();
    conf.set(FerriteFsConfig.CLUSTER_FILE, file.toString());
    conf.set(FerriteFsConfig.FABRIC, "tcp");
    try (FileSystem fs = FileSystem.newInstance(URI.create("ferrite:///"), conf)) {
      assertTrue(fs.getFileStatus(p).isDirectory());
      assertEquals(URI.create("ferrite:///"), fs.getUri());
    }
  }

  @Test
  void aTrustFileThatCannotBeReadIsNamed() throws Exception {
    Configuration conf = cluster.configuration();
    java.nio.file.Path missing = cluster.dir.resolve("no-trust.pem");
    conf.set(FerriteFsConfig.TLS_TRUST, missing.toString());
    IOException e =
        assertThrows(IOException.class, () -> FileSystem.newInstance(cluster.uri, conf));
    assertTrue(
        e.getMessage().contains("trust file " + missing + " is not readable"), e.getMessage());
  }

  @Test
  void theSecretMayComeInHexAndAWrongOneFails() throws Exception {
    Configuration conf = new Configuration();
    conf.set(FerriteFsConfig.CLUSTER_FILE, cluster.dir.resolve("none").toString());
    conf.set(FerriteFsConfig.CLUSTER_ID, TestCluster.CREDENTIALS.clusterId());
    conf.set(FerriteFsConfig.SECRET, HexFormat.of().formatHex(TestCluster.CREDENTIALS.secret()));
    try (FileSystem fs = FileSystem.newInstance(cluster.uri, conf)) {
      assertTrue(fs.mkdirs(new Path("/hex")));
    }
    byte[] wrong = TestCluster.CREDENTIALS.secret();
    wrong[0] ^= 1;
    conf.set(FerriteFsConfig.SECRET, HexFormat.of().formatHex(wrong));
    IOException e =
        assertThrows(IOException.class, () -> FileSystem.newInstance(cluster.uri, conf));
    assertTrue(e.getMessage().contains("connect to"), e.getMessage());

    conf.unset(FerriteFsConfig.SECRET);
    e = assertThrows(IOException.class, () -> FileSystem.newInstance(cluster.uri, conf));
    assertTrue(e.getMessage().contains(FerriteFsConfig.SECRET_FILE), e.getMessage());
  }

  @Test
  void tablesAndBagsAreDirectoriesAndKeyValuesReadOnlyFiles(Random random) throws Exception {
    FerriteFileSystem fs = (FerriteFileSystem) fs();
    Nodes nodes = fs.nodes();
    nodes.createTable("/t", true);
    byte[] big = new byte[(int) (TestCluster.BLOCK_SIZE + 100)];
    random.nextBytes(big);
    nodes.put("/t/big", big);
    nodes.put("/t/small", new byte[] {1, 2, 3});
    nodes.createBag("/b");
    try (FSDataOutputStream out = fs.create(new Path("/b/part-0"))) {
      out.write(big, 0, 10);
    }

    assertTrue(fs.getFileStatus(new Path("/t")).isDirectory());
    assertTrue(fs.getFileStatus(new Path("/b")).isDirectory());
    FileStatus[] kvs = fs.listStatus(new Path("/t"));
    assertEquals(2, kvs.length);
    assertEquals("big", kvs[0].getPath().getName());
    assertTrue(kvs[0].isFile());
    assertEquals(big.length, kvs[0].getLen());
    assertEquals(3, kvs[1].getLen());
    assertArrayEquals(big, read(fs, new Path("/t/big")));
    assertArrayEquals(new byte[] {1, 2, 3}, read(fs, new Path("/t/small")));
    assertEquals(1, fs.listStatus(new Path("/b")).length);

    // Only keyvalues live in a table, and only through put; only files in a bag.
    assertThrows(ParentNotDirectoryException.class, () -> fs.create(new Path("/t/file")));
    assertThrows(ParentNotDirectoryException.class, () -> fs.mkdirs(new Path("/t/dir")));
    assertThrows(ParentNotDirectoryException.class, () -> fs.mkdirs(new Path("/b/dir")));
    PathIOException e = assertThrows(PathIOException.class, () -> fs.append(new Path("/t/small")));
    assertEquals(
        NodesException.Reason.WRONG_TYPE, ((NodesException) e.getCause()).reason(), e.toString());

    // A small value lives in the master's metadata, a large one in a server's blocks.
    BlockLocation[] small = fs.getFileBlockLocations(new Path("/t/small"), 0, 3);
    assertEquals(1, small.length);
    assertEquals("127.0.0.1:" + cluster.uri.getPort(), small[0].getNames()[0]);
    assertEquals(2, fs.getFileBlockLocations(new Path("/t/big"), 0, big.length).length);
    assertTrue(fs.delete(new Path("/t"), true));
    assertTrue(fs.delete(new Path("/b"), true));
  }

  @Test
  void failuresHaveTheSpecificationsExceptionTypes() throws Exception {
    FileSystem fs = fs();
    Path dir = new Path("/errors");
    Path file = new Path(dir, "f");
    fs.create(file).close();
    assertThrows(FileNotFoundException.class, () -> fs.open(new Path(dir, "missing")));
    assertThrows(FileNotFoundException.class, () -> fs.open(dir));
    assertThrows(FileNotFoundException.class, () -> fs.getFileStatus(new Path(dir, "missing")));
    assertThrows(FileNotFoundException.class, () -> fs.listStatus(new Path(dir, "missing")));
    assertThrows(FileAlreadyExistsException.class, () -> fs.create(file, false));
    assertThrows(FileAlreadyExistsException.class, () -> fs.create(dir, true));
    assertThrows(FileAlreadyExistsException.class, () -> fs.mkdirs(file));
    assertThrows(ParentNotDirectoryException.class, () -> fs.mkdirs(new Path(file, "sub")));
    assertThrows(ParentNotDirectoryException.class, () -> fs.create(new Path(file, "sub")));
    assertThrows(
        FileNotFoundException.class,
        () -> fs.createFile(new Path("/nowhere/f")).overwrite(true).build()); // not recursive
    assertFalse(fs.exists(new Path("/nowhere")));
    assertThrows(PathIsNotEmptyDirectoryException.class, () -> fs.delete(dir, false));
    assertThrows(IOException.class, () -> fs.rename(dir, new Path(dir, "inside")));
    assertFalse(fs.rename(new Path(dir, "missing"), new Path(dir, "other")));
    assertFalse(fs.rename(file, new Path("/nowhere/f")));
    assertFalse(fs.delete(new Path(dir, "missing"), true));

    // One writer at a time: a second append waits for the first to close.
    try (FSDataOutputStream a = fs.append(file)) {
      a.write(1);
      PathIOException locked = assertThrows(PathIOException.class, () -> fs.append(file));
      assertEquals(
          NodesException.Reason.WRITE_LOCKED, ((NodesException) locked.getCause()).reason());
    }
    try (FSDataOutputStream a = fs.append(file)) {
      a.write(2);
    }
    assertArrayEquals(new byte[] {1, 2}, read(fs, file));

    try (FSDataInputStream in = fs.open(file)) {
      assertThrows(EOFException.class, () -> in.seek(3));
      assertThrows(EOFException.class, () -> in.readFully(1, new byte[2]));
    }
    FSDataOutputStream closed = fs.create(new Path(dir, "closed"));
    closed.close();
    assertThrows(IOException.class, () -> closed.write(1));
    assertTrue(fs.delete(dir, true));
  }

  @Test
  void namesAreCaseSensitive() throws Exception {
    FileSystem fs = fs();
    try (FSDataOutputStream out = fs.create(new Path("/case/Name"))) {
      out.write(1);
    }
    try (FSDataOutputStream out = fs.create(new Path("/case/name"), false)) {
      out.write(2);
    }
    assertEquals(2, fs.listStatus(new Path("/case")).length);
    assertArrayEquals(new byte[] {1}, read(fs, new Path("/case/Name")));
    assertArrayEquals(new byte[] {2}, read(fs, new Path("/case/name")));
    assertFalse(fs.exists(new Path("/case/NAME")));
    assertTrue(fs.delete(new Path("/case"), true));
  }

  @Test
  void overwriteReplacesTheDataAndHflushPublishes(Random random) throws Exception {
    FileSystem fs = fs();
    Path p = new Path("/overwrite/f");
    byte[] first = new byte[5000];
    byte[] second = new byte[300];
    random.nextBytes(first);
    random.nextBytes(second);
    try (FSDataOutputStream out = fs.create(p)) {
      out.write(first);
      assertEquals(0, fs.getFileStatus(p).getLen(), "visible at once, empty until flushed");
      out.hflush();
      assertEquals(first.length, fs.getFileStatus(p).getLen());
      assertArrayEquals(first, read(fs, p));
    }
    try (FSDataOutputStream out = fs.create(p, true)) {
      out.write(second);
    }
    assertArrayEquals(second, read(fs, p));
    assertTrue(fs.delete(p.getParent(), true));
  }

  @Test
  void positionedReadsFromManyThreads(Random random) throws Exception {
    FileSystem fs = fs();
    Path p = new Path("/pread/f");
    byte[] data = new byte[(int) (3 * TestCluster.BLOCK_SIZE + 777)];
    random.nextBytes(data);
    try (FSDataOutputStream out = fs.create(p)) {
      out.write(data);
    }
    ExecutorService pool =
        new ThreadPoolExecutor(
            4,
            4,
            0,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(),
            new NamedThreadFactory("pread-test", true));
    try (FSDataInputStream in = fs.open(p)) {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        long seed = random.nextLong();
        done.add(
            pool.submit(
                () -> {
                  Random r = new Random(seed);
                  for (int i = 0; i < 50; i++) {
                    int pos = r.nextInt(data.length);
                    int len = 1 + r.nextInt(Math.min(data.length - pos, 100_000));
                    byte[] got = new byte[len];
                    in.readFully(pos, got);
                    if (!Arrays.equals(got, Arrays.copyOfRange(data, pos, pos + len))) {
                      throw new AssertionError("bytes at " + pos + " (" + len + " B)");
                    }
                  }
                  return null;
                }));
      }
      in.seek(17); // the sequential position is not disturbed by positioned reads
      for (Future<?> f : done) {
        f.get();
      }
      assertEquals(17, in.getPos());
      assertEquals(data[17], (byte) in.read());
    } finally {
      pool.shutdownNow();
    }
  }
}
