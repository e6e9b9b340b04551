package io.ferrite.nodes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.nodes.master.NodesMaster;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Gets that reuse a kept lookup (the master reached over shm or the local fabric): every change to
 * the path's nodes is seen by the next get, and a history of concurrent puts, moves and gets is
 * linearizable (a single-writer register: every get returns a value at least as new as the last put
 * completed before it started, and as the newest value any get completed before it started
 * returned).
 */
@ExtendWith(SeedExtension.class)
class NodesCachedGetTest {
  @TempDir Path dir;
  @AutoClose ClusterHarness cluster;
  final List<Nodes> clients = new ArrayList<>();

  private void start(boolean shm) throws Exception {
    start(shm, Map.of());
  }

  private void start(boolean shm, Map<String, String> more) throws Exception {
    Map<String, String> settings =
        new java.util.HashMap<>(
            Map.of(
                FerriteConfig.CAPACITY_DRAM, "4m",
                FerriteConfig.CAPACITY_DISK, "0",
                FerriteConfig.SESSION_LEASE, "2s",
                FerriteConfig.SERVICE_THREADS, "4",
                // Patient: on a loaded machine the harness's 400 ms would declare servers dead.
                FerriteConfig.DEAD_TIMEOUT, "10s"));
    settings.putAll(more);
    cluster =
        new ClusterHarness(
            dir,
            new Credentials(
                "cached-gets", "0123456789abcdef-cached-secret".getBytes(StandardCharsets.UTF_8)),
            shm,
            settings);
    cluster.startMaster(List.of(new NodesMaster(Duration.ofMillis(50))));
    cluster.startServer("s1");
    cluster.startServer("s2");
    cluster.awaitServers(2);
  }

  private Nodes nodes() {
    Nodes n = new Nodes(cluster.client());
    clients.add(n);
    return n;
  }

  private static byte[] value(long v, int size) {
    ByteBuffer b = ByteBuffer.allocate(Math.max(8, size)).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(0, v);
    for (int i = 8; i < b.capacity(); i++) {
      b.put(i, (byte) v);
    }
    return b.array();
  }

  private static long valueOf(byte[] b) {
    ByteBuffer w = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    long v = w.getLong(0);
    for (int i = 8; i < b.length; i++) {
      if (b[i] != (byte) v) {
        throw new AssertionError("a mix of values: " + v + " and byte " + b[i] + " at " + i);
      }
    }
    return v;
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void everyChangeToThePathIsSeenByTheNextGet(boolean shm) throws Exception {
    start(shm);
    Nodes nodes = nodes();
    assertEquals(shm ? "shm" : "local", nodes.client().masterFabric());
    nodes.mkdir("/d");
    nodes.createTable("/d/t", true);
    nodes.put("/d/t/k", new byte[] {1, 2, 3, 4});
    assertArrayEquals(new byte[] {1, 2, 3, 4}, nodes.getBytes("/d/t/k"));
    assertEquals(1, nodes.keptLookups(), "the get kept its lookup");
    assertArrayEquals(new byte[] {1, 2, 3, 4}, nodes.getBytes("/d/t/k"));
    // Replaced, by another client: inline, then in blocks, then inline again.
    Nodes other = nodes();
    other.put("/d/t/k", new byte[] {5});
    assertArrayEquals(new byte[] {5}, nodes.getBytes("/d/t/k"));
    byte[] big = value(42, 100_000);
    other.put("/d/t/k", big);
    assertArrayEquals(big, nodes.getBytes("/d/t/k"));
    assertArrayEquals(big, nodes.getBytes("/d/t/k"));
    other.put("/d/t/k", new byte[] {6});
    assertArrayEquals(new byte[] {6}, nodes.getBytes("/d/t/k"));
    // Moved away, and a KeyValue moved onto it.
    other.move("/d/t/k", "/d/t/k2");
    assertEquals(
        NodesException.Reason.NOT_FOUND,
        assertThrows(NodesException.class, () -> nodes.getBytes("/d/t/k")).reason());
    assertArrayEquals(new byte[] {6}, nodes.getBytes("/d/t/k2"));
    other.put("/d/t/k3", new byte[] {7});
    other.move("/d/t/k3", "/d/t/k2");
    assertArrayEquals(new byte[] {7}, nodes.getBytes("/d/t/k2"));
    // An ancestor moved, then removed.
    other.move("/d/t", "/d/u");
    assertThrows(NodesException.class, () -> nodes.getBytes("/d/t/k2"));
    assertArrayEquals(new byte[] {7}, nodes.getBytes("/d/u/k2"));
    other.remove("/d", true);
    assertThrows(NodesException.class, () -> nodes.getBytes("/d/u/k2"));
    // A File grows with each publish.
    other.mkdir("/f");
    NodeWriter w = other.create("/f/log");
    w.writeSync(ByteBuffer.wrap(new byte[] {1}));
    w.flush();
    assertArrayEquals(new byte[] {1}, nodes.getBytes("/f/log"));
    w.writeSync(ByteBuffer.wrap(new byte[] {2}));
    w.close();
    assertArrayEquals(new byte[] {1, 2}, nodes.getBytes("/f/log"));
  }

  @Test
  void aRestartedMasterInvalidatesWhatClientsKept() throws Exception {
    // The master comes back on the same tcp port, where the client finds it again.
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort();
    }
    start(true, Map.of(FerriteConfig.MASTER_PORT, Integer.toString(port)));
    Nodes nodes = nodes();
    nodes.createTable("/t", true);
    nodes.put("/t/k", new byte[] {1});
    assertArrayEquals(new byte[] {1}, nodes.getBytes("/t/k"));
    cluster.startMaster(List.of(new NodesMaster(Duration.ofMillis(50))));
    cluster.awaitServers(2);
    Nodes other = nodes();
    other.put("/t/k", new byte[] {2});
    assertArrayEquals(new byte[] {2}, nodes.getBytes("/t/k"));
  }

