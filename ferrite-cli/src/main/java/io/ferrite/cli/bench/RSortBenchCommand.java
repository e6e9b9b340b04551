package io.ferrite.cli.bench;

import io.ferrite.apps.worker.JvmLauncher;
import io.ferrite.bench.BenchReport;
import io.ferrite.bench.rsort.RSortBench;
import io.ferrite.cli.FerriteCli;
import io.ferrite.cli.SizeConverter;
import io.ferrite.cli.VersionProvider;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ferrite bench rsort}: see {@link RSortBench}. */
@Command(
    name = "rsort",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    sortOptions = false,
    header =
        "RSort (distributed sort on the memory face) beside a single-JVM sort of the same records.",
    description = {
      "Starts a local cluster in this process (a master with the memory face and --servers"
          + " memory servers on tcp and shm; 3.2 x --size of dram in /dev/shm) and measures:",
      "  ceiling.local-sort.<size>.time     ms, the records sorted in one JVM (keys",
      "      packed into longs + Arrays.parallelSort + one copy in key order),",
      "      started like a worker",
      "  rsort.<size>.w<W>.time             ms, RSort with W worker processes: start",
      "      of phase one (classification) to the end of phase two (sort, final_j",
      "      written); ratio = single JVM / RSort (0.5: twice the single JVM's time)",
      "  rsort.<size>.w<W>.bandwidth        MiB/s sorted, beside the single JVM's",
      "  rsort.<size>.w<W>.{classify,sort}  ms, the two phases; .slowest-worker.*",
      "      their steps",
      "  rsort.<size>.w<W>.{load,prepare}   ms, generating the input into the store,",
      "      preparing (and mapping) the buckets, JIT warm-up: not in the time",
      "  machine.load1.{start,end}          the 1-minute load average around the run",
      "Both outputs are validated (count, checksum, order). Memory: the single JVM takes 2 x"
          + " --size of direct memory, each worker up to 2 x --size; the cluster 3.2 x --size.",
      "",
      "ratio > 1 means better than the reference. Progress goes to stderr, the table to stdout.",
    },
    optionListHeading = "%nOptions:%n",
    footer = {
      "",
      "Examples:",
      "  ferrite bench rsort                              1 GiB, 2 workers",
      "  ferrite bench rsort --size 1GiB --workers 2 --json rsort.json",
      "  ferrite bench rsort --quick                      64 MiB smoke test",
      "",
      "JSON (--json FILE):",
      "  {\"suite\": \"rsort\", \"results\": [{\"name\", \"value\", \"unit\",",
      "   \"better\", \"reference\", \"reference_value\", \"ratio\"}, ...]}",
    })
public final class RSortBenchCommand implements Callable<Integer> {
  @CommandLine.Mixin BenchOutput out;

  @Option(
      names = "--size",
      paramLabel = "SIZE",
      converter = SizeConverter.class,
      description = "Data set size, e.g. 1GiB (default: 1GiB; --quick: 64MiB); size / 100 records.")
  Long size;

  @Option(
      names = "--workers",
      paramLabel = "N",
      description = "Worker processes, 1 to 64 (default: 2).")
  Integer workers;

  @CommandLine.Mixin BenchOptions.Servers servers;

  @Option(
      names = "--rounds",
      paramLabel = "N",
      description = "Runs of each side; the best of each is reported (default: 1).")
  Integer rounds;

  @Option(names = "--seed", paramLabel = "S", description = "The data set (default: 1).")
  Long seed;

  @Override
  public Integer call() throws Exception {
    JvmLauncher launcher = new JvmLauncher(FerriteCli.class.getName(), System.err);
    RSortBench.Options d =
        out.quick() ? RSortBench.Options.quick(launcher) : RSortBench.Options.defaults(launcher);
    RSortBench.Options o =
        out.options(
            () ->
                new RSortBench.Options(
                    size != null ? size : d.bytes(),
                    workers != null ? workers : d.workers(),
                    servers.or(d.servers()),
                    seed != null ? seed : d.seed(),
                    rounds != null ? rounds : d.rounds(),
                    d.fabric(),
                    launcher,
                    out.progress()));
    BenchReport report = RSortBench.run(o);
    return out.emit(report);
  }
}
