package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.config.FerriteConfig;
import org.junit.jupiter.api.Test;

/** {@code ferrite config} knows every key: the kernel's and the faces' on the class path. */
class ConfigCommandTest extends CliCapture {
  @Test
  void listsEveryKeyWithItsDescriptionWithin80Columns() {
    assertEquals(0, run("config"), err.toString());
    String text = out.toString();
    for (var e : FerriteConfig.KEYS.entrySet()) {
      assertTrue(text.contains(e.getKey() + " = "), e.getKey() + " missing");
      String described = String.join("\n    ", ConfigCommand.wrap(e.getValue()[1], 76));
      assertTrue(text.contains("    " + described + "\n"), e.getKey() + ": no description");
    }
    for (String face : new String[] {"kv.log.compact", "kv.extent.hints", "nodes.cached.gets"}) {
      assertTrue(text.contains(face + " = "), face + ": the face's key is listed");
    }
    for (String line : text.split("\n")) {
      // Values are the user's (a long data.dir is theirs); the descriptions are ours.
      assertTrue(!line.startsWith(" ") || line.length() <= 80, "over 80 columns: " + line);
    }
  }

  @Test
  void showsWhatWasSetBesideTheDefault() {
    assertEquals(0, run("config", "--set", "netty.lanes=0", "--set", "kv.inline.writes=false"));
    assertTrue(out.toString().contains("netty.lanes = 0  (default: 16)\n"), out.toString());
    assertTrue(out.toString().contains("kv.inline.writes = false  (default: true)\n"));
    assertTrue(out.toString().contains("shm.rings = true\n"), "unchanged: no default shown");
  }

  @Test
  void refusesAnUnknownKey() {
    assertEquals(1, run("config", "--set", "kv.log.compactt=1m"));
    assertTrue(
        err.toString().contains("unknown configuration key 'kv.log.compactt'"), err.toString());
  }
}
