package io.ferrite.tree;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.testing.ClusterHarness;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * A {@link ClusterHarness} with {@code serverCount} memory servers; the tree service and directory
 * are found by {@link java.util.ServiceLoader}. Meganodes are small (32 KiB of 512-byte nodes,
 * split past 32 nodes in use: a few hundred short keys), so tests see many meganode splits. New
 * leaf meganodes stay on their server unless a test asks for {@code spread} placement.
 */
final class TreeCluster extends ClusterHarness {
  static final Credentials CREDENTIALS =
      new Credentials(
          "tree-test", "0123456789abcdef-tree-test-secret".getBytes(StandardCharsets.UTF_8));

  TreeCluster(Path dataDir, int serverCount, boolean real) throws IOException {
    this(dataDir, serverCount, real, "local");
  }

  /**
   * With {@code placement} ({@link TreeConfig#PLACEMENT}): {@code local} (the other constructor:
   * the tests that count one tree's RPCs or reads on one server) or {@code spread}.
   */
  TreeCluster(Path dataDir, int serverCount, boolean real, String placement) throws IOException {
    super(dataDir, CREDENTIALS, real, config(placement));
    startOrClose(
        () -> {
          startMaster();
          for (int i = 0; i < serverCount; i++) {
            startServer("tree" + i);
          }
        });
  }

  static Map<String, String> config() {
    return config("local");
  }

  static Map<String, String> config(String placement) {
    Map<String, String> c = new HashMap<>();
    c.put(TreeConfig.PLACEMENT, placement);
    c.put(FerriteConfig.CAPACITY_DRAM, "64m");
    c.put(FerriteConfig.CAPACITY_DISK, "0");
    c.put(TreeConfig.MEGANODE_SIZE, "32k");
    c.put(TreeConfig.NODE_SIZE, "512");
    c.put(TreeConfig.EXTENT_REGION_SIZE, "64k");
    c.put(TreeConfig.EXTENT_REGIONS, "64");
    return c;
  }
}
