package io.ferrite.nodes;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.nodes.master.NodesMaster;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** A {@link ClusterHarness} whose master runs the nodes extension; 64 KiB blocks, 2 MiB of dram. */
final class NodesCluster extends ClusterHarness {
  static final Credentials CREDENTIALS =
      new Credentials(
          "nodes-test", "0123456789abcdef-nodes-secret".getBytes(StandardCharsets.UTF_8));

  NodesMaster ext;

  NodesCluster(Path dataDir, Map<String, String> overrides) throws IOException {
    this(dataDir, false, overrides);
  }

  /** With {@code real}: master and servers on tcp and shm (else the in-JVM local fabric). */
  NodesCluster(Path dataDir, boolean real, Map<String, String> overrides) throws IOException {
    super(dataDir, CREDENTIALS, real, settings(overrides));
  }

  private static Map<String, String> settings(Map<String, String> overrides) {
    Map<String, String> m = new HashMap<>();
    m.put(FerriteConfig.CAPACITY_DRAM, "2m");
    m.put(FerriteConfig.CAPACITY_DISK, "512k");
    m.put(FerriteConfig.SESSION_LEASE, "1s");
    m.putAll(overrides);
    return m;
  }

  /** (Re)starts the master with a fresh nodes extension (grace 50 ms) over the same journal. */
  @Override
  public Master startMaster() {
    return startMaster(Duration.ofMillis(50));
  }

  /** (Re)starts the master with a nodes extension whose reclaim grace is {@code grace}. */
  Master startMaster(Duration grace) {
    ext = new NodesMaster(grace);
    return startMaster(List.of(ext));
  }

  Nodes nodes() {
    return new Nodes(client());
  }
}
