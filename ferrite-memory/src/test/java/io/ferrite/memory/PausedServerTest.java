package io.ferrite.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.memory.master.MemoryMaster;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A memory server process that is only paused (SIGSTOP) past the dead timeout is declared DEAD:
 * maps of its allocations fail with "may come back"; when the same process continues (SIGCONT) and
 * registers again, its allocations map again with their bytes, also across a master restart in
 * between. A server that is killed (SIGKILL) and started again as a new process does not give its
 * allocations back.
 */
@Tag("multiprocess")
@ExtendWith(SeedExtension.class)
class PausedServerTest {
  static final int CHUNK = 16 << 10;
  static final int LENGTH = 5 * CHUNK + 123;

  @TempDir Path dir;
  MemoryCluster cluster;
  final List<Process> processes = new ArrayList<>();

  @AfterEach
  void stop() throws Exception {
    for (Process p : processes) {
      p.destroyForcibly(); // SIGKILL ends a stopped process too
      p.waitFor(30, TimeUnit.SECONDS);
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  private void startCluster() throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort(); // fixed, so that the server process finds a restarted master
    }
    cluster =
        new MemoryCluster(
            dir.resolve("cluster"),
            0,
            true,
            new MemoryMaster(),
            Map.of(
                FerriteConfig.DEAD_TIMEOUT, "1s",
                FerriteConfig.MASTER_HOST, "127.0.0.1",
                FerriteConfig.MASTER_PORT, Integer.toString(port)));
  }

  @Test
  void aPausedServerComesBackWithItsAllocations(Random random) throws Exception {
    startCluster();
    Process server = startServer("p");
    int id = awaitRegistered("p");
    Namespace ns = cluster.store().createNamespace("paused", CHUNK);
    ns.reserve(2L * MemoryCluster.BLOCK);
    RAddress ra = ns.alloc(LENGTH, 0);
    byte[] data = write(ra, random);
    long reserved = ns.stat().reservedBytes();

    signal(server, "STOP");
    await(() -> cluster.master.state().serverState(id) == ServerState.DEAD);
    FerriteException e =
        assertThrows(FerriteException.class, () -> ra.map(MemoryFlags.MAP_NO_BUFFER));
    assertEquals(ErrorCode.NOT_FOUND, e.code());
    assertTrue(e.getMessage().contains("may come back"), e.getMessage());
    assertEquals(0, ns.stat().reservedBytes(), "its blocks are out of the reserve while DEAD");

    signal(server, "CONT");
    await(() -> cluster.master.state().serverState(id) == ServerState.ALIVE);
    assertEquals(reserved, ns.stat().reservedBytes(), "its blocks are back in the reserve");
    assertReads(ra, data);
    // Its chunks are in use again: a second allocation gets other chunks, and both keep their data.
    ns.reserve(2L * MemoryCluster.BLOCK);
    RAddress second = ns.alloc(LENGTH, 0);
    byte[] other = write(second, random);
    assertReads(ra, data);
    assertReads(second, other);
  }

  @Test
  void aPausedServerComesBackAcrossAMasterRestart(Random random) throws Exception {
    startCluster();
    Process server = startServer("p");
    int id = awaitRegistered("p");
    Namespace ns = cluster.store().createNamespace("paused", CHUNK);
    ns.reserve(4L * MemoryCluster.BLOCK);
    RAddress kept = ns.alloc(LENGTH, 0);
    byte[] data = write(kept, random);
    RAddress freed = ns.alloc(LENGTH, 0);
    write(freed, random);

    signal(server, "STOP");
    await(() -> cluster.master.state().serverState(id) == ServerState.DEAD);
    ns.free(freed); // freed while DEAD: stays released
    cluster.master.snapshot(); // the loss in the snapshot, the free in the log after it
    cluster.startMaster(new MemoryMaster());
    Namespace again = cluster.store().joinNamespace("paused");
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> again.raddress(kept.address(), LENGTH).map(MemoryFlags.MAP_NO_BUFFER));
    assertTrue(e.getMessage().contains("may come back"), e.getMessage());

    signal(server, "CONT");
    await(() -> cluster.master.state().serverState(id) == ServerState.ALIVE);
    assertReads(again.raddress(kept.address(), LENGTH), data);
    assertThrows(
        FerriteException.class,
        () -> again.raddress(freed.address(), LENGTH),
        "an allocation freed while DEAD stays freed");

