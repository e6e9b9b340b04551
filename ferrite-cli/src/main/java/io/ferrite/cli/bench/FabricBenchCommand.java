package io.ferrite.cli.bench;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.fabric.FabricBench;
import io.ferrite.bench.fabric.Fabrics;
import io.ferrite.cli.DurationConverter;
import io.ferrite.cli.VersionProvider;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ferrite bench fabric}: see {@link FabricBench}. */
@Command(
    name = "fabric",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    sortOptions = false,
    header = "Fabric read/RPC latency and bandwidth beside memcpy and raw-socket ceilings.",
    description = {
      "Measures each fabric's one-sided reads, empty RPCs and 1 MiB read/write",
      "bandwidth beside the ceiling each is bounded by, all in this one run.",
      "",
      "For each fabric it starts a server in this process over a region file",
      "(in /dev/shm when it exists), connects a client through the fabric and",
      "measures:",
      "  <fabric>.read.{8B,1KiB,64KiB}.{p50,p99,p99.9}  one read at a time, ns",
      "  <fabric>.rpc.empty.{p50,p99,p99.9}   empty request and response, ns,",
      "      served by a dispatch thread (not inline)",
      "  <fabric>.rpc.inline.{p50,p99,p99.9}  the same, answered inline",
      "  <fabric>.read.1MiB.bandwidth         1 MiB reads, --depth in flight",
      "  <fabric>.write.1MiB.bandwidth        1 MiB writes, --depth in flight",
      "  tcp.read.{8B,64B}.t{1,16}.ops        small reads/s: 1 or 16 threads on",
      "      the one connection, each doing one blocking read at a time",
      "  tcp.read.64B.batch16.t{1,16}.ops     reads/s in batches of 16 per flush",
      "  tcp.rpc.empty.t16.ops                empty calls/s (dispatch threads),",
      "      16 threads on the one connection, one call at a time each",
      "",
      "Ceilings, measured first and listed as ceiling.* results:",
      "  ceiling.memcpy.<size>             a direct-buffer to direct-buffer",
      "      copy of the same size over the same offsets: the copy a shm read",
      "      does, with nothing around it. shm and local are compared with it.",
      "  ceiling.socket.pingpong.<size>    raw loopback TCP (TCP_NODELAY)",
      "      between two threads, 8 B out and <size> back. tcp reads are",
      "      compared with it, and every fabric's empty RPC with its 8 B size.",
      "  ceiling.socket.stream.1MiB.bandwidth   a one-way raw stream of 1 MiB",
      "      writes: the reference of tcp bandwidth.",
      "  ceiling.socket.rr.1MiB.bandwidth  8 B out, 1 MiB back, one at a time.",
      "  ceiling.socket.rr.<size>[.batch16].t<N>.ops   raw request/response",
      "      ops/s: N threads, each on its own connection, 8 B requests for",
      "      <size> answers, one (or 16 in one write) at a time; the server",
      "      answers every request it has read with one write. The reference",
      "      of the tcp small-read throughput.",
      "",
      "Latencies are in ns (p50, p99, p99.9), bandwidths in MiB/s. ratio > 1",
      "means better than the reference (latency: reference/value; bandwidth:",
      "value/reference), so a ratio of 0.25 reads as a quarter of the ceiling.",
      "Progress goes to stderr, the table to stdout.",
    },
    optionListHeading = "%nOptions:%n",
    footer = {
      "",
      "Examples:",
      "  ferrite bench fabric                           shm and tcp, full run",
      "  ferrite bench fabric --quick --fabrics local   smoke test, seconds",
      "  ferrite bench fabric --fabrics tcp --duration 5s --json tcp.json",
      "",
      "JSON (--json FILE):",
      "  {\"suite\": \"fabric\", \"results\": [{\"name\", \"value\", \"unit\",",
      "   \"better\", \"reference\", \"reference_value\", \"ratio\"}, ...]}",
    })
public final class FabricBenchCommand implements Callable<Integer> {
  @CommandLine.Mixin BenchOutput out;

  @Option(
      names = "--fabrics",
      split = ",",
      paramLabel = "NAME",
      description =
          "Fabrics to measure, comma-separated: shm, tcp, tcp-tls (tcp with TLS 1.3, compared"
              + " with tcp when tcp comes first), local (default: shm,tcp,tcp-tls).")
  List<String> fabrics;

  @Option(
      names = "--iterations",
      paramLabel = "N",
      description =
          "Timed ops per latency measurement, after a warm-up of N/4 ops and at least a quarter"
              + " of --duration (default: 20000; --quick: 300).")
  Integer iterations;

  @Option(
      names = "--duration",
      paramLabel = "TIME",
      converter = DurationConverter.class,
      description =
          "Length of each bandwidth measurement, e.g. 500ms, 2s; a quarter as long warms up first"
              + " (default: 2s; --quick: 100ms).")
  Duration duration;

  @CommandLine.Mixin BenchOptions.Depth depth;

  @Option(
      names = "--region-mib",
      paramLabel = "MIB",
      description = "Size of the region each server serves (default: 128; --quick: 16).")
  Integer regionMib;

  @Option(
      names = "--dir",
      paramLabel = "DIR",
      description =
          "Where region files and sockets go; a temporary directory is made inside and deleted"
              + " (default: /dev/shm if it exists, else the temp directory).")
  Path dir;

  @Override
  public Integer call() throws Exception {
    FabricBench.Options o =
        out.quick() ? FabricBench.Options.quick() : FabricBench.Options.defaults();
    if (fabrics != null) {
      o = o.withFabrics(fabrics.stream().map(String::trim).filter(s -> !s.isEmpty()).toList());
    }
    if (iterations != null) {
      o = o.withIterations(iterations);
    }
    if (duration != null) {
      o = o.withDuration(duration);
    }
    o = o.withDepth(depth.or(o.depth()));
    if (regionMib != null) {
      o = o.withRegionBytes((long) regionMib << 20);
    }
    if (dir != null) {
      o = o.withDirectory(dir);
    }
    o = o.withProgress(out.progress());
    out.checkFabrics(o.fabrics(), Fabrics.NAMES);
    BenchReport report = FabricBench.run(o);
    return out.emit(report);
  }
}
