package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.kernel.config.FerriteConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code ferrite kv ...} against a master and a memory server (tcp + shm) in this JVM. */
class KvCliTest extends FaceCliCapture {
  KvCliTest() {
    super("kvcli");
  }

  @Override
  Map<String, String> config() {
    return Map.of(FerriteConfig.REGION_SIZE, "64m", FerriteConfig.BLOCK_SIZE, "1m");
  }

  @Test
  void loadPutsEveryLineInBatchesWithProgressOnStderr() throws IOException {
    StringBuilder tsv = new StringBuilder();
    for (int i = 0; i < 1000; i++) {
      tsv.append("user").append(i).append('\t').append("v").append(i).append('\n');
    }
    Path file = java.nio.file.Files.writeString(dir.resolve("users.tsv"), tsv);
    out.getBuffer().setLength(0);
    err.getBuffer().setLength(0);
    CommandLine cl = FerriteCli.commandLine();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    KvCommand.Load load =
        (KvCommand.Load)
            cl.getSubcommands()
                .get("kv")
                .getSubcommands()
                .get("load")
                .getCommandSpec()
                .userObject();
    load.lineEveryNanos = 0; // a progress line per batch instead of every 5 s
    int code =
        cl.execute(
            "kv",
            "load",
            "--cluster-file",
            clusterFile.toString(),
            "--batch",
            "100",
            "users",
            file.toString());
    assertEquals(0, code, err.toString());
    assertTrue(out.toString().startsWith("loaded 1000 key(s) into users in "), out.toString());
    assertEquals(10, err.toString().lines().count(), err.toString());
    assertTrue(err.toString().contains("ferrite kv load users: 1000 keys, "), err.toString());
    assertEquals(0, run("kv", "get", "users", "user999"));
    assertEquals("v999", out.toString().strip());
    assertEquals(0, run("kv", "scan-stats", "users"));
    assertTrue(out.toString().contains("total: 1000 keys"), out.toString());

    java.nio.file.Files.writeString(file, "a\tb\nc\td\nno tab here\n");
    assertEquals(1, run("kv", "load", "users", file.toString()));
    assertTrue(err.toString().contains(file + ":3: no tab"), err.toString());
  }

  @Test
  void putGetDelAndScanStatsForAPersonAtATerminal() {
    assertEquals(0, run("kv", "put", "users", "alice", "{\"age\": 42}"), err.toString());
    assertEquals("created", out.toString().strip());
    assertEquals(0, run("kv", "put", "users", "alice", "{\"age\": 43}"));
    assertEquals("replaced", out.toString().strip());
    assertEquals(0, run("kv", "get", "users", "alice"));
    assertEquals("{\"age\": 43}", out.toString().strip());
    assertEquals(1, run("kv", "get", "users", "bob"));
    assertTrue(err.toString().contains("(not found)"), err.toString());
    assertEquals(0, run("kv", "put", "--hex", "users", "00ff00", "000102"));
    assertEquals(0, run("kv", "get", "--hex", "users", "00ff00"));
    assertEquals("0x000102", out.toString().strip());
    assertEquals(0, run("kv", "del", "users", "alice"));
    assertEquals(1, run("kv", "del", "users", "alice"));
    assertEquals(0, run("kv", "scan-stats", "users"));
    assertTrue(out.toString().contains("total: 1 keys"), out.toString());
    assertEquals(1, run("kv", "put", "users", "", "x"));
    assertTrue(err.toString().contains("key of 0 B"), err.toString());
    assertEquals(1, run("kv", "get", "nosuch", "k"));
    assertTrue(err.toString().contains("no kv table nosuch"), err.toString());
    assertEquals(0, run("kv", "tables"));
    assertTrue(out.toString().startsWith("users"), out.toString());
  }

  @Test
  void createWithALayoutResizeAndScanStats() {
    assertEquals(
        0,
        run("kv", "create", "cuckoo", "--layout", "pilaf", "--shards", "2", "--slots", "64"),
        err.toString());
    assertEquals(
        0,
        run("kv", "create", "hop", "--layout", "HOPSCOTCH", "--shards", "2", "--slots", "64"),
        err.toString());
    for (String t : List.of("cuckoo", "hop")) {
      for (int i = 0; i < 40; i++) {
        assertEquals(0, run("kv", "put", t, "k" + i, "v" + i), err.toString());
      }
      assertEquals(0, run("kv", "resize", t, "--slots", "1024"), err.toString());
      assertTrue(out.toString().contains("shard 1: 1024 slots"), out.toString());
      assertEquals(0, run("kv", "get", t, "k7"));
      assertEquals("v7", out.toString().strip());
      assertEquals(0, run("kv", "scan-stats", t));
      assertTrue(out.toString().contains("total: 40 keys in 2048 slots"), out.toString());
    }
    assertTrue(out.toString().contains("hopscotch layout"), out.toString());
    assertEquals(0, run("kv", "tables"));
    assertTrue(out.toString().contains("cuckoo  pilaf, 2 shards"), out.toString());
    assertTrue(run("kv", "create", "bad", "--layout", "btree") != 0);
    assertTrue(err.toString().contains("btree"), err.toString());
  }

