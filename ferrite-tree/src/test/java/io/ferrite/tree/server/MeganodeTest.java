package io.ferrite.tree.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestThreads;
import io.ferrite.kernel.extent.ExtentAllocator;
import io.ferrite.tree.MeganodeReader;
import io.ferrite.tree.NodeSource;
import io.ferrite.tree.TreeModel;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * One meganode's local B-link tree against {@link TreeMap}: seeded random operations with every
 * result compared, scans included; concurrent writers and lock-free readers; a reader whose node
 * copy a write tears in the middle; bad input. Small nodes (512 B) so that a few thousand keys make
 * a tree of several levels.
 */
@ExtendWith(SeedExtension.class)
class MeganodeTest extends MeganodeFixture {
  static final int NODE = 512;

  Meganode meganode(int nodes) {
    ExtentAllocator extents = extents(16);
    return new Meganode(region((long) nodes * NODE), NODE, extents);
  }

  static byte[] randomKey(Random random) {
    byte[] k = new byte[1 + random.nextInt(12)];
    for (int i = 0; i < k.length; i++) {
      k[i] = (byte) (random.nextInt(4) * 85); // 0x00, 0x55, 0xAA, 0xFF: signed order differs
    }
    return k;
  }

  @Test
  void randomOperationsMatchTreeMap(Random random) {
    Meganode m = meganode(4096);
    TreeMap<byte[], byte[]> model = TreeModel.model();
    for (int op = 0; op < 30_000; op++) {
      byte[] key = randomKey(random);
      int kind = random.nextInt(10);
      if (kind < 5) {
        byte[] value = new byte[random.nextInt(40)];
        random.nextBytes(value);
        assertEquals(model.put(key, value) == null, m.put(key, value), "put " + op);
      } else if (kind < 7) {
        assertEquals(model.remove(key) != null, m.delete(key), "delete " + op);
      } else if (kind < 9) {
        byte[] expected = model.get(key);
        byte[] actual = m.get(key);
        if (expected == null) {
          assertNull(actual, "get " + op);
        } else {
          assertArrayEquals(expected, actual, "get " + op);
        }
      } else {
        byte[] from = random.nextInt(5) == 0 ? null : randomKey(random);
        byte[] to = random.nextInt(5) == 0 ? null : randomKey(random);
        if (from != null && to != null && Arrays.compareUnsigned(from, to) > 0) {
          byte[] t = from;
          from = to;
          to = t;
        }
        int limit = 1 + random.nextInt(random.nextBoolean() ? 5 : 500);
        TreeModel.assertPairs(
            TreeModel.scan(model, from, to, limit), m.scan(from, to, limit), "scan " + op);
      }
    }
    TreeModel.assertPairs(TreeModel.scan(model, null, null, Integer.MAX_VALUE), m.all(), "all");
    assertNull(MeganodeShape.check(m), "shape");
    assertTrue(m.nodeUsage()[0] > 20, "the tree split into several levels: " + m.nodeUsage()[0]);
    assertTrue(new MeganodeReader(m.source()).header().level >= 2, "root above level 1");
  }

