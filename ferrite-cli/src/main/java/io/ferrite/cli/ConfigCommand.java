package io.ferrite.cli;

import io.ferrite.kernel.config.FerriteConfig;
import java.io.PrintWriter;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

@Command(
    name = "config",
    mixinStandardHelpOptions = true,
    description = {
      "Lists every configuration key with its value and what it does: the kernel's and those of"
          + " each face on the class path (kv.*, nodes.*).",
      "Values are layered: defaults < --config file < FERRITE_* environment (the key in upper"
          + " case, dots as underscores) < --set. A key set to other than its default says so."
    },
    footer = {
      "",
      "Examples:",
      "  ferrite config",
      "  ferrite config --set netty.lanes=0",
    })
final class ConfigCommand implements Callable<Integer> {
  @Spec CommandSpec spec;
  @Mixin ConfigOptions config;

  @Override
  public Integer call() {
    Map<String, String> effective = config.load(Map.of()).effective();
    PrintWriter out = spec.commandLine().getOut();
    for (Map.Entry<String, String[]> e : FerriteConfig.KEYS.entrySet()) {
      String key = e.getKey();
      String value = effective.get(key);
      String dflt = e.getValue()[0];
      out.println(
          key
              + " = "
              + value
              + (value.equals(dflt) || key.equals(FerriteConfig.SECRET)
                  ? ""
                  : "  (default: " + (dflt.isEmpty() ? "none" : dflt) + ")"));
      for (String line : wrap(e.getValue()[1], 76)) {
        out.println("    " + line);
      }
    }
    out.flush();
    return 0;
  }

  /** {@code text} in lines of at most {@code width} characters, broken between words. */
  static java.util.List<String> wrap(String text, int width) {
    java.util.List<String> lines = new java.util.ArrayList<>();
    StringBuilder line = new StringBuilder();
    for (String word : text.split(" ")) {
      if (line.length() > 0 && line.length() + 1 + word.length() > width) {
        lines.add(line.toString());
        line.setLength(0);
      }
      line.append(line.length() > 0 ? " " : "").append(word);
    }
    lines.add(line.toString());
    return lines;
  }
}
