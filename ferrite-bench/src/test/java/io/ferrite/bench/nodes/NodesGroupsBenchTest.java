package io.ferrite.bench.nodes;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Progress;
import io.ferrite.bench.fabric.Fabrics;
import io.ferrite.fabric.Fabric;
import io.ferrite.fabric.FileTrees;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Runs the master-groups case briefly on a real two-group cluster; asserts on shape (both figures,
 * the second against the first), never on time. {@code -Dbench.groups.duration=2s} makes it a
 * measurement (under {@code flock /tmp/ferrite-bench.lock}).
 */
class NodesGroupsBenchTest {
  @Test
  void measuresCreatesWithOneAndTwoGroupsInOneRun() throws Exception {
    Duration d = Duration.parse("PT" + System.getProperty("bench.groups.duration", "0.2s"));
    NodesBench.Options o = NodesBench.Options.quick();
    o =
        new NodesBench.Options(
            o.fabrics(), o.iterations(), d, o.fileBytes(), true, o.listChildren(), o.progress());
    BenchReport report = new BenchReport(NodesBench.SUITE);
    Path shmRoot = Files.createTempDirectory(Path.of("/dev/shm"), "fbg-");
    try (Fabric tcp = Fabrics.create("tcp");
        Fabric shm = Fabrics.create("shm")) {
      NodesGroupsBench.run(report, o, shmRoot, tcp, shm, Progress.silent());
    } finally {
      FileTrees.delete(shmRoot);
    }
    BenchResult one = report.require("groups.1.fsync.file.create.close.threads.16");
    BenchResult two = report.require("groups.2.fsync.file.create.close.threads.16");
    assertTrue(one.value() > 0 && two.value() > 0, one + " / " + two);
    for (BenchResult r : report.results()) {
      System.out.println(r);
    }
  }
}
