package io.ferrite.cli.bench;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.memory.MemoryBench;
import io.ferrite.cli.DurationConverter;
import io.ferrite.cli.VersionProvider;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ferrite bench memory}: see {@link MemoryBench}. */
@Command(
    name = "memory",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    sortOptions = false,
    header =
        "Memory face (RStore): control-path costs cold and cached, data-path latency and"
            + " bandwidth, beside their ceilings.",
    description = {
      "Starts a local cluster in this process (a master with the memory face and",
      "--servers memory servers on tcp and shm, 1 MiB blocks and chunks) and",
      "measures:",
      "  memory.{reserve,alloc,map}.<size>.cold     ms, a fresh namespace:",
      "      reserve commits fresh memory on the servers, map opens a staging",
      "      buffer; beside ceiling.allocate.<size> (allocate and zero the same",
      "      memory in this JVM) and, for alloc, ceiling.master.rpc.p50",
      "  memory.{reserve,alloc,map}.<size>.cached   ms, the same cycle after",
      "      unmap/free/release: served from the master's and the client's",
      "      caches; beside the cold figure (ratio = speed-up)",
      "      sizes: 64 MiB doubling up to --max-size (default 1 GiB)",
      "  memory.<fabric>.{read,write}.{8B,1KiB}.{p50,p99,p99.9}   ns, one op",
      "      at a time through a 64 MiB mapping; beside memcpy (shm) or the raw",
      "      loopback ping-pong (tcp)",
      "  memory.<fabric>.{read,write}.1MiB.bandwidth    --depth ops in flight",
      "  memory.<fabric>.{read,write}.64MiB.bandwidth   whole-mapping ops, each",
      "      64 chunk ops over every server in parallel; beside memcpy of the",
      "      same size (shm) or the raw loopback stream (tcp), MiB/s; over tcp",
      "      the 64 MiB read also as ...64MiB.bandwidth.samework beside",
      "      ceiling.socket.stream.64MiB (the stream into a 64 MiB buffer)",
      "",
      "ratio > 1 means better than the reference. Progress goes to stderr, the",
      "table to stdout.",
    },
    optionListHeading = "%nOptions:%n",
    footer = {
      "",
      "Examples:",
      "  ferrite bench memory                          shm and tcp, up to 1 GiB",
      "  ferrite bench memory --quick                  smoke test, 64 MiB only",
      "  ferrite bench memory --max-size 2048 --json memory.json",
      "",
      "JSON (--json FILE):",
      "  {\"suite\": \"memory\", \"results\": [{\"name\", \"value\", \"unit\",",
      "   \"better\", \"reference\", \"reference_value\", \"ratio\"}, ...]}",
    })
public final class MemoryBenchCommand implements Callable<Integer> {
  @CommandLine.Mixin BenchOutput out;

  @Option(
      names = "--fabrics",
      split = ",",
      paramLabel = "NAME",
      description = "Data-path fabrics, comma-separated: shm, tcp (default: shm,tcp).")
  List<String> fabrics;

  @Option(
      names = "--max-size",
      paramLabel = "MIB",
      description =
          "Largest control-path size in MiB, at least 64; sizes double from 64 (default: 1024;"
              + " --quick: 64). The cluster gets their sum plus 64 MiB of dram.")
  Integer maxMib;

  @Option(
      names = "--iterations",
      paramLabel = "N",
      description = "Timed ops per latency measurement (default: 20000; --quick: 300).")
  Integer iterations;

  @Option(
      names = "--duration",
      paramLabel = "TIME",
      converter = DurationConverter.class,
      description = "Length of each bandwidth measurement (default: 2s; --quick: 100ms).")
  Duration duration;

  @CommandLine.Mixin BenchOptions.Depth depth;

  @CommandLine.Mixin BenchOptions.Servers servers;

  @Option(
      names = "--dir",
      paramLabel = "DIR",
      description = "Where the cluster's files go, in a temporary directory (default: /dev/shm).")
  Path dir;

  @Override
  public Integer call() throws Exception {
    MemoryBench.Options o =
        out.quick() ? MemoryBench.Options.quick() : MemoryBench.Options.defaults();
    try {
      if (fabrics != null) {
        o = o.withFabrics(fabrics.stream().map(String::trim).filter(s -> !s.isEmpty()).toList());
      }
      o =
          o.with(
              iterations != null ? iterations : o.iterations(),
              duration != null ? duration : o.duration(),
              maxMib != null ? (long) maxMib << 20 : o.maxBytes());
      o =
          o.withShape(
              depth.or(o.depth()), servers.or(o.servers()), dir != null ? dir : o.directory());
    } catch (IllegalArgumentException e) {
      throw out.invalid(e.getMessage());
    }
    o = o.withProgress(out.progress());
    BenchReport report = MemoryBench.run(o);
    return out.emit(report);
  }
}
