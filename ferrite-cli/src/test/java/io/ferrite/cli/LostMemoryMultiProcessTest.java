package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.memory.Mapping;
import io.ferrite.memory.MemoryFlags;
import io.ferrite.memory.Namespace;
import io.ferrite.memory.RAddress;
import io.ferrite.memory.RStore;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue #20, the user's reproduction with separate JVMs: a master and a memory server, {@code rsort
 * --delete-output} (its namespaces' blocks go to the memory face's cache), a clean stop (SIGTERM:
 * the server deletes its DRAM region files) and start of the server, {@code rsort} again (it failed
 * with {@code NO_SUCH_REGION}, then {@code BAD_RKEY}: stale cached blocks), a SIGKILL and start,
 * {@code rsort} again, and {@code rsort --clean}. Every process is killed in {@link #stopAll()}.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class LostMemoryMultiProcessTest extends ProcessClusterTest {
  static final String CLUSTER = "lost-memory-test";

  @Test
  void rsortWorksAcrossCleanStopsAndKillsOfTheMemoryServer(Random random) throws Exception {
    newCluster(CLUSTER, "ferrite-lost-memory-");
    startMaster("master", "block.size=1m");
    Process server = startServer("s1", "64m", "0");
    await("an ALIVE server", this::serverAlive);
    rsort("rsort-1", random, "--delete-output");

    server.destroy(); // SIGTERM: a clean stop
    assertEquals(true, server.waitFor(30, TimeUnit.SECONDS), "s1 did not stop on SIGTERM");
    server = startServer("s1", "64m", "0");
    await("s1 back", this::serverAlive);
    awaitMemoryWritable();
    rsort("rsort-2", random, "--delete-output");

    server.destroyForcibly(); // SIGKILL
    server.waitFor();
    startServer("s1", "64m", "0");
    await("s1 back after SIGKILL", this::serverAlive);
    awaitMemoryWritable();
    rsort("rsort-3", random);
    rsort("rsort-clean", random, "--clean");
  }

  private boolean serverAlive() {
    return CliProcesses.oneServerAlive(port, credentials);
  }

  private int probes;
  private String firstFailure;

  /**
   * Waits until a fresh namespace's memory can be written. A server the master calls ALIVE installs
   * its block keys from the REGISTER answer a moment later (a kernel window, not the memory face's:
   * a write there answers BAD_RKEY for a few milliseconds). A stale block handed out by the face
   * would fail every probe, and the wait with it.
   */
  private void awaitMemoryWritable() throws InterruptedException {
    int before = probes;
    CliProcesses.await("memory writable", 20_000_000_000L, this::memoryWritable, this::logs);
    System.out.println(
        "memory writable after " + (probes - before) + " probe(s); first failure: " + firstFailure);
    firstFailure = null;
  }

  private boolean memoryWritable() {
    String name = "probe-" + ++probes;
    try (FerriteClient c =
        Ferrite.connect(
            "ferrite://127.0.0.1:" + port,
            ClientOptions.builder(credentials).fabric("tcp").build())) {
      RStore store = new RStore(c);
      Namespace ns = store.createNamespace(name);
      try {
        ns.reserve(1);
        RAddress at = ns.alloc(8, 0);
        try (Mapping m = at.map(MemoryFlags.MAP_NO_BUFFER)) {
          m.writeSync(0, ByteBuffer.allocate(8).putLong(0, probes));
        }
        ns.free(at);
      } catch (RuntimeException e) {
        firstFailure = firstFailure == null ? e.toString() : firstFailure;
        throw e;
      } finally {
        store.deleteNamespace(name);
      }
      return true;
    }
  }

  /** Runs {@code ferrite rsort} (4 MiB, 2 workers) against the cluster; it must exit 0. */
  private void rsort(String name, Random random, String... more) throws Exception {
    List<String> args =
        new ArrayList<>(
            List.of(
                "rsort",
                "--cluster",
                "ferrite://127.0.0.1:" + port,
                "--cluster-id",
                clusterId,
                "--secret-file",
                secret().toString(),
                "--workers",
                "2",
                "--timeout",
                "50s"));
    if (!List.of(more).contains("--clean")) {
      args.addAll(
          List.of("--gen", "4MiB", "--seed", Long.toString(random.nextLong() & Long.MAX_VALUE)));
    }
    args.addAll(List.of(more));
    Process p = start(name, args.toArray(new String[0]));
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      throw new AssertionError(name + " did not finish within 60 s\n" + logs());
    }
    assertEquals(0, p.exitValue(), name + " failed\n" + logs());
  }
}
