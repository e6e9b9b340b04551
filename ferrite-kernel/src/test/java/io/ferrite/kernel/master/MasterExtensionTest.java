package io.ferrite.kernel.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.local.LocalFabric;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.kernel.server.MemoryServer;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A face's master half ({@link MasterExtension}) gets its own RPC service, journaled state that
 * survives restarts through log and snapshot, session-end callbacks and owned blocks; the master
 * keeps the records of an extension that is not installed.
 */
class MasterExtensionTest {
  static final int SERVICE = 40;
  static final int PUT = 1;
  static final int GET = 2;

  /**
   * A journaled name registry: PUT name value session (0 = persistent) blocks; GET name. Names put
   * by a session disappear when it ends. PUT with blocks > 0 allocates that many blocks owned by
   * "registry:" + name.
   */
  static class Registry implements MasterExtension {
    final Map<String, long[]> names = new TreeMap<>(); // name -> {value, session}
    final List<Long> endedSessions = new ArrayList<>();

    /** "serverId/incarnation" per registration the master reported. */
    final List<String> registered = java.util.Collections.synchronizedList(new ArrayList<>());

    MasterContext ctx;

    @Override
    public int serviceId() {
      return SERVICE;
    }

    @Override
    public String name() {
      return "registry";
    }

    @Override
    public void apply(ByteBuffer record) {
      Wire.Reader r = new Wire.Reader(record, "registry record");
      int type = r.u8("type");
      String name = r.str("name");
      if (type == 1) {
        names.put(name, new long[] {r.i64("value"), r.i64("session")});
      } else {
        names.remove(name);
      }
      r.end();
    }

    @Override
    public List<byte[]> snapshot() {
      List<byte[]> out = new ArrayList<>();
      names.forEach((n, v) -> out.add(put(n, v[0], v[1])));
      return out;
    }

    static byte[] put(String name, long value, long session) {
      return new Wire.Writer().u8(1).str(name).i64(value).i64(session).toArray();
    }

    static byte[] del(String name) {
      return new Wire.Writer().u8(2).str(name).toArray();
    }

    @Override
    public void start(MasterContext context) {
      ctx = context;
    }

    @Override
    public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer req) {
      Wire.Reader r = new Wire.Reader(req, "registry opcode " + opcode);
      if (opcode == PUT) {
        String name = r.str("name");
        long value = r.i64("value");
        long session = r.i64("session");
        long caller0 = r.i64("caller");
        int blocks = r.i32("blocks");
        r.end();
        return ctx.mutate(
            m -> {
              if (session != 0 && !m.sessionOpen(session)) {
                return Futures.failed(ErrorCode.SESSION_EXPIRED, "no session " + session);
              }
              if (blocks > 0) {
                m.allocate(caller0, blocks, "", false, "registry:" + name);
              }
              m.commit(put(name, value, session));
              return CompletableFuture.completedFuture(ByteBuffer.allocate(0));
            });
      }
      if (opcode == GET) {
        String name = r.str("name");
        r.end();
        long[] v = ctx.mutate(m -> names.get(name));
        if (v == null) {
          return Futures.failed(ErrorCode.NOT_FOUND, "no name " + name);
        }
        return CompletableFuture.completedFuture(new Wire.Writer().i64(v[0]).toBuffer());
      }
      return Futures.failed(ErrorCode.UNKNOWN_OPCODE, "opcode " + opcode);
    }

    @Override
    public void serverRegistered(int serverId, long incarnation, MasterContext.Mutation m) {
      registered.add(serverId + "/" + incarnation);
    }

    /** Per loss the master reported: the server, and per region its owners' block counts. */
    final List<String> lost = java.util.Collections.synchronizedList(new ArrayList<>());

    @Override
    public void regionsLost(int serverId, List<LostRegion> regions, MasterContext.Mutation m) {
      for (LostRegion r : regions) {
        StringBuilder b = new StringBuilder(serverId + "/" + r.region().ref().regionId());
        r.blocksByOwner().forEach((o, l) -> b.append(' ').append(o).append('=').append(l.size()));
        lost.add(b.toString());
      }
      // The callback comes before serverRegistered of the same registration.
      lost.add("registered:" + registered.size());
      for (LostRegion r : regions) {
        r.blocksByOwner().values().forEach(l -> lostBlocks.addAndGet(l.size()));
      }
    }

