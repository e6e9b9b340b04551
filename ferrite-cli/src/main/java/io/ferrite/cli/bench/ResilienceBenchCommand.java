package io.ferrite.cli.bench;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.resilience.ResilienceBench;
import io.ferrite.cli.DurationConverter;
import io.ferrite.cli.SizeConverter;
import io.ferrite.cli.VersionProvider;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ferrite bench resilience}: see {@link ResilienceBench}. */
@Command(
    name = "resilience",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    sortOptions = false,
    header = "What copies cost, and how long service stops when a process dies.",
    description = {
      "Measures, in one run on this machine:",
      "  kv.replicas.<f>.r<n>.put.t1.{throughput,p50,p99}   1-thread 32 B puts to a",
      "      table with n = 1, 2, 3 copies per shard over fabric f; r2 and r3 beside",
      "      r1 (target: r2's p50 <= 1.5 x r1's, i.e. ratio >= 0.67)",
      "  kv.replicas.failover.*   in-process: a shard's primary closed under puts",
      "  <f>.file.write.replicas.<n>.bandwidth   a File written with n copies per",
      "      block, beside 1 copy; <f>.file.read.afterdeath: a 2-copy File read right",
      "      after a server holding copies stopped, beside the read before it",
      "  groups.2.fsync.file.create.close.threads.16   metadata ops/s (File",
      "      create+close, 16 threads, journal fsync) with 2 master groups, beside 1",
      "  resilience.server-kill.*   3 masters (Raft) and 3 memory servers as child",
      "      JVMs on 127.0.0.1; a writer puts to a 2-copy kv table (durability",
      "      always) while the server of shard 0's primary is SIGKILLed (--kills",
      "      times, restarted after each): kill-to-dead (the master's heartbeat",
      "      timeout, 1 s here), and dead-to-writes beside it: from the master's",
      "      declaration to the first put started after the kill completing",
      "      (target <= 1000 ms)",
      "  resilience.leader-kill.*   a writer puts KeyValue nodes (a master mutation",
      "      each) while the master leader is SIGKILLed (--kills times, restarted",
      "      after each): kill-to-leader (Raft's election) and kill-to-writes beside",
      "      it (target <= 3000 ms)",
      "  resilience.lost-acknowledged-writes   every acknowledged put and node",
      "      read back at the end (target 0)",
      "Figures are p50 over the kills. Nothing is pinned to cores.",
      "",
      "ratio > 1 means better than the reference. Progress goes to stderr, the table to stdout.",
    },
    optionListHeading = "%nOptions:%n",
    footer = {
      "",
      "Examples:",
      "  ferrite bench resilience --quick             1 kill of each kind, short cases",
      "  ferrite bench resilience --json resilience.json",
      "  ferrite bench resilience --kills 9 --fabrics tcp",
      "",
      "JSON (--json FILE):",
      "  {\"suite\": \"resilience\", \"results\": [{\"name\", \"value\", \"unit\",",
      "   \"better\", \"reference\", \"reference_value\", \"ratio\"}, ...]}",
    })
public final class ResilienceBenchCommand implements Callable<Integer> {
  @CommandLine.Mixin BenchOutput out;

  @Option(
      names = "--fabrics",
      paramLabel = "F",
      split = ",",
      description = "Fabrics of the copy-cost cases: shm, tcp (default: shm,tcp).")
  List<String> fabrics;

  @Option(
      names = "--kills",
      paramLabel = "N",
      description = "SIGKILLs of each kind (default: 5; --quick: 1).")
  Integer kills;

  @Option(
      names = "--duration",
      paramLabel = "D",
      converter = DurationConverter.class,
      description = "Each kv put case (default: 3s; --quick: 1s).")
  Duration duration;

  @Option(
      names = "--file-size",
      paramLabel = "SIZE",
      converter = SizeConverter.class,
      description = "The File of the File cases (default: 256MiB; --quick: 32MiB).")
  Long fileSize;

  @Option(
      names = "--dir",
      paramLabel = "DIR",
      description = "Where the clusters keep their data (default: the temp directory).")
  Path dir;

  @Override
  public Integer call() throws Exception {
    ResilienceBench.Options o =
        out.options(
            () ->
                new ResilienceBench.Options(
                    fabrics != null ? fabrics : List.of("shm", "tcp"),
                    duration != null ? duration : Duration.ofSeconds(out.quick() ? 1 : 3),
                    fileSize != null ? fileSize : (out.quick() ? 32L : 256L) << 20,
                    kills != null ? kills : out.quick() ? 1 : 5,
                    dir != null ? dir : Path.of(System.getProperty("java.io.tmpdir")),
                    out.progress()));
    BenchReport report = ResilienceBench.run(o);
    return out.emit(report);
  }
}
