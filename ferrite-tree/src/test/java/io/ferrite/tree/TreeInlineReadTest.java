package io.ferrite.tree;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.fabric.testing.TestThreads;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Server-side gets and scans, which the tree service answers inline on the thread that received
 * them (and across the meganodes of its server), multiGets too, while other clients overwrite the
 * same keys and a loader inserts keys between them so that nodes and meganodes split throughout. An
 * inline read that used a torn node copy, or a stale one after a split, shows here as a key that is
 * always present answered absent or missing from a scan, a value of another key, a version that
 * goes back or was never written, or scan keys out of order.
 *
 * <p>Keys {@code key-%06d}: every fourth one is <i>stable</i> (put before the run, then only
 * overwritten, its value the key and a version that only grows); the others are loaded during the
 * run in a scattered order. Scans ask for at most 200 pairs, within the inline bound.
 */
@ExtendWith(SeedExtension.class)
class TreeInlineReadTest {
  static final int STABLE = 400;
  static final int KEYS = STABLE * 4;
  static final int READERS = 2;
  static final int WRITERS = 2;

  @TempDir Path dir;
  @AutoClose TreeCluster cluster;

  static byte[] key(int j) {
    return String.format(Locale.ROOT, "key-%06d", j).getBytes(StandardCharsets.UTF_8);
  }

  static int index(byte[] key) {
    return Integer.parseInt(new String(key, 4, 6, StandardCharsets.UTF_8));
  }

  static byte[] value(byte[] key, long version) {
    return ByteBuffer.allocate(key.length + 8).put(key).putLong(version).array();
  }

  /** The version of a value, after checking that it is the value of {@code key}. */
  static long version(byte[] key, byte[] value) {
    assertEquals(key.length + 8, value.length, "value length of " + str(key));
    assertArrayEquals(key, Arrays.copyOf(value, key.length), "the value of its own key");
    return ByteBuffer.wrap(value, key.length, 8).getLong();
  }

  static String str(byte[] key) {
    return new String(key, StandardCharsets.UTF_8);
  }