    // And once more from the journal: the return was journaled.
    cluster.startMaster(new MemoryMaster());
    assertReads(cluster.store().joinNamespace("paused").raddress(kept.address(), LENGTH), data);
  }

  @Test
  void aRestartedServerDoesNotGiveItsAllocationsBack(Random random) throws Exception {
    startCluster();
    Process first = startServer("p");
    int id = awaitRegistered("p");
    Namespace ns = cluster.store().createNamespace("restarted", CHUNK);
    ns.reserve(2L * MemoryCluster.BLOCK);
    RAddress ra = ns.alloc(LENGTH, 0);
    write(ra, random);

    first.destroyForcibly().waitFor(); // SIGKILL: its region files stay, with their rkeys
    await(() -> cluster.master.state().serverState(id) == ServerState.DEAD);
    Path log = dir.resolve("p-2.log");
    startServer("p", log);
    await(() -> registered(log) != null);
    assertNotEquals(incarnation(dir.resolve("p.log")), incarnation(log), "a new process");
    await(() -> cluster.master.state().serverState(id) == ServerState.ALIVE);

    FerriteException e =
        assertThrows(FerriteException.class, () -> ra.map(MemoryFlags.MAP_NO_BUFFER));
    assertEquals(ErrorCode.DATA_LOST, e.code());
    assertTrue(e.getMessage().contains("lost its data"), e.getMessage());
    assertFalse(e.getMessage().contains("may come back"), e.getMessage());
    ns.free(ra);
    assertEquals(0, ownedOn(id), "freed: its blocks went back to the kernel");
    // The server serves again: new memory on it works.
    ns.reserve(2L * MemoryCluster.BLOCK);
    RAddress fresh = ns.alloc(LENGTH, 0);
    assertReads(fresh, write(fresh, random));
  }

  private byte[] write(RAddress ra, Random random) {
    byte[] data = new byte[LENGTH];
    random.nextBytes(data);
    try (Mapping m = ra.map(MemoryFlags.MAP_NO_BUFFER)) {
      m.writeSync(0, ByteBuffer.wrap(data));
    }
    return data;
  }

  private static void assertReads(RAddress ra, byte[] data) {
    try (Mapping m = ra.map(MemoryFlags.MAP_NO_BUFFER)) {
      ByteBuffer got = ByteBuffer.allocate(LENGTH);
      m.readSync(0, got);
      assertEquals(ByteBuffer.wrap(data), got.clear(), "the allocation's bytes are intact");
    }
  }

  private int ownedOn(int server) {
    int n = 0;
    for (BlockRef b : cluster.master.state().owned("memory")) {
      if (b.serverId() == server) {
        n++;
      }
    }
    return n;
  }

  private Process startServer(String name) throws IOException {
    return startServer(name, dir.resolve(name + ".log"));
  }

  private Process startServer(String name, Path log) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(List.of("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp"));
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(MemoryServerProcess.class.getName());
    cmd.add(cluster.masterAddress());
    cmd.add(HexFormat.of().formatHex(MemoryCluster.CREDENTIALS.secret()));
    FerriteConfig c =
        cluster
            .config
            .with(FerriteConfig.SERVER_NAME, name)
            .with(FerriteConfig.SERVER_HOST, "127.0.0.1")
            .with(FerriteConfig.SERVER_PORT, "0")
            .with(FerriteConfig.SERVER_FABRICS, "tcp");
    c.effective().entrySet().stream()
        .filter(e -> !e.getKey().equals(FerriteConfig.SECRET))
        .forEach(e -> cmd.add(e.getKey() + "=" + e.getValue()));
    Process p =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    processes.add(p);
    return p;
  }

  /** Waits for the server process named {@code name} (its first log) to register; its id. */
  private int awaitRegistered(String name) throws Exception {
    Path log = dir.resolve(name + ".log");
    await(() -> registered(log) != null);
    int id = Integer.parseInt(registered(log)[1]);
    await(() -> cluster.master.state().serverState(id) == ServerState.ALIVE);
    return id;
  }

  private static String[] registered(Path log) {
    try {
      if (!Files.exists(log)) {
        return null;
      }
      for (String l : Files.readAllLines(log, StandardCharsets.UTF_8)) {
        if (l.startsWith("registered ")) {
          return l.split(" ");
        }
      }
      return null;
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static long incarnation(Path log) {
    return Long.parseLong(registered(log)[2]);
  }

  private static void signal(Process p, String signal) throws Exception {
    Process kill =
        new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).inheritIO().start();
    assertEquals(0, kill.waitFor(), "kill -" + signal);
  }

  /** Waits for {@code condition}; 60 s is only a bound against hanging, not a timing check. */
  private static void await(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("condition not met within 60 s");
      }
      Thread.sleep(10);
    }
  }
}