    final java.util.concurrent.atomic.AtomicLong lostBlocks =
        new java.util.concurrent.atomic.AtomicLong();

    @Override
    public Map<String, Long> lost() {
      return lostBlocks.get() == 0 ? Map.of() : Map.of("blocks", lostBlocks.get());
    }

    @Override
    public void sessionClosed(long sessionId, MasterContext.Mutation m) {
      endedSessions.add(sessionId);
      for (var e : List.copyOf(names.entrySet())) {
        if (e.getValue()[1] == sessionId) {
          m.commit(del(e.getKey()));
        }
      }
    }
  }

  @TempDir Path dir;
  LocalCluster cluster;

  @BeforeEach
  void start() throws Exception {
    cluster = new LocalCluster(dir);
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  private Master startMaster(MasterExtension... exts) {
    if (cluster.master != null) {
      cluster.master.close();
    }
    cluster.master =
        Master.start(
            cluster.config,
            LocalCluster.CREDENTIALS,
            List.of(new LocalFabric(cluster.network)),
            List.of(exts));
    return cluster.master;
  }

  private static void put(FerriteClient c, String name, long value, long session, int blocks) {
    ByteBuffer req =
        new Wire.Writer()
            .str(name)
            .i64(value)
            .i64(session)
            .i64(c.sessionId())
            .i32(blocks)
            .toBuffer();
    Futures.join(c.callMaster(SERVICE, PUT, req));
  }

  private static Long get(FerriteClient c, String name) {
    try {
      ByteBuffer b =
          Futures.join(c.callMaster(SERVICE, GET, new Wire.Writer().str(name).toBuffer()));
      return new Wire.Reader(b, "get").i64("value");
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.NOT_FOUND) {
        return null;
      }
      throw e;
    }
  }

  @Test
  void stateSurvivesRestartThroughLogAndSnapshot() {
    startMaster(new Registry());
    cluster.startServer("s1");
    FerriteClient c = cluster.client();
    put(c, "a", 1, 0, 0);
    put(c, "b", 2, 0, 2);
    assertEquals(2, c.owned("registry:b").size());
    c.close();

    Registry r2 = new Registry();
    startMaster(r2);
    assertEquals(Map.of("a", 1L, "b", 2L), values(r2), "recovered from the log");
    cluster.master.snapshot();
    FerriteClient c2 = cluster.client();
    put(c2, "c", 3, 0, 0);
    c2.close();

    Registry r3 = new Registry();
    startMaster(r3);
    assertEquals(Map.of("a", 1L, "b", 2L, "c", 3L), values(r3), "snapshot plus log");
    assertEquals(2, cluster.master.state().owned("registry:b").size(), "owned blocks recovered");
  }

  private static Map<String, Long> values(Registry r) {
    Map<String, Long> m = new TreeMap<>();
    r.names.forEach((k, v) -> m.put(k, v[0]));
    return m;
  }

  @Test
  void recordsOfAMissingExtensionAreKeptThroughSnapshots() {
    startMaster(new Registry());
    FerriteClient c = cluster.client();
    put(c, "kept", 7, 0, 0);
    c.close();

    startMaster(); // no extension installed
    FerriteClient c2 = cluster.client();
    FerriteException e = assertThrows(FerriteException.class, () -> get(c2, "kept"));
    assertEquals(ErrorCode.UNKNOWN_SERVICE, e.code());
    c2.close();
    cluster.master.snapshot();

    Registry back = new Registry();
    startMaster(back);
    assertEquals(Map.of("kept", 7L), values(back));
  }

  @Test
  void aSessionsNamesGoWhenItEndsAndStayGoneAfterRestart() {
    Registry r = new Registry();
    startMaster(r);
    FerriteClient c = cluster.client();
    FerriteClient other = cluster.client();
    put(other, "mine", 5, c.sessionId(), 0);
    put(other, "lasting", 6, 0, 0);
    assertEquals(5L, get(other, "mine"));
    long session = c.sessionId();
    c.close(); // closes the session
    assertTrue(r.endedSessions.contains(session));
    assertNull(get(other, "mine"));
    assertEquals(6L, get(other, "lasting"));
    other.close();

    Registry r2 = new Registry();
    startMaster(r2);
    assertEquals(Map.of("lasting", 6L), values(r2));
  }

  @Test
  void extensionFailuresReachTheCallerAndIdsAreChecked() {
    startMaster(new Registry());
    FerriteClient c = cluster.client();
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> Futures.join(c.callMaster(SERVICE, 99, ByteBuffer.allocate(0))));
    assertEquals(ErrorCode.UNKNOWN_OPCODE, e.code());
    e =
        assertThrows(
            FerriteException.class,
            () -> Futures.join(c.callMaster(SERVICE, PUT, ByteBuffer.allocate(3))));
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), e.getMessage());
    e = assertThrows(FerriteException.class, () -> put(c, "x", 1, 12345, 0));
    assertEquals(ErrorCode.SESSION_EXPIRED, e.code());

    MasterState state = cluster.master.state();
    Registry low =
        new Registry() {
          @Override
          public int serviceId() {
            return 3;
          }
        };
    assertThrows(IllegalArgumentException.class, () -> state.registerExtension(low));
    assertThrows(IllegalArgumentException.class, () -> state.registerExtension(new Registry()));
  }

  @Test
  void serverRegistrationsCarryTheProcessIncarnation() {
    Registry reg = new Registry();
    startMaster(reg);
    MemoryServer first = cluster.startServer("s1");
    int id = first.serverId();
    assertTrue(first.incarnation() != 0);
    // Told when the server is ALIVE with its regions, not for the registration that only obtains
    // an id (it may be told again if a loaded machine delays heartbeats: the same process).
    assertEquals(
        java.util.Set.of(id + "/" + first.incarnation()),
        new java.util.HashSet<>(List.copyOf(reg.registered)));
    first.close();
    cluster.servers.remove(first);
    MemoryServer second = cluster.startServer("s1");
    assertEquals(id, second.serverId(), "the same server (its id file)");
    assertTrue(second.incarnation() != first.incarnation(), "another process");
    assertEquals(
        java.util.Set.of(id + "/" + first.incarnation(), id + "/" + second.incarnation()),
        new java.util.HashSet<>(List.copyOf(reg.registered)));
  }

  @Test
  void aServerBackWithoutItsRegionsDeclaresTheirBlocksLostToTheirOwners() {
    Registry reg = new Registry();
    startMaster(reg);
    MemoryServer first = cluster.startServer("s1");
    FerriteClient c = cluster.client();
    put(c, "blocks", 1, 0, 3);
    MasterState state = cluster.master.state();
    List<BlockRef> owned = state.owned("registry:blocks");
    assertEquals(3, owned.size());
    assertEquals(List.of(), List.copyOf(reg.lost), "nothing lost while the server lives");
    first.close();
    cluster.servers.remove(first);
    // A new process: its regions are new (other rkeys), so the old ones and their blocks are gone.
    cluster.startServer("s1");
    List<String> lost = List.copyOf(reg.lost);
    int blocksLost = 0;
    for (String l : lost) {
      int at = l.indexOf("registry:blocks=");
      if (at >= 0) {
        blocksLost += Integer.parseInt(l.substring(at + "registry:blocks=".length()));
      }
    }
    assertEquals(3, blocksLost, "every block of the owner, in the regions that held them: " + lost);
    assertEquals("registered:1", lost.get(lost.size() - 1), "before serverRegistered: " + lost);
    assertEquals(0, state.owned("registry:blocks").size(), "no longer allocated");
    assertEquals(Map.of("registry", Map.of("blocks", 3L)), state.status().lost(), "in the status");
  }

  @Test
  void ownedBlocksAreFreedOnlyByTheirOwner() {
    startMaster(new Registry());
    cluster.startServer("s1");
    FerriteClient c = cluster.client();
    put(c, "blocks", 1, 0, 3);
    MasterState state = cluster.master.state();
    List<BlockRef> owned = state.owned("registry:blocks");
    assertEquals(3, owned.size());
    FerriteException e =
        assertThrows(FerriteException.class, () -> state.freeOwned("registry:other", owned));
    assertEquals(ErrorCode.NOT_FOUND, e.code());
    assertEquals(3, state.owned("registry:blocks").size(), "all or none");
    assertEquals(3, state.freeOwned("registry:blocks", owned));
    assertEquals(0, state.owned("registry:blocks").size());
  }
}
