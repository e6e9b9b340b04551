package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.testing.PrometheusText;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Multi-host for real: the master on host 1, memory servers on hosts 2 and 3 (bound to 0.0.0.0), a
 * client on host 4 — each a network namespace of its own ({@link NetHosts}), all JVMs apart. The
 * servers announce their hosts' addresses; the client's kv and fs commands work over tcp; and
 * although the master and every server also serve shm (and all share /dev/shm), the fabric counters
 * of every process show not one shm operation: no two of them count as one host.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class CrossHostTest extends HostsClusterTest {
  static final String CLUSTER = "cross-host-test";

  @Test
  void aClusterAcrossFourHostsWorksOverTcpAndNeverOverShm(Random random) throws Exception {
    newHostsCluster(4, CLUSTER, "ferrite-cross-host-");
    startMasterOn(1, "master", "server.dead.timeout=5s");
    startServerOn(2, 1, "s2", "64m", "0");
    startServerOn(3, 1, "s3", "64m", "0");
    await("two ALIVE servers on hosts 2 and 3", () -> serversAlive(1, 2));

    // Each announces its own host's address (not 0.0.0.0, not loopback), from its own host.
    List<MemberInfo> members = members(1);
    Set<String> identities = new HashSet<>();
    for (MemberInfo m : members) {
      int h = m.name().equals("s2") ? 2 : 3;
      String tcp = m.addresses().get("tcp");
      assertTrue(tcp.startsWith("tcp://" + hosts.address(h) + ":"), m.name() + " announces " + tcp);
      identities.add(m.hostId());
    }
    assertEquals(2, identities.size(), "two hosts: " + members);

    byte[] data = new byte[200_000 + random.nextInt(100_000)];
    random.nextBytes(data);
    Path local = dir.resolve("data.bin");
    Files.write(local, data);
    Path back = dir.resolve("back.bin");
    String value = "v" + random.nextLong();
    String sep = CliScript.SEPARATOR;
    String out =
        cliOn(
            4,
            1,
            "kv",
            "create",
            "t",
            "--shards",
            "4",
            "--slots",
            "4096",
            "--durability",
            "always",
            sep,
            "kv",
            "put",
            "t",
            "k1",
            value,
            sep,
            "kv",
            "get",
            "t",
            "k1",
            sep,
            "fs",
            "put",
            local.toString(),
            "/f",
            sep,
            "fs",
            "get",
            "/f",
            back.toString(),
            sep,
            "status");
    assertEquals(6, count(out, "== exit 0"), out + "\n" + logs());
    assertTrue(out.contains("\n" + value + "\n"), "kv get printed the value:\n" + out);
    assertArrayEquals(data, Files.readAllBytes(back), "fs get of what fs put wrote");

    double oneSided = 0;
    for (int h = 1; h <= 3; h++) {
      PrometheusText m = scrape(h);
      assertEquals(
          0.0,
          m.sum("ferrite_fabric_ops_total", Map.of("fabric", "shm")),
          "shm operations on host " + h);
      assertTrue(m.sum("ferrite_fabric_ops_total", Map.of("fabric", "tcp")) > 0, "tcp, host " + h);
      if (h > 1) {
        oneSided += m.sum("ferrite_fabric_ops_total", Map.of("fabric", "tcp", "kind", "read"));
        oneSided += m.sum("ferrite_fabric_ops_total", Map.of("fabric", "tcp", "kind", "write"));
      }
    }
    // The file's bytes and the kv get went as one-sided operations over tcp.
    assertTrue(oneSided > 0, "one-sided reads and writes over tcp");
    assertNotEquals(members.get(0).hostId(), rootClient(1, false).options().hostId());
  }

  private static int count(String s, String what) {
    int n = 0;
    for (int i = s.indexOf(what); i >= 0; i = s.indexOf(what, i + 1)) {
      n++;
    }
    return n;
  }
}