  /**
   * {@code kv create --replicas}: refused with more copies than servers, shown by {@code tables}
   * and {@code scan-stats}; and a shard lost with a restarted server's memory is listed as
   * DATA_LOST by {@code scan-stats}, which still counts the others, while the replicated table
   * keeps every key.
   */
  @Test
  void createWithReplicasAndScanStatsOfALostShard() throws Exception {
    assertEquals(1, run("kv", "create", "rep", "--replicas", "2"));
    assertTrue(err.toString().contains("replicas: 2 (expected: <= 1"), err.toString());
    cluster.startServer("s2");
    cluster.awaitServers(2);
    assertEquals(
        0,
        run("kv", "create", "rep", "--replicas", "2", "--shards", "2", "--slots", "64"),
        err.toString());
    assertTrue(out.toString().contains("backups"), out.toString());
    assertEquals(0, run("kv", "create", "plain", "--shards", "8", "--slots", "64"), err.toString());
    for (int i = 0; i < 16; i++) {
      assertEquals(0, run("kv", "put", "rep", "k" + i, "v" + i), err.toString());
      assertEquals(0, run("kv", "put", "plain", "k" + i, "v" + i), err.toString());
    }
    assertEquals(0, run("kv", "tables"));
    assertTrue(out.toString().contains("2 replicas, backups"), out.toString());
    assertEquals(0, run("kv", "scan-stats", "rep"));
    assertTrue(out.toString().contains("2 shards, 2 replicas"), out.toString());
    io.ferrite.kernel.server.MemoryServer s2 = cluster.servers.remove(1);
    s2.close();
    cluster.startServer("s2");
    cluster.awaitServers(2);
    assertEquals(0, run("kv", "scan-stats", "plain"), err.toString());
    assertTrue(out.toString().contains("DATA_LOST"), out.toString());
    assertTrue(out.toString().contains("lost with a server's memory"), out.toString());
    for (int i = 0; i < 16; i++) {
      assertEquals(0, run("kv", "get", "rep", "k" + i), err.toString());
      assertEquals("v" + i, out.toString().strip());
    }
  }

  @Test
  void compactLogRewritesEveryServersLogAndLosesNothing() {
    assertEquals(
        0,
        run("kv", "create", "logged", "--shards", "2", "--slots", "64", "--durability", "always"),
        err.toString());
    for (int round = 0; round < 3; round++) {
      for (int i = 0; i < 20; i++) {
        assertEquals(0, run("kv", "put", "logged", "k" + i, "v" + round), err.toString());
      }
    }
    assertEquals(0, run("kv", "compact-log"), err.toString());
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("server (\\d+): kv log ([\\d,]+) B -> ([\\d,]+) B")
            .matcher(out.toString());
    assertTrue(m.find(), out.toString());
    long before = Long.parseLong(m.group(2).replace(",", ""));
    long after = Long.parseLong(m.group(3).replace(",", ""));
    assertTrue(after < before, out.toString());
    assertEquals(0, run("kv", "get", "logged", "k7"));
    assertEquals("v2", out.toString().strip());
    assertEquals(0, run("kv", "compact-log", "--server", m.group(1)), err.toString());
    assertTrue(run("kv", "compact-log", "--server", "999") != 0);
    assertTrue(!err.toString().isBlank(), "a clear error for an unknown server");
  }

  @Test
  void rebalanceMovesShardsToAJoiningServer() throws Exception {
    assertEquals(0, run("kv", "create", "grow", "--shards", "8", "--slots", "64"), err.toString());
    for (int i = 0; i < 60; i++) {
      assertEquals(0, run("kv", "put", "grow", "k" + i, "v" + i), err.toString());
    }
    assertEquals(0, run("kv", "rebalance", "--dry-run"), err.toString());
    assertTrue(out.toString().contains("nothing to move"), out.toString());
    assertEquals(0, run("kv", "rebalance", "grow"), err.toString());
    assertTrue(out.toString().contains("nothing to move"), out.toString());
    assertEquals(1, run("kv", "rebalance", "nosuch"));
    assertTrue(err.toString().contains("no kv table nosuch"), err.toString());

    cluster.startServer("s2");
    cluster.awaitServers(2);
    assertEquals(0, run("kv", "tables"), err.toString());
    assertTrue(out.toString().contains("ferrite kv rebalance"), out.toString());
    assertEquals(0, run("kv", "rebalance", "--dry-run", "grow"), err.toString());
    String plan = out.toString();
    assertTrue(plan.contains("would move: grow shard"), plan);
    long moves = plan.lines().filter(l -> l.startsWith("would move")).count();
    assertEquals(0, run("kv", "rebalance"), err.toString());
    assertEquals(moves, out.toString().lines().filter(l -> l.startsWith("moved:")).count());
    assertTrue(err.toString().contains("copied"), "progress on stderr: " + err);
    for (int i = 0; i < 60; i++) {
      assertEquals(0, run("kv", "get", "grow", "k" + i), err.toString());
      assertEquals("v" + i, out.toString().strip());
    }
    assertEquals(0, run("kv", "rebalance", "--dry-run"));
    assertTrue(out.toString().contains("nothing to move"), out.toString());
  }

  @Test
  void kvHelpHasExamples() {
    CommandLine cl = FerriteCli.commandLine();
    cl.setOut(new PrintWriter(out, true));
    assertEquals(0, cl.execute("kv", "--help"));
    assertTrue(out.toString().contains("Examples:"), out.toString());
    assertTrue(out.toString().contains("rebalance --dry-run"), out.toString());
    out.getBuffer().setLength(0);
    assertEquals(0, cl.execute("bench", "kv", "--help"));
    assertTrue(out.toString().contains("reads-per-lookup"), out.toString());
  }
}
