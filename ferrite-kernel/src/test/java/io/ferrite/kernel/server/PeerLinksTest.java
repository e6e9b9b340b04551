package io.ferrite.kernel.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Role;
import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.LocalCluster;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ServiceContext#peer}: a service on one memory server calls the same service on another
 * with role SERVER (a client's call is CLIENT), over one pooled connection, dialed again after the
 * peer restarted; its own id and an unknown id are refused with clear errors.
 */
class PeerLinksTest {
  @TempDir Path dir;
  LocalCluster cluster;

  /** Answers {@code i32 server id, u8 the caller's role ordinal}. */
  static final class RoleEcho implements FerriteService {
    volatile ServiceContext ctx;

    @Override
    public int id() {
      return 17;
    }

    @Override
    public String name() {
      return "role-echo";
    }

    @Override
    public void start(ServiceContext context) {
      ctx = context;
    }

    @Override
    public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
      ByteBuffer b = ByteBuffer.allocate(5).order(ByteOrder.LITTLE_ENDIAN);
      b.putInt(ctx.serverId()).put((byte) caller.role().ordinal()).flip();
      return CompletableFuture.completedFuture(b);
    }
  }

  @AfterEach
  void stop() throws IOException {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static int[] echo(FabricConnection c) {
    ByteBuffer b =
        c.callSync(17, 1, ByteBuffer.allocate(0), Duration.ofSeconds(5))
            .order(ByteOrder.LITTLE_ENDIAN);
    return new int[] {b.getInt(), b.get()};
  }

  @Test
  void aServiceCallsItsPeerAsServerOverOnePooledConnectionReconnectedAfterARestart()
      throws Exception {
    cluster = new LocalCluster(dir);
    cluster.startMaster();
    RoleEcho a = new RoleEcho();
    RoleEcho b = new RoleEcho();
    cluster.startServer("a", a);
    MemoryServer bServer = cluster.startServer("b", b);
    cluster.awaitServers(2);
    int bId = b.ctx.serverId();

    FabricConnection c = a.ctx.peer(bId);
    assertEquals(bId, echo(c)[0]);
    assertEquals(Role.SERVER.ordinal(), echo(c)[1], "a peer call proves role SERVER");
    assertSame(c, a.ctx.peer(bId), "one pooled connection");
    ByteBuffer fromClient =
        cluster
            .client()
            .callSync(bId, 17, 1, ByteBuffer.allocate(0))
            .order(ByteOrder.LITTLE_ENDIAN);
    assertEquals(Role.CLIENT.ordinal(), fromClient.get(4), "a client's call is CLIENT");

    FerriteException self =
        assertThrows(FerriteException.class, () -> a.ctx.peer(a.ctx.serverId()));
    assertEquals(ErrorCode.INVALID_ARGUMENT, self.code());
    FerriteException unknown = assertThrows(FerriteException.class, () -> a.ctx.peer(99));
    assertEquals(ErrorCode.UNAVAILABLE, unknown.code());
    assertTrue(unknown.getMessage().contains("server 99"), unknown.getMessage());

    // The peer restarts (same directory, same id): the closed connection is dialed again.
    cluster.servers.remove(bServer);
    bServer.close();
    RoleEcho b2 = new RoleEcho();
    cluster.startServer("b", b2);
    cluster.awaitServers(2);
    assertEquals(bId, b2.ctx.serverId());
    FabricConnection again = a.ctx.peer(bId);
    assertNotSame(c, again, "a new connection after the restart");
    assertEquals(bId, echo(again)[0]);
    assertEquals(Role.SERVER.ordinal(), echo(again)[1]);
  }
}
