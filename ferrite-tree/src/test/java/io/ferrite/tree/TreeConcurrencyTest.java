package io.ferrite.tree;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.fabric.testing.TestSeed;
import io.ferrite.fabric.testing.TestThreads;
import io.ferrite.kernel.testing.RegisterChecker;
import io.ferrite.kernel.testing.RegisterChecker.Op;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Several clients get, put and delete a few keys (registers) by both search paths while a loader
 * fills the tree so that meganodes split throughout, and a scanner scans the loaded keys; on the
 * local fabric every one-sided read is torn (half, a wait for a write, the rest). Each register's
 * history is checked for linearizability (WGL, {@link RegisterChecker}); each scan must hold, in
 * order, every loaded key whose put returned before the scan began, each with its own value.
 */
@ExtendWith(SeedExtension.class)
class TreeConcurrencyTest {
  static final int THREADS = 4;
  static final int OPS_PER_THREAD = 120;
  static final int KEYS = 3;
  static final int LOADED = 1500;

  @TempDir Path dir;
  TreeCluster cluster;

  @AfterEach
  void stop() throws Exception {
    if (cluster != null) {
      cluster.network.faults().heal();
      cluster.close();
    }
  }

  static byte[] register(int k) {
    return ("register-" + k).getBytes(StandardCharsets.UTF_8);
  }

  static byte[] loaded(int i) {
    return String.format(Locale.ROOT, "load-%06d", i).getBytes(StandardCharsets.UTF_8);
  }

  static byte[] value(long v) {
    byte[] b = new byte[8 + (int) (v % 24)];
    ByteBuffer.wrap(b).putLong(v);
    return b;
  }

  @ParameterizedTest
  @CsvSource({"local,local", "shm,local", "tcp,local", "local,spread", "tcp,spread"})
  void registersAreLinearizableAndScansCompleteWhileMeganodesSplit(
      String fabric, String placement, TestSeed seed) throws Exception {
    boolean local = fabric.equals("local");
    cluster = new TreeCluster(dir, 2, !local, placement);
    Tree setup = new TreeClient(local ? cluster.client() : cluster.client(fabric)).create("conc");
    if (local) {
      cluster.network.faults().tearWait(Duration.ofMillis(1));
      cluster.network.faults().tearReads(true);
    }
    List<List<Op>> perKey = new ArrayList<>();
    AtomicInteger[] keyIds = new AtomicInteger[KEYS];
    for (int k = 0; k < KEYS; k++) {
      perKey.add(Collections.synchronizedList(new ArrayList<>()));
      keyIds[k] = new AtomicInteger();
    }
    AtomicInteger ids = new AtomicInteger();
    AtomicInteger loadedUpTo = new AtomicInteger(); // puts 0 .. loadedUpTo-1 have returned
    AtomicBoolean done = new AtomicBoolean();
    List<Tree> handles = new ArrayList<>();
    try (TestThreads threads = new TestThreads(() -> done.set(true))) {
      Tree loader = new TreeClient(local ? cluster.client() : cluster.client(fabric)).open("conc");
      threads.start(
          "tree-loader",
          () -> {
            for (int i = 0; i < LOADED && !done.get(); i++) {
              loader.put(loaded(i), loaded(i));
              loadedUpTo.set(i + 1);
            }
          });
      Tree scanner = new TreeClient(local ? cluster.client() : cluster.client(fabric)).open("conc");
      handles.add(scanner);
      threads.start(
          "tree-scanner",
          () -> {
            Random r = new Random(seed.value() - 1);
            while (!done.get() && loadedUpTo.get() < LOADED) {
              int before = loadedUpTo.get();
              Tree.Path path = Tree.Path.values()[r.nextInt(Tree.Path.values().length)];
              List<Map.Entry<byte[], byte[]>> got =
                  scanner.scan(loaded(0), loaded(LOADED), LOADED, path);
              byte[] prev = null;
              for (Map.Entry<byte[], byte[]> e : got) {
                assertTrue(prev == null || Arrays.compareUnsigned(prev, e.getKey()) < 0, "order");
                assertArrayEquals(e.getKey(), e.getValue(), "value of its key");
                prev = e.getKey();
              }
              assertTrue(
                  got.size() >= before,
                  "scan " + path + " lost keys: " + got.size() + " < " + before);
              for (int i = 0; i < before; i++) {
                assertArrayEquals(loaded(i), got.get(i).getKey(), "scan " + path + " key " + i);
              }
            }
          });
      for (int t = 0; t < THREADS; t++) {
        Tree h = new TreeClient(local ? cluster.client() : cluster.client(fabric)).open("conc");
        handles.add(h);
        Random r = new Random(seed.value() * 31 + t);
        int thread = t;
        threads.start(
            "tree-register-" + t,
            () -> {
              for (int i = 0; i < OPS_PER_THREAD && !done.get(); i++) {
                int k = r.nextInt(KEYS);
                int p = r.nextInt(100);
                long call;
                long ret;
                boolean write;
                long v;
                if (p < 50) {
                  // Every path, the selector's (AUTO) too, with caches on: one history.
                  Tree.Path path = Tree.Path.values()[r.nextInt(Tree.Path.values().length)];
                  call = System.nanoTime();
                  byte[] got = h.get(register(k), path);
                  ret = System.nanoTime();
                  write = false;
                  v = got == null ? RegisterChecker.ABSENT : ByteBuffer.wrap(got).getLong();
                } else if (p < 85) {
                  v = (long) thread << 32 | ids.incrementAndGet();
                  call = System.nanoTime();
                  h.put(register(k), value(v));
                  ret = System.nanoTime();
                  write = true;
                } else {
                  v = RegisterChecker.ABSENT;
                  call = System.nanoTime();
                  h.delete(register(k));
                  ret = System.nanoTime();
                  write = true;
                }
                perKey.get(k).add(new Op(keyIds[k].getAndIncrement(), call, ret, write, v));
              }
            });
      }
    }
    if (local) {
      cluster.network.faults().tearReads(false);
    }
    for (int k = 0; k < KEYS; k++) {
      List<Op> h = new ArrayList<>(perKey.get(k));
      h.sort(java.util.Comparator.comparingInt(Op::id));
      if (!RegisterChecker.check(h, RegisterChecker.ABSENT)) {
        fail("register " + k + " is not linearizable:" + RegisterChecker.describe(h));
      }
    }
    long[] stats = setup.stats();
    assertTrue(stats[2] > 0, "meganodes split during the run: " + Arrays.toString(stats));
    if (placement.equals("spread")) {
      // The registers sort after the loaded keys: their leaf meganode moved with the splits.
      int servers =
          TreeShape.serversWithMeganodes(cluster, new TreeClient(cluster.client()), "conc");
      assertTrue(servers == 2, "leaf meganodes on both servers: " + servers);
    }
    List<Map.Entry<byte[], byte[]>> all =
        setup.scan(loaded(0), loaded(LOADED), LOADED + 1, Tree.Path.CLIENT);
    assertTrue(all.size() == LOADED, "all loaded keys: " + all.size());
    long server = 0;
    long client = 0;
    for (Tree h : handles) {
      server += h.autoChoices()[0];
      client += h.autoChoices()[1];
    }
    assertTrue(server > 0 && client > 0, "AUTO took both paths: " + server + ", " + client);
    if (local) {
      long torn = 0;
      for (Tree h : handles) {
        torn += h.tornReads();
      }
      assertTrue(torn > 0, "the fabric tore node reads that raced writes: " + torn);
    }
  }
}
