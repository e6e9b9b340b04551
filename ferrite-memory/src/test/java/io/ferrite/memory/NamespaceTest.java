package io.ferrite.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.fabric.testing.SeedExtension;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * The API of RStore's Table I over a local cluster: namespaces, reserve, alloc, map, read, write.
 */
@ExtendWith(SeedExtension.class)
class NamespaceTest {
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

  static void assertCode(ErrorCode code, Executable e) {
    FerriteException x = assertThrows(FerriteException.class, e);
    assertEquals(code, x.code(), x.getMessage());
  }

  static ByteBuffer random(Random random, int n) {
    byte[] b = new byte[n];
    random.nextBytes(b);
    return ByteBuffer.allocateDirect(n).put(b).flip();
  }

  static byte[] bytes(ByteBuffer b) {
    byte[] out = new byte[b.remaining()];
    b.duplicate().get(out);
    return out;
  }

  @Test
  void createJoinDelete() {
    Namespace ns = store.createNamespace("graph", 16 << 10);
    assertEquals(16 << 10, ns.chunkSize());
    assertEquals(BLOCK, store.createNamespace("other").chunkSize(), "default chunk = block size");
    RStore second = cluster.store();
    Namespace joined = second.joinNamespace("graph");
    assertEquals(16 << 10, joined.chunkSize());
    store.deleteNamespace("graph");
    assertCode(ErrorCode.NOT_FOUND, () -> second.joinNamespace("graph"));
    assertCode(ErrorCode.NOT_FOUND, () -> joined.reserve(1));
    assertCode(ErrorCode.NOT_FOUND, () -> store.deleteNamespace("graph"));
  }

  @Test
  void readsAndWritesAtAnyOffsetAndLengthMatchAReferenceCopy(Random random) {
    Namespace ns = store.createNamespace("data", 8 << 10);
    ns.reserve(4 * BLOCK);
    int size = 3 * BLOCK + 12345;
    RAddress ra = ns.alloc(size, MemoryFlags.ALLOC_DEFAULT);
    byte[] model = new byte[size];
    try (Mapping m = ra.map(MemoryFlags.MAP_DEFAULT)) {
      // Fresh memory is zeroed by reserve.
      ByteBuffer all = ByteBuffer.allocateDirect(size);
      m.readSync(0, all);
      assertArrayEquals(model, bytes(all));
      for (int i = 0; i < 200; i++) {
        int len = random.nextInt(4) == 0 ? random.nextInt(size) + 1 : random.nextInt(64) + 1;
        int off = random.nextInt(size - len + 1);
        if (random.nextBoolean()) {
          ByteBuffer src = random(random, len);
          src.duplicate().get(model, off, len);
          m.writeSync(off, src);
        } else {
          ByteBuffer dst = ByteBuffer.allocateDirect(len);
          m.readSync(off, dst);
          byte[] want = java.util.Arrays.copyOfRange(model, off, off + len);
          assertArrayEquals(want, bytes(dst), "read " + len + " B at " + off);
        }
      }
      // Another client sees the same bytes through its own init + map.
      RStore other = cluster.store();
      Namespace ns2 = other.joinNamespace("data");
      try (Mapping m2 = ns2.raddress(ra.address(), ra.length()).map(MemoryFlags.MAP_NO_BUFFER)) {
        ByteBuffer got = ByteBuffer.allocateDirect(size);
        m2.readSync(0, got);
        assertArrayEquals(model, bytes(got));
      }
    }
  }

  @Test
  void partialMappingsOfALargeAllocation(Random random) {
    Namespace ns = store.createNamespace("big", 4 << 10);
    ns.reserve(8 * BLOCK);
    RAddress ra = ns.alloc(8 * BLOCK, 0);
    try (Mapping whole = ra.map(MemoryFlags.MAP_NO_BUFFER)) {
      ByteBuffer src = random(random, 8 * BLOCK);
      whole.writeSync(0, src);
      long off = 3 * BLOCK + 1000;
      int len = 70_000;
      // A partial mapping by offset within the raddress, and one by a sub-raddress from init.
      try (Mapping part = ra.map(off, len, MemoryFlags.MAP_DEFAULT);
          Mapping viaInit = ns.raddress(ra.address() + off, len).map(0)) {
        part.readToBuffer(0, len);
        viaInit.readToBuffer(0, len);
        ByteBuffer want = src.slice((int) off, len);
        assertEquals(want, part.buffer());
        assertEquals(want, viaInit.buffer());
        assertCode(ErrorCode.OUT_OF_BOUNDS, () -> part.readSync(len - 4, ByteBuffer.allocate(8)));
        // Writing through the partial mapping lands at the right place of the whole.
        part.buffer().putLong(100, 0x1122334455667788L);
        part.writeFromBuffer(100, 8);
        ByteBuffer check = ByteBuffer.allocate(8).order(java.nio.ByteOrder.BIG_ENDIAN);
        whole.readSync(off + 100, check);
        assertEquals(0x1122334455667788L, check.getLong(0));
      }
    }
  }

