package io.ferrite.kernel.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.ferrite.fabric.RpcContext;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.master.MasterExtension;
import io.ferrite.kernel.master.MasterState;
import io.ferrite.kernel.proto.ServerState;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A memory server stopped cleanly ({@link MemoryServer#close}, what SIGTERM runs) tells the master
 * it leaves: the master declares it DEAD at once, by the timeout's path (its faces are told, and
 * what they journal is durable), instead of after the dead timeout. The dead timeout here is a
 * minute, so nothing in these tests can be the timeout's doing.
 */
class CleanStopTest {
  @TempDir Path dir;
  LocalCluster cluster;
  Faces faces;

  /** A face that journals every {@code serverDead} it is told of: "dead <id>". */
  static final class Faces implements MasterExtension {
    /** What was applied (committed now, or replayed after a master restart). */
    final List<String> applied = Collections.synchronizedList(new ArrayList<>());

    @Override
    public int serviceId() {
      return 0x5107;
    }

    @Override
    public String name() {
      return "goodbyes";
    }

    @Override
    public void apply(ByteBuffer record) {
      byte[] b = new byte[record.remaining()];
      record.get(b);
      applied.add(new String(b, StandardCharsets.UTF_8));
    }

    @Override
    public List<byte[]> snapshot() {
      List<byte[]> out = new ArrayList<>();
      synchronized (applied) {
        for (String s : applied) {
          out.add(s.getBytes(StandardCharsets.UTF_8));
        }
      }
      return out;
    }

    @Override
    public void start(MasterContext context) {}

    @Override
    public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer req) {
      return CompletableFuture.failedFuture(new UnsupportedOperationException());
    }

    @Override
    public void serverDead(int serverId, MasterContext.Mutation m) {
      m.commit(("dead " + serverId).getBytes(StandardCharsets.UTF_8));
    }
  }

  @BeforeEach
  void start() throws Exception {
    cluster = new LocalCluster(dir, Map.of(FerriteConfig.DEAD_TIMEOUT, "60s"));
    faces = new Faces();
    cluster.startMaster(List.of(faces));
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  private MemoryServer stopCleanly(MemoryServer s) {
    cluster.servers.remove(s);
    s.close();
    return s;
  }

  @Test
  void aCleanStopIsDeclaredDeadAtOnceAndItsFacesFailOverDurably() throws Exception {
    MemoryServer s = cluster.startServer("s1");
    MemoryServer other = cluster.startServer("s2");
    cluster.awaitServers(2);
    int id = s.serverId();
    stopCleanly(s);
    // close() returns once the master answered the goodbye, and it answers once the faces'
    // reaction is durable: no waiting here.
    MasterState state = cluster.master.state();
    assertEquals(ServerState.DEAD, state.serverState(id));
    assertEquals(MasterState.REASON_LEFT, state.deadReason(id));
    assertEquals(List.of("dead " + id), faces.applied);
    assertEquals(ServerState.ALIVE, state.serverState(other.serverId()), "only the leaver");
    assertNull(state.deadReason(other.serverId()));
    // The face's reaction was journaled: a restarted master replays it (and does not run it again:
    // the server is UNKNOWN there until the timeout, which is a minute away).
    faces.applied.clear();
    cluster.startMaster(List.of(faces));
    assertEquals(List.of("dead " + id), faces.applied);
  }

  @Test
  void aServerBackAfterACleanStopIsANewIncarnationAndALateGoodbyeIsIgnored() throws Exception {
    MemoryServer first = stopCleanly(cluster.startServer("s1"));
    int id = first.serverId();
    assertEquals(MasterState.REASON_LEFT, cluster.master.state().deadReason(id));
    MemoryServer back = cluster.startServer("s1");
    assertEquals(id, back.serverId());
    assertNotEquals(first.incarnation(), back.incarnation());
    MasterState state = cluster.master.state();
    assertEquals(ServerState.ALIVE, state.serverState(id));
    assertNull(state.deadReason(id), "ALIVE again: no reason to be dead");
    // A goodbye of the earlier process arriving late (a retry) never kills the new one.
    assertFalse(state.leave(id, first.incarnation()));
    assertEquals(ServerState.ALIVE, state.serverState(id));
    assertEquals(List.of("dead " + id), faces.applied);
    // The new process's own goodbye does.
    stopCleanly(back);
    assertEquals(ServerState.DEAD, state.serverState(id));
    assertEquals(List.of("dead " + id, "dead " + id), faces.applied);
    // Said twice (DEAD already): nothing more happens.
    assertFalse(state.leave(id, back.incarnation()));
    assertEquals(2, faces.applied.size());
  }

  /** A hang guard only (the goodbye is bounded by the dead timeout and 2 s); nothing timed. */
  @Test
  @Timeout(60)
  void aCleanStopThatCannotReachTheMasterStillStops() throws Exception {
    MemoryServer s = cluster.startServer("s1");
    cluster.awaitServers(1);
    int id = s.serverId();
    cluster.master.close();
    stopCleanly(s);
    // The master back: the server never said goodbye to it, so it is not DEAD by a goodbye (it
    // will be after the timeout, as a killed server is).
    cluster.startMaster(List.of(faces));
    assertNotEquals(MasterState.REASON_LEFT, cluster.master.state().deadReason(id));
    assertEquals(List.of(), faces.applied);
    // The stop went through after the failed goodbye: its directory locks are free again.
    assertEquals(id, cluster.startServer("s1").serverId());
  }
}
