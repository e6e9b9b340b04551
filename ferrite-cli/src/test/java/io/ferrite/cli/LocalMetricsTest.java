package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** {@code ferrite local}'s metrics: on by default, printed in the banner; -1 turns them off. */
class LocalMetricsTest extends LocalCliCapture {
  private static final Pattern BANNER =
      Pattern.compile(
          "\\n  metrics  http://127\\.0\\.0\\.1:(\\d+)/metrics \\(servers :(\\d+) :(\\d+)\\)\\n");

  private int local(String... extra) {
    String[] base = {
      "local",
      "--fabrics",
      "local",
      "--exit-after-check",
      "--dir",
      dir.toString(),
      "--cluster-id",
      "metrics-" + ProcessHandle.current().pid(),
      "--dram",
      "64m",
      "--disk",
      "0",
      "--set",
      "shm.dir=" + shm
    };
    String[] all = java.util.Arrays.copyOf(base, base.length + extra.length);
    System.arraycopy(extra, 0, all, base.length, extra.length);
    return run(all);
  }

  @Test
  void onByDefaultFromPort9100() {
    assertEquals(0, local(), out + "\n" + err);
    Matcher m = BANNER.matcher(out.toString());
    assertTrue(m.find(), out.toString());
    int master = Integer.parseInt(m.group(1));
    // 9100, or the next free port when another process holds it.
    assertTrue(master >= MetricsOptions.LOCAL_DEFAULT_PORT && master < 9200, m.group());
    assertTrue(Integer.parseInt(m.group(2)) != master && Integer.parseInt(m.group(3)) != master);
  }

  @Test
  void minusOneTurnsThemOff() {
    assertEquals(0, local("--metrics-port", "-1"), out + "\n" + err);
    assertTrue(out.toString().contains("self-check passed"), out.toString());
    assertFalse(out.toString().contains("/metrics"), out.toString());
  }

  @Test
  void anExplicitPortIsTheMasters() {
    int port = MetricsOptions.freePortFrom("127.0.0.1", 9300);
    assertEquals(0, local("--metrics-port", Integer.toString(port)), out + "\n" + err);
    Matcher m = BANNER.matcher(out.toString());
    assertTrue(m.find(), out.toString());
    assertEquals(port, Integer.parseInt(m.group(1)));
  }
}
