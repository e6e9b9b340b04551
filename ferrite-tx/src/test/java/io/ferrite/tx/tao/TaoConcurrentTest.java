package io.ferrite.tx.tao;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.fabric.testing.TestThreads;
import io.ferrite.tx.FatPointer;
import io.ferrite.tx.TxClient;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Concurrent writers (assoc_add, obj_update) and lock-free readers, over the local fabric tearing
 * every one-sided read and over shm (real copies racing real writes). Every read must be consistent
 * with some serial order of the committed writes:
 *
 * <ul>
 *   <li>a reader's assoc_count of a list never decreases (only adds happen);
 *   <li>an assoc_range from pos 0 is the newest {@code min(limit, n)} entries of the list as it was
 *       when it held {@code n} entries: a contiguous run of the final list starting at the entry
 *       that was newest then, each entry intact (its data is derived from its time);
 *   <li>obj_get returns a value some committed obj_update wrote (or the initial one), intact, and a
 *       reader never sees an object's values go backwards (one writer per object, increasing).
 * </ul>
 */
@ExtendWith(SeedExtension.class)
class TaoConcurrentTest {
  static final int LISTS = 4;
  static final int WRITERS = 2;
  static final int READERS = 2;
  static final int WRITES = 120;

  @TempDir Path dir;
  TaoCluster cluster;

  @AfterEach
  void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  Tao tao() {
    return new Tao(new TxClient(cluster.client()), 200, 40, TaoTest.CHUNK);
  }

  /** An association's time: writer and sequence number. Its data is the time, twice. */
  static long time(int writer, int seq) {
    return (long) writer << 32 | seq;
  }

  static byte[] assocData(long time) {
    return ByteBuffer.allocate(16)
        .order(ByteOrder.LITTLE_ENDIAN)
        .putLong(time)
        .putLong(~time)
        .array();
  }

