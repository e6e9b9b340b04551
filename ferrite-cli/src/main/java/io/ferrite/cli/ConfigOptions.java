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
        "Sets any configuration key; repeatable. 'ferrite config' lists every key (those of the"
            + " kernel, the fabrics and each face) with its default and what it does.",
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
