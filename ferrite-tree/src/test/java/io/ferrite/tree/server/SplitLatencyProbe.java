package io.ferrite.tree.server;

import io.ferrite.fabric.Credentials;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.tree.Tree;
import io.ferrite.tree.TreeClient;
import io.ferrite.tree.TreeConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Not a test (its name is outside surefire's patterns; run it by name, under the bench lock): the
 * longest put latencies while big meganodes split. Four writers put scattered keys (16 B keys, 32 B
 * values, the bench's shape) into one tree on one in-process server until {@code -Dtree.probe.keys}
 * (600 000) puts, with {@code -Dtree.probe.meganode} (32m) meganodes of 1 KiB nodes, so that each
 * split copies ~140 000 pairs; it prints the latency distribution of every put and the splits made.
 * Asserts nothing about time.
 *
 * <pre>
 * flock /tmp/ferrite-bench.lock mvn -B -o -q -pl ferrite-tree -am test -Dtest=SplitLatencyProbe \
 *     -Dsurefire.failIfNoSpecifiedTests=false
 * </pre>
 */
class SplitLatencyProbe {
  @TempDir Path dir;

  /**
   * The longest relink, by reflection so that the probe also runs over a tree without the method
   * (the "before" figures).
   */
  private static String relink(java.util.List<TreeService> services) {
    try {
      java.lang.reflect.Method m = TreeService.class.getDeclaredMethod("longestRelinkNanos");
      return String.format(java.util.Locale.ROOT, "%.1fms", (Long) m.invoke(services.get(0)) / 1e6);
    } catch (ReflectiveOperationException | IndexOutOfBoundsException e) {
      return "?";
    }
  }

  @Test
  void putLatencyWhileMeganodesSplit() throws Exception {
    int keys = Integer.getInteger("tree.probe.keys", 600_000);
    String meganode = System.getProperty("tree.probe.meganode", "32m");
    int threads = 4;
    Map<String, String> c = new HashMap<>();
    c.put(FerriteConfig.CAPACITY_DRAM, "1g");
    c.put(FerriteConfig.CAPACITY_DISK, "0");
    c.put(TreeConfig.MEGANODE_SIZE, meganode);
    c.put(TreeConfig.NODE_SIZE, "1k");
    try (ClusterHarness cluster =
        new ClusterHarness(
            dir,
            new Credentials(
                "tree-probe",
                "0123456789abcdef-tree-probe-secret".getBytes(StandardCharsets.UTF_8)),
            false,
            c)) {
      java.util.List<TreeService> services = new java.util.concurrent.CopyOnWriteArrayList<>();
      TreeService.testStarted = services::add;
      cluster.startMaster();
      cluster.startServer("tree0");
      TreeService.testStarted = null;
      Tree tree = new TreeClient(cluster.client()).create("probe");
      long[][] latencies = new long[threads][keys / threads];
      AtomicReference<Throwable> failure = new AtomicReference<>();
      Thread[] writers = new Thread[threads];
      long start = System.nanoTime();
      for (int t = 0; t < threads; t++) {
        int id = t;
        writers[t] =
            new Thread(
                () -> {
                  SplittableRandom random = new SplittableRandom(42 + id);
                  byte[] value = new byte[32];
                  try {
                    for (int i = 0; i < latencies[id].length; i++) {
                      byte[] key =
                          String.format(
                                  java.util.Locale.ROOT,
                                  "k%015d",
                                  random.nextLong(1_000_000_000_000L))
                              .getBytes(StandardCharsets.US_ASCII);
                      long t0 = System.nanoTime();
                      tree.put(key, value);
                      latencies[id][i] = System.nanoTime() - t0;
                    }
                  } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                  }
                },
                "probe-writer-" + t);
        writers[t].start();
      }
      for (Thread w : writers) {
        w.join();
      }
      long elapsed = System.nanoTime() - start;
      if (failure.get() != null) {
        throw new AssertionError("a writer failed", failure.get());
      }
      long[] all = Arrays.stream(latencies).flatMapToLong(Arrays::stream).sorted().toArray();
      long[] stats = tree.stats();
      long over100 = Arrays.stream(all).filter(l -> l > 100_000_000L).count();
      long over10 = Arrays.stream(all).filter(l -> l > 10_000_000L).count();
      System.out.printf(
          java.util.Locale.ROOT,
          "tree.split-probe meganode=%s puts=%d threads=%d splits=%d meganodes=%d elapsed=%.1fs"
              + " p50=%.3fms p99=%.3fms p99.9=%.3fms p99.99=%.3fms max=%.1fms >10ms=%d >100ms=%d"
              + " longest-relink=%s%n",
          meganode,
          all.length,
          threads,
          stats[2],
          stats[0],
          elapsed / 1e9,
          all[all.length / 2] / 1e6,
          all[(int) (all.length * 0.99)] / 1e6,
          all[(int) (all.length * 0.999)] / 1e6,
          all[(int) (all.length * 0.9999)] / 1e6,
          all[all.length - 1] / 1e6,
          over10,
          over100,
          relink(services));
    }
  }
}
