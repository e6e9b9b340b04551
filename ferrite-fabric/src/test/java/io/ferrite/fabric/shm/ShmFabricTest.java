package io.ferrite.fabric.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.FileTrees;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.RegionRef;
import io.ferrite.fabric.RegionTable;
import io.ferrite.fabric.RpcHandler;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.netty.NettyTransport;
import io.ferrite.fabric.testing.NettyLeakExtension;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** What is particular to shm: the client maps region files, the server's CPU does nothing. */
@ExtendWith(NettyLeakExtension.class)
class ShmFabricTest {
  private final long seed = Long.getLong("tests.seed", System.nanoTime());
  private final Random random = new Random(seed);
  private final Credentials credentials =
      new Credentials("shm-test", "shm-test-secret-0123456789".getBytes(StandardCharsets.UTF_8));

  private ShmFabric fabric;
  private Path dir;
  private RegionTable regions;
  private MappedRegion region;
  private RegionRef ref;
  private FabricServer server;

  private String where() {
    return "seed " + seed + " (replay with -Dtests.seed=" + seed + ")";
  }

  @BeforeEach
  void start() throws IOException {
    Path shm = Paths.get("/dev/shm");
    dir =
        Files.createTempDirectory(Files.isDirectory(shm) ? shm : Paths.get("/tmp"), "ferrite-shm-");
    regions = new RegionTable();
    region = MappedRegion.create(dir.resolve("region-1"), 1, 1 << 16, random.nextLong());
    regions.register(region);
    fabric = new ShmFabric();
    server = fabric.serve(ServerSpec.loopback(5, credentials, regions, RpcHandler.none(), dir));
    ref = regions.ref(5, 1);
  }

  @AfterEach
  void stop() throws IOException {
    if (server != null) {
      server.close();
    }
    if (fabric != null) {
      fabric.close();
    }
    for (MappedRegion r : regions.all()) {
      r.close();
    }
    FileTrees.delete(dir);
  }

  private FabricConnection connect() {
    return fabric.connect(server.address(), ConnectOptions.of(credentials));
  }

