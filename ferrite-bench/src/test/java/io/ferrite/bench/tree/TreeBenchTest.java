package io.ferrite.bench.tree;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Runs the tree suite for real over shm, briefly, in 64 KiB meganodes (so the tree has levels);
 * asserts on shape and on the counts the handle gives (reads per client-side get), never on time.
 */
class TreeBenchTest {
  @Test
  void quickRunMeasuresShapeReadsAndBothPaths() throws Exception {
    // The default directory (the temp dir): a unix socket path under a JUnit temp dir is too long.
    TreeBench.Options o =
        TreeBench.Options.quick()
            .withFabrics(List.of("shm"))
            .withThreads(List.of(1))
            .withDuration(Duration.ofMillis(20))
            .withKeys(3000)
            .withMeganode("64k")
            .withProgress(null);
    BenchReport report = TreeBench.run(o, false);
    double levels = report.require("tree.shape.levels").value();
    assertTrue(levels >= 2, "levels: " + levels);
    assertTrue(report.require("tree.shape.meganodes").value() >= 2);
    double reads = report.require("tree.shm.get-client-nocache.reads-per-get").value();
    // Without caches, at least one node of each meganode level, plus the value's extent.
    assertTrue(reads >= levels + 1 && reads < 20 * levels, "reads per get: " + reads);
    // With warm caches (this small tree fits): the leaf and the extent.
    BenchResult cached = report.require("tree.shm.get-client.reads-per-get");
    assertEquals(2.0, cached.value(), 1e-9, "reads per warm get");
    assertEquals("tree.shm.get-client-nocache.reads-per-get", cached.reference());
    BenchResult auto = report.require("tree.shm.get-auto.t1.throughput");
    assertTrue(
        auto.reference().equals("tree.shm.get-server.t1.throughput")
            || auto.reference().equals("tree.shm.get-client.t1.throughput"),
        "the selector beside a fixed path: " + auto.reference());
    double autoShare = report.require("tree.shm.get-auto.t1.client-share").value();
    assertTrue(autoShare >= 0 && autoShare <= 100, "share " + autoShare);
    for (String phase : TreeBench.PHASES) {
      String name = "tree.shm.shift." + phase + ".auto.t1.";
      assertNotNull(report.get(name + "throughput"), name);
      assertNotNull(report.get(name + "throughput-vs-worse"), name);
      double share = report.require(name + "client-share").value();
      assertTrue(share >= 0 && share <= 100, "share " + share);
    }
    for (String op : List.of("get", "scan100")) {
      for (String stat : List.of("throughput", "p50", "p99")) {
        String server = "tree.shm." + op + "-server.t1." + stat;
        assertNotNull(report.get(server), server);
        BenchResult client = report.require("tree.shm." + op + "-client.t1." + stat);
        assertEquals(server, client.reference(), "the client path beside the server path");
      }
    }
  }
}
