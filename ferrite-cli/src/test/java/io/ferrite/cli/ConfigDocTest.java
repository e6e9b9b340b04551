package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.config.FerriteConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * docs/KERNEL.md's table of configuration keys is {@link FerriteConfig#KEYS} (the kernel's and
 * every face's on this module's class path): a key added, removed or re-described without the doc
 * fails here, and the expected table is written to {@code target/config-keys.md} to paste.
 */
class ConfigDocTest {
  static final String BEGIN = "<!-- config-keys:begin (generated: ConfigDocTest) -->\n";
  static final String END = "<!-- config-keys:end -->";

  static String table() {
    StringBuilder b = new StringBuilder(BEGIN);
    b.append("| key | default | what it sets |\n|-----|---------|--------------|\n");
    String home = System.getProperty("user.home", "~");
    for (Map.Entry<String, String[]> e : FerriteConfig.KEYS.entrySet()) {
      String dflt = e.getValue()[0];
      if (!home.isEmpty() && dflt.startsWith(home)) {
        dflt = "~" + dflt.substring(home.length());
      }
      b.append("| `")
          .append(e.getKey())
          .append("` | ")
          .append(dflt.isEmpty() ? "(none)" : "`" + dflt + "`")
          .append(" | ")
          .append(e.getValue()[1].replace("|", "\\|"))
          .append(" |\n");
    }
    return b.append(END).toString();
  }

  @Test
  void kernelDocListsEveryKey() throws Exception {
    String doc = Files.readString(Path.of("../docs/KERNEL.md"), StandardCharsets.UTF_8);
    int from = doc.indexOf(BEGIN);
    int to = doc.indexOf(END);
    String want = table();
    Files.createDirectories(Path.of("target"));
    Files.writeString(Path.of("target/config-keys.md"), want + "\n", StandardCharsets.UTF_8);
    assertTrue(from >= 0 && to > from, "docs/KERNEL.md has no generated key table");
    assertEquals(
        want,
        doc.substring(from, to + END.length()),
        "docs/KERNEL.md's key table is stale: paste ferrite-cli/target/config-keys.md");
  }
}