  /**
   * A reader's node copy torn by a write in the middle (the local fabric's tear: half, a write, the
   * rest) is detected by the version words and read again: every get still answers right.
   */
  @Test
  void tornNodeCopiesAreReadAgain(Random random) {
    Meganode m = meganode(4096);
    TreeMap<byte[], byte[]> model = TreeModel.model();
    for (int i = 0; i < 2000; i++) {
      byte[] k = ("k" + i).getBytes(StandardCharsets.UTF_8);
      m.put(k, k);
      model.put(k, k);
    }
    NodeSource inner = m.source();
    int[] writes = {0};
    int[] tears = {0};
    NodeSource tearing =
        new NodeSource() {
          @Override
          public int nodeSize() {
            return NODE;
          }

          @Override
          public void readNode(int index, byte[] dst) {
            byte[] first = new byte[NODE];
            inner.readNode(index, first);
            io.ferrite.tree.Node n = io.ferrite.tree.Node.decode(first);
            byte[] restore = null;
            // Every other leaf copy only, so that the reader's next copy is whole.
            if (n != null && n.leaf() && n.keys.size() > 1 && (tears[0]++ & 1) == 0) {
              // Delete the leaf's first key: the entries after it shift left, so the copy's
              // second half (read now) holds, at each old entry's place, the next one: a torn
              // copy accepted would miss keys of the model.
              restore = n.keys.get(0);
              m.delete(restore);
              writes[0]++;
            }
            byte[] second = new byte[NODE];
            inner.readNode(index, second);
            if (restore != null) {
              m.put(restore, restore);
            }
            System.arraycopy(first, 0, dst, 0, NODE / 2);
            System.arraycopy(second, NODE / 2, dst, NODE / 2, NODE / 2);
          }

          @Override
          public byte[] readExtent(long address, int length) {
            return inner.readExtent(address, length);
          }
        };
    MeganodeReader reader = new MeganodeReader(tearing);
    for (int i = 0; i < 200; i++) {
      byte[] k = ("k" + random.nextInt(2000)).getBytes(StandardCharsets.UTF_8);
      assertArrayEquals(k, reader.get(k));
    }
    assertTrue(writes[0] > 0 && reader.tornReads() > 0, "copies were torn: " + reader.tornReads());
  }

  /**
   * Writers on disjoint keys with rising counters while lock-free readers get and scan: a reader
   * never sees a key's counter go back, every value matches its key, scans are ordered; at the end
   * the tree equals the model.
   */
  @Test
  void concurrentWritersAndReaders(Random random) {
    Meganode m = meganode(8192);
    int writers = 3;
    int keysPerWriter = 400;
    int rounds = 6;
    long seed = random.nextLong();
    AtomicBoolean done = new AtomicBoolean();
    try (TestThreads threads = new TestThreads(() -> done.set(true))) {
      for (int w = 0; w < writers; w++) {
        int id = w;
        threads.start(
            "writer-" + w,
            () -> {
              Random r = new Random(seed + id);
              for (int round = 0; round < rounds && !done.get(); round++) {
                for (int i = 0; i < keysPerWriter; i++) {
                  int k = r.nextInt(keysPerWriter);
                  byte[] key = key(id, k);
                  if (round == rounds - 1) {
                    m.put(key, value(key, round + 1));
                  } else if (r.nextInt(4) == 0) {
                    m.delete(key);
                  } else {
                    m.put(key, value(key, round + 1));
                  }
                }
              }
              for (int k = 0; k < keysPerWriter; k++) {
                m.put(key(id, k), value(key(id, k), rounds + 1));
              }
            });
      }
      for (int rd = 0; rd < 2; rd++) {
        int id = rd;
        threads.start(
            "reader-" + rd,
            () -> {
              Random r = new Random(seed - id - 1);
              int[][] seen = new int[writers][keysPerWriter];
              MeganodeReader reader = new MeganodeReader(m.source());
              while (!done.get()) {
                int w = r.nextInt(writers);
                int k = r.nextInt(keysPerWriter);
                byte[] key = key(w, k);
                byte[] v = reader.get(key);
                if (v != null) {
                  int c = counterOf(key, v);
                  assertTrue(c >= seen[w][k], "counter of " + w + "/" + k + " went back");
                  seen[w][k] = c;
                  if (c == rounds + 1 && r.nextInt(50) == 0) {
                    boolean all = true;
                    for (int ww = 0; ww < writers && all; ww++) {
                      byte[] last = reader.get(key(ww, keysPerWriter - 1));
                      all =
                          last != null && counterOf(key(ww, keysPerWriter - 1), last) == rounds + 1;
                    }
                    if (all) {
                      done.set(true);
                    }
                  }
                }
                if (r.nextInt(20) == 0) {
                  byte[] prev = null;
                  for (Map.Entry<byte[], byte[]> e : reader.scan(key, null, 50).pairs()) {
                    assertTrue(
                        prev == null || Arrays.compareUnsigned(prev, e.getKey()) < 0, "scan order");
                    counterOf(e.getKey(), e.getValue());
                    prev = e.getKey();
                  }
                }
              }
            });
      }
    }
    TreeMap<byte[], byte[]> model = TreeModel.model();
    for (int w = 0; w < writers; w++) {
      for (int k = 0; k < keysPerWriter; k++) {
        model.put(key(w, k), value(key(w, k), rounds + 1));
      }
    }
    TreeModel.assertPairs(TreeModel.scan(model, null, null, Integer.MAX_VALUE), m.all(), "all");
    assertNull(MeganodeShape.check(m), "shape");
  }

