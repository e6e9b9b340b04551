package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.netty.NettyConnection;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.kernel.client.FerriteClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A blocking {@link KvTable#multiPut} over tcp sends its (last) server's MULTI_PUT on the caller's
 * thread: it takes one of the connection's blocking lanes, as a put does, also when the request is
 * larger than 4 KiB (16 pairs of 1 KiB: issue #19's batches), and its pairs are applied. The
 * request is encoded into the calling thread's reused direct buffer ({@link SendBuffers}): batches
 * of changing sizes from one thread, some smaller than the one before, carry exactly their own
 * bytes.
 */
@ExtendWith(SeedExtension.class)
class BlockingMultiPutTest {
  @TempDir Path dir;

  @Test
  void aBlockingMultiPutOf16PairsOf1KiBTakesALane(TestSeed seed) throws Exception {
    try (KvCluster cluster = new KvCluster(dir, 1, true)) {
      TableOptions options =
          TableOptions.DEFAULTS
              .withShards(4)
              .withSlotsPerShard(256)
              .withExtents(64 << 10, 8)
              .withLimits(64, 2048);
      new KvClient(cluster.client("tcp")).createTable("batches", options);
      // A client of its own: its connection to the server has not needed a lane yet.
      FerriteClient c = cluster.client("tcp");
      KvTable t = new KvClient(c).table("batches");
      NettyConnection conn = (NettyConnection) c.connection(t.serverOf(0));
      assertEquals(0, conn.lanes(), "a lane before any blocking call");
      Random r = new Random(seed.value());
      List<byte[]> keys = new ArrayList<>();
      List<byte[]> values = new ArrayList<>();
      for (int i = 0; i < 16; i++) {
        keys.add(("batch-key-" + i).getBytes(StandardCharsets.UTF_8));
        byte[] v = new byte[1024];
        r.nextBytes(v);
        values.add(v);
      }
      List<Boolean> created = t.multiPut(keys, values);
      assertEquals(16, created.size());
      assertTrue(created.stream().allMatch(b -> b), "every key was new: " + created);
      assertEquals(1, conn.lanes(), "the multiPut's MULTI_PUT took a lane");
      for (int i = 0; i < 16; i++) {
        assertArrayEquals(values.get(i), t.get(keys.get(i)), "key " + i);
      }
    }
  }

  @Test
  void batchesOfChangingSizesFromOneThreadCarryExactlyTheirPairs(TestSeed seed) throws Exception {
    try (KvCluster cluster = new KvCluster(dir, 1, true)) {
      TableOptions options =
          TableOptions.DEFAULTS
              .withShards(2)
              .withSlotsPerShard(256)
              .withExtents(64 << 10, 8)
              .withLimits(64, 2048);
      KvTable t = new KvClient(cluster.client("tcp")).createTable("sizes", options);
      Random r = new Random(seed.value());
      Map<String, byte[]> model = new HashMap<>();
      for (int round = 0; round < 60; round++) {
        int n = 1 + r.nextInt(16);
        List<byte[]> keys = new ArrayList<>();
        List<byte[]> values = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          String k = "key-" + r.nextInt(40);
          byte[] v = new byte[r.nextInt(2049)];
          r.nextBytes(v);
          keys.add(k.getBytes(StandardCharsets.UTF_8));
          values.add(v);
          model.put(k, v); // a key twice in one batch: the later pair wins (list order)
        }
        t.multiPut(keys, values);
        if (r.nextInt(4) == 0) {
          String k = "key-" + r.nextInt(40);
          byte[] v = new byte[r.nextInt(100)];
          r.nextBytes(v);
          t.put(k.getBytes(StandardCharsets.UTF_8), v);
          model.put(k, v);
        }
        for (Map.Entry<String, byte[]> e : model.entrySet()) {
          assertArrayEquals(
              e.getValue(),
              t.get(e.getKey().getBytes(StandardCharsets.UTF_8)),
              "round " + round + ", " + e.getKey());
        }
      }
    }
  }
}
