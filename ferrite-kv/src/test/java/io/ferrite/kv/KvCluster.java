package io.ferrite.kv;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.testing.ClusterHarness;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * A {@link ClusterHarness} with {@code serverCount} memory servers; the kv service and directory
 * are found by {@link java.util.ServiceLoader}.
 */
public final class KvCluster extends ClusterHarness {
  static final Credentials CREDENTIALS =
      new Credentials(
          "kv-test", "0123456789abcdef-kv-test-secret".getBytes(StandardCharsets.UTF_8));

  /**
   * A small table for tests: {@code shards} shards of 256 slots, two 64 KiB extent regions each,
   * keys to 64 B and values to 1 KiB (the default durability).
   */
  public static TableOptions smallTable(int shards) {
    return TableOptions.DEFAULTS
        .withShards(shards)
        .withSlotsPerShard(256)
        .withExtents(64 << 10, 2)
        .withLimits(64, 1024);
  }

  public KvCluster(Path dataDir, int serverCount) throws IOException {
    this(dataDir, serverCount, false);
  }

  /** As above; {@code real}: the master and servers on tcp and shm instead of the local fabric. */
  public KvCluster(Path dataDir, int serverCount, boolean real) throws IOException {
    this(dataDir, serverCount, real, Map.of());
  }

  /** As above, with configuration {@code extra} on top of the test defaults. */
  public KvCluster(Path dataDir, int serverCount, boolean real, Map<String, String> extra)
      throws IOException {
    super(dataDir, CREDENTIALS, real, config(extra));
    startOrClose(
        () -> {
          startMaster();
          for (int i = 0; i < serverCount; i++) {
            startServer("kv" + i);
          }
        });
  }

  /**
   * Settings on top of {@link #config} for the next master (re)started: a master restarted with
   * another configuration than the servers'. Null (as during construction) for none.
   */
  public volatile Map<String, String> masterSettings;

  @Override
  protected io.ferrite.kernel.master.Master launchMaster(
      java.util.List<io.ferrite.fabric.Fabric> on,
      java.util.List<io.ferrite.kernel.master.MasterExtension> extensions) {
    Map<String, String> extra = masterSettings;
    if (extra == null || extra.isEmpty()) {
      return super.launchMaster(on, extensions);
    }
    FerriteConfig c = config;
    for (Map.Entry<String, String> e : extra.entrySet()) {
      c = c.with(e.getKey(), e.getValue());
    }
    return extensions == null
        ? io.ferrite.kernel.master.Master.start(c, credentials, on)
        : io.ferrite.kernel.master.Master.start(c, credentials, on, extensions);
  }

  private static Map<String, String> config(Map<String, String> extra) {
    Map<String, String> c = new HashMap<>();
    // Room for the tables of every test: kv shard regions count against capacity.dram.
    c.put(FerriteConfig.CAPACITY_DRAM, "64m"); // a default table has 16 MiB extent regions
    c.put(FerriteConfig.CAPACITY_DISK, "0");
    c.put(FerriteConfig.DEAD_TIMEOUT, "2s");
    c.put(FerriteConfig.SESSION_LEASE, "5s");
    c.putAll(extra);
    return c;
  }
}
