package io.ferrite.kernel.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.Role;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterStub;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.RegionInfo;
import io.ferrite.kernel.proto.ServerProtocol;
import io.ferrite.kernel.server.MemoryServer;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * Roles at the master (docs/SECURITY.md, "Principals and roles"): a CLIENT cannot act as a server,
 * sees no region keys, and lists owned blocks only with a live session.
 */
class MasterRolesTest {
  static final Duration DEADLINE = Duration.ofSeconds(5);

  @TempDir Path dir;
  LocalCluster cluster;
  MemoryServer server;
  FabricConnection clientConn;
  MasterStub asClient;
  MasterStub asAdmin;

  @BeforeEach
  void start() throws Exception {
    cluster = new LocalCluster(dir);
    cluster.startMaster();
    server = cluster.startServer("s1");
    cluster.awaitServers(1);
    clientConn = connect(LocalCluster.CREDENTIALS.as(Role.CLIENT));
    asClient = new MasterStub(clientConn, DEADLINE);
    asAdmin = new MasterStub(connect(LocalCluster.CREDENTIALS), DEADLINE);
  }

  private FabricConnection connect(Credentials c) {
    return cluster.closeLater(
        cluster.fabrics().open("local").connect(cluster.masterAddress(), ConnectOptions.of(c)));
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  private static void denied(String opName, Executable call) {
    FerriteException e = assertThrows(FerriteException.class, call, opName);
    assertEquals(ErrorCode.PERMISSION_DENIED, e.code(), e.getMessage());
    assertTrue(e.getMessage().contains(opName), e.getMessage());
    assertTrue(e.getMessage().contains("needs role SERVER or ADMIN"), e.getMessage());
    assertTrue(e.getMessage().contains("authenticated as CLIENT"), e.getMessage());
    assertFalse(e.retryable());
  }

  @Test
  void aClientCannotActAsAServerAndTheClusterIsUnchanged() throws Exception {
    int id = server.serverId();
    List<MemberInfo> members = cluster.master.state().members();
    List<RegionInfo> regions = cluster.master.state().regions(-1);
    RegionInfo serviceRegion =
        new RegionInfo(new RegionRef(id, 999, 0x1234, 4096), "dram", "fake-service");
    denied(
        "REGISTER",
        () -> asClient.register(-1, "impostor", "host", Map.of("local", "local://x"), List.of()));
    denied(
        "REGISTER",
        () -> asClient.register(id, "s1", "host", Map.of("local", "local://x"), List.of()));
    denied("HEARTBEAT", () -> asClient.heartbeat(id));
    denied("ADD_REGION", () -> asClient.addRegion(id, serviceRegion));
    denied("REMOVE_REGION", () -> asClient.removeRegion(id, regions.get(0).ref().regionId()));
    denied("LEAVE", () -> asClient.leave(id, 0));
    assertEquals(members, cluster.master.state().members());
    assertEquals(regions, cluster.master.state().regions(-1));
    // The same calls are a server's to make: ADMIN (the root) may.
    asAdmin.addRegion(id, serviceRegion);
    assertEquals(regions.size() + 1, cluster.master.state().regions(-1).size());
    asAdmin.removeRegion(id, 999);
    assertEquals(regions, cluster.master.state().regions(-1));
  }

  @Test
  void aClientCannotRevokeABlockOnItsServer() {
    FerriteClient c = cluster.client();
    BlockRef b = c.allocate(1, "dram", true, "").get(0);
    c.write(b, 0, ByteBuffer.wrap(new byte[] {7})).join();
    int index = (int) (b.offset() / b.length());
    ByteBuffer revoke =
        ServerProtocol.writeRevokes(
                List.of(new ServerProtocol.Revoke(b.regionId(), index, 1_000_000)))
            .toBuffer();
    CompletionException e =
        assertThrows(
            CompletionException.class,
            () ->
                c.call(b.serverId(), ServerProtocol.SERVICE, ServerProtocol.REVOKE, revoke).join());
    FerriteException f = FerriteException.unwrap(e);
    assertEquals(ErrorCode.PERMISSION_DENIED, f.code(), f.getMessage());
    assertTrue(f.getMessage().contains("REVOKE"), f.getMessage());
    ByteBuffer got = ByteBuffer.allocate(1);
    c.read(b, 0, got).join();
    assertEquals(7, got.get(0), "the block's key still works: nothing was revoked");
  }

  @Test
  void regionsShowNoKeyToAClient() {
    List<RegionInfo> forClient = asClient.regions(-1);
    List<RegionInfo> forAdmin = asAdmin.regions(-1);
    assertFalse(forAdmin.isEmpty());
    assertEquals(forAdmin.size(), forClient.size());
    for (int i = 0; i < forAdmin.size(); i++) {
      RegionRef a = forAdmin.get(i).ref();
      RegionRef c = forClient.get(i).ref();
      assertNotEquals(0, a.rkey(), "a server region has a key");
      assertEquals(0, c.rkey(), "a CLIENT sees no key: " + c);
      assertEquals(new RegionRef(a.serverId(), a.regionId(), 0, a.length()), c);
    }
  }

  @Test
  void ownedNeedsALiveSession() {
    FerriteClient c = cluster.client();
    List<BlockRef> kept = c.allocate(2, "", false, "roles/kept");
    assertEquals(kept, c.owned("roles/kept"));
    for (long session : new long[] {0, 42, c.sessionId() ^ 1}) {
      FerriteException e =
          assertThrows(FerriteException.class, () -> asClient.owned(session, "roles/kept"));
      assertEquals(ErrorCode.SESSION_EXPIRED, e.code(), e.getMessage());
    }
    long closed = asClient.openSession("short", 0).sessionId();
    asClient.closeSession(closed);
    FerriteException e =
        assertThrows(FerriteException.class, () -> asClient.owned(closed, "roles/kept"));
    assertEquals(ErrorCode.SESSION_EXPIRED, e.code(), e.getMessage());
  }

  @Test
  void aWrongClientSecretNamesItsFile() {
    byte[] wrong = LocalCluster.CREDENTIALS.secretFor(Role.CLIENT);
    wrong[3] ^= 0x40;
    Credentials bad = new Credentials("kernel-test", wrong, Role.CLIENT, "/home/u/client.secret");
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () ->
                cluster
                    .fabrics()
                    .open("local")
                    .connect(cluster.masterAddress(), ConnectOptions.of(bad)));
    assertEquals(ErrorCode.AUTH_FAILED, e.code());
    assertTrue(
        e.getMessage()
            .contains(
                "the secret in /home/u/client.secret is not this cluster's (or not valid for role"
                    + " CLIENT)"),
        e.getMessage());
  }
}