  @Test
  @Timeout(300)
  void concurrentPutsMovesAndGetsAreLinearizableOverShm(TestSeed seed) throws Exception {
    linearizable(true, seed);
  }

  @Test
  @Timeout(300)
  void concurrentPutsMovesAndGetsAreLinearizableOverLocal(TestSeed seed) throws Exception {
    linearizable(false, seed);
  }

  /**
   * One writer makes values 1, 2, 3... at /t/k by puts (inline or in blocks) and by moving a
   * KeyValue onto it; readers get /t/k in a loop, each with its own client (so each keeps its own
   * lookups). For a linearizable single-writer register: a get returns at least the last value
   * whose put completed before the get began, and at least the newest value any get completed
   * before it began.
   */
  private void linearizable(boolean shm, TestSeed seed) throws Exception {
    start(shm);
    Nodes writer = nodes();
    writer.createTable("/t", true);
    writer.put("/t/k", value(0, 8));
    int readers = 3;
    List<Nodes> readerNodes = new ArrayList<>();
    for (int i = 0; i < readers; i++) {
      readerNodes.add(nodes());
    }
    AtomicLong written = new AtomicLong(); // the last value whose put completed
    AtomicLong seen = new AtomicLong(); // the newest value a completed get returned
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicLong gets = new AtomicLong();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < readers; i++) {
      Nodes n = readerNodes.get(i);
      Thread t =
          new Thread(
              () -> {
                try {
                  while (!stop.get() && failure.get() == null) {
                    long floor = Math.max(written.get(), seen.get());
                    long v = valueOf(n.getBytes("/t/k"));
                    if (v < floor) {
                      throw new AssertionError(
                          "get returned " + v + " after " + floor + " was written or seen");
                    }
                    seen.accumulateAndGet(v, Math::max);
                    gets.incrementAndGet();
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "reader-" + i);
      threads.add(t);
      t.start();
    }
    Random random = new Random(seed.value());
    try {
      for (long v = 1; v <= 300 && failure.get() == null; v++) {
        int size = random.nextInt(4) == 0 ? 70_000 : 4 + random.nextInt(60);
        if (random.nextInt(3) == 0) {
          writer.put("/t/next", value(v, size));
          writer.move("/t/next", "/t/k");
        } else {
          writer.put("/t/k", value(v, size));
        }
        written.set(v);
        if (random.nextInt(4) == 0) {
          Thread.sleep(random.nextInt(3));
        }
      }
    } finally {
      stop.set(true);
      for (Thread t : threads) {
        t.join();
      }
    }
    if (failure.get() != null) {
      throw new AssertionError(
          "not linearizable (replay with " + seed.reproduceOption() + ")", failure.get());
    }
    assertTrue(gets.get() > 0);
    assertTrue(readerNodes.get(0).keptLookups() <= 1);
  }
}
