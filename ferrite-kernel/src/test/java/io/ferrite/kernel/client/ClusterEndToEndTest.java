package io.ferrite.kernel.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RpcContext;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.kernel.LocalCluster;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.RegionInfo;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.server.FerriteService;
import io.ferrite.kernel.server.MemoryServer;
import io.ferrite.kernel.server.ServiceContext;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** Master, two memory servers and clients over the local fabric. */
@ExtendWith(SeedExtension.class)
class ClusterEndToEndTest {
  TestSeed seed;
  Random random;
  @TempDir Path dir;
  LocalCluster cluster;

  @BeforeEach
  void start(TestSeed seed, Random random) throws Exception {
    this.seed = seed;
    this.random = random;
    cluster = new LocalCluster(dir);
    cluster.startMaster();
    cluster.startServer("s1");
    cluster.startServer("s2");
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  static void await(String what, BooleanSupplier cond) throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(20);
    }
  }

  @Test
  void allocateWriteReadBackAndAtomicsOnEveryServer() {
    FerriteClient c = cluster.client();
    List<BlockRef> blocks = c.allocate(4);
    Set<Integer> servers = new HashSet<>();
    for (BlockRef b : blocks) {
      servers.add(b.serverId());
      byte[] data = new byte[1000];
      random.nextBytes(data);
      c.writeSync(b, 128, ByteBuffer.wrap(data));
      ByteBuffer back = ByteBuffer.allocate(1000);
      c.readSync(b, 128, back);
      assertArrayEquals(data, back.array(), b + " " + seed);
      assertEquals(0, c.compareAndSwapSync(b, 0, 0, 42));
      assertEquals(42, c.compareAndSwapSync(b, 0, 7, 9), "failed CAS returns the current value");
      assertEquals(42, c.fetchAndAddSync(b, 0, 8));
      assertEquals(50, c.fetchAndAddSync(b, 0, 0));
    }
    assertEquals(2, servers.size(), "round robin reached both servers: " + blocks);
    FerriteException oob =
        assertThrows(
            FerriteException.class,
            () -> c.writeSync(blocks.get(0), blocks.get(0).length() - 4, ByteBuffer.allocate(8)));
    assertEquals(ErrorCode.OUT_OF_BOUNDS, oob.code());
    assertEquals(4, c.free(blocks));
  }

  @Test
  void oneClientIsSharedByManyThreads() throws Exception {
    FerriteClient c = cluster.client();
    List<BlockRef> blocks = c.allocate(2);
    int threads = 4;
    int adds = 250;
    List<Thread> workers = new java.util.ArrayList<>();
    java.util.concurrent.atomic.AtomicReference<Throwable> failure =
        new java.util.concurrent.atomic.AtomicReference<>();
    for (int t = 0; t < threads; t++) {
      Thread w =
          new Thread(
              () -> {
                try {
                  for (int i = 0; i < adds; i++) {
                    for (BlockRef b : blocks) {
                      c.fetchAndAddSync(b, 8, 1);
                    }
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "e2e-worker-" + t);
      workers.add(w);
      w.start();
    }
    for (Thread w : workers) {
      w.join();
    }
    if (failure.get() != null) {
      throw new AssertionError(failure.get());
    }
    for (BlockRef b : blocks) {
      assertEquals(threads * adds, c.fetchAndAddSync(b, 8, 0), b.toString());
    }
    // A batch: several ops on one connection, one flush.
    BlockRef b = blocks.get(0);
    io.ferrite.fabric.Batch batch = c.batch(b.serverId());
    CompletableFuture<Long> f1 = batch.fetchAndAdd(b.region(), b.offset() + 16, 5);
    CompletableFuture<Long> f2 = batch.fetchAndAdd(b.region(), b.offset() + 16, 5);
    Futures.join(batch.flush());
    assertEquals(5, f1.join() + f2.join());
  }

  @Test
  void clientWithoutTheSecretIsRefusedBeforeAnyOp() {
    Credentials wrong =
        new Credentials("kernel-test", "not-the-secret-at-all".getBytes(StandardCharsets.UTF_8));
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> cluster.client(ClientOptions.builder(wrong).maxAttempts(1)));
    assertEquals(ErrorCode.AUTH_FAILED, e.code(), e.getMessage());
    // A client that has the secret can still not reach a memory server with a wrong one.
    FerriteClient good = cluster.client();
    BlockRef b = good.allocate(1).get(0);
    String address = good.members().get(0).addresses().get("local");
    FerriteException e2 =
        assertThrows(
            FerriteException.class,
            () ->
                cluster
                    .fabrics()
                    .open("local")
                    .connect(address, io.ferrite.fabric.ConnectOptions.of(wrong)));
    assertEquals(ErrorCode.AUTH_FAILED, e2.code());
    assertTrue(b.length() > 0);
  }

  @Test
  void statusShowsMembersCapacityAndUse() {
    FerriteClient c = cluster.client();
    c.allocate(3, "dram", true, "");
    ClusterStatus st = c.status();
    assertEquals(2, st.members().size());
    assertEquals(6, st.regions(), "2 dram + 1 disk region per server");
    long[] dram = st.totals(ServerState.ALIVE).get("dram");
    assertEquals(2 * 512 * 1024, dram[0]);
    assertEquals(3 * 64 * 1024, dram[1]);
    assertTrue(st.format().contains("ALIVE"), st.format());
    assertTrue(st.toJson().contains("\"state\":\"ALIVE\""), st.toJson());
  }

  @Test
  void killedServerIsMarkedDeadAndItsBlocksAreNotHandedOut() throws Exception {
    FerriteClient c = cluster.client();
    MemoryServer victim = cluster.servers.get(1);
    // A crash as the fabric sees it: every connection fails, nothing answers any more.
    cluster.network.kill(victim.addresses().get("local"));
    victim.close();
    await(
        "server " + victim.serverId() + " DEAD",
        () -> cluster.master.state().serverState(victim.serverId()) == ServerState.DEAD);
    for (BlockRef b : c.allocate(8, "dram", true, "")) {
      assertTrue(b.serverId() != victim.serverId(), b.toString());
    }
    FerriteException e =
        assertThrows(FerriteException.class, () -> c.allocate(1, "dram", true, ""));
    assertEquals(ErrorCode.NO_SPACE, e.code());
    assertTrue(e.getMessage().contains("DEAD"), e.getMessage());
    // It comes back by registering again (same directory: same id).
    MemoryServer back = cluster.startServer("s2");
    assertEquals(victim.serverId(), back.serverId());
    assertEquals(ServerState.ALIVE, cluster.master.state().serverState(back.serverId()));
  }

  @Test
  void restartedMasterRecoversAndServersReRegisterByThemselves() throws Exception {
    FerriteClient c = cluster.client();
    List<BlockRef> kept = c.allocate(2, "", false, "app/data");
    byte[] data = "survives a master restart".getBytes(StandardCharsets.UTF_8);
    c.writeSync(kept.get(0), 0, ByteBuffer.wrap(data));
    cluster.master.snapshot(); // recovery below reads a snapshot plus the log after it
    List<BlockRef> later = c.allocate(1, "", false, "app/later");
    int regionsBefore = cluster.master.state().regions(-1).size();

    cluster.master.close();
    cluster.startMaster();
    assertEquals(regionsBefore, cluster.master.state().regions(-1).size());
    assertTrue(
        cluster.master.state().members().stream().allMatch(m -> m.state() == ServerState.UNKNOWN));
    for (MemoryServer s : cluster.servers) {
      await(
          "server " + s.serverId() + " back",
          () -> cluster.master.state().serverState(s.serverId()) == ServerState.ALIVE);
    }
    FerriteClient c2 = cluster.client();
    assertEquals(kept, c2.owned("app/data"));
    assertEquals(later, c2.owned("app/later"));
    ByteBuffer back = ByteBuffer.allocate(data.length);
    c2.readSync(kept.get(0), 0, back);
    assertArrayEquals(data, back.array());
  }

  @Test
  void aLiveClientKeepsItsSessionByRenewingIt() throws Exception {
    FerriteClient c =
        cluster.client(ClientOptions.builder(LocalCluster.CREDENTIALS).leaseMillis(300));
    List<BlockRef> mine = c.allocate(1);
    Thread.sleep(1200); // four leases: only background renewal keeps the session
    assertTrue(cluster.master.state().hasSession(c.sessionId()));
    assertEquals(1, c.free(mine));
  }

  @Test
  void sessionBlocksAreFreedWhenTheClientGoesAway() throws Exception {
    FerriteClient c =
        cluster.client(ClientOptions.builder(LocalCluster.CREDENTIALS).leaseMillis(300));
    c.allocate(2);
    c.allocate(1, "", false, "persistent");
    long session = c.sessionId();
    assertTrue(cluster.master.state().hasSession(session));
    c.close();
    assertTrue(!cluster.master.state().hasSession(session));
    FerriteClient other = cluster.client();
    assertEquals(1, other.owned("persistent").size());
    assertEquals(64 * 1024, other.status().totals(null).get("dram")[1]);
  }

  /** Echoes requests and creates one region of its own. */
  /** An opcode of {@link EchoService} that is never answered. */
  static final int HANG = 2;

  static final class EchoService implements FerriteService {
    final int id;
    final String name;
    volatile ServiceContext ctx;
    volatile MappedRegion region;

    /** Calls of {@link #HANG} received (never answered). */
    final java.util.concurrent.atomic.AtomicInteger hanging =
        new java.util.concurrent.atomic.AtomicInteger();

    EchoService() {
      this(16, "echo");
    }

    EchoService(int id, String name) {
      this.id = id;
      this.name = name;
    }

    @Override
    public int id() {
      return id;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public void start(ServiceContext context) {
      ctx = context;
      region = context.createRegion("dram", 64 * 1024);
    }

    @Override
    public CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request) {
      if (opcode == HANG) {
        hanging.incrementAndGet();
        return new CompletableFuture<>();
      }
      if (opcode != 1) {
        return Futures.failed(ErrorCode.UNKNOWN_OPCODE, "echo has only opcodes 1 and " + HANG);
      }
      ByteBuffer copy = ByteBuffer.allocate(request.remaining());
      copy.put(request.duplicate()).flip();
      return CompletableFuture.completedFuture(copy);
    }
  }

  @Test
  void hostedServiceAnswersCallsAndOwnsARegion() throws Exception {
    EchoService echo = new EchoService();
    MemoryServer s = cluster.startServer("s3", echo);
    FerriteClient c = cluster.client();
    ByteBuffer rsp =
        Futures.join(
            c.call(s.serverId(), 16, 1, ByteBuffer.wrap("ping".getBytes(StandardCharsets.UTF_8))));
    assertEquals("ping", StandardCharsets.UTF_8.decode(rsp).toString());
    assertEquals(
        ErrorCode.UNKNOWN_OPCODE,
        assertThrows(
                FerriteException.class,
                () -> Futures.join(c.call(s.serverId(), 16, 9, ByteBuffer.allocate(0))))
            .code());
    assertEquals(
        ErrorCode.UNKNOWN_SERVICE,
        assertThrows(
                FerriteException.class,
                () -> Futures.join(c.call(s.serverId(), 99, 1, ByteBuffer.allocate(0))))
            .code());
    List<RegionInfo> regions = c.masterStub().regions(s.serverId());
    assertTrue(regions.stream().anyMatch(r -> r.service().equals("echo")), regions.toString());
    // The service's region is never handed out as blocks.
    for (BlockRef b : c.allocate(4)) {
      assertTrue(b.regionId() != echo.region.id() || b.serverId() != s.serverId());
    }
  }

  /**
   * A server that stops while it owes answers fails those calls at once (not at the RPC timeout),
   * as UNAVAILABLE naming the server: the fabric knows only an address.
   */
  @Test
  void callsAServerOwesWhenItStopsFailUnavailableNamingIt() throws Exception {
    EchoService echo = new EchoService();
    MemoryServer s = cluster.startServer("s3", echo);
    FerriteClient c = cluster.client();
    CompletableFuture<ByteBuffer> async = c.call(s.serverId(), 16, HANG, ByteBuffer.allocate(0));
    CompletableFuture<FerriteException> sync =
        CompletableFuture.supplyAsync(
            () ->
                assertThrows(
                    FerriteException.class,
                    () -> c.callSync(s.serverId(), 16, HANG, ByteBuffer.allocate(0))));
    await("both calls at the service", () -> echo.hanging.get() == 2);
    s.close();
    cluster.servers.remove(s);
    for (FerriteException e :
        List.of(assertThrows(FerriteException.class, () -> Futures.join(async)), sync.join())) {
      assertEquals(ErrorCode.UNAVAILABLE, e.code(), e.getMessage());
      assertTrue(e.getMessage().contains("server " + s.serverId()), e.getMessage());
    }
  }

  private static void freeTwice(EchoService echo) {
    MappedRegion mine = echo.region;
    echo.region = null;
    echo.ctx.freeRegion(mine);
    // Freed already: a specific error, not a second free.
    FerriteException twice = assertThrows(FerriteException.class, () -> echo.ctx.freeRegion(mine));
    assertEquals(ErrorCode.NO_SUCH_REGION, twice.code(), twice.getMessage());
  }

  private static int createAndFree(EchoService echo) {
    MappedRegion next = echo.ctx.createRegion("dram", 64 * 1024);
    echo.ctx.freeRegion(next);
    return next.id();
  }

  @Test
  void aServiceFreesItsOwnRegionsAndNoOtherAndIdsAreNotReused() throws Exception {
    EchoService echo = new EchoService();
    EchoService other = new EchoService(17, "other");
    MemoryServer s = cluster.startServer("s3", echo, other);
    FerriteClient c = cluster.client();
    int mineId = echo.region.id();
    Path file = echo.region.file();
    io.ferrite.fabric.RegionRef ref = echo.ctx.ref(echo.region);
    assertTrue(java.nio.file.Files.exists(file));
    assertEquals(1, echo.ctx.regionUsage()[0]);
    assertEquals(64 * 1024, echo.ctx.regionUsage()[1]);
    c.connection(s.serverId()).readSync(ref, 0, ByteBuffer.allocate(8));

    // Another service's region: refused by name, nothing changes.
    FerriteException notMine =
        assertThrows(FerriteException.class, () -> echo.ctx.freeRegion(other.region));
    assertEquals(ErrorCode.INVALID_ARGUMENT, notMine.code(), notMine.getMessage());
    assertTrue(notMine.getMessage().contains("service 'other'"), notMine.getMessage());
    assertTrue(java.nio.file.Files.exists(other.region.file()));
    c.connection(s.serverId())
        .readSync(other.ctx.ref(other.region), 0, ByteBuffer.allocate(8)); // still served

    freeTwice(echo); // in its own frame: nothing here keeps the region reachable
    assertTrue(!java.nio.file.Files.exists(file), "the region file is deleted");
    assertEquals(0, echo.ctx.regionUsage()[0]);
    assertEquals(1, other.ctx.regionUsage()[0]);
    FerriteException gone =
        assertThrows(
            FerriteException.class,
            () -> c.connection(s.serverId()).readSync(ref, 0, ByteBuffer.allocate(8)));
    assertEquals(ErrorCode.NO_SUCH_REGION, gone.code(), gone.getMessage());
    List<RegionInfo> listed = c.masterStub().regions(s.serverId());
    assertTrue(
        listed.stream().noneMatch(r -> r.ref().regionId() == mineId),
        "the master forgets the freed region: " + listed);
    assertTrue(listed.stream().anyMatch(r -> r.service().equals("other")), listed.toString());

    // The freed id is never given again: a stale ref cannot reach a newer region.
    int nextId = createAndFree(echo);
    assertTrue(nextId > mineId, nextId + " after " + mineId);

    // The JVM unmaps both once nothing holds them (the server asks for a GC while released regions
    // stay mapped; this test never calls one).
    String deleted = " " + file.toAbsolutePath() + " (deleted)";
    await(
        "the freed region to be unmapped",
        () -> {
          try (java.util.stream.Stream<String> maps =
              java.nio.file.Files.lines(Path.of("/proc/self/maps"))) {
            return maps.noneMatch(l -> l.endsWith(deleted));
          } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        });

    // The master refuses to forget a block-pool region with a block in use (REMOVE_REGION is a
    // server's: only a server or the root may call it); the server keeps serving.
    BlockRef b = c.allocate(1, "dram", true, "").get(0);
    FerriteClient admin = cluster.adminClient();
    FerriteException pool =
        assertThrows(
            FerriteException.class,
            () -> admin.masterStub().removeRegion(b.serverId(), b.regionId()));
    assertEquals(ErrorCode.CONFLICT, pool.code(), pool.getMessage());
    c.write(b, 0, ByteBuffer.wrap(new byte[] {5})).join();
    ByteBuffer echoed =
        Futures.join(c.call(s.serverId(), 16, 1, ByteBuffer.wrap(new byte[] {1, 2})));
    assertEquals(2, echoed.remaining());
  }

  @Test
  void restartedServerKeepsItsIdAndDiskRegionsButNotDram() throws Exception {
    FerriteClient c = cluster.client();
    BlockRef disk = c.allocate(1, "disk", true, "keep/disk").get(0);
    MemoryServer s =
        cluster.servers.stream().filter(x -> x.serverId() == disk.serverId()).findFirst().get();
    List<BlockRef> dram = c.allocate(2, "dram", true, "keep/dram");
    byte[] data = new byte[512];
    random.nextBytes(data);
    c.writeSync(disk, 64, ByteBuffer.wrap(data));

    s.close(); // a clean stop deletes the dram region files, keeps the disk ones
    cluster.servers.remove(s);
    MemoryServer again = cluster.startServer(s.name());
    assertEquals(s.serverId(), again.serverId(), "the id is kept in the server's directory");

    // The same client reconnects to the new endpoint and finds the data under the same rkey.
    ByteBuffer back = ByteBuffer.allocate(data.length);
    c.readSync(disk, 64, back);
    assertArrayEquals(data, back.array(), seed.toString());
    assertEquals(List.of(disk), c.owned("keep/disk"));
    // Its dram blocks were in regions that are gone: the master dropped them.
    List<BlockRef> left = c.owned("keep/dram");
    assertTrue(left.stream().noneMatch(b -> b.serverId() == s.serverId()), left.toString());
    assertEquals(dram.stream().filter(b -> b.serverId() != s.serverId()).toList(), left);
  }

  @Test
  void aSecondServerCannotTakeOverALiveServersDirectories() throws Exception {
    FerriteClient c = cluster.client();
    BlockRef b = c.allocate(1, "dram", true, "").get(0);
    c.writeSync(b, 0, ByteBuffer.wrap(new byte[] {42}));
    MemoryServer owner =
        cluster.servers.stream().filter(x -> x.serverId() == b.serverId()).findFirst().get();
    // Same data directory: refused by the server directory's lock.
    FerriteException same =
        assertThrows(FerriteException.class, () -> cluster.startServer(owner.name()));
    assertEquals(ErrorCode.CONFLICT, same.code());
    // Another data directory but the same cluster and name: refused by the dram directory's
    // lock before it could delete the live server's region files.
    FerriteException dram =
        assertThrows(
            FerriteException.class,
            () ->
                MemoryServer.start(
                    cluster
                        .config
                        .with(io.ferrite.kernel.config.FerriteConfig.SERVER_NAME, owner.name())
                        .with(
                            io.ferrite.kernel.config.FerriteConfig.DATA_DIR,
                            dir.resolve("elsewhere").toString()),
                    LocalCluster.CREDENTIALS,
                    List.of(cluster.fabrics().open("local")),
                    cluster.masterAddress(),
                    List.of()));
    assertEquals(ErrorCode.CONFLICT, dram.code());
    assertTrue(dram.getMessage().contains("dram region directory"), dram.getMessage());
    ByteBuffer back = ByteBuffer.allocate(1);
    c.readSync(b, 0, back);
    assertEquals(42, back.get(0));
  }

  @Test
  void autoFabricPrefersShmOnTheSameHostOnly() {
    FerriteClient c =
        cluster.client(ClientOptions.builder(LocalCluster.CREDENTIALS).hostId("host-a"));
    ClientOptions auto =
        ClientOptions.builder(LocalCluster.CREDENTIALS)
            .hostId("host-a")
            .fabrics(
                name -> {
                  if (name.equals("shm") || name.equals("local")) {
                    return cluster.fabrics().open("local"); // local stands in for shm here
                  }
                  throw new FerriteException(ErrorCode.UNSUPPORTED, name);
                })
            .build();
    java.util.Map<String, String> both =
        java.util.Map.of("shm", "shm:///x.sock", "tcp", "tcp://h:1");
    io.ferrite.kernel.proto.MemberInfo here =
        new io.ferrite.kernel.proto.MemberInfo(1, "a", ServerState.ALIVE, "host-a", both);
    io.ferrite.kernel.proto.MemberInfo there =
        new io.ferrite.kernel.proto.MemberInfo(2, "b", ServerState.ALIVE, "host-b", both);
    try (FerriteClient chooser = FerriteClient.open(cluster.masterAddress(), auto)) {
      assertEquals("shm", chooser.chooseFabric(here));
      assertEquals("tcp", chooser.chooseFabric(there));
    }
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () ->
                c.chooseFabric(
                    new io.ferrite.kernel.proto.MemberInfo(
                        3,
                        "c",
                        ServerState.ALIVE,
                        "host-a",
                        java.util.Map.of("tcp", "tcp://h:1"))));
    assertEquals(ErrorCode.UNSUPPORTED, e.code());
  }
}
