package io.ferrite.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.memory.master.MemoryMaster;
import io.ferrite.memory.proto.MemoryProtocol;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Copy-on-write mode (RStore §III-G) over a local cluster. */
class CopyOnWriteTest {
  static final int CHUNK = 8 << 10;
  static final int SIZE = 5 * CHUNK + 100;

  @TempDir Path dir;
  MemoryCluster cluster;

  @BeforeEach
  void start() throws Exception {
    cluster = new MemoryCluster(dir, 3, false, new MemoryMaster(8192, 500));
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  static ByteBuffer filled(int n, int value) {
    ByteBuffer b = ByteBuffer.allocateDirect(n);
    for (int i = 0; i < n; i++) {
      b.put(i, (byte) value);
    }
    return b;
  }

  static ByteBuffer read(Mapping m) {
    ByteBuffer b = ByteBuffer.allocateDirect((int) m.length());
    m.readSync(0, b);
    return b;
  }

  @Test
  void readersKeepTheirGenerationUntilTheyMapAgainAndOldChunksAreReclaimed() {
    RStore writer = cluster.store();
    Namespace ns = writer.createNamespace("cow", CHUNK);
    ns.reserve(4 * MemoryCluster.BLOCK);
    RAddress ra = ns.alloc(SIZE, MemoryFlags.ALLOC_COW);
    long freeAfterAlloc = ns.stat().freeBytes();
    Mapping w = ra.map(MemoryFlags.MAP_NO_BUFFER);
    assertTrue(w.copyOnWrite());
    w.writeSync(0, filled(SIZE, 1));
    assertEquals(1, w.generation());
    assertEquals(freeAfterAlloc, ns.stat().freeBytes(), "generation 0's chunks were reclaimed");

    RStore reader = cluster.store();
    Mapping r = reader.joinNamespace("cow").raddress(ra.address(), SIZE).map(0);
    assertEquals(filled(SIZE, 1), read(r));
    assertFalse(r.stale());

    // A write across two chunk boundaries: three chunks go out of place.
    w.writeSync(CHUNK - 10, filled(CHUNK + 20, 2));
    assertEquals(2, w.generation());
    assertTrue(r.stale(), "the metadata words tell the reader newer data exists");
    assertEquals(filled(SIZE, 1), read(r), "the reader still reads its whole generation");
    assertEquals(freeAfterAlloc - 3 * CHUNK, ns.stat().freeBytes(), "old chunks kept: mapped");

    Mapping r2 = reader.joinNamespace("cow").raddress(ra.address(), SIZE).map(0);
    ByteBuffer want = filled(SIZE, 1);
    want.put(CHUNK - 10, filled(CHUNK + 20, 2), 0, CHUNK + 20);
    assertEquals(want, read(r2));
    assertEquals(want, read(w), "the writer reads what it wrote");
    r.unmap();
    assertEquals(freeAfterAlloc, ns.stat().freeBytes(), "nobody maps generation 1: reclaimed");
    r2.unmap();
    w.unmap();
    ns.free(ra);
  }

  @Test
  void oneWriterAtATimeAndADeadWritersChunksAreFreedWithTheLastDataIntact() throws Exception {
    RStore a = cluster.store();
    Namespace ns = a.createNamespace("lease", CHUNK);
    ns.reserve(4 * MemoryCluster.BLOCK);
    RAddress ra = ns.alloc(SIZE, MemoryFlags.ALLOC_COW);
    Mapping wa = ra.map(0);
    wa.writeSync(0, filled(SIZE, 7));
    long free = ns.stat().freeBytes();

    // Writer b begins a write (fresh chunks leased) and dies before publishing it.
    RStore b = cluster.store();
    Mapping wb = b.joinNamespace("lease").raddress(ra.address(), SIZE).map(0);
    b.call(
        MemoryProtocol.COW_BEGIN,
        new Wire.Writer().i64(mapId(wb)).i64(b.client().sessionId()).i32(0).i32(2));
    assertEquals(free - 2 * CHUNK, ns.stat().freeBytes());
    NamespaceTest.assertCode(ErrorCode.CONFLICT, () -> wa.writeSync(0, filled(10, 8)));
    b.client().close();
    assertEquals(free, ns.stat().freeBytes(), "the dead writer's leased chunks are freed");
    assertEquals(filled(SIZE, 7), read(wa), "the last published data is intact");
    wa.writeSync(0, filled(10, 8)); // the lease is free again

    // A lease that runs out (a writer that hangs) is collected too.
    RStore c = cluster.store();
    Mapping wc = c.joinNamespace("lease").raddress(ra.address(), SIZE).map(0);
    c.call(
        MemoryProtocol.COW_BEGIN,
        new Wire.Writer().i64(mapId(wc)).i64(c.client().sessionId()).i32(1).i32(1));
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (ns.stat().freeBytes() != free && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertEquals(free, ns.stat().freeBytes(), "the expired lease's chunk is freed");
    wa.writeSync(SIZE - 1, filled(1, 9));
  }

  @Test
  void generationsRetiredChunksAndLeasesSurviveAMasterRestart() {
    RStore writer = cluster.store();
    Namespace ns = writer.createNamespace("durable-cow", CHUNK);
    ns.reserve(4 * MemoryCluster.BLOCK);
    RAddress ra = ns.alloc(SIZE, MemoryFlags.ALLOC_COW);
    Mapping w = ra.map(0);
    w.writeSync(0, filled(SIZE, 3));
    RStore reader = cluster.store();
    Mapping old = reader.joinNamespace("durable-cow").raddress(ra.address(), SIZE).map(0);
    w.writeSync(0, filled(CHUNK, 4)); // generation 2; old keeps chunk 0 of generation 1 alive
    long free = ns.stat().freeBytes();
    cluster.master.snapshot();
    w.writeSync(CHUNK, filled(CHUNK, 5)); // generation 3, in the log after the snapshot
    long freeAfter = ns.stat().freeBytes();

    cluster.startMaster(new MemoryMaster(8192, 500));
    Namespace back = cluster.store().joinNamespace("durable-cow");
    assertEquals(freeAfter, back.stat().freeBytes(), "retired chunks still held after recovery");
    assertTrue(free >= freeAfter);
    Mapping fresh = back.raddress(ra.address(), SIZE).map(0);
    assertEquals(3, fresh.generation());
    ByteBuffer want = filled(SIZE, 3);
    want.put(0, filled(CHUNK, 4), 0, CHUNK).put(CHUNK, filled(CHUNK, 5), 0, CHUNK);
    assertEquals(want, read(fresh));
    assertEquals(filled(SIZE, 3), read(old), "the old mapping still reads generation 1");
    fresh.unmap();
  }

  @Test
  void copyOnWriteBadInput() {
    RStore s = cluster.store();
    Namespace ns = s.createNamespace("bad", CHUNK);
    ns.reserve(MemoryCluster.BLOCK);
    RAddress plain = ns.alloc(100, 0);
    Mapping m = plain.map(0);
    assertFalse(m.copyOnWrite());
    assertFalse(m.stale());
    NamespaceTest.assertCode(
        ErrorCode.INVALID_ARGUMENT,
        () ->
            s.call(
                MemoryProtocol.COW_BEGIN,
                new Wire.Writer().i64(mapId(m)).i64(s.client().sessionId()).i32(0).i32(1)));
    NamespaceTest.assertCode(
        ErrorCode.SESSION_EXPIRED,
        () ->
            s.call(
                MemoryProtocol.COW_PUBLISH,
                new Wire.Writer().i64(999).i64(s.client().sessionId()).i64(mapId(m))));
    // A COW allocation needs its metadata chunk too: 8 data chunks + 1 do not fit in 8.
    NamespaceTest.assertCode(ErrorCode.NO_SPACE, () -> ns.alloc(7L * CHUNK, MemoryFlags.ALLOC_COW));
  }

  static long mapId(Mapping m) {
    return m.mapIdForTests();
  }
}