  /** An object's value: its sequence number in every byte of 100 bytes. */
  static byte[] value(int seq) {
    byte[] v = new byte[100];
    Arrays.fill(v, (byte) seq);
    return v;
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void everyReadIsConsistentWithSomeSerialOrder(boolean real, TestSeed seed) throws Exception {
    cluster = new TaoCluster(dir, 2, real);
    Tao setup = tao();
    Tao setup2 = tao(); // its own first region: the second server
    List<FatPointer> lists = new ArrayList<>();
    for (int i = 0; i < LISTS; i++) {
      lists.add((i % 2 == 0 ? setup : setup2).objAdd(1, new byte[8]));
    }
    List<FatPointer> values = new ArrayList<>();
    for (int w = 0; w < WRITERS; w++) {
      values.add((w % 2 == 0 ? setup : setup2).objAdd(2, value(0)));
    }
    if (!real) {
      cluster.network.faults().tearWait(Duration.ofMillis(1));
      cluster.network.faults().tearReads(true);
    }
    Set<Integer> committed = ConcurrentHashMap.newKeySet(); // writer << 16 | seq of obj_update
    ConcurrentLinkedQueue<long[]> adds = new ConcurrentLinkedQueue<>(); // {list, time}
    List<ConcurrentLinkedQueue<List<Long>>> ranges = new ArrayList<>(); // per list: times seen
    List<ConcurrentLinkedQueue<Integer>> seen = new ArrayList<>(); // per value object
    for (int i = 0; i < LISTS; i++) {
      ranges.add(new ConcurrentLinkedQueue<>());
    }
    for (int w = 0; w < WRITERS; w++) {
      seen.add(new ConcurrentLinkedQueue<>());
    }
    AtomicBoolean done = new AtomicBoolean();
    CountDownLatch writersDone = new CountDownLatch(WRITERS);
    try (TestThreads bg = new TestThreads(() -> done.set(true))) {
      for (int w = 0; w < WRITERS; w++) {
        int writer = w;
        Random random = new Random(seed.value() + w);
        Tao tao = tao();
        bg.start(
            "tao-writer-" + w,
            () -> {
              try {
                for (int seq = 1; seq <= WRITES && !done.get(); seq++) {
                  if (random.nextInt(4) == 0) {
                    tao.objUpdate(values.get(writer), value(seq));
                    committed.add(writer << 16 | seq);
                  } else {
                    int l = random.nextInt(LISTS);
                    long t = time(writer, seq);
                    tao.assocAdd(lists.get(l), 0, values.get(writer), t, assocData(t));
                    adds.add(new long[] {l, t});
                  }
                }
              } finally {
                writersDone.countDown();
              }
            });
      }
      for (int r = 0; r < READERS; r++) {
        Random random = new Random(seed.value() + 100 + r);
        Tao tao = tao();
        bg.start(
            "tao-reader-" + r,
            () -> {
              long[] lastCount = new long[LISTS];
              int[] lastValue = new int[WRITERS];
              while (!done.get()) {
                int l = random.nextInt(LISTS);
                long c = tao.assocCount(lists.get(l), 0);
                assertTrue(c >= lastCount[l], "assoc_count went back: " + lastCount[l] + " → " + c);
                lastCount[l] = c;
                int limit = 1 + random.nextInt(25);
                List<Tao.Assoc> range = tao.assocRange(lists.get(l), 0, 0, limit);
                assertTrue(
                    range.size() >= Math.min(limit, c),
                    "a range of " + range.size() + " after a count of " + c);
                List<Long> times = new ArrayList<>();
                times.add((long) limit);
                for (Tao.Assoc a : range) {
                  assertEquals(
                      Arrays.toString(assocData(a.time())),
                      Arrays.toString(a.data()),
                      "an association's data is intact");
                  times.add(a.time());
                }
                ranges.get(l).add(times);
                int w = random.nextInt(WRITERS);
                byte[] v = tao.objGet(values.get(w)).data();
                for (byte b : v) {
                  assertEquals(v[0], b, "obj_get mixes two values");
                }
                int seq = Byte.toUnsignedInt(v[0]);
                assertTrue(seq >= lastValue[w], "obj_get went back: " + lastValue[w] + " → " + seq);
                lastValue[w] = seq;
                seen.get(w).add(seq);
              }
            });
      }
      while (!writersDone.await(50, TimeUnit.MILLISECONDS) && !done.get()) {
        Thread.onSpinWait();
      }
      done.set(true);
    }
    // The final lists, and every range read against them.
    Tao check = tao();
    Map<Integer, List<Long>> added = new HashMap<>();
    for (long[] a : adds) {
      added.computeIfAbsent((int) a[0], k -> new ArrayList<>()).add(a[1]);
    }
    int checked = 0;
    for (int l = 0; l < LISTS; l++) {
      List<Long> all = new ArrayList<>();
      for (Tao.Assoc a : check.assocRange(lists.get(l), 0, 0, 100_000)) {
        all.add(a.time());
      }
      assertEquals(all.size(), check.assocCount(lists.get(l), 0));
      assertEquals(
          new HashSet<>(added.getOrDefault(l, List.of())), new HashSet<>(all), "list " + l);
      assertEquals(all.size(), new HashSet<>(all).size(), "no association twice");
      for (List<Long> read : ranges.get(l)) {
        int limit = read.get(0).intValue();
        List<Long> r = read.subList(1, read.size());
        if (r.isEmpty()) {
          continue;
        }
        int at = all.indexOf(r.get(0));
        assertTrue(at >= 0, "a range read an association never added: " + r.get(0));
        assertEquals(
            all.subList(at, Math.min(all.size(), at + r.size())),
            r,
            "a range is a contiguous run of the list from the then newest entry");
        assertEquals(
            Math.min(limit, all.size() - at),
            r.size(),
            "a range holds min(limit, the entries then in the list)");
        checked++;
      }
    }
    for (int w = 0; w < WRITERS; w++) {
      for (int seq : seen.get(w)) {
        assertTrue(
            seq == 0 || committed.contains(w << 16 | seq), "obj_get read " + seq + " uncommitted");
      }
    }
    assertTrue(checked > 0, "ranges checked");
  }
}
