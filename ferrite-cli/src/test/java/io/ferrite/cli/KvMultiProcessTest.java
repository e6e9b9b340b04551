package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.config.Secrets;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kv operation log under {@code always}: a memory server (its own JVM) is SIGKILLed during a
 * stream of puts, restarted on the same directory, and every put that was acknowledged before the
 * kill is found again (the log is replayed before the server serves).
 */
@Tag("multiprocess")
class KvMultiProcessTest {
  static final String CLUSTER = "kv-mp-test";
  static final long TIMEOUT_NANOS = 60_000_000_000L;

  @TempDir Path dir;
  Path shmDir;
  int port;
  Credentials credentials;
  final List<Process> processes = new ArrayList<>();
  final List<AutoCloseable> clients = new ArrayList<>();

  @AfterEach
  void stopAll() throws IOException, InterruptedException {
    CliProcesses.stopAll(clients, processes, shmDir);
  }

  private Process start(String name, String... args) throws IOException {
    Process p = CliProcesses.start(dir, name, args);
    processes.add(p);
    return p;
  }

  private Process startServer() throws IOException {
    return start(
        "s1",
        "server",
        "--dir",
        dir.toString(),
        "--name",
        "s1",
        "--master",
        "ferrite://127.0.0.1:" + port,
        "--cluster-id",
        CLUSTER,
        "--fabrics",
        "tcp",
        "--dram",
        "16m",
        "--disk",
        "0",
        "--set",
        "region.size=16m",
        "--set",
        "heartbeat.interval=100ms",
        "--set",
        "shm.dir=" + shmDir);
  }

  private FerriteClient client() {
    FerriteClient c =
        Ferrite.connect(
            "ferrite://127.0.0.1:" + port,
            ClientOptions.builder(credentials).fabric("tcp").clientName("kv-mp-test").build());
    clients.add(c);
    return c;
  }

  private String logs() {
    StringBuilder sb = new StringBuilder("logs:\n");
    try (Stream<Path> s = Files.list(dir)) {
      for (Path p : s.filter(f -> f.toString().endsWith(".log")).sorted().toList()) {
        sb.append("--- ").append(p.getFileName()).append('\n');
        sb.append(Files.readString(p, StandardCharsets.UTF_8));
      }
    } catch (IOException e) {
      sb.append(e);
    }
    return sb.toString();
  }

  private <T> T await(String what, Supplier<T> probe) throws InterruptedException {
    long deadline = System.nanoTime() + TIMEOUT_NANOS;
    RuntimeException last = null;
    while (System.nanoTime() < deadline) {
      try {
        T v = probe.get();
        if (v != null && !Boolean.FALSE.equals(v)) {
          return v;
        }
      } catch (RuntimeException e) {
        last = e;
      }
      Thread.sleep(100);
    }
    throw new AssertionError(
        "timed out waiting for " + what + " (last error: " + last + ")\n" + logs());
  }

  private boolean serverAlive() {
    try (FerriteClient c =
        Ferrite.connect(
            "ferrite://127.0.0.1:" + port,
            ClientOptions.builder(credentials).fabric("tcp").session(false).build())) {
      ClusterStatus st = c.status();
      return st.members().size() == 1
          && st.members().get(0).info().state() == ServerState.ALIVE
          && st.members().get(0).regions() > 0;
    }
  }

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void everyAcknowledgedPutSurvivesASigkilledServerUnderAlways() throws Exception {
    shmDir = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-kv-mp-");
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    credentials = new Credentials(CLUSTER, Secrets.readOrCreate(dir.resolve("secret")));
    start(
        "master",
        "master",
        "--dir",
        dir.toString(),
        "--port",
        Integer.toString(port),
        "--cluster-id",
        CLUSTER,
        "--set",
        "heartbeat.interval=100ms",
        "--set",
        "server.dead.timeout=1s",
        "--set",
        "shm.dir=" + shmDir); // the master serves shm too: its socket goes where stopAll cleans
    Process server = startServer();
    await("an ALIVE server", this::serverAlive);

    KvTable t =
        new KvClient(client())
            .createTable(
                "durable",
                TableOptions.DEFAULTS
                    .withShards(4)
                    .withSlotsPerShard(8192)
                    .withExtents(1 << 20, 4)
                    .withLimits(64, 1024)
                    .withDurability(TableOptions.Durability.ALWAYS));
    List<Integer> acked = new CopyOnWriteArrayList<>();
    AtomicBoolean stop = new AtomicBoolean();
    Thread writer =
        new Thread(
            () -> {
              for (int i = 0; !stop.get(); i++) {
                try {
                  t.put(b("key-" + i), b("value-" + i));
                  acked.add(i);
                } catch (RuntimeException e) {
                  return; // the server died under this put: its outcome is unknown
                }
              }
            },
            "kv-mp-writer");
    writer.start();
    await("200 acknowledged puts", () -> acked.size() >= 200);
    server.destroyForcibly().waitFor(); // SIGKILL, mid-stream
    writer.join(30_000);
    stop.set(true);
    writer.join();
    int n = acked.size();
    startServer();
    await("the restarted server ALIVE", this::serverAlive);

    KvTable again = new KvClient(client()).table("durable");
    for (int i : acked) {
      byte[] v = await("key-" + i + " readable", () -> again.get(b("key-" + i)));
      assertArrayEquals(b("value-" + i), v, "acknowledged put " + i + " of " + n + "\n" + logs());
    }
    assertTrue(n >= 200, "acknowledged: " + n);
  }
}
