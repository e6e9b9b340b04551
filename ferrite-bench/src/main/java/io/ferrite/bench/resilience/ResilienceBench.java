package io.ferrite.bench.resilience;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Progress;
import io.ferrite.bench.kv.KvBench;
import io.ferrite.bench.nodes.FileReplicasBench;
import io.ferrite.fabric.FileTrees;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * {@code ferrite bench resilience} (issue #20): what the copies cost, and how long service stops
 * when a process dies, in one run:
 *
 * <ol>
 *   <li>kv put throughput and latency with 1, 2 and 3 copies per shard over each fabric, r2 and r3
 *       beside r1 ({@code kv.replicas.*}, from the kv suite's replication case);
 *   <li>File write bandwidth with 1, 2 and 3 copies per block over each fabric, beside 1 copy, and
 *       a 2-copy File read right after a server holding copies stopped ({@code <fabric>.file.*},
 *       from the nodes suite's replication case);
 *   <li>File create+close ops/s with 2 master groups beside 1 ({@code groups.*}, from the nodes
 *       suite's {@link io.ferrite.bench.nodes.NodesGroupsBench});
 *   <li>the gap in service after SIGKILLs of a memory server and of the master leader, p50 over
 *       {@code kills} kills each, on child JVMs, and the acknowledged writes lost ({@link
 *       KillGaps}).
 * </ol>
 */
public final class ResilienceBench {
  public static final String SUITE = "resilience";

  private ResilienceBench() {}

  /**
   * @param fabrics the fabrics of the throughput cases ({@code shm}, {@code tcp})
   * @param duration how long each kv case runs
   * @param fileBytes the size of the File of the File cases
   * @param kills SIGKILLs per kind (memory server, master leader)
   * @param directory where the clusters keep their data (a temporary directory is made in it)
   * @param progress where progress lines go
   */
  public record Options(
      List<String> fabrics,
      Duration duration,
      long fileBytes,
      int kills,
      Path directory,
      PrintStream progress) {
    public Options {
      fabrics = List.copyOf(fabrics);
      Objects.requireNonNull(duration, "duration");
      Objects.requireNonNull(directory, "directory");
      if (kills < 1 || fileBytes < 1 << 20) {
        throw new IllegalArgumentException(
            "kills: " + kills + ", file: " + fileBytes + " B (expected: >= 1, >= 1 MiB)");
      }
    }
  }

  public static BenchReport run(Options o) throws Exception {
    BenchReport report = new BenchReport(SUITE);
    Progress progress = new Progress(SUITE, o.progress());
    Path root = Files.createTempDirectory(o.directory(), "ferrite-bench-resilience-");
    Path shmRoot = Files.createTempDirectory(Path.of("/dev/shm"), "ferrite-bench-resilience-");
    try {
      KvBench.Options kv =
          new KvBench.Options(
              o.fabrics(),
              KvBench.Options.defaults().layouts(),
              List.of(1),
              KvBench.Options.defaults().ops(),
              false,
              o.duration(),
              KvBench.Options.defaults().keys(),
              KvBench.Options.defaults().qualitySlots(),
              KvBench.Options.defaults().qualityLookups(),
              root,
              o.progress());
      for (BenchResult r : KvBench.runReplicas(kv).results()) {
        report.add(r);
      }
      FileReplicasBench.run(report, o.fabrics(), o.fileBytes(), shmRoot, progress);
      // Metadata ops/s with 1 and 2 master groups (16-thread File create+close, fsync on).
      io.ferrite.bench.nodes.NodesGroupsBench.run(report, o.duration(), shmRoot, progress);
      KillGaps.measure(report, Files.createDirectory(root.resolve("kills")), o.kills(), progress);
    } finally {
      FileTrees.delete(shmRoot);
      FileTrees.delete(root);
    }
    return report;
  }
}
