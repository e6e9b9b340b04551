package io.ferrite.tree.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.tree.TreeConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tree log's tests' cluster, in process over the local fabric: a master and one memory server
 * ({@code tree0}) with small meganodes (32 KiB of 512-byte nodes: a few hundred short keys split
 * one) and the given {@code tree.log.sync}; {@link #restart} closes the server (its DRAM regions
 * go) and starts it again on the same directory, so its trees come back from the log. The test
 * hooks of {@link TreeService} are cleared and the cluster closed after each test.
 */
abstract class DurableTreeFixture {
  static final Credentials CREDENTIALS =
      new Credentials(
          "tree-dur-test", "0123456789abcdef-tree-dur-secret".getBytes(StandardCharsets.UTF_8));

  @TempDir Path dir;
  ClusterHarness cluster;

  /** Every tree service started, in order (a restart clears it first). */
  final List<TreeService> started = new CopyOnWriteArrayList<>();

  @AfterEach
  void stopCluster() throws Exception {
    TreeService.testStarted = null;
    TreeService.testSplitStep = null;
    TreeService.testBeforeAppend = null;
    TreeService.testBeforeReplay = null;
    if (cluster != null) {
      cluster.close();
    }
  }

  /** The configuration of {@link #start}: small meganodes, the log synced by {@code sync}. */
  static Map<String, String> smallMeganodes(String sync) {
    Map<String, String> c = new HashMap<>();
    c.put(FerriteConfig.CAPACITY_DRAM, "64m");
    c.put(FerriteConfig.CAPACITY_DISK, "0");
    c.put(TreeConfig.MEGANODE_SIZE, "32k");
    c.put(TreeConfig.NODE_SIZE, "512");
    c.put(TreeConfig.EXTENT_REGION_SIZE, "64k");
    c.put(TreeConfig.EXTENT_REGIONS, "64");
    c.put(TreeConfig.LOG_SYNC, sync);
    return c;
  }

  /** A master and server {@code tree0}, {@link #smallMeganodes} with {@code sync}. */
  void start(String sync) throws Exception {
    TreeService.testStarted = started::add;
    cluster = new ClusterHarness(dir, CREDENTIALS, false, smallMeganodes(sync));
    cluster.startMaster();
    cluster.startServer("tree0");
  }

  /** Closes the server (its DRAM regions go) and starts it again; returns its new service. */
  TreeService restart() {
    MemoryServer old = cluster.servers.remove(0);
    String name = old.name();
    started.clear();
    old.close();
    cluster.startServer(name);
    assertEquals(1, started.size());
    return started.get(0);
  }
}
