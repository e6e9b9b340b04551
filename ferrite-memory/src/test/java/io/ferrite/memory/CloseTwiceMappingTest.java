package io.ferrite.memory;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The memory face's public closeable, {@link Mapping}, closes twice without a word (the kernel's
 * and the nodes face's are in {@code CloseTwiceTest} of ferrite-nodes), and the address maps and
 * serves again afterwards.
 */
class CloseTwiceMappingTest {
  @TempDir Path dir;
  MemoryCluster cluster;
  RStore store;

  @BeforeEach
  void start() throws Exception {
    cluster = new MemoryCluster(dir, 1);
    store = cluster.store();
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  @Test
  void aMappingClosesTwice() {
    Namespace ns = store.createNamespace("twice", 8 << 10);
    ns.reserve(2 * MemoryCluster.BLOCK);
    RAddress ra = ns.alloc(MemoryCluster.BLOCK, MemoryFlags.ALLOC_DEFAULT);
    for (int flags : new int[] {MemoryFlags.MAP_DEFAULT, MemoryFlags.MAP_NO_BUFFER}) {
      Mapping m = ra.map(flags);
      assertDoesNotThrow(m::close, "first close");
      assertDoesNotThrow(m::close, "second close");
    }
    // The address maps and serves again after the double closes.
    try (Mapping a = ra.map(MemoryFlags.MAP_DEFAULT);
        Mapping b = ra.map(MemoryFlags.MAP_DEFAULT)) {
      a.writeSync(0, ByteBuffer.allocateDirect(1).put((byte) 7).flip());
      ByteBuffer got = ByteBuffer.allocateDirect(1);
      b.readSync(0, got);
      assertEquals(7, got.get(0));
    }
  }
}
