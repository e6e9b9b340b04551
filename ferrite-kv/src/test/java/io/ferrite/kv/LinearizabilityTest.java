package io.ferrite.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.kernel.testing.RegisterChecker;
import io.ferrite.kernel.testing.RegisterChecker.Op;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Records concurrent histories of one-sided gets (and single-key multiGets), puts and deletes from
 * several clients on a few keys, with the local fabric tearing every read (it copies half, waits,
 * copies the rest), for each table layout: a 70%-full Pilaf shard, so that puts displace keys; a
 * hopscotch shard filled past its buckets with a small inline limit, so that keys move between
 * buckets, live in overflow chains and are pulled out of them by deletes, and values alternate
 * between inline and out of line. Each key's history is checked with a register linearizability
 * checker (WGL). Seeded: a failure prints the seed to replay.
 */
@ExtendWith(SeedExtension.class)
class LinearizabilityTest {
  static final int THREADS = 4;
  static final int OPS_PER_THREAD = 150;
  static final int KEYS = 3;

  @TempDir Path dir;
  KvCluster cluster;

  @BeforeEach
  void start() throws Exception {
    cluster = new KvCluster(dir, 1);
  }

  @AfterEach
  void stop() throws Exception {
    cluster.network.faults().heal();
    cluster.close();
  }

  static byte[] key(int k) {
    return ("register-" + k).getBytes(StandardCharsets.UTF_8);
  }

  static byte[] value(long v) {
    // Vary the length so that extents of different classes are freed and reused.
    byte[] b = new byte[8 + (int) (v % 40)];
    ByteBuffer.wrap(b).putLong(v);
    return b;
  }

  /** Each layout, without and with extent hints read beside the table (ExtentHints). */
  static Stream<Arguments> layoutsAndHints() {
    return Stream.of(TableOptions.Layout.values())
        .flatMap(l -> Stream.of(Arguments.of(l, false), Arguments.of(l, true)));
  }

  @ParameterizedTest
  @MethodSource("layoutsAndHints")
  void getsPutsAndDeletesAreLinearizableUnderTornReads(
      TableOptions.Layout layout, boolean hinted, TestSeed seed) throws Exception {
    boolean pilaf = layout == TableOptions.Layout.PILAF;
    ShardStats s = run(layout, hinted, seed, pilaf ? 128 : 32, pilaf ? 90 : 40);
    assertTrue(s.moves() > 0, "puts displaced keys while gets ran: " + s);
    if (!pilaf) {
      // 40 fillers and 3 registers in 36 bucket slots: chains were read and written throughout.
      assertTrue(s.overflowKeys() > 0, "keys live in overflow chains: " + s);
    }
  }

  private ShardStats run(
      TableOptions.Layout layout, boolean hinted, TestSeed seed, int slots, int fillers)
      throws Exception {
    FerriteClient setup = cluster.client();
    TableOptions o =
        TableOptions.DEFAULTS
            .withLayout(layout)
            .withShards(1)
            .withSlotsPerShard(slots)
            .withInlineBytes(40);
    KvTable table = new KvClient(setup).createTable("linear", o);
    for (int i = 0; i < fillers; i++) {
      table.put(("filler-" + i).getBytes(StandardCharsets.UTF_8), new byte[16]);
    }
    cluster.network.faults().tearWait(Duration.ofMillis(1));
    cluster.network.faults().tearReads(true);

    List<List<Op>> perKey = new ArrayList<>();
    for (int k = 0; k < KEYS; k++) {
      perKey.add(Collections.synchronizedList(new ArrayList<>()));
    }
    AtomicInteger ids = new AtomicInteger();
    AtomicInteger[] keyIds = new AtomicInteger[KEYS];
    for (int k = 0; k < KEYS; k++) {
      keyIds[k] = new AtomicInteger();
    }
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    List<KvTable> handles = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      KvTable h = new KvClient(cluster.client()).extentHints(hinted).table("linear");
      handles.add(h);
      Random r = new Random(seed.value() * 31 + t);
      int thread = t;
      threads.add(
          new Thread(
              () -> {
                try {
                  for (int i = 0; i < OPS_PER_THREAD; i++) {
                    int k = r.nextInt(KEYS);
                    int p = r.nextInt(100);
                    long call;
                    long ret;
                    boolean write;
                    long v;
                    if (p < 50) {
                      call = System.nanoTime();
                      byte[] got = p < 25 ? h.get(key(k)) : h.multiGet(List.of(key(k))).get(0);
                      ret = System.nanoTime();
                      write = false;
                      v = got == null ? RegisterChecker.ABSENT : ByteBuffer.wrap(got).getLong();
                    } else if (p < 85) {
                      v = (long) thread << 32 | ids.incrementAndGet();
                      call = System.nanoTime();
                      h.put(key(k), value(v));
                      ret = System.nanoTime();
                      write = true;
                    } else {
                      v = RegisterChecker.ABSENT;
                      call = System.nanoTime();
                      h.delete(key(k));
                      ret = System.nanoTime();
                      write = true;
                    }
                    perKey.get(k).add(new Op(keyIds[k].getAndIncrement(), call, ret, write, v));
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              "kv-linear-" + t));
    }
    for (Thread t : threads) {
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }
    cluster.network.faults().tearReads(false);
    if (failure.get() != null) {
      throw new AssertionError("a client failed", failure.get());
    }
    long torn = 0;
    long hintedReads = 0;
    long hintHits = 0;
    for (KvTable h : handles) {
      torn += h.lookupStats().tornRetries();
      hintedReads += h.lookupStats().hintedReads();
      hintHits += h.lookupStats().hintHits();
    }
    for (int k = 0; k < KEYS; k++) {
      List<Op> h = new ArrayList<>(perKey.get(k));
      h.sort(java.util.Comparator.comparingInt(Op::id));
      if (!RegisterChecker.check(h, RegisterChecker.ABSENT)) {
        fail("key " + k + " is not linearizable:" + RegisterChecker.describe(h));
      }
    }
    assertTrue(torn > 0, "the fabric tore reads that raced puts (torn retries: " + torn + ")");
    if (hinted) {
      // Both outcomes of a hint happened: its extent was the one the table named, or it was not.
      assertTrue(
          hintHits > 0 && hintedReads > hintHits,
          "hinted extent reads: " + hintedReads + ", used: " + hintHits);
    } else {
      assertEquals(0, hintedReads, "no hints when the client turned them off");
    }
    return table.stats().get(0);
  }
}
