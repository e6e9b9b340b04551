package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The distribution serves the tree face: a master and a memory server, each its own {@code ferrite}
 * JVM with the CLI's class path (the face's service files found by ServiceLoader, default 64 MiB
 * meganodes), and {@code ferrite tree ...} against them.
 */
@Tag("multiprocess")
class TreeMultiProcessTest extends ProcessClusterTest {
  @Test
  void aServerProcessServesTreeCommands() throws Exception {
    newCluster("tree-mp-test", "ferrite-tree-mp-");
    startMaster("master");
    startServer("s1", "512m", "0");
    await("an ALIVE server", () -> CliProcesses.oneServerAlive(port, credentials));
    Ran r = cli("tree", "put", "t", "b", "2");
    assertEquals(0, r.code(), r.err() + logs());
    assertEquals("created", r.out().strip());
    assertEquals(0, cli("tree", "put", "t", "a", "1").code());
    assertEquals(0, cli("tree", "put", "t", "c", "3").code());
    for (String path : new String[] {"server", "client"}) {
      r = cli("tree", "get", "--path", path, "t", "b");
      assertEquals(0, r.code(), r.err());
      assertEquals("2", r.out().strip(), path);
      r = cli("tree", "scan", "--path", path, "t", "--from", "a", "--to", "c");
      assertEquals("a\t1\nb\t2\n(2 pair(s))", r.out().strip(), path);
    }
    r = cli("tree", "stats", "t");
    assertTrue(r.out().startsWith("tree t: 1 meganode(s), 1 level(s), "), r.out() + r.err());
    r = cli("tree", "list");
    assertTrue(r.out().startsWith("t  id "), r.out());
  }
}
