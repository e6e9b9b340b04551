package io.ferrite.tree;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Credentials;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.testing.ClusterHarness;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A bigger tree with the default 1 KiB nodes in 1 MiB meganodes on a 3-server cluster: {@code
 * tree.scale.keys} keys (20 000 by default; {@code -Dtree.scale.keys=100000}, {@code
 * -Dtree.scale.fabric=tcp|shm} for the runs in docs/TREE.md) in a scattered order, every sampled
 * get right by both paths, full scans by both paths, and the counted cost of a get: once the handle
 * learned the new root (after the first right link from the old one), a server-side get is one RPC:
 * the tree's meganodes are all on its server, which goes from one to the next itself (not one RPC
 * per meganode level, nor a walk along the leaf meganodes).
 */
@ExtendWith(SeedExtension.class)
class TreeScaleTest {
  @TempDir Path dir;

  @Test
  void manyKeysOverSeveralMeganodes(Random random) throws Exception {
    int n = Integer.getInteger("tree.scale.keys", 20_000);
    String fabric = System.getProperty("tree.scale.fabric", "local");
    boolean real = !fabric.equals("local");
    try (ClusterHarness c =
        new ClusterHarness(
            dir,
            new Credentials(
                "tree-scale", "0123456789abcdef-tree-scale".getBytes(StandardCharsets.UTF_8)),
            real,
            Map.of(
                FerriteConfig.CAPACITY_DRAM, "512m",
                FerriteConfig.CAPACITY_DISK, "0",
                TreeConfig.MEGANODE_SIZE, "1m",
                TreeConfig.EXTENT_REGION_SIZE, "4m"))) {
      c.startMaster();
      for (int i = 0; i < 3; i++) {
        c.startServer("s" + i);
      }
      c.awaitServers(3);
      TreeClient client = new TreeClient(real ? c.client(fabric) : c.client());
      Tree t = client.create("big");
      for (int i = 0; i < n; i++) {
        byte[] k = key((int) ((i * 7919L) % n));
        t.put(k, k);
      }
      // Meganode splits run on the server's splitter thread, after the puts that fill them were
      // answered: the last one (a new root) may still be under way. Bounded wait.
      long[] stats = t.stats();
      for (int tries = 0; tries < 3000 && !(stats[0] >= 3 && stats[1] >= 2); tries++) {
        Thread.sleep(10);
        stats = t.stats();
      }
      assertTrue(stats[0] >= 3 && stats[1] >= 2, "meganodes, levels: " + Arrays.toString(stats));
      t.get(key(n - 1)); // learns the new root if it still started at the old one
      assertEquals(client.info("big").root(), t.rootPointer(), "the handle learned the root");
      long rpcs = t.rpcs();
      long reads = t.nodeReads();
      int samples = 500;
      for (int i = 0; i < samples; i++) {
        byte[] k = key(random.nextInt(n));
        assertArrayEquals(k, t.get(k, Tree.Path.SERVER));
        assertArrayEquals(k, t.get(k, Tree.Path.CLIENT));
      }
      double rpcsPerGet = (t.rpcs() - rpcs) / (double) samples;
      double readsPerGet = (t.nodeReads() - reads) / (double) samples;
      // The client path's LAYOUT calls (one per meganode it first reads) are counted too.
      assertTrue(rpcsPerGet <= 1.1, "server-side: one RPC per get: " + rpcsPerGet);
      assertEquals(n, t.scan(null, null, n + 1, Tree.Path.CLIENT).size());
      assertEquals(n, t.scan(null, null, n + 1, Tree.Path.SERVER).size());
      System.out.printf(
          Locale.ROOT,
          "tree scale (%s): %d keys; meganodes %d, levels %d, splits %d; per get: %.2f RPCs"
              + " server-side, %.2f node reads + 1 extent read client-side%n",
          fabric,
          n,
          stats[0],
          stats[1],
          stats[2],
          rpcsPerGet,
          readsPerGet);
    }
  }

  static byte[] key(int i) {
    return String.format(Locale.ROOT, "user%09d", i).getBytes(StandardCharsets.UTF_8);
  }
}
