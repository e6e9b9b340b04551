package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.ServerState;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.ExtendWith;
import picocli.CommandLine;

/**
 * A master and two memory servers as separate JVMs on 127.0.0.1 over tcp: SIGKILL one server and
 * see it marked DEAD; SIGKILL the master, restart it on the same directory, and find servers,
 * regions and persistent allocations recovered from its journal, and the surviving server back by
 * itself. Every process is killed in {@link #stopAll()}, also when the test fails.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class MultiProcessClusterTest extends ProcessClusterTest {
  TestSeed seed;

  @BeforeEach
  void seed(TestSeed seed) {
    this.seed = seed;
  }

  static final String CLUSTER = "mp-test";

  Path secret;

  @Override
  String logs() {
    return "seed " + seed + "; " + super.logs();
  }

  private FerriteClient client(boolean session) {
    FerriteClient c =
        Ferrite.connect(
            "ferrite://127.0.0.1:" + port,
            ClientOptions.builder(credentials)
                .fabric("tcp")
                .session(session)
                .maxAttempts(1)
                .clientName("mp-test")
                .build());
    clients.add(c);
    return c;
  }

  private ClusterStatus status() {
    try (FerriteClient c = client(false)) {
      return c.status();
    }
  }

  /** {@code ferrite status --json} through the CLI, as an operator would see it. */
  private String statusJson() {
    StringWriter out = new StringWriter();
    CommandLine cl = FerriteCli.commandLine();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(out, true));
    int code =
        cl.execute(
            "status",
            "--cluster",
            "ferrite://127.0.0.1:" + port,
            "--secret-file",
            secret.toString(),
            "--cluster-id",
            CLUSTER,
            "--json");
    if (code != 0) {
      throw new IllegalStateException("status exited " + code + ": " + out);
    }
    return out.toString();
  }

  @Test
  void killedServerIsMarkedDeadAndRestartedMasterRecoversFromItsJournal(TestInfo info, Random rnd)
      throws Exception {
    newCluster(CLUSTER, "ferrite-mp-");
    secret = secret();

    startMaster("master-" + processes.size(), "server.dead.timeout=1s");
    await("the master", () -> status() != null);
    startServer("s1", "64m", "32m");
    Process s2 = startServer("s2", "64m", "32m");
    ClusterStatus up =
        await(
            "two ALIVE servers",
            () -> {
              ClusterStatus st = status();
              return st.members().size() == 2
                      && st.members().stream()
                          .allMatch(m -> m.info().state() == ServerState.ALIVE && m.regions() > 0)
                  ? st
                  : null;
            });
    int s2Id =
        up.members().stream()
            .filter(m -> m.info().name().equals("s2"))
            .findFirst()
            .orElseThrow()
            .info()
            .serverId();

    FerriteClient c = client(true);
    List<BlockRef> kept = c.allocate(4, "", false, "mp/persistent");
    byte[] data = new byte[4096];
    rnd.nextBytes(data);
    BlockRef onS1 = kept.stream().filter(b -> b.serverId() != s2Id).findFirst().orElseThrow();
    c.writeSync(onS1, 0, ByteBuffer.wrap(data));
    c.allocate(2); // session-scoped, freed when the session expires after the master restart
    ClusterStatus before = status();

    // SIGKILL one memory server: the master marks it DEAD once it has missed heartbeats.
    s2.destroyForcibly().waitFor();
    await("server s2 DEAD", () -> statusJson().contains("\"name\":\"s2\",\"state\":\"DEAD\""));

    // SIGKILL the master and restart it on the same data directory.
    processes.get(0).destroyForcibly().waitFor();
    clients.remove(c);
    c.close();
    startMaster("master-" + processes.size(), "server.dead.timeout=1s");
    ClusterStatus recovered = await("the restarted master", this::status);
    assertEquals(2, recovered.members().size(), logs());
    assertEquals(before.regions(), recovered.regions(), "regions recovered\n" + logs());
    try (FerriteClient c2 = client(true)) {
      assertEquals(kept, c2.owned("mp/persistent"), "persistent allocation recovered");
    }
    // The surviving server reconnects and registers again by itself; the killed one stays away.
    int s1Id = onS1.serverId();
    await("server s1 ALIVE again", () -> status().member(s1Id).info().state() == ServerState.ALIVE);
    assertTrue(status().member(s2Id).info().state() != ServerState.ALIVE, logs());
    try (FerriteClient c3 = client(true)) {
      ByteBuffer back = ByteBuffer.allocate(data.length);
      c3.readSync(onS1, 0, back);
      assertArrayEquals(data, back.array(), "data in the surviving server's region, seed " + seed);
    }
    assertTrue(info.getTags().contains("multiprocess"));
  }

  @Test
  void localClusterStopsCleanlyOnSigterm() throws Exception {
    shmDir = Files.createTempDirectory(Path.of("/dev/shm"), "fm");
    Path local = dir.resolve("local");
    Process p =
        start(
            "local",
            "local",
            "--port",
            "0",
            "--dir",
            local.toString(),
            "--cluster-id",
            "m" + ProcessHandle.current().pid(),
            "--default-cluster-file",
            dir.resolve("published-cluster").toString(),
            "--dram",
            "64m",
            "--disk",
            "32m",
            "--set",
            "region.size=16m",
            "--set",
            "shm.dir=" + shmDir);
    await(
        "the local cluster to serve",
        () -> {
          try {
            return Files.readString(dir.resolve("local.log")).contains("serving until Ctrl-C");
          } catch (IOException e) {
            return false;
          }
        });
    assertTrue(Files.readString(dir.resolve("local.log")).contains("self-check passed"), logs());
    // A client command in "another terminal" finds it through the cluster file alone.
    StringWriter out = new StringWriter();
    CommandLine cl = FerriteCli.commandLine();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(out, true));
    assertEquals(
        0, cl.execute("status", "--cluster-file", dir.resolve("published-cluster").toString()));
    assertTrue(out.toString().contains("2 server(s)"), out.toString());
    try (Stream<Path> files = Files.walk(shmDir)) {
      assertTrue(files.anyMatch(f -> f.getFileName().toString().startsWith("region-")));
    }

    p.destroy(); // SIGTERM: the shutdown hook stops servers and master
    assertTrue(p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS), logs());
    try (Stream<Path> files = Files.walk(shmDir)) {
      List<Path> left =
          files.filter(f -> f.getFileName().toString().startsWith("region-")).toList();
      assertEquals(List.of(), left, "a clean stop deletes the dram region files\n" + logs());
    }
  }
}
