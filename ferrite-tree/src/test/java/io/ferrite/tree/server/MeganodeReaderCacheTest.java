package io.ferrite.tree.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.extent.ExtentAllocator;
import io.ferrite.tree.MeganodeReader;
import io.ferrite.tree.Node;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A {@link MeganodeReader} with a node cache over one meganode (512 B nodes, 3 node levels): a warm
 * search reads the leaf alone; after node splits the cached parents lack separators, and the search
 * that follows a right link drops them, so the cache is warm again after one pass.
 */
@ExtendWith(SeedExtension.class)
class MeganodeReaderCacheTest extends MeganodeFixture {

  /** A plain map cache, counting what it is told. */
  static final class MapCache implements MeganodeReader.Cache {
    final Map<Integer, Node> nodes = new HashMap<>();
    int drops;
    int clears;

    @Override
    public Node get(int index) {
      return nodes.get(index);
    }

    @Override
    public void keep(int index, Node n) {
      nodes.put(index, n);
    }

    @Override
    public void drop(int index) {
      drops++;
      nodes.remove(index);
    }

    @Override
    public void clear() {
      clears++;
      nodes.clear();
    }
  }

  static byte[] key(int i, String suffix) {
    return String.format(Locale.ROOT, "k%05d%s", i, suffix).getBytes(StandardCharsets.UTF_8);
  }

  /** Node reads of searching every key of {@code keys} (all present) with a cached reader. */
  static long pass(Meganode m, MapCache cache, List<byte[]> keys) {
    MeganodeReader reader = new MeganodeReader(m.source(), cache);
    for (byte[] k : keys) {
      assertArrayEquals(k, reader.get(k), "value of its key");
    }
    assertEquals(keys.size(), reader.extentReads(), "one extent per get");
    return reader.nodeReads();
  }

  @Test
  void warmSearchesReadTheLeafOnlyAndSplitsAreHealedByDroppingParents(Random random) {
    ExtentAllocator extents = extents(16);
    Meganode m = new Meganode(region(4096L * 512), 512, extents);
    List<byte[]> keys = new ArrayList<>();
    for (int i = 0; i < 2000; i++) {
      keys.add(key(i, ""));
    }
    Collections.shuffle(keys, random);
    for (byte[] k : keys) {
      m.put(k, k);
    }
    MapCache cache = new MapCache();
    assertTrue(m.source().nodeSize() == 512);
    MeganodeReader probe = new MeganodeReader(m.source());
    assertTrue(probe.header().level >= 2, "3 node levels: root level " + probe.header().level);

    long cold = pass(m, cache, keys);
    long warm = pass(m, cache, keys);
    assertEquals(keys.size(), warm, "a leaf read per get; the first pass read " + cold);
    for (Node n : cache.nodes.values()) {
      assertTrue(n.level > 0 || n == cache.nodes.get(0), "no leaf is cached");
    }

    // New keys between the old ones split most leaves (and some internal nodes): the cached
    // internal copies lack the new separators.
    List<byte[]> more = new ArrayList<>();
    for (int i = 0; i < 2000; i += 2) {
      more.add(key(i, "-a"));
      more.add(key(i, "-b"));
    }
    Collections.shuffle(more, random);
    for (byte[] k : more) {
      m.put(k, k);
    }
    keys.addAll(more);
    MeganodeReader reader = new MeganodeReader(m.source(), cache);
    assertNull(reader.get(key(1, "-a")), "absent");
    pass(m, cache, keys); // right links followed, parents dropped and read again
    assertEquals(keys.size(), pass(m, cache, keys), "warm again: a leaf read per get");
    assertTrue(cache.drops > 0, "stale parents dropped");
  }
}
