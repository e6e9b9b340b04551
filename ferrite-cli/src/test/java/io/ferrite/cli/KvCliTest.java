package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.Fabric;
import io.ferrite.kernel.config.ClusterFile;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.server.MemoryServer;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code ferrite kv ...} against a master and a memory server (tcp + shm) in this JVM. */
class KvCliTest {
  @TempDir Path dir;
  Path shm;
  Path clusterFile;
  final List<AutoCloseable> open = new ArrayList<>();
  final StringWriter out = new StringWriter();
  final StringWriter err = new StringWriter();

  @BeforeEach
  void start() throws IOException {
    shm = Files.createTempDirectory(Path.of("/dev/shm"), "fkv");
    Path secret = dir.resolve("secret");
    String id = "kvcli" + ProcessHandle.current().pid();
    Credentials creds = new Credentials(id, Secrets.readOrCreate(secret));
    FerriteConfig cfg =
        FerriteConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, id)
            .set(FerriteConfig.DATA_DIR, dir.resolve("data").toString())
            .set(FerriteConfig.SHM_DIR, shm.toString())
            .set(FerriteConfig.MASTER_PORT, "0")
            .set(FerriteConfig.REGION_SIZE, "1m")
            .set(FerriteConfig.BLOCK_SIZE, "1m")
            .set(FerriteConfig.CAPACITY_DRAM, "1m")
            .set(FerriteConfig.CAPACITY_DISK, "0")
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .build();
    Fabric tcp = FabricFactory.standard().open("tcp");
    Fabric shmFabric = FabricFactory.standard().open("shm");
    open.add(tcp);
    open.add(shmFabric);
    Master master = Master.start(cfg, creds, List.of(tcp));
    open.add(master);
    String address = master.addresses().get("tcp");
    open.add(
        MemoryServer.start(
            cfg.with(FerriteConfig.SERVER_NAME, "s1"),
            creds,
            List.of(tcp, shmFabric),
            address,
            List.of()));
    clusterFile = dir.resolve("cluster");
    new ClusterFile(
            "ferrite://127.0.0.1:" + address.substring(address.lastIndexOf(':') + 1), id, secret)
        .write(clusterFile);
  }

  @AfterEach
  void stop() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
    try (Stream<Path> s = Files.walk(shm)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  int run(String... args) {
    out.getBuffer().setLength(0);
    err.getBuffer().setLength(0);
    CommandLine cl = FerriteCli.commandLine();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    List<String> all = new ArrayList<>(List.of(args));
    all.add(2, "--cluster-file");
    all.add(3, clusterFile.toString());
    return cl.execute(all.toArray(new String[0]));
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
  void kvHelpHasExamples() {
    CommandLine cl = FerriteCli.commandLine();
    cl.setOut(new PrintWriter(out, true));
    assertEquals(0, cl.execute("kv", "--help"));
    assertTrue(out.toString().contains("Examples:"), out.toString());
    out.getBuffer().setLength(0);
    assertEquals(0, cl.execute("bench", "kv", "--help"));
    assertTrue(out.toString().contains("reads-per-lookup"), out.toString());
  }
}
