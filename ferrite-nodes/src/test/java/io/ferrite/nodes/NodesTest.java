package io.ferrite.nodes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.BlockRef;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The nodes face end to end over the local fabric: the five node types, data plane, recovery. */
@ExtendWith(SeedExtension.class)
class NodesTest {
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

  static byte[] random(Random r, int n) {
    byte[] b = new byte[n];
    r.nextBytes(b);
    return b;
  }

  static byte[] readAll(InputStream in) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    in.transferTo(out);
    return out.toByteArray();
  }

  private List<BlockRef> owned(long id) {
    return cluster.master.state().owned("nodes:" + id);
  }

  @Test
  void fileRoundTripOverBlocksOnEveryServer(Random random) throws Exception {
    nodes.mkdirs("/a/b");
    byte[] data = random(random, 300 * 1024 + 17);
    NodeWriter w = nodes.create("/a/b/f");
    try (OutputStream out = w.outputStream()) {
      int at = 0;
      while (at < data.length) {
        int n = Math.min(data.length - at, 1 + random.nextInt(40_000));
        out.write(data, at, n);
        at += n;
      }
      assertFalse(nodes.exists("/a/b/f"), "invisible until published");
    }
    NodeInfo info = nodes.lookup("/a/b/f");
    assertEquals(NodeType.FILE, info.type());
    assertEquals(data.length, info.size());
    assertEquals(5, info.blockCount(), "300 KiB in 64 KiB blocks, extras trimmed at close");
    Set<Integer> servers = new HashSet<>();
    for (BlockRef b : owned(info.id())) {
      servers.add(b.serverId());
    }
    assertEquals(2, servers.size(), "blocks go round-robin over both servers");

    NodeReader reader = nodes.open("/a/b/f");
    assertArrayEquals(data, readAll(reader.inputStream()));
    for (int i = 0; i < 50; i++) {
      int pos = random.nextInt(data.length);
      int len = Math.min(data.length - pos, random.nextInt(150_000));
      ByteBuffer dst = ByteBuffer.allocate(len);
      reader.readFully(pos, dst);
      assertArrayEquals(Arrays.copyOfRange(data, pos, pos + len), dst.array());
    }
    NodeReader.SeekableInputStream in = reader.inputStream();
    in.seek(70_000);
    byte[] b = new byte[10];
    assertEquals(10, in.readNBytes(b, 0, 10));
    assertArrayEquals(Arrays.copyOfRange(data, 70_000, 70_010), b);
    in.seek(data.length);
    assertEquals(-1, in.read());
    assertEquals(-1, (int) reader.read(data.length, ByteBuffer.allocate(4)).join());
  }

  @Test
  void appendWithOneWriterAtATime(Random random) throws Exception {
    byte[] one = random(random, 70_000);
    byte[] two = random(random, 100_000);
    try (NodeWriter w = nodes.create("/f")) {
      w.writeSync(ByteBuffer.wrap(one));
    }
    Nodes other = cluster.nodes();
    NodeWriter w2 = nodes.append("/f");
    NodesException e = assertThrows(NodesException.class, () -> other.append("/f"));
    assertEquals(NodesException.Reason.WRITE_LOCKED, e.reason());
    assertTrue(e.retryable());
    w2.writeSync(ByteBuffer.wrap(two));
    assertEquals(one.length, nodes.lookup("/f").size(), "readers see the published size");
    w2.flush();
    assertEquals(one.length + two.length, nodes.lookup("/f").size());
    w2.close();
    try (NodeWriter w3 = other.append("/f")) {
      w3.writeSync(ByteBuffer.wrap(new byte[] {1, 2, 3}));
    }
    byte[] all = readAll(nodes.open("/f").inputStream());
    assertEquals(one.length + two.length + 3, all.length);
    assertArrayEquals(one, Arrays.copyOf(all, one.length));
    assertArrayEquals(two, Arrays.copyOfRange(all, one.length, one.length + two.length));
  }

  @Test
  void keyValuesReplaceAtomically(Random random) throws Exception {
    nodes.createTable("/t", true);
    nodes.put("/t/small", "hello".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    assertEquals(
        "hello", new String(nodes.getBytes("/t/small"), java.nio.charset.StandardCharsets.UTF_8));
    byte[] big = random(random, 200_000);
    nodes.put("/t/big", big);
    assertArrayEquals(big, nodes.getBytes("/t/big"));
    long firstId = nodes.lookup("/t/big").id();
    nodes.put("/t/big", new byte[] {7});
    assertArrayEquals(new byte[] {7}, nodes.getBytes("/t/big"));
    awaitEmpty(firstId);

    // Writers put uniform values of varying sizes; readers must never see a mix.
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Nodes writerNodes = cluster.nodes();
    Thread writer =
        new Thread(
            () -> {
              try {
                for (int i = 0; i < 60 && failure.get() == null; i++) {
                  byte[] v = new byte[2_000 + (i % 3) * 40_000];
                  Arrays.fill(v, (byte) i);
                  writerNodes.put("/t/k", v);
                }
              } catch (Throwable t) {
                failure.set(t);
              } finally {
                stop.set(true);
              }
            },
            "kv-writer");
    nodes.put("/t/k", new byte[5000]);
    writer.start();
    int reads = 0;
    while (!stop.get()) {
      byte[] v = nodes.getBytes("/t/k");
      for (byte x : v) {
        if (x != v[0]) {
          throw new AssertionError("a mix of two values after " + reads + " reads");
        }
      }
      reads++;
    }
    writer.join();
    assertNull(failure.get());
    assertTrue(reads > 0);
  }

  private void awaitEmpty(long id) throws InterruptedException {
    for (int i = 0; i < 300 && !owned(id).isEmpty(); i++) {
      Thread.sleep(10);
    }
    assertEquals(List.of(), owned(id), "blocks of node " + id + " reclaimed");
  }

  @Test
  void moveIsAtomicForAConcurrentReader() throws Exception {
    nodes.mkdir("/x");
    nodes.mkdir("/y");
    int n = 60;
    for (int i = 0; i < n; i++) {
      try (NodeWriter w = nodes.create("/x/f" + i)) {
        w.writeSync(ByteBuffer.wrap(new byte[] {(byte) i}));
      }
    }
    // Moves go one way, so a node not at /x/fi any more must be at /y/fi: a move that removed
    // before it inserted (Crail) would show a reader neither.
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<String> failure = new AtomicReference<>();
    Nodes reader = cluster.nodes();
    Thread t =
        new Thread(
            () -> {
              while (!stop.get()) {
                for (int i = 0; i < n; i++) {
                  if (!reader.exists("/x/f" + i) && !reader.exists("/y/f" + i)) {
                    failure.compareAndSet(null, "f" + i + " at neither path");
                  }
                }
              }
            },
            "mover-reader");
    t.start();
    for (int i = 0; i < n; i++) {
      nodes.move("/x/f" + i, "/y/f" + i);
      Thread.sleep(0, 50_000);
    }
    stop.set(true);
    t.join();
    assertNull(failure.get());
    assertArrayEquals(new byte[] {42}, nodes.getBytes("/y/f42"));
    nodes.move("/y", "/x/y2");
    assertEquals(n, nodes.lookup("/x/y2").size());
    assertArrayEquals(new byte[] {42}, nodes.getBytes("/x/y2/f42"));
  }

  @Test
  void enumerationPagesThroughManyChildrenInOrder() {
    nodes.mkdir("/d");
    int n = 5_000;
    for (int i = 0; i < n; i++) {
      nodes.mkdir(String.format(java.util.Locale.ROOT, "/d/c%05d", i));
    }
    List<String> names = new ArrayList<>();
    for (NodeInfo c : nodes.list("/d")) {
      names.add(c.path());
      assertEquals(NodeType.DIRECTORY, c.type());
    }
    assertEquals(n, names.size());
    assertEquals("c00000", names.get(0));
    assertEquals(String.format(java.util.Locale.ROOT, "c%05d", n - 1), names.get(n - 1));
    assertEquals(n, nodes.lookup("/d").size(), "a container's size is its child count");

    nodes.createTable("/hidden", false);
    nodes.put("/hidden/k", new byte[] {1});
    assertFalse(nodes.list("/hidden").iterator().hasNext(), "non-enumerable");
    assertArrayEquals(new byte[] {1}, nodes.getBytes("/hidden/k"));
  }

  @Test
  void bagReadsAsOneStream(Random random) throws Exception {
    nodes.createBag("/bag");
    ByteArrayOutputStream expected = new ByteArrayOutputStream();
    for (int i = 0; i < 20; i++) {
      byte[] d = random(random, random.nextInt(90_000));
      try (NodeWriter w = nodes.create(String.format(java.util.Locale.ROOT, "/bag/part-%03d", i))) {
        w.writeSync(ByteBuffer.wrap(d));
      }
      expected.write(d);
    }
    assertArrayEquals(expected.toByteArray(), readAll(nodes.openBag("/bag")));
  }

  @Test
  void aWriterThatDiesLeavesNothing(Random random) throws Exception {
    FerriteClient c = cluster.client();
    Nodes dying = new Nodes(c);
    NodeWriter w = dying.create("/half");
    w.writeSync(ByteBuffer.wrap(random(random, 150_000)));
    long id = w.info().id();
    assertTrue(owned(id).size() >= 3, "blocks mapped (some ahead of the writer)");
    assertFalse(nodes.exists("/half"));
    NodesException e = assertThrows(NodesException.class, () -> nodes.create("/half"));
    assertEquals(NodesException.Reason.ALREADY_EXISTS, e.reason());
    c.close(); // the session ends with the writer still open
    assertFalse(nodes.exists("/half"));
    awaitEmpty(id);
    try (NodeWriter again = nodes.create("/half")) {
      again.writeSync(ByteBuffer.wrap(new byte[] {9}));
    }
    assertEquals(1, nodes.lookup("/half").size());

    // A client that dies while appending: what it flushed stays, the rest and the lease go.
    FerriteClient c2 = cluster.client();
    NodeWriter app = new Nodes(c2).append("/half");
    app.writeSync(ByteBuffer.wrap(new byte[] {1, 2}));
    app.flush();
    app.writeSync(ByteBuffer.wrap(new byte[70_000]));
    c2.close();
    assertEquals(3, nodes.lookup("/half").size());
    assertFalse(nodes.lookup("/half").writing());
    assertEquals(1, owned(nodes.lookup("/half").id()).size(), "blocks past the size trimmed");
    try (NodeWriter w3 = nodes.append("/half")) {
      w3.writeSync(ByteBuffer.wrap(new byte[] {3}));
    }
    assertArrayEquals(new byte[] {9, 1, 2, 3}, nodes.getBytes("/half"));
  }

  @Test
  void removeReclaimsBlocksRecursively(Random random) throws Exception {
    nodes.mkdirs("/r/s");
    long[] ids = new long[3];
    for (int i = 0; i < 3; i++) {
      try (NodeWriter w = nodes.create("/r/s/f" + i)) {
        w.writeSync(ByteBuffer.wrap(random(random, 100_000)));
        ids[i] = w.info().id();
      }
    }
    long used = used();
    assertEquals(5, nodes.remove("/r", true));
    assertFalse(nodes.exists("/r/s/f0"));
    for (long id : ids) {
      awaitEmpty(id);
    }
    assertEquals(used - 6 * 65536L, used());
  }

  private long used() {
    long u = 0;
    for (var m : nodes.client().status().members()) {
      for (var c : m.usage()) {
        u += c.usedBytes();
      }
    }
    return u;
  }

  @Test
  void theNamespaceSurvivesAMasterRestart(Random random) throws Exception {
    byte[] data = random(random, 130_000);
    nodes.mkdirs("/p/q");
    try (NodeWriter w = nodes.create("/p/q/f")) {
      w.writeSync(ByteBuffer.wrap(data));
    }
    nodes.createTable("/p/t", false);
    nodes.put("/p/t/k", new byte[] {5, 6});
    nodes.createBag("/p/bag");
    nodes.move("/p/q/f", "/p/f");
    cluster.startMaster(); // replay the log
    cluster.awaitServers(2);
    Nodes n2 = cluster.nodes();
    assertArrayEquals(data, n2.getBytes("/p/f"));
    assertArrayEquals(new byte[] {5, 6}, n2.getBytes("/p/t/k"));
    assertEquals(NodeType.BAG, n2.lookup("/p/bag").type());
    cluster.master.snapshot();
    n2.mkdir("/after");
    cluster.startMaster(); // snapshot + log
    cluster.awaitServers(2);
    Nodes n3 = cluster.nodes();
    assertArrayEquals(data, n3.getBytes("/p/f"));
    assertFalse(n3.lookup("/p/t").enumerable());
    assertTrue(n3.exists("/after"));
    assertFalse(n3.exists("/p/q/f"));
    NodesException e = assertThrows(NodesException.class, () -> n3.create("/p/f"));
    assertEquals(NodesException.Reason.ALREADY_EXISTS, e.reason());
    // Ids keep growing after recovery: a new node never reuses a removed node's owner name.
    long before = n3.lookup("/after").id();
    assertTrue(n3.mkdir("/after2").id() > before);
  }

  @Test
  void blocksOfANodeRemovedJustBeforeACrashAreFreedAfterRestart(Random random) throws Exception {
    cluster.startMaster(java.time.Duration.ofHours(1)); // nothing is reclaimed before the "crash"
    cluster.awaitServers(2);
    Nodes n = cluster.nodes();
    long id;
    try (NodeWriter w = n.create("/doomed")) {
      w.writeSync(ByteBuffer.wrap(random(random, 200_000)));
      id = w.info().id();
    }
    n.remove("/doomed", false);
    assertEquals(4, owned(id).size(), "held through the grace period");
    assertEquals(1, cluster.ext.pendingReclaims());
    cluster.master.snapshot(); // the pending reclamation must survive a snapshot too
    cluster.startMaster(); // restart with a short grace: the pending node is found and freed
    cluster.awaitServers(2);
    awaitEmpty(id);
    assertEquals(0, cluster.ext.pendingReclaims());
  }
}