  @Test
  void theSocketIsOwnerOnlyAndRemovedOnClose() throws IOException {
    assumeTrue(NettyTransport.epoll(), "Unix domain sockets need epoll");
    Path socket = dir.resolve("server-5.sock");
    assertEquals("shm://" + socket, server.address());
    assertTrue(Files.exists(socket));
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)));
    server.close();
    assertFalse(Files.exists(socket), "socket file left behind");
    server = null;
  }

  @Test
  void aSecondServerOnTheSameSocketIsAConflictAndAStaleOneIsReplaced() throws IOException {
    assumeTrue(NettyTransport.epoll(), "Unix domain sockets need epoll");
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () ->
                fabric.serve(ServerSpec.loopback(5, credentials, regions, RpcHandler.none(), dir)));
    assertEquals(ErrorCode.CONFLICT, e.code(), e.getMessage());
    server.close();
    // A file left behind by a dead server does not block the next one.
    Files.createFile(dir.resolve("server-5.sock"));
    server = fabric.serve(ServerSpec.loopback(5, credentials, regions, RpcHandler.none(), dir));
    try (FabricConnection c = connect()) {
      assertEquals(5, c.remoteId());
    }
  }

  @Test
  void oneSidedOpsCostTheServerNothing() {
    try (FabricConnection c = connect()) {
      c.readSync(ref, 0, ByteBuffer.allocate(8)); // maps the region
      CompletableFuture<Void> w = c.write(ref, 64, ByteBuffer.wrap(new byte[] {1, 2, 3}));
      assertTrue(w.isDone(), "a shm op completes before it returns");
      ByteBuffer dst = ByteBuffer.allocateDirect(3);
      CompletableFuture<Void> r = c.read(ref, 64, dst);
      assertTrue(r.isDone());
      assertEquals(2, dst.get(1));
      assertEquals(0, Futures.join(c.fetchAndAdd(ref, 128, 5)));
      assertEquals(5, Futures.join(c.compareAndSwap(ref, 128, 5, 7)));
      assertEquals(7, region.getLongAcquire(128), "the server sees the client's atomics");
      region.putLongRelease(136, 99);
      assertEquals(99, c.fetchAndAddSync(ref, 136, 0), "the client sees the server's stores");
      for (OpKind k : List.of(OpKind.READ, OpKind.WRITE, OpKind.FETCH_AND_ADD)) {
        assertEquals(0, server.counters().ops(k), k + " served by the server's CPU");
      }
      assertEquals(3, c.counters().ops(OpKind.READ) + c.counters().ops(OpKind.WRITE));
    }
  }

  /**
   * The fence word a face reads after its data (a kv shard's lease word, docs/KV.md "Leases"): a
   * shm connection loads what the server last stored with release, from its own mapping, mapping
   * the region first if needed; checked like a read; misaligned refused.
   */
  @Test
  void aMappedWordIsLoadedFromTheClientsOwnMapping() {
    try (FabricConnection c = connect()) {
      assertTrue(c.mapsRegions());
      region.putLongRelease(32, 0x1234_5678_9ABC_DEF0L);
      assertEquals(0x1234_5678_9ABC_DEF0L, c.mappedLongAcquire(ref, 32), "first use maps it");
      region.putLongRelease(32, 42);
      assertEquals(42, c.mappedLongAcquire(ref, 32), "the server's later store, no RPC");
      assertEquals(
          ErrorCode.MISALIGNED,
          assertThrows(FerriteException.class, () -> c.mappedLongAcquire(ref, 4)).code());
      assertEquals(
          ErrorCode.OUT_OF_BOUNDS,
          assertThrows(FerriteException.class, () -> c.mappedLongAcquire(ref, ref.length()))
              .code());
      RegionRef forged = new RegionRef(5, 1, ref.rkey() + 1, ref.length());
      assertEquals(
          ErrorCode.BAD_RKEY,
          assertThrows(FerriteException.class, () -> c.mappedLongAcquire(forged, 32)).code());
    }
  }

  @Test
  void aWrongRkeyFailsBeforeAndAfterTheRegionIsMapped() {
    RegionRef forged = new RegionRef(5, 1, ref.rkey() + 1, ref.length());
    try (FabricConnection c = connect()) {
      FerriteException before =
          assertThrows(FerriteException.class, () -> c.readSync(forged, 0, ByteBuffer.allocate(8)));
      assertEquals(ErrorCode.BAD_RKEY, before.code(), where());
      c.writeSync(ref, 0, ByteBuffer.wrap(new byte[] {9}));
      FerriteException after =
          assertThrows(
              FerriteException.class,
              () -> c.writeSync(forged, 0, ByteBuffer.wrap(new byte[] {7})));
      assertEquals(ErrorCode.BAD_RKEY, after.code(), where());
      assertEquals(9, region.buffer().getByte(0), "a forged write changed the region");
      FerriteException oob =
          assertThrows(
              FerriteException.class, () -> c.readSync(ref, (1 << 16) - 4, ByteBuffer.allocate(8)));
      assertEquals(ErrorCode.OUT_OF_BOUNDS, oob.code());
      FerriteException mis =
          assertThrows(FerriteException.class, () -> c.fetchAndAddSync(ref, 12, 1));
      assertEquals(ErrorCode.MISALIGNED, mis.code());
    }
  }

  @Test
  void closeUnmapsEveryRegion() throws Exception {
    String file = region.file().toAbsolutePath().toString();
    long baseline = mappingsOf(file);
    FabricConnection c = connect();
    c.readSync(ref, 0, ByteBuffer.allocate(8));
    assertEquals(baseline + 1, mappingsOf(file), "the client maps the region file once");
    c.readSync(ref, 8, ByteBuffer.allocate(8));
    assertEquals(baseline + 1, mappingsOf(file), "the mapping is cached");
    c.close();
    FerriteException closed =
        assertThrows(FerriteException.class, () -> c.readSync(ref, 0, ByteBuffer.allocate(8)));
    assertEquals(ErrorCode.UNAVAILABLE, closed.code(), closed.getMessage());
    // close() releases the mapping (another thread's op may still be copying from it: see
    // ShmCloseRaceTest); the JVM unmaps it once it has collected it.
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (mappingsOf(file) > baseline) {
      assertTrue(System.nanoTime() < deadline, "close() left the region mapped");
      System.gc();
      Thread.sleep(10);
    }
  }

  @Test
  void aFreedRegionIsReadFromTheMappingUntilReleasedAndNeverFaults() throws Exception {
    String file = region.file().toAbsolutePath().toString();
    FabricConnection c = connect();
    FabricConnection other = connect();
    try {
      c.readSync(ref, 0, ByteBuffer.allocate(8)); // maps the region
      other.readSync(ref, 0, ByteBuffer.allocate(8));
      // The owner poisons the region, then frees it while readers run on both connections.
      for (int off = 0; off < 1 << 16; off += 8) {
        region.putLongRelease(off, -1L);
      }
      java.util.concurrent.atomic.AtomicBoolean stop =
          new java.util.concurrent.atomic.AtomicBoolean();
      java.util.concurrent.atomic.AtomicReference<Throwable> failure =
          new java.util.concurrent.atomic.AtomicReference<>();
      List<Thread> readers = new java.util.ArrayList<>();
      for (FabricConnection conn : List.of(c, other)) {
        Thread t =
            new Thread(
                () -> {
                  ByteBuffer dst = ByteBuffer.allocateDirect(4096);
                  Random r = new Random(seed);
                  while (!stop.get()) {
                    dst.clear();
                    int off = r.nextInt(16) * 4096;
                    try {
                      conn.readSync(ref, off, dst);
                      for (int i = 0; i < 4096; i += 8) {
                        if (dst.getLong(i) != -1L) {
                          failure.compareAndSet(
                              null, new AssertionError("read " + dst.getLong(i) + " at " + off));
                        }
                      }
                    } catch (FerriteException e) {
                      if (e.code() != ErrorCode.NO_SUCH_REGION) {
                        failure.compareAndSet(null, e);
                      }
                    }
                  }
                },
                "shm-reader");
        t.start();
        readers.add(t);
      }
      Thread.sleep(20);
      regions.deregister(1);
      region.releaseAndDelete();
      assertFalse(Files.exists(region.file()), "the file is unlinked, not truncated");
      region = null; // the server lets go of it too
      Thread.sleep(20);
      // c's mapping is cached: it still reads the poison (the unlinked file's pages).
      ByteBuffer one = ByteBuffer.allocate(8);
      c.readSync(ref, 0, one);
      assertEquals(-1L, one.order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong(0), where());
      // Released while its readers run: they finish on mapped memory or fail NO_SUCH_REGION.
      c.release(ref);
      Thread.sleep(20);
      stop.set(true);
      for (Thread t : readers) {
        t.join();
      }
      if (failure.get() != null) {
        throw new AssertionError(where(), failure.get());
      }
      FerriteException gone =
          assertThrows(FerriteException.class, () -> c.readSync(ref, 0, ByteBuffer.allocate(8)));
      assertEquals(ErrorCode.NO_SUCH_REGION, gone.code(), gone.getMessage());
      // other learns from a failed MAP (here under another rkey) that the id is gone.
      RegionRef forged = new RegionRef(5, 1, ref.rkey() + 1, ref.length());
      assertEquals(
          ErrorCode.NO_SUCH_REGION,
          assertThrows(
                  FerriteException.class, () -> other.readSync(forged, 0, ByteBuffer.allocate(8)))
              .code());
      assertEquals(0, ((ShmConnection) other).mappedRegions(), "the failed MAP dropped it");
      assertEquals(
          ErrorCode.NO_SUCH_REGION,
          assertThrows(FerriteException.class, () -> other.readSync(ref, 0, ByteBuffer.allocate(8)))
              .code());
      // No process maps the file any more once the JVM collected the released mappings: the
      // memory is back.
      long deadline = System.nanoTime() + 30_000_000_000L;
      while (deletedMappingsOf(file) > 0) {
        assertTrue(System.nanoTime() < deadline, "the freed region stays mapped");
        System.gc();
        Thread.sleep(10);
      }
    } finally {
      c.close();
      other.close();
    }
  }

  @Test
  void aClientThatNeverTouchesAFreedRegionAgainLetsItsMemoryGo() throws Exception {
    String file = region.file().toAbsolutePath().toString();
    try (FabricConnection c = connect()) {
      c.readSync(ref, 0, ByteBuffer.allocate(8)); // maps the region, then never touches it again
      regions.deregister(1);
      region.releaseAndDelete();
      region = null; // the server lets go of it too
      // The connection's sweep (ShmConnection.SWEEP_MILLIS) finds the file gone, drops the
      // mapping and asks for a collection: the pages go back with no op and no close.
      long deadline = System.nanoTime() + 30_000_000_000L;
      while (((ShmConnection) c).mappedRegions() > 0 || deletedMappingsOf(file) > 0) {
        assertTrue(System.nanoTime() < deadline, "a freed region stays mapped by an idle client");
        Thread.sleep(10);
      }
    }
  }

  private static long deletedMappingsOf(String file) throws IOException {
    try (Stream<String> lines = Files.lines(Paths.get("/proc/self/maps"))) {
      return lines.filter(l -> l.endsWith(" " + file + " (deleted)")).count();
    }
  }

  private static long mappingsOf(String file) throws IOException {
    try (Stream<String> lines = Files.lines(Paths.get("/proc/self/maps"))) {
      return lines.filter(l -> l.endsWith(" " + file)).count();
    }
  }

  @Test
  void memoryOpsStopWithTheControlConnection() {
    FabricConnection c = connect();
    c.readSync(ref, 0, ByteBuffer.allocate(8));
    server.close();
    server = null;
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> c.callSync(1, 1, ByteBuffer.allocate(0), java.time.Duration.ofSeconds(2)));
    assertEquals(ErrorCode.UNAVAILABLE, e.code(), e.getMessage());
    assertFalse(c.isOpen());
    FerriteException read =
        assertThrows(FerriteException.class, () -> c.readSync(ref, 0, ByteBuffer.allocate(8)));
    assertEquals(ErrorCode.UNAVAILABLE, read.code(), read.getMessage());
    c.close();
  }
}
