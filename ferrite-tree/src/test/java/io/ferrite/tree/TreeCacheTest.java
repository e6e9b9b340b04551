package io.ferrite.tree;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.client.FerriteClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client caches over the local fabric (32 KiB meganodes of 512 B nodes: several meganodes in 2
 * meganode levels, 3 node levels in each): what a warm cache saves, counted; that stale copies
 * (after meganode and node splits) still answer right and are replaced; that the bound holds.
 */
@ExtendWith(SeedExtension.class)
class TreeCacheTest {
  @TempDir Path dir;
  @AutoClose TreeCluster cluster;

  static byte[] key(int i) {
    return String.format(Locale.ROOT, "key-%06d", i).getBytes(StandardCharsets.UTF_8);
  }

  static TreeClient client(FerriteClient c, String cacheBytes) {
    return new TreeClient(c, c.config().with(TreeConfig.CACHE_BYTES, cacheBytes));
  }

  /** Puts keys {@code from..to-1} in a seeded scattered order (value: the key), into the model. */
  static void load(Tree t, TreeMap<byte[], byte[]> model, int from, int to, Random random) {
    List<Integer> order = new ArrayList<>();
    for (int i = from; i < to; i++) {
      order.add(i);
    }
    Collections.shuffle(order, random);
    for (int i : order) {
      t.put(key(i), key(i));
      model.put(key(i), key(i));
    }
  }

  /** Waits (up to 10 s) until the server's splitter has no split left to make. */
  static void settle(Tree t) throws InterruptedException {
    long splits = t.stats()[2];
    for (int i = 0; i < 100; i++) {
      Thread.sleep(100);
      long again = t.stats()[2];
      if (again == splits) {
        return;
      }
      splits = again;
    }
  }

  /** One-sided reads (nodes and extents) of client-side gets of every key in {@code keys}. */
  static long clientReads(Tree t, List<byte[]> keys, TreeMap<byte[], byte[]> model) {
    long before = t.nodeReads() + t.extentReads();
    for (byte[] k : keys) {
      assertArrayEquals(model.get(k), t.get(k, Tree.Path.CLIENT), "client get");
    }
    return t.nodeReads() + t.extentReads() - before;
  }

  @Test
  void aWarmCacheMakesAClientGetOneLeafReadAndOneExtentRead(Random random) throws Exception {
    cluster = new TreeCluster(dir, 1, false);
    TreeMap<byte[], byte[]> model = TreeModel.model();
    Tree loader = new TreeClient(cluster.client()).create("c");
    load(loader, model, 0, 3000, random);
    settle(loader);
    long[] stats = loader.stats();
    assertTrue(stats[1] >= 2, "meganode levels: " + Arrays.toString(stats));
    List<byte[]> keys = new ArrayList<>(model.keySet());

    Tree cold = client(cluster.client(), "0").open("c");
    assertNull(cold.cache(), "tree.cache.bytes 0: no cache");
    clientReads(cold, keys, model); // layouts
    long uncached = clientReads(cold, keys, model);

    Tree warm = new TreeClient(cluster.client()).open("c");
    clientReads(warm, keys, model); // warms the caches
    long cached = clientReads(warm, keys, model);
    assertEquals(2L * keys.size(), cached, "a leaf and an extent per get, uncached: " + uncached);
    assertTrue(uncached >= 5L * keys.size(), "without caches: " + uncached);

    // Server-side, a cached range sends a get straight to its leaf meganode: one RPC.
    long rpcs = warm.rpcs();
    for (byte[] k : keys) {
      assertArrayEquals(model.get(k), warm.get(k, Tree.Path.SERVER), "server get");
    }
    assertEquals(keys.size(), warm.rpcs() - rpcs, "one SEARCH per server-side get");
    // A handle that only searches server-side learns the ranges too (one header read each).
    Tree serverOnly = new TreeClient(cluster.client()).open("c");
    for (byte[] k : keys) {
      assertArrayEquals(model.get(k), serverOnly.get(k, Tree.Path.SERVER), "server get");
    }
    rpcs = serverOnly.rpcs();
    for (byte[] k : keys) {
      assertArrayEquals(model.get(k), serverOnly.get(k, Tree.Path.SERVER), "server get");
    }
    assertEquals(keys.size(), serverOnly.rpcs() - rpcs, "ranges learned server-side");
    long coldRpcs = cold.rpcs();
    for (byte[] k : keys) {
      assertArrayEquals(model.get(k), cold.get(k, Tree.Path.SERVER), "server get");
    }
    // Without caches too, since the server searches on through the meganodes it holds (a tree's
    // meganodes are all on its server today).
    assertEquals(keys.size(), cold.rpcs() - coldRpcs, "one SEARCH per uncached server-side get");
  }

  @Test
  void staleCopiesStillAnswerRightAndAreReplaced(Random random) throws Exception {
    cluster = new TreeCluster(dir, 1, false);
    TreeMap<byte[], byte[]> model = TreeModel.model();
    Tree writer = new TreeClient(cluster.client()).create("c");
    load(writer, model, 0, 1000, random);
    settle(writer);
    Tree reader = new TreeClient(cluster.client()).open("c");
    List<byte[]> keys = new ArrayList<>(model.keySet());
    clientReads(reader, keys, model);
    long splits = writer.stats()[2];
    // Another handle writes 3 times as many keys in between: nodes and meganodes split, nodes are
    // freed and reused, the root grows; the reader's caches still describe the old tree.
    load(writer, model, 1000, 4000, random);
    settle(writer);
    assertTrue(writer.stats()[2] > splits + 2, "meganodes split: " + writer.stats()[2]);
    for (int i = 4000; i < 4100; i++) {
      assertNull(reader.get(key(i), Tree.Path.CLIENT), "absent " + i);
    }
    keys = new ArrayList<>(model.keySet());
    for (Tree.Path path : Tree.Path.values()) {
      for (byte[] k : keys) {
        assertArrayEquals(model.get(k), reader.get(k, path), "get " + path);
      }
    }
    // The stale copies and ranges were dropped and the new ones learned: warm again.
    clientReads(reader, keys, model);
    assertEquals(2L * keys.size(), clientReads(reader, keys, model), "warm again");
  }

  @Test
  void theCacheStaysWithinItsBound(Random random) throws Exception {
    cluster = new TreeCluster(dir, 1, false);
    TreeMap<byte[], byte[]> model = TreeModel.model();
    Tree writer = new TreeClient(cluster.client()).create("c");
    load(writer, model, 0, 3000, random);
    settle(writer);
    Tree small = client(cluster.client(), "8k").open("c");
    for (Tree.Path path : List.of(Tree.Path.CLIENT, Tree.Path.SERVER)) {
      for (byte[] k : model.keySet()) {
        assertArrayEquals(model.get(k), small.get(k, path), "get");
        assertTrue(small.cache().bytes() <= 8192, "bytes: " + small.cache().bytes());
      }
    }
    assertTrue(small.cache().rejected() > 0, "the bound turned copies away");
    assertTrue(small.cache().hits() > 0, "what it kept was used");
    small.cache().clear();
    assertEquals(0, small.cache().bytes(), "clear gives every byte back");
    assertEquals(0, small.cache().nodeCount());
  }
}
