package io.ferrite.nodes;

import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.master.PlacementDirectory;
import io.ferrite.kernel.testing.GroupsHarness;
import io.ferrite.nodes.master.NodesMaster;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The kernel's {@link GroupsHarness} for the nodes face's group tests: each group's master runs a
 * nodes extension (fast session sweeps) and the placement directory, kept here so tests can look
 * into them, and servers small enough that each group gets a few regions.
 */
final class GroupsCluster extends GroupsHarness {
  /** Each group's nodes extension and placement directory, as last started. */
  final Map<Integer, NodesMaster> nodesExt = new HashMap<>();

  final Map<Integer, PlacementDirectory> placement = new HashMap<>();

  GroupsCluster(Path dataDir, int groups) throws IOException {
    super(dataDir, NodesCluster.CREDENTIALS, settings(), groups);
  }

  private static Map<String, String> settings() {
    Map<String, String> m = new HashMap<>();
    // 8 regions of 256 KiB per server: 4 per group with two groups, 2-3 with three.
    m.put(FerriteConfig.CAPACITY_DRAM, "2m");
    m.put(FerriteConfig.CAPACITY_DISK, "0");
    m.put(FerriteConfig.SESSION_LEASE, "1s");
    return m;
  }

  @Override
  protected List<MasterExtension> extensions(int g) {
    NodesMaster n = new NodesMaster(Duration.ofMillis(50));
    PlacementDirectory p = new PlacementDirectory();
    nodesExt.put(g, n);
    placement.put(g, p);
    return List.of(n, p);
  }

  @Override
  public Master startMaster() {
    return startMaster(extensions(0));
  }
}
