package io.ferrite.kv;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.Counters;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.OpKind;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.client.FerriteClient;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The kv face end to end over the local fabric: operations, one-sidedness, cuckoo, limits. */
@ExtendWith(SeedExtension.class)
class KvTableTest {
  static final TableOptions SMALL =
      TableOptions.DEFAULTS
          .withShards(4)
          .withSlotsPerShard(1024)
          .withExtents(64 << 10, 4)
          .withLimits(1024, 16 << 10);

  @TempDir Path dir;
  KvCluster cluster;
  FerriteClient ferrite;
  KvClient kv;

  @BeforeEach
  void start() throws Exception {
    cluster = new KvCluster(dir, 2);
    ferrite = cluster.client();
    kv = new KvClient(ferrite);
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  static byte[] b(String s) {
    return s.getBytes(UTF_8);
  }

  @Test
  void putGetPutIfAbsentCompareAndSetDelete() {
    KvTable t = kv.createTable("basic", SMALL);
    assertNull(t.get(b("a")));
    assertFalse(t.contains(b("a")));
    assertTrue(t.put(b("a"), b("1")), "new key");
    assertArrayEquals(b("1"), t.get(b("a")));
    assertFalse(t.put(b("a"), b("22")), "replaced");
    assertArrayEquals(b("22"), t.get(b("a")));
    assertFalse(t.putIfAbsent(b("a"), b("x")));
    assertTrue(t.putIfAbsent(b("b"), b("")), "empty value is a value");
    assertArrayEquals(new byte[0], t.get(b("b")));
    assertTrue(t.contains(b("b")));
    assertFalse(t.compareAndSet(b("a"), b("1"), b("3")));
    assertTrue(t.compareAndSet(b("a"), b("22"), b("3")));
    assertFalse(t.compareAndSet(b("missing"), b("22"), b("3")));
    assertArrayEquals(b("3"), t.get(b("a")));
    assertTrue(t.delete(b("a")));
    assertFalse(t.delete(b("a")), "deleting a missing key is false, not an error");
    assertNull(t.get(b("a")));
    List<byte[]> got = t.multiGet(List.of(b("a"), b("b"), b("c")));
    assertNull(got.get(0));
    assertArrayEquals(new byte[0], got.get(1));
    assertNull(got.get(2));
  }

  @Test
  void binaryKeysWithZeroBytesAreDistinct() {
    KvTable t = kv.createTable("binary", SMALL);
    byte[] k1 = {0};
    byte[] k2 = {0, 0};
    byte[] k3 = {1, 0, 2};
    byte[] k4 = {1, 0, 3};
    t.put(k1, new byte[] {1});
    t.put(k2, new byte[] {2});
    t.put(k3, new byte[] {0, 0, 0});
    t.put(k4, new byte[] {4});
    assertArrayEquals(new byte[] {1}, t.get(k1));
    assertArrayEquals(new byte[] {2}, t.get(k2));
    assertArrayEquals(new byte[] {0, 0, 0}, t.get(k3));
    assertArrayEquals(new byte[] {4}, t.get(k4));
    assertNull(t.get(new byte[] {0, 0, 0}));
  }

  @Test
  void badInputGetsTypedErrors() {
    KvTable t = kv.createTable("bad", SMALL.withLimits(16, 100));
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        assertThrows(FerriteException.class, () -> t.get(new byte[0])).code());
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        assertThrows(FerriteException.class, () -> t.put(new byte[0], b("v"))).code());
    assertEquals(
        ErrorCode.TOO_LARGE,
        assertThrows(FerriteException.class, () -> t.put(new byte[17], b("v"))).code());
    assertEquals(
        ErrorCode.TOO_LARGE,
        assertThrows(FerriteException.class, () -> t.put(b("k"), new byte[101])).code());
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        assertThrows(FerriteException.class, () -> t.put(null, b("v"))).code());
    t.put(new byte[16], new byte[100]);
    assertArrayEquals(new byte[100], t.get(new byte[16]));
    assertFalse(t.delete(b("never-there")));
    assertEquals(
        ErrorCode.NOT_FOUND, assertThrows(FerriteException.class, () -> kv.table("nope")).code());
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        assertThrows(FerriteException.class, () -> kv.createTable("has space", SMALL)).code());
    assertEquals(
        ErrorCode.INVALID_ARGUMENT,
        assertThrows(
                FerriteException.class,
                () -> kv.createTable("tight", SMALL.withExtents(4096, 2).withLimits(64, 4000)))
            .code(),
        "the largest extent, rounded up to its class, must fit in a region");
    KvTable big = kv.createTable("big-values", SMALL.withExtents(8192, 2).withLimits(64, 5000));
    big.put(new byte[64], new byte[5000]);
    assertArrayEquals(new byte[5000], big.get(new byte[64]));
  }

  @Test
  void getsAndMultiGetsAreOneSidedOnly(Random random) {
    KvTable t = kv.createTable("onesided", SMALL);
    List<byte[]> keys = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      byte[] k = b("key-" + i);
      keys.add(k);
      t.put(k, b("value-" + i));
    }
    List<Counters.Snapshot> before = new ArrayList<>();
    for (int s : servers(t)) {
      before.add(ferrite.connection(s).counters().snapshot());
    }
    for (int i = 0; i < 1000; i++) {
      int k = random.nextInt(400);
      byte[] v = t.get(b("key-" + k));
      if (k < 300) {
        assertArrayEquals(b("value-" + k), v);
      } else {
        assertNull(v);
      }
    }
    assertTrue(t.contains(keys.get(0)));
    List<byte[]> got = t.multiGet(keys.subList(0, 100));
    for (int i = 0; i < 100; i++) {
      assertArrayEquals(b("value-" + i), got.get(i));
    }
    long rpcs = 0;
    long reads = 0;
    int i = 0;
    for (int s : servers(t)) {
      Counters.Snapshot d = ferrite.connection(s).counters().snapshot().minus(before.get(i++));
      rpcs += d.ops(OpKind.RPC);
      reads += d.ops(OpKind.READ);
    }
    assertEquals(0, rpcs, "gets, contains and multiGet make no RPC");
    assertTrue(reads >= 1100, "reads: " + reads);
  }

  private static List<Integer> servers(KvTable t) {
    List<Integer> out = new ArrayList<>();
    for (int s : t.info().servers()) {
      if (!out.contains(s)) {
        out.add(s);
      }
    }
    return out;
  }

  @Test
  void cuckooFillsTo90PercentAndNeverHidesAKeyWhileKeysMove() throws Exception {
    TableOptions one = SMALL.withShards(1).withSlotsPerShard(2000);
    KvTable t = kv.createTable("cuckoo", one);
    KvTable reader = kv.table("cuckoo");
    int n = 1800;
    AtomicBoolean done = new AtomicBoolean();
    AtomicReference<String> lost = new AtomicReference<>();
    int[] inserted = new int[1];
    Thread r =
        new Thread(
            () -> {
              Random rnd = new Random(1);
              while (!done.get() && lost.get() == null) {
                int upTo;
                synchronized (inserted) {
                  upTo = inserted[0];
                }
                if (upTo == 0) {
                  continue;
                }
                int k = rnd.nextInt(upTo);
                if (reader.get(b("k" + k)) == null) {
                  lost.set("k" + k + " missing while " + upTo + " were inserted");
                }
              }
            },
            "kv-test-reader");
    r.start();
    try {
      for (int i = 0; i < n; i++) {
        t.put(b("k" + i), b("v" + i));
        synchronized (inserted) {
          inserted[0] = i + 1;
        }
      }
    } finally {
      done.set(true);
      r.join();
    }
    assertNull(lost.get());
    for (int i = 0; i < n; i++) {
      assertArrayEquals(b("v" + i), t.get(b("k" + i)), "k" + i);
    }
    ShardStats s = t.stats().get(0);
    assertEquals(n, s.count());
    assertTrue(s.moves() > 0, "90% occupancy needs displacements: " + s);
    assertTrue(t.lookupStats().maxProbes() <= 3);
  }

  @Test
  void aFullTableIsAClearErrorAndLosesNoKey() {
    KvTable t = kv.createTable("full", SMALL.withShards(1).withSlotsPerShard(64));
    List<Integer> in = new ArrayList<>();
    FerriteException full = null;
    for (int i = 0; i < 200 && full == null; i++) {
      try {
        t.put(b("k" + i), b("v" + i));
        in.add(i);
      } catch (FerriteException e) {
        full = e;
      }
    }
    assertTrue(full != null, "64 slots cannot hold 200 keys");
    assertEquals(ErrorCode.NO_SPACE, full.code());
    assertTrue(full.getMessage().contains("full"), full.getMessage());
    assertTrue(in.size() >= 48, "3-way cuckoo reaches > 75%: " + in.size());
    for (int i : in) {
      assertArrayEquals(b("v" + i), t.get(b("k" + i)), "k" + i);
    }
    assertTrue(t.delete(b("k0")));
    assertTrue(t.put(b("k0"), b("again")));
  }

  @Test
  void extentGrowthBumpsTheEpochAndOldHandlesFollow() {
    TableOptions o = SMALL.withShards(1).withExtents(8192, 3).withLimits(64, 1000);
    KvTable t = kv.createTable("grow", o);
    KvTable stale = kv.table("grow");
    stale.get(b("x")); // caches the layout with one extent region
    int stored = 0;
    FerriteException full = null;
    for (int i = 0; i < 100 && full == null; i++) {
      try {
        t.put(b("k" + i), new byte[900]);
        stored++;
      } catch (FerriteException e) {
        full = e;
      }
    }
    assertEquals(ErrorCode.NO_SPACE, full.code());
    assertTrue(full.getMessage().contains("extent area full"), full.getMessage());
    ShardStats s = t.stats().get(0);
    assertEquals(3, s.extentRegions());
    assertNotEquals(1, s.epoch());
    for (int i = 0; i < stored; i++) {
      assertArrayEquals(new byte[900], stale.get(b("k" + i)));
    }
    assertTrue(stale.lookupStats().layoutFetches() >= 1, "the stale handle refetched its layout");
    // Freed extents are reused: delete and put again fit.
    assertTrue(t.delete(b("k0")));
    assertTrue(t.put(b("k0"), new byte[900]));
  }

  @Test
  void aGetRacingADeleteSeesTheValueOrNothing() throws Exception {
    KvTable t = kv.createTable("race", SMALL);
    KvTable r = kv.table("race");
    byte[] key = b("contended");
    byte[] value = new byte[200];
    java.util.Arrays.fill(value, (byte) 7);
    AtomicBoolean done = new AtomicBoolean();
    Thread w =
        new Thread(
            () -> {
              while (!done.get()) {
                t.put(key, value);
                t.delete(key);
              }
            },
            "kv-test-writer");
    w.start();
    int seen = 0;
    try {
      for (int i = 0; i < 3000; i++) {
        byte[] v = r.get(key);
        if (v != null) {
          assertArrayEquals(value, v);
          seen++;
        }
      }
    } finally {
      done.set(true);
      w.join();
    }
    assertTrue(seen >= 0);
  }

  @Test
  void theDirectoryCreatesFindsListsAndDrops() {
    KvTable a = kv.createTable("dir-a", SMALL);
    KvTable again = kv.createTable("dir-a", SMALL);
    assertEquals(a.info().tableId(), again.info().tableId());
    assertEquals(
        ErrorCode.CONFLICT,
        assertThrows(FerriteException.class, () -> kv.createTable("dir-a", SMALL.withShards(2)))
            .code());
    kv.createTable("dir-b", SMALL);
    assertEquals(List.of("dir-a", "dir-b"), kv.tables().stream().map(TableInfo::name).toList());
    a.put(b("k"), b("v"));
    kv.dropTable("dir-a");
    assertEquals(
        ErrorCode.NOT_FOUND, assertThrows(FerriteException.class, () -> kv.table("dir-a")).code());
    KvTable fresh = kv.createTable("dir-a", SMALL);
    assertNotEquals(a.info().tableId(), fresh.info().tableId());
    assertNull(fresh.get(b("k")));
  }
}
