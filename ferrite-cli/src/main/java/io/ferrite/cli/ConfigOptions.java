package io.ferrite.cli;

import io.ferrite.kernel.config.FerriteConfig;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * Options every process command shares: a configuration file and {@code --set key=value} for any
 * configuration key. Command-specific flags are applied on top.
 */
final class ConfigOptions {
  @Option(
      names = "--config",
      paramLabel = "FILE",
      description = "Properties file with configuration keys (see --set).")
  Path file;

  @Option(
      names = "--set",
      paramLabel = "KEY=VALUE",
      showDefaultValue = CommandLine.Help.Visibility.NEVER,
      description = {
        "Sets any configuration key; repeatable. Keys: cluster.id, cluster.secret.file,"
            + " master.host, master.port, data.dir, server.name, server.host, server.port,"
            + " server.fabrics, capacity.dram, capacity.disk, shm.dir, region.size, block.size,"
            + " service.threads, heartbeat.interval, server.dead.timeout, session.lease,"
            + " client.fabric, journal.fsync, journal.snapshot.every, rpc.timeout,"
            + " metrics.host, metrics.port.",
        "Layering: defaults < --config file < FERRITE_* environment < flags."
      })
  Map<String, String> set = new LinkedHashMap<>();

  /** Defaults, then the file, then the environment, then {@code --set}, then {@code flags}. */
  FerriteConfig load(Map<String, String> flags) {
    Map<String, String> all = new LinkedHashMap<>(set);
    all.putAll(flags);
    return FerriteConfig.load(file, System.getenv(), all);
  }

  static void put(Map<String, String> flags, String key, Object value) {
    if (value != null) {
      flags.put(key, String.valueOf(value));
    }
  }
}
