package io.ferrite.bench.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.kv.TableOptions;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Runs the kv suite for real over shm, briefly, for both layouts; asserts on shape and on the
 * counts the fabric gives (reads per lookup), never on time.
 */
class KvBenchTest {
  @Test
  void quickRunMeasuresBothLayouts() throws Exception {
    // The default directory (/dev/shm): a unix socket path under a JUnit temp dir is too long.
    KvBench.Options o =
        KvBench.Options.quick()
            .withFabrics(List.of("shm"))
            .withLayouts(List.of(TableOptions.Layout.PILAF, TableOptions.Layout.HOPSCOTCH))
            .withThreads(List.of(1))
            .withDuration(Duration.ofMillis(20))
            .withKeys(300)
            .withQuality(4096, 1000)
            .withProgress(null);
    BenchReport report = KvBench.run(o);
    for (String layout : List.of("pilaf", "hopscotch")) {
      for (String occ : List.of("50", "75", "90")) {
        String name = "kv." + layout + ".occ" + occ + ".reads-per-lookup.mean";
        BenchResult r = report.get(name);
        assertNotNull(r, name);
        double ideal = layout.equals("pilaf") ? 2 : 1;
        assertTrue(r.value() >= ideal, name + " = " + r.value());
        assertTrue(
            r.value() <= (layout.equals("pilaf") ? 3 : 1.1),
            name
                + " = "
                + r.value()
                + " (a Pilaf lookup reads <= 3 entries + 1 extent;"
                + " hopscotch's target is <= 1.1 at 90%)");
      }
      for (String op : List.of("get", "get-rpc", "put", "mix95")) {
        for (String v : List.of("32B", "1KiB")) {
          String name = "kv." + layout + ".shm." + op + "." + v + ".t1.throughput";
          // Present; not > 0: a 20 ms cell on a loaded machine may complete nothing.
          assertNotNull(report.get(name), name);
        }
      }
    }
  }

  /**
   * The replication case: every fabric and copy count is measured, r2 and r3 beside r1, and the
   * failover's gap beside the master's dead timeout; never asserts on time.
   */
  @Test
  void replicasRunMeasuresEveryCopyCountAndTheFailover() throws Exception {
    KvBench.Options o =
        KvBench.Options.quick()
            .withFabrics(List.of("shm", "tcp"))
            .withDuration(Duration.ofMillis(20))
            .withKeys(200)
            .withProgress(null);
    BenchReport report = KvBench.runReplicas(o);
    for (String fabric : List.of("shm", "tcp")) {
      for (int r = 1; r <= 3; r++) {
        for (String stat : List.of("throughput", "p50", "p99")) {
          String name = "kv.replicas." + fabric + ".r" + r + ".put.t1." + stat;
          BenchResult b = report.get(name);
          assertNotNull(b, name);
          if (r > 1) {
            assertEquals(
                "kv.replicas." + fabric + ".r1.put.t1." + stat, b.reference(), name + " vs r1");
          }
        }
      }
    }
    BenchResult gap = report.get("kv.replicas.failover.dead-to-first-put");
    assertNotNull(gap);
    assertEquals("kv.replicas.failover.kill-to-dead", gap.reference());
    assertTrue(gap.value() >= 0, "a put completed after the server was declared DEAD");
  }
}
