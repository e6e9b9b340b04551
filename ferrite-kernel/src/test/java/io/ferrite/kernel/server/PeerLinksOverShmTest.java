package io.ferrite.kernel.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.Role;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.proto.HostIdentity;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerDialer;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.testing.ClusterHarness;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
  ClusterHarness cluster;
  final List<MemoryServer> servers = new ArrayList<>();
  final List<PeerLinksTest.RoleEcho> echoes = new ArrayList<>();

  @BeforeEach
  void start() throws IOException {
    cluster = new ClusterHarness(dir, LocalCluster.CREDENTIALS, true, Map.of());
    cluster.startMaster();
    for (String name : List.of("a", "b")) {
      PeerLinksTest.RoleEcho echo = new PeerLinksTest.RoleEcho();
      servers.add(cluster.startServer(name, echo));
      echoes.add(echo);
    }
  }

  @AfterEach
  void stop() throws IOException {
    cluster.close();
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

    try (FabricConnection c =
        ServerDialer.open(cluster.realFabrics(), options, here, b.serverId(), sameHost)) {
      assertTrue(c.toString().startsWith("shm "), "same host: shm first: " + c);
    }
    try (FabricConnection c =
        ServerDialer.open(cluster.realFabrics(), options, here, b.serverId(), otherHost)) {
      assertTrue(c.toString().startsWith("connection to tcp:"), "another host: tcp: " + c);
      assertEquals(Role.SERVER.ordinal(), echoRole(c));
    }
    try (FabricConnection c =
        ServerDialer.open(cluster.realFabrics(), options, b.serverId(), sameHost)) {
      assertTrue(c.toString().startsWith("connection to tcp:"), "own host unknown: tcp: " + c);
    }
    try (FabricConnection c =
        ServerDialer.open(cluster.realFabrics(), options, here, b.serverId(), brokenShm)) {
      assertTrue(c.toString().startsWith("connection to tcp:"), "shm refused: tcp: " + c);
      assertEquals(Role.SERVER.ordinal(), echoRole(c));
    }
  }
}
