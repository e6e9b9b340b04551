package io.ferrite.apps;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.memory.master.MemoryMaster;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** The in-JVM cluster the applications' tests run on: a master with the memory face, servers. */
public final class AppsCluster {
  private AppsCluster() {}

  public static final Credentials CREDENTIALS =
      new Credentials("apps-test", "0123456789abcdef-apps-secret".getBytes(StandardCharsets.UTF_8));

  /**
   * A master and {@code servers} memory servers (named s0, s1, ...) with {@code dram} each in 1 MiB
   * regions, no disk, under {@code dir}; the caller closes it.
   */
  public static ClusterHarness start(Path dir, String dram, int servers) throws Exception {
    ClusterHarness cluster =
        new ClusterHarness(
            dir,
            CREDENTIALS,
            false,
            Map.of(
                FerriteConfig.REGION_SIZE, "1m",
                FerriteConfig.CAPACITY_DRAM, dram,
                FerriteConfig.CAPACITY_DISK, "0"));
    try {
      cluster.startMaster(List.of(new MemoryMaster()));
      for (int i = 0; i < servers; i++) {
        cluster.startServer("s" + i);
      }
      return cluster;
    } catch (Exception | Error e) {
      cluster.close();
      throw e;
    }
  }
}
