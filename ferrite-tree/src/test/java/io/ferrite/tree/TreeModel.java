package io.ferrite.tree;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The model the tree tests compare against: a {@link TreeMap} in unsigned byte order. */
public final class TreeModel {
  private TreeModel() {}

  public static TreeMap<byte[], byte[]> model() {
    return new TreeMap<>(Arrays::compareUnsigned);
  }

  /** What a scan of {@code [from, to)} (null: unbounded), at most {@code limit}, must return. */
  public static List<Map.Entry<byte[], byte[]>> scan(
      TreeMap<byte[], byte[]> model, byte[] from, byte[] to, int limit) {
    Map<byte[], byte[]> range =
        from == null
            ? (to == null ? model : model.headMap(to, false))
            : (to == null ? model.tailMap(from, true) : model.subMap(from, true, to, false));
    List<Map.Entry<byte[], byte[]>> out = new ArrayList<>();
    Iterator<Map.Entry<byte[], byte[]>> it = range.entrySet().iterator();
    while (it.hasNext() && out.size() < limit) {
      out.add(it.next());
    }
    return out;
  }

  /** Asserts the same pairs in the same order. */
  public static void assertPairs(
      List<Map.Entry<byte[], byte[]>> expected,
      List<Map.Entry<byte[], byte[]>> actual,
      String what) {
    assertEquals(expected.size(), actual.size(), what + ": size");
    for (int i = 0; i < expected.size(); i++) {
      assertArrayEquals(expected.get(i).getKey(), actual.get(i).getKey(), what + ": key " + i);
      assertArrayEquals(
          expected.get(i).getValue(), actual.get(i).getValue(), what + ": value " + i);
    }
  }

  /**
   * Asserts that {@code tree} holds exactly {@code model}: a full scan by every {@link Tree.Path}
   * returns its pairs in order, and a get of each of its keys by every path returns its value.
   */
  public static void assertHolds(Tree tree, TreeMap<byte[], byte[]> model, String what) {
    for (Tree.Path path : Tree.Path.values()) {
      assertPairs(
          new ArrayList<>(model.entrySet()),
          tree.scan(null, null, Integer.MAX_VALUE, path),
          what + " scan " + path);
      for (Map.Entry<byte[], byte[]> e : model.entrySet()) {
        assertArrayEquals(e.getValue(), tree.get(e.getKey(), path), what + " get " + path);
      }
    }
  }
}
