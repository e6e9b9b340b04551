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
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.AutoClose;
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
 *   <li>obj_get returns a value some committed obj_update wrote (or the initial one), intact, a
 *       reader never sees an object's values go backwards (one writer per object, increasing), nor
 *       one older than the value committed before its read began.
 * </ul>
 */
@ExtendWith(SeedExtension.class)
class TaoConcurrentTest {
  static final int LISTS = 4;
  static final int WRITERS = 2;
  static final int READERS = 2;
  static final int WRITES = 120;

  @TempDir Path dir;
  @AutoClose TaoCluster cluster;

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
    AtomicIntegerArray lastCommitted = new AtomicIntegerArray(WRITERS);
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
                    lastCommitted.set(writer, seq);
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
                int floor = lastCommitted.get(w); // committed before this read began
                byte[] v = tao.objGet(values.get(w)).data();
                for (byte b : v) {
                  assertEquals(v[0], b, "obj_get mixes two values");
                }
                int seq = Byte.toUnsignedInt(v[0]);
                assertTrue(seq >= lastValue[w], "obj_get went back: " + lastValue[w] + " → " + seq);
                assertTrue(seq >= floor, "obj_get read " + seq + " after " + floor + " committed");
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

  /**
   * Adds and deletes (assoc_delete copies and frees chunks under the readers) with one writer per
   * list, so each list's history of states is known: every assoc_count a reader sees is the size of
   * some state, every range the newest {@code min(limit, size)} entries of some state, the states a
   * reader sees of a list never go back in its history, and none is older than the state committed
   * before the read began (real time: a stale cached head would break this).
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void readsUnderDeletesSeeStatesOfTheHistoryInOrder(boolean real, TestSeed seed) throws Exception {
    cluster = new TaoCluster(dir, 2, real);
    Tao setup = tao();
    int lists = 2;
    List<FatPointer> ids = new ArrayList<>();
    for (int i = 0; i < lists; i++) {
      ids.add(setup.objAdd(1, new byte[8]));
    }
    List<FatPointer> targets = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      targets.add(setup.objAdd(2, new byte[8]));
    }
    if (!real) {
      cluster.network.faults().tearWait(Duration.ofMillis(1));
      cluster.network.faults().tearReads(true);
    }
    // history.get(l).get(k): list l's entries (times, newest first) after its writer's k-th change.
    List<List<List<Long>>> history = new ArrayList<>();
    // observed.get(r).get(l): what reader r saw of list l, in order, each after the index of the
    // last state committed before the read began: a count as {floor, -1 - count}, or a range as
    // {floor, limit, times...}.
    List<List<List<long[]>>> observed = new ArrayList<>();
    for (int l = 0; l < lists; l++) {
      List<List<Long>> h = new ArrayList<>();
      h.add(List.of());
      history.add(java.util.Collections.synchronizedList(h));
    }
    AtomicBoolean done = new AtomicBoolean();
    CountDownLatch writersDone = new CountDownLatch(lists);
    int deletes;
    java.util.concurrent.atomic.AtomicInteger deleted =
        new java.util.concurrent.atomic.AtomicInteger();
    try (TestThreads bg = new TestThreads(() -> done.set(true))) {
      for (int l = 0; l < lists; l++) {
        int list = l;
        Random random = new Random(seed.value() + l);
        Tao tao = tao();
        bg.start(
            "tao-writer-" + l,
            () -> {
              try {
                List<long[]> model = new ArrayList<>(); // {time, target}, newest first
                for (int seq = 1; seq <= 90 && !done.get(); seq++) {
                  if (random.nextInt(10) < 7 || model.isEmpty()) {
                    int target = random.nextInt(targets.size());
                    long t = time(list, seq);
                    tao.assocAdd(ids.get(list), 0, targets.get(target), t, assocData(t));
                    model.add(0, new long[] {t, target});
                  } else {
                    int target = (int) model.get(random.nextInt(model.size()))[1];
                    int n = tao.assocDelete(ids.get(list), 0, targets.get(target));
                    int before = model.size();
                    model.removeIf(e -> e[1] == target);
                    assertEquals(before - model.size(), n, "assoc_delete's count");
                    deleted.addAndGet(n);
                  }
                  history.get(list).add(model.stream().map(e -> e[0]).toList());
                }
              } finally {
                writersDone.countDown();
              }
            });
      }
      for (int r = 0; r < READERS; r++) {
        Random random = new Random(seed.value() + 100 + r);
        Tao tao = tao();
        List<List<long[]>> mine = new ArrayList<>();
        for (int l = 0; l < lists; l++) {
          mine.add(new ArrayList<>());
        }
        observed.add(mine);
        bg.start(
            "tao-reader-" + r,
            () -> {
              while (!done.get()) {
                int l = random.nextInt(lists);
                // Real time: the state the writer had committed before this read began.
                long floor = history.get(l).size() - 1;
                if (random.nextBoolean()) {
                  mine.get(l).add(new long[] {floor, -1 - tao.assocCount(ids.get(l), 0)});
                } else {
                  int limit = 1 + random.nextInt(25);
                  List<Tao.Assoc> range = tao.assocRange(ids.get(l), 0, 0, limit);
                  long[] o = new long[2 + range.size()];
                  o[0] = floor;
                  o[1] = limit;
                  for (int i = 0; i < range.size(); i++) {
                    Tao.Assoc a = range.get(i);
                    assertEquals(
                        Arrays.toString(assocData(a.time())),
                        Arrays.toString(a.data()),
                        "an association's data is intact");
                    o[2 + i] = a.time();
                  }
                  mine.get(l).add(o);
                }
              }
            });
      }
      while (!writersDone.await(50, TimeUnit.MILLISECONDS) && !done.get()) {
        Thread.onSpinWait();
      }
      done.set(true);
    }
    deletes = deleted.get();
    assertTrue(deletes > 0, "associations deleted");
    Tao check = tao();
    int matched = 0;
    for (int l = 0; l < lists; l++) {
      List<List<Long>> h = history.get(l);
      List<Long> last = h.get(h.size() - 1);
      assertEquals(
          last, check.assocRange(ids.get(l), 0, 0, 100_000).stream().map(Tao.Assoc::time).toList());
      assertEquals(last.size(), check.assocCount(ids.get(l), 0));
      for (List<List<long[]>> reader : observed) {
        int at = 0; // the earliest state this reader's reads so far can have seen
        for (long[] read : reader.get(l)) {
          at = Math.max(at, (int) read[0]);
          long[] o = Arrays.copyOfRange(read, 1, read.length);
          int from = at;
          while (at < h.size() && !matches(h.get(at), o)) {
            at++;
          }
          assertTrue(
              at < h.size(),
              "list "
                  + l
                  + ": a read "
                  + Arrays.toString(o)
                  + " matches no state from "
                  + from
                  + " on");
          matched++;
        }
      }
    }
    assertTrue(matched > 0);
  }

  /** Whether observation {@code o} (see above) could have been read from state {@code state}. */
  static boolean matches(List<Long> state, long[] o) {
    if (o[0] < 0) {
      return state.size() == -1 - o[0];
    }
    int n = (int) Math.min(o[0], state.size());
    if (o.length - 1 != n) {
      return false;
    }
    for (int i = 0; i < n; i++) {
      if (state.get(i) != o[1 + i]) {
        return false;
      }
    }
    return true;
  }
}