  static byte[] key(int writer, int k) {
    return String.format(java.util.Locale.ROOT, "w%d-%05d", writer, k)
        .getBytes(StandardCharsets.UTF_8);
  }

  static byte[] value(byte[] key, int counter) {
    return (new String(key, StandardCharsets.UTF_8) + "=" + counter)
        .getBytes(StandardCharsets.UTF_8);
  }

  static int counterOf(byte[] key, byte[] value) {
    String v = new String(value, StandardCharsets.UTF_8);
    String prefix = new String(key, StandardCharsets.UTF_8) + "=";
    assertTrue(v.startsWith(prefix), "value " + v + " of key " + prefix);
    return Integer.parseInt(v.substring(prefix.length()));
  }

  @Test
  void badInputIsRejectedNamingTheLimit() {
    Meganode m = meganode(64);
    int maxKey = m.limits().maxKey();
    assertEquals(NODE / 8 - 22, maxKey);
    assertInvalid(() -> m.put(new byte[0], new byte[1]), "key: empty");
    assertInvalid(() -> m.get(new byte[0]), "key: empty");
    assertInvalid(() -> m.delete(null), "key: empty");
    assertInvalid(() -> m.put(new byte[maxKey + 1], new byte[1]), "expected: 1 to " + maxKey);
    m.put(new byte[maxKey], new byte[1]);
    assertInvalid(
        () -> m.put(new byte[] {1}, new byte[m.limits().maxValue() + 1]),
        "expected: 0 to " + m.limits().maxValue());
    assertInvalid(() -> m.scan(new byte[] {2}, new byte[] {1}, 10), "from > to");
    assertInvalid(() -> m.scan(null, null, 0), "limit: 0");
    assertInvalid(() -> m.scan(null, null, -1), "limit: -1");
    assertEquals(0, m.scan(new byte[] {1}, new byte[] {1}, 10).size());
  }

  @Test
  void aFullMeganodeFailsWithNoSpace() {
    Meganode m = meganode(8);
    TreeMap<byte[], byte[]> model = TreeModel.model();
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> {
              for (int i = 0; ; i++) {
                byte[] k = ("key-" + i).getBytes(StandardCharsets.UTF_8);
                m.put(k, k);
                model.put(k, k);
              }
            });
    assertEquals(ErrorCode.NO_SPACE, e.code());
    assertTrue(e.getMessage().contains("meganode full"), e.getMessage());
    // The failed put left nothing behind: no node locked (readers would spin), no entry.
    TreeModel.assertPairs(TreeModel.scan(model, null, null, Integer.MAX_VALUE), m.all(), "all");
    assertNull(MeganodeShape.check(m), "shape");
    byte[] first = model.firstKey();
    assertTrue(m.delete(first));
    assertNull(m.get(first));
  }

  static void assertInvalid(org.junit.jupiter.api.function.Executable call, String says) {
    FerriteException e = assertThrows(FerriteException.class, call);
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertTrue(e.getMessage().contains(says), e.getMessage() + " should say " + says);
  }
}
