package io.ferrite.tree.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.extent.ExtentAllocator;
import io.ferrite.tree.MeganodeReader;
import io.ferrite.tree.MeganodeReader.Outcome;
import io.ferrite.tree.Node;
import io.ferrite.tree.NodeSource;
import io.ferrite.tree.TreeModel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A meganode split under a search that read the meganode's header before it (Cell §2.2–2.4): the
 * search goes on through the old root into trimmed and invalidated nodes, and must still answer
 * right — the value for a key that stayed, RIGHT to the new meganode for one that moved — and a
 * scan begun before the split must continue in the new meganode with no key lost or repeated.
 */
@ExtendWith(SeedExtension.class)
class MeganodeSplitTest extends MeganodeFixture {
  static final int NODE = 512;
  static final long Y = 0x7_0000_0009L;

  ExtentAllocator extents() {
    return extents(16);
  }

  static byte[] key(int i) {
    return String.format(Locale.ROOT, "key-%05d", i).getBytes(StandardCharsets.UTF_8);
  }

  /**
   * A source that splits {@code x} into {@code y} right after its {@code after}-th node read: 1,
   * the header (the search then finds trimmed nodes); 2, the old root too (it then reaches nodes
   * the split invalidated, through the old root's copy).
   */
  final class SplittingSource implements NodeSource {
    final Meganode x;
    final int after;
    final Meganode[] y = new Meganode[1];
    byte[] splitKey;
    int reads;

    SplittingSource(Meganode x, int after) {
      this.x = x;
      this.after = after;
    }

    @Override
    public int nodeSize() {
      return NODE;
    }

    @Override
    public void readNode(int index, byte[] dst) {
      x.source().readNode(index, dst);
      if (++reads == after) {
        Meganode.SplitHalf half = x.beginSplit();
        y[0] =
            new Meganode(
                region(4096L * NODE), NODE, extents(), 0, half.key(), half.high(), half.link());
        y[0].fill(half.keys(), half.values(), half.children()); // as TreeService copies
        x.finishSplit(half.key(), Y);
        splitKey = half.key();
      }
    }

    @Override
    public byte[] readExtent(long address, int length) {
      return x.source().readExtent(address, length);
    }
  }

  Meganode filled(int n, TreeMap<byte[], byte[]> model) {
    Meganode x = new Meganode(region(4096L * NODE), NODE, extents());
    for (int i = 0; i < n; i++) {
      x.put(key(i), key(i));
      model.put(key(i), key(i));
    }
    return x;
  }

  @Test
  void aSearchThatReadTheOldHeaderEndsRightOrFollowsTheLink() {
    int n = 3000;
    // Each case by both searches: search (decoded nodes, the client's) and find (in place, the
    // server's).
    for (int c = 0; c < 20; c++) {
      int t = c / 2;
      int probe = new int[] {2999, 2500, 1600, 1400, 10}[t % 5];
      TreeMap<byte[], byte[]> model = TreeModel.model();
      Meganode x = filled(n, model);
      SplittingSource source = new SplittingSource(x, 1 + t / 5);
      MeganodeReader reader = new MeganodeReader(source);
      Outcome o = c % 2 == 0 ? reader.search(key(probe)) : reader.find(key(probe));
      byte[] k = source.splitKey;
      if (Arrays.compareUnsigned(key(probe), k) >= 0) {
        assertEquals(
            Outcome.Kind.RIGHT,
            o.kind(),
            "key " + probe + " moved right (split after read " + (1 + t / 5) + ")");
        assertEquals(Y, o.pointer());
        assertArrayEquals(key(probe), source.y[0].get(key(probe)));
      } else {
        assertEquals(Outcome.Kind.VALUE, o.kind(), "key " + probe + " stayed");
        assertArrayEquals(key(probe), o.value());
      }
      // Both halves hold exactly the model, in order, and the shapes are whole.
      List<Map.Entry<byte[], byte[]>> all = new ArrayList<>(x.all());
      all.addAll(source.y[0].all());
      TreeModel.assertPairs(TreeModel.scan(model, null, null, n + 1), all, "halves");
      assertNull(MeganodeShape.check(x), "left shape");
      assertNull(MeganodeShape.check(source.y[0]), "right shape");
    }
  }

