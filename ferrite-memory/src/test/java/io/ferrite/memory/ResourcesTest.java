package io.ferrite.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ConnectOptions;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.FabricServer;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.ServerSpec;
import io.ferrite.fabric.local.LocalFabric;
import io.ferrite.kernel.client.ClientOptions;
import io.ferrite.kernel.client.Ferrite;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.memory.master.MemoryMaster;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Striping, resource caching (RStore §IV-B) and the cleanup of a dead client's mappings. */
class ResourcesTest {
  static final int BLOCK = MemoryCluster.BLOCK;

  @TempDir Path dir;
  MemoryCluster cluster;
  RStore store;

  @BeforeEach
  void start() throws Exception {
    cluster = new MemoryCluster(dir, 3);
    store = cluster.store();
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  @Test
  void chunksAreStripedRoundRobinOverTheServers() {
    Namespace ns = store.createNamespace("stripe", 8 << 10);
    ns.reserve(6 * BLOCK);
    RAddress ra = ns.alloc(48 * (8 << 10), 0);
    FerriteClient c = store.client();
    try (Mapping m = ra.map(MemoryFlags.MAP_NO_BUFFER)) {
      // Each 8 KiB chunk on its own: consecutive chunks go to the servers in turn.
      int[] perServer = new int[4];
      int previous = -1;
      for (int chunk = 0; chunk < 48; chunk++) {
        long[] before = reads(c);
        m.readSync((long) chunk * (8 << 10), ByteBuffer.allocate(16));
        long[] after = reads(c);
        int server = -1;
        for (int s = 0; s < 3; s++) {
          if (after[s] != before[s]) {
            server = s;
          }
        }
        assertTrue(server >= 0 && server != previous, "chunk " + chunk + " on server " + server);
        perServer[server]++;
        previous = server;
      }
      assertEquals(16, perServer[0]);
      assertEquals(16, perServer[1]);
      assertEquals(16, perServer[2]);
    }
  }

  private static long[] reads(FerriteClient c) {
    long[] out = new long[3];
    for (int s = 0; s < 3; s++) {
      out[s] = c.connection(c.members().get(s).serverId()).counters().ops(OpKind.READ);
    }
    return out;
  }

  @Test
  void releasedMemoryIsCachedAndReservedAgainWithoutTouchingTheServers() {
    Namespace a = store.createNamespace("a");
    FerriteClient c = store.client();
    long writesCold = totalWrites(c);
    a.reserve(4 * BLOCK);
    long prepared = totalWrites(c) - writesCold;
    assertTrue(prepared > 0, "cold reserve prepares (zeroes) fresh blocks on the servers");
    assertEquals(0, a.release(4 * BLOCK));
    assertEquals(4, a.stat().cachedBlocks());

    long writesWarm = totalWrites(c);
    a.reserve(3 * BLOCK);
    assertEquals(writesWarm, totalWrites(c), "warm reserve of its own blocks: nothing to prepare");
    assertEquals(1, a.stat().cachedBlocks());
    a.release(3 * BLOCK);
    Namespace b = store.createNamespace("b");
    b.reserve(BLOCK);
    store.deleteNamespace("b");
    assertEquals(4, a.stat().cachedBlocks(), "a deleted namespace's memory is cached too");
  }

  @Test
  void cachedBlocksOfAnotherNamespaceAreZeroedBeforeReuse() {
    Namespace a = store.createNamespace("secret");
    a.reserve(3 * BLOCK);
    RAddress ra = a.alloc(3 * BLOCK, 0);
    ByteBuffer ones = ByteBuffer.allocate(3 * BLOCK);
    while (ones.hasRemaining()) {
      ones.put((byte) 0x5A);
    }
    try (Mapping m = ra.map(MemoryFlags.MAP_NO_BUFFER)) {
      m.writeSync(0, ones.flip());
    }
    a.free(ra);
    a.release(3 * BLOCK);
    assertEquals(3, a.stat().cachedBlocks());

    // Across a master restart (snapshot): the cache still knows whose bytes each block holds.
    cluster.master.snapshot();
    cluster.startMaster(new MemoryMaster());
    store = cluster.store();
    FerriteClient c = store.client();
    Namespace b = store.createNamespace("other");
    long before = totalWrites(c);
    b.reserve(3 * BLOCK);
    assertEquals(0, b.stat().cachedBlocks(), "the reserve took the cached blocks");
    assertTrue(totalWrites(c) > before, "another namespace's blocks are zeroed on reuse");
    RAddress rb = b.alloc(3 * BLOCK, 0);
    try (Mapping m = rb.map(MemoryFlags.MAP_NO_BUFFER)) {
      ByteBuffer got = ByteBuffer.allocate(3 * BLOCK);
      m.readSync(0, got);
      for (int i = 0; i < got.capacity(); i++) {
        assertEquals(0, got.get(i), "byte " + i + " leaked from namespace 'secret'");
      }
    }
  }

  @Test
  void cacheBeyondItsLimitGoesBackToTheKernel() throws Exception {
    cluster.close();
    cluster = new MemoryCluster(dir.resolve("limited"), 3, false, new MemoryMaster(1));
    RStore s = cluster.store();
    Namespace a = s.createNamespace("limited");
    a.reserve(3 * BLOCK);
    a.release(3 * BLOCK);
    assertEquals(1, a.stat().cachedBlocks());
    assertEquals(0, cluster.master.state().owned("memory").size() - 1);
  }

  private static long totalWrites(FerriteClient c) {
    long n = 0;
    for (var m : c.members()) {
      n += c.connection(m.serverId()).counters().ops(OpKind.WRITE);
    }
    return n;
  }

  @Test
  void unmappedStagingBuffersAreReused() {
    Namespace ns = store.createNamespace("buffers");
    ns.reserve(BLOCK);
    RAddress ra = ns.alloc(5000, 0);
    Mapping first = ra.map(0);
    ByteBuffer buffer = first.buffer();
    first.unmap();
    Mapping second = ra.map(0);
    assertSame(buffer, second.buffer(), "warm map reuses the staging buffer");
    second.unmap();
  }

  @Test
  void aClosedClientsMappingsAreDropped() {
    Namespace ns = store.createNamespace("owned");
    ns.reserve(BLOCK);
    RAddress ra = ns.alloc(100, 0);
    RStore other = cluster.store();
    other.joinNamespace("owned").raddress(ra.address(), 100).map(0); // never unmapped
    assertEquals(1, ns.stat().mappings());
    FerriteException e = assertThrows(FerriteException.class, () -> ns.free(ra));
    assertEquals(ErrorCode.CONFLICT, e.code());
    other.client().close(); // the session ends without an unmap
    assertEquals(0, ns.stat().mappings());
    ns.free(ra);
  }

  @Test
  void aClientWhoseLeaseExpiresLosesItsMappings() throws Exception {
    Namespace ns = store.createNamespace("lease");
    ns.reserve(BLOCK);
    RAddress ra = ns.alloc(100, 0);
    // A client whose fabric we kill: it "dies" (cannot reach the master to renew its lease).
    LocalFabric local = new LocalFabric(cluster.network);
    java.util.concurrent.atomic.AtomicBoolean dead =
        new java.util.concurrent.atomic.AtomicBoolean();
    Fabric doomed =
        new Fabric() {
          @Override
          public String name() {
            return "local";
          }

          @Override
          public FabricServer serve(ServerSpec spec) {
            throw new UnsupportedOperationException();
          }

          @Override
          public FabricConnection connect(String address, ConnectOptions options) {
            if (dead.get()) {
              throw new FerriteException(ErrorCode.UNAVAILABLE, "this client is dead");
            }
            return local.connect(address, options);
          }

          @Override
          public void close() {
            local.close();
          }
        };
    FerriteClient dying =
        Ferrite.connect(
            cluster.masterAddress(),
            ClientOptions.builder(MemoryCluster.CREDENTIALS)
                .fabric("local")
                .leaseMillis(300)
                .maxAttempts(1)
                .fabrics(name -> doomed)
                .build());
    cluster.closeLater(dying);
    new RStore(dying).joinNamespace("lease").raddress(ra.address(), 100).map(0);
    assertEquals(1, ns.stat().mappings());
    dead.set(true);
    local.close();
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (ns.stat().mappings() != 0 && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertEquals(0, ns.stat().mappings(), "the expired session's mapping was reclaimed");
    ns.free(ra);
  }
}