  @ParameterizedTest
  @ValueSource(strings = {"local", "tcp"})
  void inlineReadsSeeWholeNodesWhileWritesSplitThem(String fabric, TestSeed seed) throws Exception {
    boolean local = fabric.equals("local");
    cluster = new TreeCluster(dir, 1, !local);
    Tree setup = new TreeClient(local ? cluster.client() : cluster.client(fabric)).create("inl");
    for (int i = 0; i < STABLE; i++) {
      setup.put(key(i * 4), value(key(i * 4), 0));
    }
    // started[i]: the highest version of stable key i whose put has begun (reads may see it).
    AtomicLongArray started = new AtomicLongArray(STABLE);
    // loaded[j] = 1 once the put of loaded key j returned (every later read must see it).
    AtomicIntegerArray loaded = new AtomicIntegerArray(KEYS);
    AtomicBoolean done = new AtomicBoolean();
    long[] reads = new long[READERS];
    // The loader starts once every reader has: with splits no longer blocking the whole meganode
    // it could load every key (and end the run) before a reader thread was scheduled.
    java.util.concurrent.CountDownLatch reading = new java.util.concurrent.CountDownLatch(READERS);
    try (TestThreads threads = new TestThreads(() -> done.set(true))) {
      Tree loader = new TreeClient(local ? cluster.client() : cluster.client(fabric)).open("inl");
      threads.start(
          "tree-loader",
          () -> {
            try {
              assertTrue(reading.await(60, java.util.concurrent.TimeUnit.SECONDS), "readers");
              int others = KEYS - STABLE;
              for (int n = 0; n < others && !done.get(); n++) {
                int o = (int) ((n * 7919L) % others);
                int j = o / 3 * 4 + 1 + o % 3;
                loader.put(key(j), value(key(j), 0));
                loaded.set(j, 1);
              }
            } finally {
              done.set(true);
            }
          });
      for (int t = 0; t < WRITERS; t++) {
        Tree h = new TreeClient(local ? cluster.client() : cluster.client(fabric)).open("inl");
        Random r = new Random(seed.value() * 17 + t);
        int writer = t;
        threads.start(
            "tree-overwriter-" + t,
            () -> {
              while (!done.get()) {
                // Each stable key has one writer: with two, a put of version 5 may be applied
                // after one of version 6 (both started, 6 answered first), and a reader would
                // rightly see the version go back.
                int i = writer + WRITERS * r.nextInt(STABLE / WRITERS);
                long v = started.incrementAndGet(i);
                h.put(key(i * 4), value(key(i * 4), v));
              }
            });
      }
      for (int t = 0; t < READERS; t++) {
        Tree h = new TreeClient(local ? cluster.client() : cluster.client(fabric)).open("inl");
        Random r = new Random(seed.value() * 31 + t);
        int reader = t;
        threads.start(
            "tree-inline-reader-" + t,
            () -> {
              long[] seen = new long[STABLE];
              reading.countDown();
              while (!done.get()) {
                reads[reader]++;
                int op = r.nextInt(10);
                if (op == 0) {
                  // Up to 40 keys: up to 32 are answered inline, more by a service thread.
                  List<Integer> is = new java.util.ArrayList<>();
                  List<byte[]> ks = new java.util.ArrayList<>();
                  for (int n = 1 + r.nextInt(40); n > 0; n--) {
                    int i = r.nextInt(STABLE);
                    is.add(i);
                    ks.add(key(i * 4));
                  }
                  List<byte[]> got = h.multiGet(ks, Tree.Path.SERVER);
                  assertEquals(ks.size(), got.size(), "multiGet answers");
                  for (int x = 0; x < ks.size(); x++) {
                    int i = is.get(x);
                    byte[] k = ks.get(x);
                    assertNotNull(got.get(x), "stable key " + str(k) + " absent in a multiGet");
                    long v = version(k, got.get(x));
                    assertTrue(v >= seen[i], str(k) + " went back: " + v + " < " + seen[i]);
                    assertTrue(v <= started.get(i), str(k) + " never written: " + v);
                    seen[i] = v;
                  }
                } else if (op < 7) {
                  int i = r.nextInt(STABLE);
                  byte[] k = key(i * 4);
                  byte[] got = h.get(k, Tree.Path.SERVER);
                  assertNotNull(got, "stable key " + str(k) + " answered absent");
                  long v = version(k, got);
                  assertTrue(v >= seen[i], str(k) + " went back: " + v + " < " + seen[i]);
                  assertTrue(v <= started.get(i), str(k) + " never written: " + v);
                  seen[i] = v;
                } else {
                  scan(h, r.nextInt(KEYS), 1 + r.nextInt(200), started, loaded);
                }
              }
            });
      }
    }
    for (long n : reads) {
      assertTrue(n > 0, "every reader read: " + Arrays.toString(reads));
    }
    long[] stats = setup.stats();
    assertTrue(stats[2] > 0, "meganodes split during the run: " + Arrays.toString(stats));
    List<Map.Entry<byte[], byte[]>> all = setup.scan(null, null, KEYS + 1, Tree.Path.CLIENT);
    assertEquals(KEYS, all.size(), "every key after the run");
    System.out.printf(
        Locale.ROOT,
        "tree inline reads (%s): %s reads; meganodes %d, levels %d, splits %d%n",
        fabric,
        Arrays.toString(reads),
        stats[0],
        stats[1],
        stats[2]);
  }

  /**
   * A scan from key {@code from} of up to {@code limit} pairs: in order, each the value of its key;
   * every stable key and every key loaded before it began, from {@code from} up to the last key it
   * returned (or to the end when it returned fewer than asked), present.
   */
  static void scan(
      Tree h, int from, int limit, AtomicLongArray started, AtomicIntegerArray loaded) {
    int[] before = new int[KEYS];
    for (int j = 0; j < KEYS; j++) {
      before[j] = j % 4 == 0 ? 1 : loaded.get(j);
    }
    List<Map.Entry<byte[], byte[]>> got = h.scan(key(from), null, limit, Tree.Path.SERVER);
    assertTrue(got.size() <= limit, "scan returned " + got.size() + " > limit " + limit);
    int expect = from;
    for (Map.Entry<byte[], byte[]> e : got) {
      int j = index(e.getKey());
      assertTrue(j >= expect, "scan out of order or repeated at " + str(e.getKey()));
      for (int m = expect; m < j; m++) {
        assertEquals(0, before[m], "scan from " + from + " skipped " + str(key(m)));
      }
      long v = version(e.getKey(), e.getValue());
      if (j % 4 == 0) {
        assertTrue(v <= started.get(j / 4), str(e.getKey()) + " never written: " + v);
      }
      expect = j + 1;
    }
    if (got.size() < limit) {
      for (int m = expect; m < KEYS; m++) {
        assertEquals(0, before[m], "scan from " + from + " ended before " + str(key(m)));
      }
    }
  }
}
