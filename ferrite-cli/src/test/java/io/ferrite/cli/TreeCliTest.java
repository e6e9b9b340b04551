package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.tree.TreeConfig;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code ferrite tree ...} against a master and a memory server (tcp + shm) in this JVM, with
 * meganodes small enough (64 KiB of 1 KiB nodes) that a few hundred keys split them.
 */
class TreeCliTest extends FaceCliCapture {
  TreeCliTest() {
    super("treecli");
  }

  @Override
  Map<String, String> config() {
    return Map.of(TreeConfig.MEGANODE_SIZE, "64k", TreeConfig.EXTENT_REGION_SIZE, "1m");
  }

  @Test
  void putGetDelBothPathsAndHex() {
    assertEquals(0, run("tree", "put", "users", "alice", "{\"age\": 42}"), err.toString());
    assertEquals("created", out.toString().strip());
    assertEquals(0, run("tree", "put", "users", "alice", "{\"age\": 43}"), err.toString());
    assertEquals("replaced", out.toString().strip());
    for (String path : List.of("server", "client")) {
      assertEquals(0, run("tree", "get", "--path", path, "users", "alice"), err.toString());
      assertEquals("{\"age\": 43}", out.toString().strip(), path);
    }
    assertEquals(0, run("tree", "put", "--hex", "users", "00ff", "0001"), err.toString());
    assertEquals(0, run("tree", "get", "--hex", "users", "00ff"), err.toString());
    assertEquals("0x0001", out.toString().strip());
    assertEquals(0, run("tree", "get", "users", "alice", "--path", "client"));
    assertEquals(0, run("tree", "del", "users", "alice"), err.toString());
    assertEquals("deleted", out.toString().strip());
    assertEquals(1, run("tree", "del", "users", "alice"));
    assertEquals(1, run("tree", "get", "users", "alice"));
    assertEquals("(not found)", err.toString().strip());
  }

  @Test
  void scanPrintsKeysInOrderAcrossMeganodesAndStatsShowsTheSplits() {
    // Inserted in a scattered order through the face (thousands of CLI runs would take
    // minutes), enough for several 64 KiB meganodes; the CLI reads them back.
    int n = 3000;
    try (io.ferrite.kernel.client.FerriteClient c = cluster.client("tcp")) {
      io.ferrite.tree.Tree t = new io.ferrite.tree.TreeClient(c).create("t");
      for (int i = 0; i < n; i++) {
        int k = (int) ((i * 7919L) % n);
        t.put(
            String.format(Locale.ROOT, "k%04d", k).getBytes(StandardCharsets.UTF_8),
            ("v" + k).getBytes(StandardCharsets.UTF_8));
      }
    }
    for (String path : List.of("server", "client")) {
      assertEquals(
          0,
          run(
              "tree", "scan", "t", "--from", "k0100", "--to", "k0400", "--limit", "1000", "--path",
              path),
          err.toString());
      List<String> lines = out.toString().lines().toList();
      assertEquals(301, lines.size(), path);
      for (int i = 0; i < 300; i++) {
        assertEquals(
            String.format(Locale.ROOT, "k%04d\tv%d", 100 + i, 100 + i), lines.get(i), path);
      }
      assertEquals("(300 pair(s))", lines.get(300));
    }
    assertEquals(0, run("tree", "scan", "t", "--limit", "3"), err.toString());
    assertEquals(
        List.of("k0000\tv0", "k0001\tv1", "k0002\tv2", "(3 pair(s), more after --limit 3)"),
        out.toString().lines().toList());
    // Meganode splits run on the server's splitter thread: wait for them.
    String stats = "";
    for (long end = System.nanoTime() + 20_000_000_000L; System.nanoTime() < end; ) {
      assertEquals(0, run("tree", "stats", "t"), err.toString());
      stats = out.toString();
      if (!stats.contains(" 0 split(s)")) {
        break;
      }
    }
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile(
                "tree t: (\\d+) meganode\\(s\\), (\\d+) level\\(s\\), nodes \\d+ of \\d+ in use"
                    + " \\(fill [0-9.]+%\\), (\\d+) split\\(s\\)")
            .matcher(stats);
    assertTrue(m.find(), stats);
    assertTrue(Integer.parseInt(m.group(1)) >= 2, stats);
    assertTrue(Integer.parseInt(m.group(2)) >= 2, stats);
    assertTrue(Integer.parseInt(m.group(3)) >= 1, stats);
  }

  @Test
  void createListDropAndErrorsThatTeach() {
    assertEquals(0, run("tree", "list"), err.toString());
    assertTrue(out.toString().startsWith("(no trees"), out.toString());
    assertEquals(0, run("tree", "create", "events"), err.toString());
    assertTrue(out.toString().startsWith("tree events (id "), out.toString());
    assertEquals(0, run("tree", "list"), err.toString());
    assertTrue(out.toString().startsWith("events  id "), out.toString());
    assertEquals(1, run("tree", "scan", "events", "--from", "b", "--to", "a"));
    assertTrue(err.toString().contains("from > to"), err.toString());
    assertEquals(1, run("tree", "scan", "events", "--limit", "0"));
    assertTrue(err.toString().contains("limit: 0 (expected: > 0)"), err.toString());
    assertEquals(1, run("tree", "get", "events", "x".repeat(200)));
    assertTrue(err.toString().contains("key: 200 bytes"), err.toString());
    assertEquals(0, run("tree", "drop", "events"), err.toString());
    assertEquals("dropped events", out.toString().strip());
    assertEquals(1, run("tree", "drop", "events"));
    assertEquals(1, run("tree", "get", "events", "a"));
    assertTrue(err.toString().contains("ferrite tree list"), err.toString());
  }
}
