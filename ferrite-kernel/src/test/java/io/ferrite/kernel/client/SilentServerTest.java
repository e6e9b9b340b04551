package io.ferrite.kernel.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.testing.SilentHostFabric;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A silent memory server ({@link SilentHostFabric} black-holes its address) costs a healthy client
 * nothing but the ops addressed to it: the session is renewed (its own thread, its own deadline),
 * other servers' retries run (the retry thread never waits on the network), other servers' connects
 * go through (no lock across a connect).
 */
@ExtendWith(SeedExtension.class)
class SilentServerTest {
  static final int LEASE_MILLIS = 1000;
  static final Duration CONNECT_TIMEOUT = Duration.ofMillis(1500);

  @TempDir Path dir;
  LocalCluster cluster;
  final List<SilentHostFabric> fabrics = new ArrayList<>();

  @BeforeEach
  void start() throws Exception {
    cluster = new LocalCluster(dir);
    cluster.startMaster();
    cluster.startServer("s1");
    cluster.startServer("s2");
    cluster.awaitServers(2);
  }

  @AfterEach
  void stop() throws Exception {
    for (SilentHostFabric f : fabrics) {
      f.heal();
    }
    cluster.close();
  }

  private FerriteClient client() {
    return client(CONNECT_TIMEOUT);
  }

  private FerriteClient client(Duration connectTimeout) {
    ClientOptions options =
        ClientOptions.builder(cluster.credentials)
            .fabric("local")
            .fabrics(
                name -> {
                  SilentHostFabric f = new SilentHostFabric(cluster.fabrics().open(name));
                  fabrics.add(f);
                  return f;
                })
            .leaseMillis(LEASE_MILLIS)
            .connectTimeout(connectTimeout)
            .maxAttempts(3)
            .build();
    return cluster.closeLater(Ferrite.connect(cluster.masterAddress(), options));
  }

  /**
   * The client's connection to one server is lost and every reconnect to it black-holed, so a read
   * retried there waits out three connect timeouts (4.5 s) while the lease is 1 s.
   */
  @Test
  void aSilentServerDoesNotLetTheSessionExpire(Random random) {
    FerriteClient client = client();
    assertTrue(
        client.renewDeadline().toMillis() < LEASE_MILLIS,
        "a renewal gives up before the lease runs out: " + client.renewDeadline());
    // Session blocks on both servers: one on the server that goes silent, one on the other.
    List<BlockRef> blocks = client.allocate(4);
    BlockRef victim = blocks.get(0);
    BlockRef healthy =
        blocks.stream().filter(b -> b.serverId() != victim.serverId()).findFirst().orElseThrow();
    byte[] data = new byte[64];
    random.nextBytes(data);
    client.writeSync(victim, 0, ByteBuffer.wrap(data)); // connects to both servers
    client.writeSync(healthy, 0, ByteBuffer.wrap(data));
    String address = null;
    for (MemberInfo m : client.members()) {
      if (m.serverId() == victim.serverId()) {
        address = m.addresses().get("local");
      }
    }
    assertNotEquals(null, address);
    long session = client.sessionId();

    for (SilentHostFabric f : fabrics) {
      f.silence(address);
    }
    // Lost connection (UNAVAILABLE) -> dropped -> retried after a backoff -> reconnect: 3 black-
    // holed connects of 1.5 s each, then the read fails. Meanwhile the lease (1 s) must be renewed
    // several times.
    CompletableFuture<Void> read = client.read(victim, 0, ByteBuffer.allocate(64));
    FerriteException e = assertThrows(FerriteException.class, () -> Futures.join(read));
    assertEquals(ErrorCode.UNAVAILABLE, e.code(), e.getMessage());
    int blackHoled = fabrics.stream().mapToInt(f -> f.blackHoled.get()).sum();
    assertEquals(3, blackHoled, "the retry reconnected, and each connect was black-holed");

    // The session lived through it: same id, the master still takes it, its blocks still there.
    assertEquals(session, client.sessionId());
    List<BlockRef> more = client.allocate(1);
    assertEquals(1, more.size());
    ByteBuffer back = ByteBuffer.allocate(64);
    client.readSync(healthy, 0, back);
    assertArrayEquals(data, back.array(), "the session's block on the healthy server is intact");
  }