  @Test
  void badInputGetsClearErrors() {
    Namespace ns = store.createNamespace("ns");
    assertCode(ErrorCode.CONFLICT, () -> store.createNamespace("ns"));
    assertCode(ErrorCode.NOT_FOUND, () -> store.joinNamespace("missing"));
    assertCode(ErrorCode.INVALID_ARGUMENT, () -> store.createNamespace(""));
    assertCode(ErrorCode.INVALID_ARGUMENT, () -> store.createNamespace("a\nb"));
    assertCode(ErrorCode.INVALID_ARGUMENT, () -> store.createNamespace("odd", 1000));
    assertCode(ErrorCode.INVALID_ARGUMENT, () -> store.createNamespace("huge", 2 * BLOCK));
    assertCode(ErrorCode.INVALID_ARGUMENT, () -> ns.reserve(0));
    assertCode(ErrorCode.INVALID_ARGUMENT, () -> ns.alloc(-1, 0));
    assertCode(ErrorCode.NO_SPACE, () -> ns.alloc(1, 0)); // nothing reserved
    assertCode(ErrorCode.NO_SPACE, () -> ns.reserve(64L << 20)); // more than the cluster
    assertCode(ErrorCode.TOO_LARGE, () -> ns.reserve(1L << 50));
    ns.reserve(2 * BLOCK);
    assertCode(ErrorCode.NO_SPACE, () -> ns.alloc(3 * BLOCK, 0));
    assertCode(ErrorCode.UNSUPPORTED, () -> ns.alloc(10, 0x40));
    RAddress ra = ns.alloc(1000, 0);
    assertCode(ErrorCode.NOT_FOUND, () -> ns.raddress(ra.address() + 5 * BLOCK, 1));
    assertCode(ErrorCode.NOT_FOUND, () -> ns.raddress(0, 1));
    assertCode(ErrorCode.OUT_OF_BOUNDS, () -> ns.raddress(ra.address() + 900, 101));
    assertCode(ErrorCode.OUT_OF_BOUNDS, () -> ra.map(990, 11, 0));
    assertCode(ErrorCode.INVALID_ARGUMENT, () -> ra.map(0x80));
    Mapping m = ra.map(0);
    assertCode(ErrorCode.OUT_OF_BOUNDS, () -> m.readSync(999, ByteBuffer.allocate(2)));
    assertCode(ErrorCode.OUT_OF_BOUNDS, () -> m.writeSync(-1, ByteBuffer.allocate(1)));
    assertCode(ErrorCode.CONFLICT, () -> ns.free(ra));
    assertCode(ErrorCode.CONFLICT, () -> store.deleteNamespace("ns"));
    assertCode(ErrorCode.CONFLICT, () -> ns.release(2 * BLOCK)); // one block holds the alloc
    m.unmap();
    m.unmap(); // idempotent
    assertCode(ErrorCode.NOT_FOUND, () -> m.readSync(0, ByteBuffer.allocate(1)));
    Mapping noBuffer = ra.map(MemoryFlags.MAP_NO_BUFFER);
    assertCode(ErrorCode.INVALID_ARGUMENT, noBuffer::buffer);
    noBuffer.unmap();
    ns.free(ra);
    assertCode(ErrorCode.NOT_FOUND, () -> ns.free(ra));
    assertCode(ErrorCode.NOT_FOUND, () -> ns.raddress(ra.address(), 1));
    assertEquals(0, ns.release(2 * BLOCK));
    store.deleteNamespace("ns");
  }

  @Test
  void freedAddressesAreNotReusedAndFreedChunksAre() {
    Namespace ns = store.createNamespace("reuse");
    ns.reserve(2 * BLOCK);
    RAddress a = ns.alloc(2 * BLOCK, 0);
    assertCode(ErrorCode.NO_SPACE, () -> ns.alloc(1, 0));
    ns.free(a);
    RAddress b = ns.alloc(2 * BLOCK, 0);
    assertTrue(
        b.address() >= a.address() + a.length(), "a freed address is never handed out again");
    assertEquals(new NamespaceStat(2L * BLOCK, 0, 1, 0, 0, 0, 0, 0), ns.stat());
  }

  @Test
  void stateSurvivesAMasterRestart(Random random) {
    Namespace ns = store.createNamespace("durable", 16 << 10);
    ns.reserve(3 * BLOCK);
    RAddress ra = ns.alloc(2 * BLOCK + 5, 0);
    ByteBuffer src = random(random, (int) ra.length());
    try (Mapping m = ra.map(MemoryFlags.MAP_NO_BUFFER)) {
      m.writeSync(0, src);
    }
    cluster.master.snapshot();
    Namespace other = ns; // keep the same id across the restart
    other.alloc(100, 0);
    cluster.startMaster(new io.ferrite.memory.master.MemoryMaster());
    RStore again = cluster.store();
    Namespace back = again.joinNamespace("durable");
    assertEquals(
        new NamespaceStat(3L * BLOCK, 0, 2, 0, 0, 0, 0, 0).reservedBytes(),
        back.stat().reservedBytes());
    assertEquals(2, back.stat().allocations());
    try (Mapping m = back.raddress(ra.address(), ra.length()).map(MemoryFlags.MAP_NO_BUFFER)) {
      ByteBuffer got = ByteBuffer.allocateDirect((int) ra.length());
      Futures.join(m.read(0, got));
      assertEquals(src, got);
    }
  }
}
