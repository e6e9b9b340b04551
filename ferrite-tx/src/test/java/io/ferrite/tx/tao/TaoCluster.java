package io.ferrite.tx.tao;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.tx.TxConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * An in-JVM cluster with {@code serverCount} memory servers, as the tx tests' {@code TxCluster}
 * (package-private there): small regions of 4 KiB slabs, objects up to 1000 bytes, a 300 ms lock
 * lease.
 */
final class TaoCluster extends ClusterHarness {
  static final Credentials CREDENTIALS =
      new Credentials(
          "tao-test", "0123456789abcdef-tao-test-secret".getBytes(StandardCharsets.UTF_8));

  TaoCluster(Path dataDir, int serverCount, boolean real) throws IOException, InterruptedException {
    super(dataDir, CREDENTIALS, real, config());
    startOrClose(
        () -> {
          startMaster();
          for (int i = 0; i < serverCount; i++) {
            startServer("tao" + i);
          }
        });
    awaitServers(serverCount);
  }

  static Map<String, String> config() {
    Map<String, String> c = new HashMap<>();
    c.put(FerriteConfig.CAPACITY_DRAM, "8m");
    c.put(FerriteConfig.CAPACITY_DISK, "0");
    c.put(TxConfig.REGION_SIZE, "256k");
    c.put(TxConfig.SLAB_SIZE, "4k");
    c.put(TxConfig.OBJECT_MAX, "1000");
    c.put(TxConfig.LOCK_LEASE, "300ms");
    return c;
  }
}