  /**
   * The retry thread never waits on the network: while a read to the silent server is retried (its
   * reconnect black-holed until the test heals it), a read to the other server whose first attempt
   * is dropped is retried and completes.
   */
  @Test
  void aSilentServerDelaysOnlyItsOwnOps() {
    FerriteClient client = client(Duration.ofSeconds(20));
    List<BlockRef> blocks = client.allocate(4);
    BlockRef victim = blocks.get(0);
    BlockRef healthy =
        blocks.stream().filter(b -> b.serverId() != victim.serverId()).findFirst().orElseThrow();
    client.readSync(victim, 0, ByteBuffer.allocate(8)); // connects to both servers
    client.readSync(healthy, 0, ByteBuffer.allocate(8));
    String silentAddress = address(client, victim.serverId());
    String healthyAddress = address(client, healthy.serverId());

    for (SilentHostFabric f : fabrics) {
      f.silence(silentAddress);
    }
    CompletableFuture<Void> stuck = client.read(victim, 0, ByteBuffer.allocate(8));
    // The retry of the stuck read has been started: its reconnect is black-holed now.
    while (fabrics.stream().mapToInt(f -> f.blackHoled.get()).sum() == 0) {
      Thread.onSpinWait();
    }
    for (SilentHostFabric f : fabrics) {
      f.dropNext(healthyAddress);
    }
    Futures.join(client.read(healthy, 0, ByteBuffer.allocate(8))); // dropped once, retried
    assertFalse(stuck.isDone(), "the silent server's read is still waiting for its connect");
    for (SilentHostFabric f : fabrics) {
      f.heal();
    }
    // The black-holed connect gives up at once, the next attempt reaches the healed server.
    Futures.join(stuck);
  }

  /**
   * No lock is held across a connect: while a first connect to the silent server waits (black-
   * holed until the test heals it), a first connect to the other server goes through.
   */
  @Test
  void aSilentServerDoesNotHoldUpConnectsToOthers() throws Exception {
    FerriteClient client = client(Duration.ofSeconds(20));
    List<BlockRef> blocks = client.allocate(4); // no server connection yet: only the master's
    BlockRef victim = blocks.get(0);
    BlockRef healthy =
        blocks.stream().filter(b -> b.serverId() != victim.serverId()).findFirst().orElseThrow();
    for (SilentHostFabric f : fabrics) {
      f.silence(address(client, victim.serverId()));
    }
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread stuck =
        new Thread(
            () -> {
              try {
                client.readSync(victim, 0, ByteBuffer.allocate(8)); // connects after the heal
              } catch (Throwable t) {
                failure.set(t);
              }
            },
            "silent-server-reader");
    stuck.start();
    try {
      while (fabrics.stream().mapToInt(f -> f.blackHoled.get()).sum() == 0) {
        Thread.onSpinWait();
      }
      client.readSync(healthy, 0, ByteBuffer.allocate(8)); // its own first connect
      assertTrue(stuck.isAlive(), "the silent server's connect is still waiting");
    } finally {
      for (SilentHostFabric f : fabrics) {
        f.heal();
      }
      stuck.join();
    }
    if (failure.get() != null) {
      throw new AssertionError("the silent server's read failed after the heal", failure.get());
    }
  }

  /**
   * Closing the client fails an op that waits for a connect at once, with {@code UNAVAILABLE}
   * because the client closed, not after the connect's own timeouts.
   */
  @Test
  void closeFailsAnOpWaitingForAConnect() throws Exception {
    FerriteClient client = client(Duration.ofSeconds(20));
    BlockRef victim = client.allocate(1).get(0);
    for (SilentHostFabric f : fabrics) {
      f.silence(address(client, victim.serverId()));
    }
    AtomicReference<Throwable> outcome = new AtomicReference<>();
    Thread waiting =
        new Thread(
            () -> {
              try {
                client.readSync(victim, 0, ByteBuffer.allocate(8));
                outcome.set(new AssertionError("a read from a silent server succeeded"));
              } catch (Throwable t) {
                outcome.set(t);
              }
            },
            "connect-waiter");
    waiting.start();
    try {
      while (fabrics.stream().mapToInt(f -> f.blackHoled.get()).sum() == 0) {
        Thread.onSpinWait();
      }
      client.close();
      waiting.join();
    } finally {
      for (SilentHostFabric f : fabrics) {
        f.heal();
      }
      waiting.join();
    }
    FerriteException e = assertInstanceOf(FerriteException.class, outcome.get());
    assertEquals(ErrorCode.UNAVAILABLE, e.code(), e.getMessage());
    assertTrue(e.getMessage().contains("client is closed"), e.getMessage());
  }

  private static String address(FerriteClient client, int serverId) {
    for (MemberInfo m : client.members()) {
      if (m.serverId() == serverId) {
        return m.addresses().get("local");
      }
    }
    throw new AssertionError("no member " + serverId);
  }
}
