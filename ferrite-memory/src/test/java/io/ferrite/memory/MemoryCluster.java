package io.ferrite.memory;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.memory.master.MemoryMaster;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * A {@link ClusterHarness} whose master runs the memory face, with {@code n} memory servers: 64 KiB
 * blocks, 1 MiB regions, 4 MiB of dram per server, DEAD after 5 s of silence; over the local
 * fabric, or (when {@code real}) the master on tcp and the servers on tcp and shm.
 */
final class MemoryCluster extends ClusterHarness {
  static final Credentials CREDENTIALS =
      new Credentials(
          "memory-test", "0123456789abcdef-memory-secret".getBytes(StandardCharsets.UTF_8));
  static final int BLOCK = 64 << 10;

  MemoryCluster(Path dataDir, int servers) throws IOException {
    this(dataDir, servers, false);
  }

  MemoryCluster(Path dataDir, int servers, boolean real) throws IOException {
    this(dataDir, servers, real, new MemoryMaster());
  }

  MemoryCluster(Path dataDir, int servers, boolean real, MemoryMaster ext) throws IOException {
    this(dataDir, servers, real, ext, "5s");
  }

  /**
   * As above, a server declared DEAD after {@code deadTimeout} of silence. Not the harness's 400
   * ms: the memory face takes a DEAD server's chunks out of every namespace for good, and a
   * heartbeat thread starved that long on a loaded machine would make unrelated tests lose memory.
   */
  MemoryCluster(Path dataDir, int servers, boolean real, MemoryMaster ext, String deadTimeout)
      throws IOException {
    this(dataDir, servers, real, ext, Map.of(FerriteConfig.DEAD_TIMEOUT, deadTimeout));
  }

  /** As above, with {@code settings} on top of the sizes (a dead timeout, a master port). */
  MemoryCluster(
      Path dataDir, int servers, boolean real, MemoryMaster ext, Map<String, String> settings)
      throws IOException {
    super(dataDir, CREDENTIALS, real, sizes(settings));
    startOrClose(
        () -> {
          startMaster(ext);
          for (int i = 0; i < servers; i++) {
            startServer("s" + i);
          }
        });
  }

  private static Map<String, String> sizes(Map<String, String> settings) {
    Map<String, String> all = new java.util.HashMap<>();
    all.put(FerriteConfig.REGION_SIZE, "1m");
    all.put(FerriteConfig.CAPACITY_DRAM, "4m");
    all.put(FerriteConfig.CAPACITY_DISK, "0");
    all.put(FerriteConfig.DEAD_TIMEOUT, "5s");
    all.putAll(settings);
    return all;
  }

  Master startMaster(MemoryMaster ext) {
    return startMaster(List.of(ext));
  }

  RStore store() {
    return new RStore(client());
  }
}
