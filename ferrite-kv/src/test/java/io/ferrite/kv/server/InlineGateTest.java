package io.ferrite.kv.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvCluster;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.TableOptions;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A MULTI_PUT part whose shard's gate is taken ({@link KvWrites}): the receiving thread applies the
 * request's other parts first, then tries the part again, spinning for the gate only while its
 * holder is a receiving thread applying inline, and only up to {@link KvWrites#GATE_SPIN_NANOS};
 * then the part goes to a writer thread. Whoever holds the gate (an inline applier that does not
 * let go, or a slow operation), the other shard's pairs are applied and readable at once, the
 * receiving thread goes on serving the connection (a later put on it is answered), the held shard's
 * pairs wait for the gate, and once it is free every pair is applied and the batch answered.
 */
@ExtendWith(SeedExtension.class)
class InlineGateTest {
  @TempDir Path dir;

  @AfterEach
  void clear() {
    KvService.testStarted = null;
  }

  @Test
  void aHeldShardDelaysOnlyItsOwnPairs(TestSeed seed) throws Exception {
    List<KvService> services = new CopyOnWriteArrayList<>();
    KvService.testStarted = services::add;
    try (KvCluster cluster = new KvCluster(dir, 1, true)) {
      KvTable t =
          new KvClient(cluster.client("tcp"))
              .createTable(
                  "gate",
                  TableOptions.DEFAULTS
                      .withShards(2)
                      .withSlotsPerShard(256)
                      .withExtents(64 << 10, 8)
                      .withLimits(64, 2048));
      assertEquals(1, services.size());
      Random r = new Random(seed.value());
      int round = 0;
      for (boolean inlineHolder : new boolean[] {true, false}) {
        round++;
        // Keys of shard 0 first in the request: its part is tried (and refused) first.
        List<byte[]> held = keysOf(t, 0, 6, "r" + round);
        List<byte[]> free = keysOf(t, 1, 6, "r" + round);
        List<byte[]> keys = new ArrayList<>(held);
        keys.addAll(free);
        List<byte[]> values = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
          byte[] v = new byte[1 + r.nextInt(1500)];
          r.nextBytes(v);
          values.add(v);
        }
        KvShard s0 = services.get(0).shardForTest(t.info().tableId(), 0);
        CountDownLatch taken = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<Void> holder =
            CompletableFuture.runAsync(
                () -> {
                  s0.gate.lock();
                  try {
                    s0.inlineHolder = inlineHolder;
                    taken.countDown();
                    release.await();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  } finally {
                    s0.inlineHolder = false;
                    s0.gate.unlock();
                  }
                });
        try {
          assertTrue(taken.await(60, TimeUnit.SECONDS), "the holder never took the gate");
          CompletableFuture<List<Boolean>> batch = t.multiPutAsync(keys, values);
          // The same connection, so the same receiving thread: it is not stuck on the held gate.
          byte[] later = keysOf(t, 1, 1, "later" + round).get(0);
          t.put(later, later);
          assertArrayEquals(later, t.get(later));
          for (int i = held.size(); i < keys.size(); i++) {
            assertArrayEquals(values.get(i), t.get(keys.get(i)), "free shard's key " + i);
          }
          for (byte[] k : held) {
            assertEquals(null, t.get(k), "a pair of the held shard applied under its gate");
          }
          assertFalse(batch.isDone(), "answered before the held shard's pairs were applied");
          release.countDown();
          List<Boolean> created = batch.get(60, TimeUnit.SECONDS);
          assertEquals(keys.size(), created.size());
          assertTrue(created.stream().allMatch(b -> b), "every key was new: " + created);
          for (int i = 0; i < keys.size(); i++) {
            assertArrayEquals(values.get(i), t.get(keys.get(i)), "key " + i);
          }
        } finally {
          release.countDown();
          holder.get(60, TimeUnit.SECONDS);
        }
      }
    }
  }

  /** {@code n} distinct keys of {@code shard} of {@code t}, named after {@code prefix}. */
  private static List<byte[]> keysOf(KvTable t, int shard, int n, String prefix) {
    List<byte[]> out = new ArrayList<>();
    for (int i = 0; out.size() < n; i++) {
      byte[] k = (prefix + "-key-" + i).getBytes(StandardCharsets.UTF_8);
      if (t.shardOf(k) == shard) {
        out.add(k);
      }
    }
    return out;
  }
}
