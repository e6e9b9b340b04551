package io.ferrite.kv;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Extent hints ({@link ExtentHints}) over real tcp, where they are on by default: a get of a key
 * read before reads its extent alone; a stale, forged or impossible hint never changes an answer,
 * nor does a hint into a dropped table; readers racing writers of values of changing sizes read
 * only values that were written, never an older one after a newer one.
 */
@ExtendWith(SeedExtension.class)
class ExtentHintsTest {
  @TempDir Path dir;
  KvCluster cluster;

  @BeforeEach
  void start() throws Exception {
    cluster = new KvCluster(dir, 1, true);
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  static TableOptions options(TableOptions.Layout layout) {
    return TableOptions.DEFAULTS
        .withLayout(layout)
        .withShards(2)
        .withSlotsPerShard(256)
        .withExtents(64 << 10, 4)
        .withLimits(64, 4096);
  }

  /** The table, through a handle whose hinted lookups never read the table (exact counts). */
  KvTable create(TableOptions.Layout layout) {
    KvTable t = new KvClient(cluster.client("tcp")).createTable("hints", options(layout));
    t.neverCheckTheTable();
    return t;
  }

  /** A value that names its key and version and whose every byte follows from them. */
  static byte[] value(int key, long version) {
    byte[] v = new byte[100 + (int) (version * 37 % 2000)];
    ByteBuffer b = ByteBuffer.wrap(v);
    b.putInt(key).putLong(version);
    Random r = new Random(key * 1_000_003L + version);
    for (int i = 12; i < v.length; i++) {
      v[i] = (byte) r.nextInt();
    }
    return v;
  }

  static byte[] key(int k) {
    return ("hinted-key-" + k).getBytes(UTF_8);
  }

  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void aSecondGetReadsTheExtentAloneAndAStaleHintCostsOnlyARead(TableOptions.Layout layout) {
    KvTable t = create(layout);
    LookupStats s = t.lookupStats();
    byte[] k = key(1);
    byte[] v1 = value(1, 1);
    t.put(k, v1);
    assertArrayEquals(v1, t.get(k));
    assertEquals(0, s.hintedReads(), "a first get has no hint");
    assertNotNull(t.extentHints().lookup(KeyHash.of(k)), "the get left a hint");
    assertArrayEquals(v1, t.get(k));
    assertEquals(1, s.hintedReads());
    assertEquals(1, s.hintHits());

    byte[] v2 = value(1, 2);
    t.put(k, v2); // a new extent: the hint names the old one
    assertArrayEquals(v2, t.get(k));
    assertEquals(2, s.hintedReads());
    assertEquals(1, s.hintHits(), "a stale hint is read but not used");
    assertArrayEquals(v2, t.get(k));
    assertEquals(2, s.hintHits(), "the hint was replaced by the pointer the get followed");
    assertArrayEquals(v2, t.multiGet(List.of(k)).get(0));
    assertEquals(3, s.hintHits(), "multiGet reads the hinted extent in its first round");

    t.delete(k); // the extent is no longer current: the hint no longer answers
    assertNull(t.get(k));
    assertEquals(5, s.hintedReads());
    assertEquals(3, s.hintHits(), "the hint of a deleted key is read but not used");
    assertNull(t.extentHints().lookup(KeyHash.of(k)), "a hint that failed is forgotten");
    assertNull(t.multiGet(List.of(k)).get(0));

    t.put(k, v1); // the same value again: a new extent (perhaps the same bytes), a new hint
    assertArrayEquals(v1, t.get(k));
    assertArrayEquals(v1, t.get(k));
    assertEquals(4, s.hintHits());
    t.put(k, v2);
    assertArrayEquals(v2, t.multiGet(List.of(k)).get(0), "a stale hint in a multiGet");
    assertArrayEquals(v2, t.multiGet(List.of(k)).get(0));
    assertEquals(5, s.hintHits());
  }

  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void aForgedOrImpossibleHintChangesNoAnswer(TableOptions.Layout layout) {
    KvTable t = create(layout);
    ExtentHints hints = t.extentHints();
    LookupStats s = t.lookupStats();
    byte[] a = key(1);
    byte[] b = key(2);
    t.put(a, value(1, 1));
    t.put(b, value(2, 1));
    t.get(a);
    t.get(b);
    long ha = KeyHash.of(a);
    ExtentHints.Hint ofA = hints.lookup(ha);
    ExtentHints.Hint ofB = hints.lookup(KeyHash.of(b));
    assertNotNull(ofA);
    assertNotNull(ofB);

    // a's hint names b's extent (a real, whole extent of another key): read, never used.
    hints.remember(ha, ofB.region(), ofB.offset(), ofB.length(), ofB.checksum());
    long hits = s.hintHits();
    long reads = s.hintedReads();
    assertArrayEquals(value(1, 1), t.get(a));
    assertEquals(reads + 1, s.hintedReads());
    assertEquals(hits, s.hintHits());
    hints.remember(ha, ofB.region(), ofB.offset(), ofB.length(), ofB.checksum());
    assertArrayEquals(value(1, 1), t.multiGet(List.of(a, b)).get(0));

    // a's place with another checksum, and a's place one byte on: read, never used.
    hints.remember(ha, ofA.region(), ofA.offset(), ofA.length(), ofA.checksum() ^ 1);
    assertArrayEquals(value(1, 1), t.get(a));
    hints.remember(ha, ofA.region(), ofA.offset() + 1, ofA.length(), ofA.checksum());
    assertArrayEquals(value(1, 1), t.get(a));

    // Impossible hints are not even read: an unknown region, past the region's end, a bad place.
    reads = s.hintedReads();
    hints.remember(ha, 99, ofA.offset(), ofA.length(), ofA.checksum());
    assertArrayEquals(value(1, 1), t.get(a));
    hints.remember(ha, ofA.region(), -16, ofA.length(), ofA.checksum());
    assertArrayEquals(value(1, 1), t.get(a));
    hints.remember(ha, ofA.region(), ofA.offset(), -1, ofA.checksum());
    assertArrayEquals(value(1, 1), t.multiGet(List.of(a)).get(0));
    assertEquals(reads, s.hintedReads(), "impossible hints are not read");
    assertEquals(value(2, 1).length, t.get(b).length);
  }

  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void aHintIntoADroppedTableAnswersNothing(TableOptions.Layout layout) {
    KvTable t = create(layout);
    byte[] k = key(1);
    t.put(k, value(1, 1));
    t.get(k);
    assertNotNull(t.extentHints().lookup(KeyHash.of(k)));
    new KvClient(cluster.adminClient("tcp")).dropTable("hints");
    // The dropped shards' extents are no longer current: the hinted copy fails, the poisoned table
    // sends the handle to the master, which no longer knows the table.
    FerriteException e = assertThrows(FerriteException.class, () -> t.get(k));
    assertEquals(ErrorCode.NOT_FOUND, e.code(), e.getMessage());
    assertEquals(0, t.lookupStats().hintHits());
  }

  @ParameterizedTest
  @EnumSource(TableOptions.Layout.class)
  void hintedReadersRacingWritersReadOnlyWrittenValuesInOrder(
      TableOptions.Layout layout, TestSeed seed) throws Exception {
    final int keys = 8;
    final int writers = 2;
    final int readers = 3;
    final int writes = 400;
    final int reads = 1500;
    KvTable setup = create(layout);
    for (int k = 0; k < keys; k++) {
      setup.put(key(k), value(k, 0));
    }
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    List<KvTable> readerHandles = new ArrayList<>();
    for (int w = 0; w < writers; w++) {
      KvTable h = new KvClient(cluster.client("tcp")).table("hints");
      Random r = new Random(seed.value() * 7 + w);
      int writer = w;
      threads.add(
          new Thread(
              () -> {
                try {
                  long[] version = new long[keys];
                  for (int i = 0; i < writes; i++) {
                    int k = writer + writers * r.nextInt(keys / writers); // keys of this writer
                    if (r.nextInt(10) == 0) {
                      h.delete(key(k));
                    } else {
                      h.put(key(k), value(k, ++version[k]));
                    }
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "kv-hints-writer-" + w));
    }
    for (int t = 0; t < readers; t++) {
      KvTable h = new KvClient(cluster.client("tcp")).table("hints");
      readerHandles.add(h);
      Random r = new Random(seed.value() * 13 + t);
      threads.add(
          new Thread(
              () -> {
                try {
                  long[] seen = new long[keys];
                  for (int i = 0; i < reads; i++) {
                    int k = r.nextInt(keys);
                    List<byte[]> got;
                    List<Integer> ks = new ArrayList<>();
                    ks.add(k);
                    if (r.nextBoolean()) {
                      got = List.of(nullable(h.get(key(k))));
                    } else {
                      ks.add((k + 1 + r.nextInt(keys - 1)) % keys);
                      got = h.multiGet(List.of(key(ks.get(0)), key(ks.get(1))));
                    }
                    for (int j = 0; j < ks.size(); j++) {
                      byte[] v = got.get(j);
                      if (v == null || v.length == 0) {
                        continue; // deleted at that instant
                      }
                      int kj = ks.get(j);
                      long version = ByteBuffer.wrap(v).getLong(4);
                      assertArrayEquals(value(kj, version), v, "key " + kj + ": a wrong value");
                      assertTrue(
                          version >= seen[kj],
                          "key " + kj + ": version " + version + " after " + seen[kj]);
                      seen[kj] = version;
                    }
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "kv-hints-reader-" + t));
    }
    for (Thread t : threads) {
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }
    if (failure.get() != null) {
      throw new AssertionError("a client failed", failure.get());
    }
    long hinted = 0;
    long hits = 0;
    for (KvTable h : readerHandles) {
      hinted += h.lookupStats().hintedReads();
      hits += h.lookupStats().hintHits();
    }
    assertTrue(hits > 0 && hinted > hits, "hinted reads: " + hinted + ", used: " + hits);
  }

  /** An empty array for null, so that List.of takes it (an absent key, as multiGet's null). */
  private static byte[] nullable(byte[] v) {
    return v == null ? new byte[0] : v;
  }
}
