package io.ferrite.kernel.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.Role;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.config.FabricFactory;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.Master;
import io.ferrite.kernel.proto.HostIdentity;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerDialer;
import io.ferrite.kernel.proto.ServerState;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Memory servers of one host call each other over shm ({@link ServerDialer} with the caller's host
 * identity): a peer connection between two servers of this JVM is an shm one and its calls are
 * counted by the callee's shm endpoint, not its tcp one. A member reporting another host identity
 * (a network namespace of its own, where shm would connect all the same), or a dialer that does not
 * know its own, is dialed over tcp; an shm endpoint that does not answer falls back to tcp.
 */
class PeerLinksOverShmTest {
  @TempDir Path dir;
  Path shm;
  final List<AutoCloseable> open = new ArrayList<>();
  final List<MemoryServer> servers = new ArrayList<>();
  final List<PeerLinksTest.RoleEcho> echoes = new ArrayList<>();
  List<Fabric> fabrics;

  @BeforeEach
  void start() throws IOException {
    shm = Files.createTempDirectory(Path.of("/dev/shm"), "fk");
    FerriteConfig cfg =
        FerriteConfig.builder()
            .set(FerriteConfig.CLUSTER_ID, "p")
            .set(FerriteConfig.DATA_DIR, dir.toString())
            .set(FerriteConfig.SHM_DIR, shm.toString())
            .set(FerriteConfig.MASTER_PORT, "0")
            .set(FerriteConfig.REGION_SIZE, "16m")
            .set(FerriteConfig.BLOCK_SIZE, "16m")
            .set(FerriteConfig.CAPACITY_DRAM, "32m")
            .set(FerriteConfig.CAPACITY_DISK, "0")
            .set(FerriteConfig.HEARTBEAT_INTERVAL, "100ms")
            .set(FerriteConfig.JOURNAL_FSYNC, "false")
            .build();
    fabrics = List.of(fabric("tcp"), fabric("shm"));
    Master master = Master.start(cfg, LocalCluster.CREDENTIALS, fabrics);
    open.add(master);
    for (String name : List.of("a", "b")) {
      PeerLinksTest.RoleEcho echo = new PeerLinksTest.RoleEcho();
      MemoryServer s =
          MemoryServer.start(
              cfg.with(FerriteConfig.SERVER_NAME, name),
              LocalCluster.CREDENTIALS,
              fabrics,
              master.addresses().get("tcp"),
              List.of(echo));
      open.add(s);
      servers.add(s);
      echoes.add(echo);
    }
  }

  private Fabric fabric(String name) {
    Fabric f = FabricFactory.standard().open(name);
    open.add(0, f); // closed last
    return f;
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

  private static long rpcs(MemoryServer s, String fabric) {
    long n = 0;
    for (FabricServer e : s.endpoints()) {
      if (e.address().startsWith(fabric + "://")) {
        n += e.counters().ops(OpKind.RPC);
      }
    }
    return n;
  }

  private static int echoRole(FabricConnection c) {
    ByteBuffer b =
        c.callSync(17, 1, ByteBuffer.allocate(0), Duration.ofSeconds(5))
            .order(ByteOrder.LITTLE_ENDIAN);
    b.getInt();
    return b.get();
  }

  @Test
  void serversOfOneHostCallEachOtherOverShm() {
    MemoryServer b = servers.get(1);
    assertTrue(b.addresses().containsKey("shm"), "the server serves shm: " + b.addresses());
    FabricConnection c = echoes.get(0).ctx.peer(b.serverId());
    assertTrue(c.toString().startsWith("shm "), "a same-host peer is dialed over shm: " + c);
    long shmBefore = rpcs(b, "shm");
    long tcpBefore = rpcs(b, "tcp");
    for (int i = 0; i < 20; i++) {
      assertEquals(Role.SERVER.ordinal(), echoRole(c), "over shm, still role SERVER");
    }
    assertTrue(rpcs(b, "shm") >= shmBefore + 20, "shm RPCs at the peer: " + rpcs(b, "shm"));
    assertEquals(tcpBefore, rpcs(b, "tcp"), "no peer call went over tcp");
  }

  @Test
  void anotherHostOrAnUnknownOneIsDialedOverTcpAndABrokenShmFallsBackToTcp() {
    MemoryServer b = servers.get(1);
    String here = HostIdentity.local();
    ConnectOptions options = ConnectOptions.of(LocalCluster.CREDENTIALS.as(Role.SERVER));
    MemberInfo sameHost =
        new MemberInfo(b.serverId(), b.name(), ServerState.ALIVE, here, b.addresses());
    MemberInfo otherHost =
        new MemberInfo(
            b.serverId(), b.name(), ServerState.ALIVE, here + "-other-netns", b.addresses());
    Map<String, String> badShm = new HashMap<>(b.addresses());
    badShm.put("shm", badShm.get("shm") + "-gone");
    MemberInfo brokenShm = new MemberInfo(b.serverId(), b.name(), ServerState.ALIVE, here, badShm);

    try (FabricConnection c = ServerDialer.open(fabrics, options, here, b.serverId(), sameHost)) {
      assertTrue(c.toString().startsWith("shm "), "same host: shm first: " + c);
    }
    try (FabricConnection c = ServerDialer.open(fabrics, options, here, b.serverId(), otherHost)) {
      assertTrue(c.toString().startsWith("connection to tcp:"), "another host: tcp: " + c);
      assertEquals(Role.SERVER.ordinal(), echoRole(c));
    }
    try (FabricConnection c = ServerDialer.open(fabrics, options, b.serverId(), sameHost)) {
      assertTrue(c.toString().startsWith("connection to tcp:"), "own host unknown: tcp: " + c);
    }
    try (FabricConnection c = ServerDialer.open(fabrics, options, here, b.serverId(), brokenShm)) {
      assertTrue(c.toString().startsWith("connection to tcp:"), "shm refused: tcp: " + c);
      assertEquals(Role.SERVER.ordinal(), echoRole(c));
    }
  }
}
