package io.ferrite.cli.bench;

import io.ferrite.cli.VersionProvider;
import picocli.CommandLine.Command;

/**
 * {@code ferrite bench}: the benchmark suites. Each suite is a subcommand; the list has one entry
 * per line so that later suites ({@code nodes}, {@code memory}, {@code kv}) merge without
 * conflicts.
 */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    header = "Benchmark suites, each result beside its ceiling.",
    description = {
      "Runs a benchmark suite and prints each result beside the ceiling it is",
      "bounded by, measured in the same run on the same machine, and the ratio",
      "between them.",
      "",
      "A ceiling is the fastest anything could do the same work here: an in-JVM",
      "memory copy for same-host paths, a raw loopback socket for network paths.",
      "Absolute times on shared machines drift from run to run; ratios measured",
      "in one run do not.",
      "",
      "Latencies are in ns (p50, p99, p99.9 from an HdrHistogram), bandwidths in",
      "MiB/s. ratio > 1 means better than the reference; a ceiling is rarely",
      "beaten, so a ratio reads as the fraction of the ceiling reached.",
      "",
    },
    footer = {
      "",
      "Examples:",
      "  ferrite bench fabric --help",
      "  ferrite bench fabric --quick --fabrics local",
      "  ferrite bench kv --quick --json kv.json --html kv.html",
      "  ferrite bench html --from kv.json fabric.json --out bench.html",
    },
    subcommands = {
      FabricBenchCommand.class,
      GraphBenchCommand.class,
      KvBenchCommand.class,
      MemoryBenchCommand.class,
      NodesBenchCommand.class,
      ResilienceBenchCommand.class,
      RSortBenchCommand.class,
      SparkBenchCommand.class,
      TreeBenchCommand.class,
      TxBenchCommand.class,
      HtmlBenchCommand.class,
    })
public final class BenchCommand extends io.ferrite.cli.CommandGroup {}