  /**
   * {@link Meganode#fill}, a split's copy: from 1 to 3 000 sorted pairs (1 to 3 local levels), and
   * an internal meganode's child pointers: the shape is whole, the contents are the pairs, and
   * seeded random puts and deletes after it keep both right (the nodes it packed split as any).
   */
  @Test
  void aFilledMeganodeIsWholeAndTakesWritesAfter(Random random) {
    for (int n : new int[] {1, 2, 13, 400, 3000}) {
      TreeMap<byte[], byte[]> model = TreeModel.model();
      List<byte[]> keys = new ArrayList<>();
      List<byte[]> values = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        byte[] v = new byte[random.nextInt(30)];
        random.nextBytes(v);
        keys.add(key(2 * i));
        values.add(v);
        model.put(key(2 * i), v);
      }
      Meganode y = new Meganode(region(4096L * NODE), NODE, extents(), 0, key(0), null, 0);
      y.fill(keys, values, List.of());
      assertNull(MeganodeShape.check(y), "shape after filling " + n);
      TreeModel.assertPairs(new ArrayList<>(model.entrySet()), y.all(), "filled " + n);
      for (int op = 0; op < 2000; op++) {
        byte[] k = key(random.nextInt(2 * n + 10));
        if (random.nextInt(4) == 0) {
          assertEquals(model.remove(k) != null, y.delete(k), "delete after fill " + n);
        } else {
          assertEquals(model.put(k, k) == null, y.put(k, k), "put after fill " + n);
        }
      }
      assertNull(MeganodeShape.check(y), "shape after writes " + n);
      TreeModel.assertPairs(new ArrayList<>(model.entrySet()), y.all(), "written " + n);
    }
    Meganode internal = new Meganode(region(4096L * NODE), NODE, extents(), 1, key(0), null, 0);
    List<byte[]> keys = new ArrayList<>();
    List<Long> children = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      keys.add(key(i));
      children.add(0x1_0000_0000L + i);
    }
    internal.fill(keys, List.of(), children);
    assertNull(MeganodeShape.check(internal), "internal shape");
    List<Long> got = new ArrayList<>();
    internal.forEachEntry((k, v, child) -> got.add(child));
    assertEquals(children, got, "child pointers");
    assertEquals(0x1_0000_0000L + 500, internal.search(key(500)).pointer());
  }

  /**
   * A meganode rebuilt from the log is filled with what it held, which inserts may have packed
   * tighter than the 70 % fill leaves: fill packs fuller when 70 % would not fit. Here 90 % of what
   * whole leaves hold in a 24-node meganode: 70 % leaves need more nodes than it has.
   */
  @Test
  void aFillThat70PercentNodesWouldNotHoldPacksThemFuller(Random random) {
    int nodes = 24;
    byte[] probe = key(1_000_000); // every key below is as long
    int perLeaf =
        (NODE - Node.HEADER - Node.TRAILER - 2 * probe.length) / (Node.LEAF_ENTRY + probe.length);
    int perLeaf70 =
        (NODE * 7 / 10 - Node.HEADER - Node.TRAILER - 2 * probe.length)
            / (Node.LEAF_ENTRY + probe.length);
    int leaves = nodes - 3; // the header, and room for the inner nodes above
    int n = leaves * perLeaf * 9 / 10;
    assertTrue(n > (nodes - 1) * perLeaf70, "70 % leaves would not hold " + n + " keys");
    TreeMap<byte[], byte[]> model = TreeModel.model();
    List<byte[]> keys = new ArrayList<>();
    List<byte[]> values = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      byte[] k = key(1_000_000 + i);
      byte[] v = new byte[random.nextInt(8)];
      random.nextBytes(v);
      keys.add(k);
      values.add(v);
      model.put(k, v);
    }
    Meganode y = new Meganode(region(nodes * (long) NODE), NODE, extents(), 0, key(0), null, 0);
    y.fill(keys, values, List.of());
    assertNull(MeganodeShape.check(y), "shape after filling " + n);
    TreeModel.assertPairs(new ArrayList<>(model.entrySet()), y.all(), "filled " + n);
  }

  @Test
  void aScanBegunBeforeTheSplitGoesOnInTheNewMeganode() {
    int n = 3000;
    TreeMap<byte[], byte[]> model = TreeModel.model();
    Meganode x = filled(n, model);
    SplittingSource source = new SplittingSource(x, 2);
    MeganodeReader.ScanPart part = new MeganodeReader(source).scan(key(100), null, n);
    assertEquals(Y, part.next(), "the scan went on to the new meganode");
    assertTrue(Arrays.compareUnsigned(part.resume(), source.splitKey) >= 0, "resume at the split");
    List<Map.Entry<byte[], byte[]>> got = new ArrayList<>(part.pairs());
    got.addAll(new MeganodeReader(source.y[0].source()).scan(part.resume(), null, n).pairs());
    TreeModel.assertPairs(TreeModel.scan(model, key(100), null, n), got, "scan across the split");
  }
}
