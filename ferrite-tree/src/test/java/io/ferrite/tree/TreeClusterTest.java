package io.ferrite.tree;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The tree face end to end over the local fabric: seeded random operations through {@link Tree}
 * against {@link TreeMap}, every read by both paths, while meganodes split (small meganodes), scans
 * crossing meganodes; the directory; bad input at the client's edge.
 */
@ExtendWith(SeedExtension.class)
class TreeClusterTest {
  @TempDir Path dir;
  @AutoClose TreeCluster cluster;

  static byte[] randomKey(Random random, int keys) {
    int k = random.nextInt(keys);
    // Bytes above 0x7F so that unsigned order matters; varying lengths.
    byte[] b = new byte[1 + (k % 7)];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) (k * 31 + i * 0x53);
    }
    return b;
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "spread"})
  void randomOperationsMatchTreeMapByBothPathsWhileMeganodesSplit(String placement, Random random)
      throws Exception {
    cluster = new TreeCluster(dir, 3, false, placement);
    TreeClient client = new TreeClient(cluster.client());
    Tree tree = client.create("model");
    TreeMap<byte[], byte[]> model = TreeModel.model();
    int keys = 3000;
    for (int op = 0; op < 8000; op++) {
      byte[] key = randomKey(random, keys);
      int kind = random.nextInt(10);
      if (kind < 5) {
        byte[] value = new byte[random.nextInt(30)];
        random.nextBytes(value);
        assertEquals(model.put(key, value) == null, tree.put(key, value), "put " + op);
      } else if (kind < 6) {
        assertEquals(model.remove(key) != null, tree.delete(key), "delete " + op);
      } else if (kind < 9) {
        byte[] expected = model.get(key);
        for (Tree.Path path : Tree.Path.values()) {
          byte[] actual = tree.get(key, path);
          if (expected == null) {
            assertNull(actual, "get " + op + " " + path);
          } else {
            assertArrayEquals(expected, actual, "get " + op + " " + path);
          }
        }
      } else {
        byte[] from = random.nextInt(4) == 0 ? null : randomKey(random, keys);
        byte[] to = random.nextInt(4) == 0 ? null : randomKey(random, keys);
        if (from != null && to != null && Arrays.compareUnsigned(from, to) > 0) {
          byte[] t = from;
          from = to;
          to = t;
        }
        int limit = 1 + random.nextInt(random.nextBoolean() ? 10 : 1000);
        List<Map.Entry<byte[], byte[]>> expected = TreeModel.scan(model, from, to, limit);
        for (Tree.Path path : Tree.Path.values()) {
          TreeModel.assertPairs(
              expected, tree.scan(from, to, limit, path), "scan " + op + " " + path);
        }
      }
    }
    for (Tree.Path path : Tree.Path.values()) {
      TreeModel.assertPairs(
          TreeModel.scan(model, null, null, Integer.MAX_VALUE),
          tree.scan(null, null, Integer.MAX_VALUE, path),
          "full scan " + path);
    }
    long[] stats = tree.stats();
    if (placement.equals("spread")) {
      assertTrue(
          TreeShape.serversWithMeganodes(cluster, client, "model") >= 2,
          "leaf meganodes on several servers");
    }
    assertTrue(stats[0] >= 4 && stats[2] >= 3, "meganodes split: " + Arrays.toString(stats));
    assertTrue(stats[1] >= 2, "a root meganode above the leaves: " + Arrays.toString(stats));
    // multiGet by every path: present keys from every meganode, absent ones between, more keys
    // than one window of RPCs in flight.
    List<byte[]> some = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      some.add(randomKey(random, keys));
    }
    // By this handle (warm caches: straight to the leaf meganodes) and by one without caches
    // (every key from the root, one round per meganode level).
    Tree uncached =
        new TreeClient(
                cluster.client(), cluster.client().config().with(TreeConfig.CACHE_BYTES, "0"))
            .open("model");
    for (Tree handle : List.of(tree, uncached)) {
      for (Tree.Path path : Tree.Path.values()) {
        List<byte[]> got = handle.multiGet(some, path);
        assertEquals(some.size(), got.size());
        for (int i = 0; i < some.size(); i++) {
          byte[] expected = model.get(some.get(i));
          if (expected == null) {
            assertNull(got.get(i), "multiGet " + path + " " + i);
          } else {
            assertArrayEquals(expected, got.get(i), "multiGet " + path + " " + i);
          }
        }
      }
    }
    // A second handle starting from the directory's root sees the same.
    Tree again = new TreeClient(cluster.client()).open("model");
    TreeModel.assertPairs(
        TreeModel.scan(model, null, null, 100),
        again.scan(null, null, 100, Tree.Path.CLIENT),
        "reopened");
  }

  @Test
  void directoryCreatesListsAndDropsTrees() throws Exception {
    cluster = new TreeCluster(dir, 2, false);
    TreeClient client = new TreeClient(cluster.client());
    Tree a = client.create("a");
    Tree b = client.create("b");
    a.put(new byte[] {1}, new byte[] {2});
    b.put(new byte[] {1}, new byte[] {3});
    List<TreeClient.TreeInfo> all = client.list();
    assertEquals(2, all.size());
    assertTrue(all.get(0).server() != all.get(1).server(), "trees spread over servers: " + all);
    assertArrayEquals(new byte[] {2}, client.open("a").get(new byte[] {1}, Tree.Path.CLIENT));
    assertTrue(client.drop("a"));
    assertEquals(
        ErrorCode.NOT_FOUND, assertThrows(FerriteException.class, () -> client.open("a")).code());
    assertEquals(1, client.list().size());
    assertArrayEquals(new byte[] {3}, b.get(new byte[] {1}));
  }

  /**
   * The directory (trees, their servers, their roots after root splits) comes back from the
   * journal, and again from a snapshot, on a restarted master; the servers kept their meganodes.
   */
  @Test
  void directorySurvivesAMasterRestart() throws Exception {
    cluster = new TreeCluster(dir, 2, false);
    Tree tree = new TreeClient(cluster.client()).create("kept");
    for (int i = 0; i < 1500; i++) {
      tree.put(("k" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8), new byte[] {(byte) i});
    }
    TreeClient.TreeInfo before = new TreeClient(cluster.client()).info("kept");
    assertTrue(tree.stats()[1] >= 2, "the root split: " + Arrays.toString(tree.stats()));
    cluster.startMaster();
    cluster.awaitServers(2);
    assertEquals(before, new TreeClient(cluster.client()).info("kept"), "from the journal");
    cluster.master.snapshot();
    cluster.startMaster();
    cluster.awaitServers(2);
    TreeClient again = new TreeClient(cluster.client());
    assertEquals(before, again.info("kept"), "from the snapshot");
    assertArrayEquals(
        new byte[] {(byte) 7},
        again
            .open("kept")
            .get("k7".getBytes(java.nio.charset.StandardCharsets.UTF_8), Tree.Path.CLIENT));
  }

  @Test
  void badInputIsRejectedNamingTheLimit() throws Exception {
    cluster = new TreeCluster(dir, 1, false);
    Tree tree = new TreeClient(cluster.client()).create("bad");
    int maxKey = 512 / 8 - Node.LEAF_ENTRY;
    assertInvalid(() -> tree.put(new byte[0], new byte[1]), "key: empty");
    assertInvalid(() -> tree.get(new byte[0], Tree.Path.CLIENT), "key: empty");
    assertInvalid(() -> tree.delete(new byte[0]), "key: empty");
    assertInvalid(() -> tree.put(new byte[maxKey + 1], new byte[1]), "expected: 1 to " + maxKey);
    assertInvalid(() -> tree.put(new byte[] {1}, new byte[40_000]), "value: 40000 bytes");
    assertInvalid(() -> tree.scan(new byte[] {2}, new byte[] {1}, 5), "from > to");
    assertInvalid(() -> tree.scan(null, null, 0), "limit: 0");
    assertInvalid(() -> tree.scan(null, null, -3, Tree.Path.CLIENT), "limit: -3");
    assertInvalid(() -> new TreeClient(cluster.client()).create("has space"), "tree name");
    tree.put(new byte[maxKey], new byte[1]);
    assertArrayEquals(new byte[1], tree.get(new byte[maxKey], Tree.Path.CLIENT));
  }

  static void assertInvalid(org.junit.jupiter.api.function.Executable call, String says) {
    FerriteException e = assertThrows(FerriteException.class, call);
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), e.getMessage());
    assertTrue(e.getMessage().contains(says), e.getMessage() + " should say " + says);
  }
}
