package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.proto.PlacementProtocol;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Two master groups with real processes (issue #20, docs/RESILIENCE.md "Master groups"): two
 * masters, each its own JVM and journal, and a memory server registered with both; the fs and kv
 * commands work across them (a kv table in each group) through one URI ({@code
 * ferrite://127.0.0.1:p0;127.0.0.1:p1}), {@code status} lists both groups, a cross-group {@code fs
 * mv} is refused naming both, and a SIGKILL of group 1's master leaves group 0's files and table
 * served; once it is back, its files are too. Every process is killed in {@link #stopAll()}.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class GroupsMultiProcessTest extends ProcessClusterTest {
  static final String CLUSTER = "groups-test";

  int port1;

  @Override
  String clusterUri() {
    return "ferrite://127.0.0.1:" + port + ";127.0.0.1:" + port1;
  }

  private void ok(Ran r, String what) {
    assertEquals(0, r.code(), what + ": " + r + "\n" + logs());
  }

  /** Group 1's master: its own data directory and port, tcp only (group 0's holds the shm one). */
  private Process startGroup1() throws Exception {
    return start(
        "master-1",
        "master",
        "--dir",
        dir.resolve("group-1").toString(),
        "--port",
        Integer.toString(port1),
        "--cluster-id",
        CLUSTER,
        "--secret-file",
        secret().toString(),
        "--fabrics",
        "tcp",
        "--set",
        "heartbeat.interval=100ms",
        "--set",
        "server.dead.timeout=30s",
        "--set",
        "shm.dir=" + shmDir);
  }

  /** A name of {@code prefix} that the placement hash gives {@code group} among two. */
  private static String nameIn(String prefix, int group) {
    for (int i = 0; ; i++) {
      String n = prefix + i;
      if (PlacementProtocol.choose(PlacementProtocol.key(PlacementProtocol.NODES, n), 2) == group) {
        return n;
      }
    }
  }

  /** A kv table name of {@code prefix} that the placement hash gives {@code group} among two. */
  private static String kvNameIn(String prefix, int group) {
    for (int i = 0; ; i++) {
      String n = prefix + i;
      if (PlacementProtocol.choose(PlacementProtocol.key(PlacementProtocol.KV, n), 2) == group) {
        return n;
      }
    }
  }

  private byte[] get(String path) throws Exception {
    Path back = dir.resolve("back");
    Files.deleteIfExists(back);
    Ran r = cli("fs", "get", path, back.toString());
    return r.code() == 0 ? Files.readAllBytes(back) : null;
  }

  @Test
  void twoGroupsServeOneNamespaceThroughTheCli(Random random) throws Exception {
    newCluster(CLUSTER, "ferrite-groups-");
    try (ServerSocket s = new ServerSocket(0)) {
      port1 = s.getLocalPort();
    }
    startMaster("master-0", "server.dead.timeout=30s");
    Process m1 = startGroup1();
    start(
        "s1",
        "server",
        "--dir",
        dir.toString(),
        "--name",
        "s1",
        "--master",
        clusterUri(),
        "--cluster-id",
        CLUSTER,
        "--fabrics",
        "tcp",
        "--dram",
        "64m",
        "--disk",
        "0",
        "--set",
        "region.size=16m",
        "--set",
        "heartbeat.interval=100ms",
        "--set",
        "shm.dir=" + shmDir);
    await("s1 ALIVE in group 0", () -> CliProcesses.oneServerAlive(port, credentials));
    await("s1 ALIVE in group 1", () -> CliProcesses.oneServerAlive(port1, credentials));

    String a = "/" + nameIn("a", 0);
    String b = "/" + nameIn("b", 1);
    List<byte[]> data = new ArrayList<>();
    for (String top : List.of(a, b)) {
      ok(cli("fs", "mkdir", top), "fs mkdir " + top);
      byte[] d = new byte[200_000 + random.nextInt(100_000)];
      random.nextBytes(d);
      Path local = dir.resolve("data.bin");
      Files.write(local, d);
      ok(cli("fs", "put", local.toString(), top + "/f"), "fs put " + top + "/f");
      assertArrayEquals(d, get(top + "/f"));
      data.add(d);
    }
    Ran ls = cli("fs", "ls", "/");
    ok(ls, "fs ls /");
    assertTrue(ls.out().contains(a.substring(1)) && ls.out().contains(b.substring(1)), ls.out());
    Ran status = cli("status");
    ok(status, "status");
    assertTrue(
        status.out().contains("master group 0 (tcp://127.0.0.1:" + port + ")")
            && status.out().contains("master group 1 (tcp://127.0.0.1:" + port1 + ")"),
        status.out());
    // The kv commands, unchanged, through the same URI: one table in each group.
    List<String> tables = List.of(kvNameIn("ta", 0), kvNameIn("tb", 1));
    for (String t : tables) {
      ok(
          cli(
              "kv",
              "create",
              t,
              "--shards",
              "2",
              "--slots",
              "256",
              "--extent-region",
              "65536",
              "--max-extent-regions",
              "2",
              "--max-key",
              "64",
              "--max-value",
              "1024"),
          "kv create " + t);
      ok(cli("kv", "put", t, "k", "v-" + t), "kv put " + t);
      Ran got = cli("kv", "get", t, "k");
      ok(got, "kv get " + t);
      assertTrue(got.out().contains("v-" + t), got.out());
    }
    Ran listed = cli("kv", "tables");
    ok(listed, "kv tables");
    assertTrue(
        listed.out().contains(tables.get(0)) && listed.out().contains(tables.get(1)), listed.out());
    Ran mv = cli("fs", "mv", a + "/f", b + "/f");
    assertNotEquals(0, mv.code(), mv.toString());
    assertTrue(
        mv.err().contains("master group 0") && mv.err().contains("master group 1"), mv.err());

    // Group 1's master dies: group 0's file is still served; once it is back, so is group 1's.
    m1.destroyForcibly();
    m1.waitFor();
    processes.remove(m1);
    assertArrayEquals(data.get(0), get(a + "/f"));
    Ran got0 = cli("kv", "get", tables.get(0), "k");
    ok(got0, "kv get " + tables.get(0) + " with group 1 down");
    assertTrue(got0.out().contains("v-" + tables.get(0)), got0.out());
    startGroup1();
    byte[] back =
        await(
            "group 1's file after its master's restart",
            () -> {
              try {
                return get(b + "/f");
              } catch (Exception e) {
                throw new IllegalStateException(e);
              }
            });
    assertArrayEquals(data.get(1), back);
  }
}
