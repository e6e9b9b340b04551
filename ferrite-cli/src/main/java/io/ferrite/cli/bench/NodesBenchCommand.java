package io.ferrite.cli.bench;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.nodes.NodesBench;
import io.ferrite.cli.DurationConverter;
import io.ferrite.cli.VersionProvider;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ferrite bench nodes}: see {@link NodesBench}. */
@Command(
    name = "nodes",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    sortOptions = false,
    header = "The nodes face (NodeKernel) against the fabric ops it is made of.",
    description = {
      "Reproduces the NodeKernel paper's Figures 5 and 7 on this machine: starts a",
      "master with the nodes extension and two memory servers in this process",
      "(all serving shm and tcp) and, per fabric, measures:",
      "  <f>.kv.{put,get}.{4B,4KiB,64KiB,1MiB}   KeyValue latency, ns; a 4 B value",
      "      is kept in the master's metadata, so its reference is one master RPC",
      "      (put: <f>.rpc.master, through the service executor; get:",
      "      <f>.rpc.master.inline, answered inline like a lookup); larger ones are",
      "      compared with a one-sided write or read of the same size",
      "      (<f>.write|read.<size>). The shm client reaches the master over shm too.",
      "  <f>.file.{write,read}.{1KiB,64KiB,1MiB}.bandwidth   a File through a",
      "      stream with that application buffer, MiB/s, beside memcpy (shm) or a",
      "      raw loopback stream (tcp); the file is 1 GiB unless less fits",
      "      (file.size says how big it was)",
      "  <f>.file.read.1MiB.bandwidth.samework   the same read beside a ceiling",
      "      doing the same work: the file's size copied from memory into one",
      "      1 MiB byte[] (shm: ceiling.memcpy.stream.1MiB.heap) or a raw stream",
      "      into one 1 MiB byte[] (tcp: ceiling.socket.stream.1MiB.heap)",
      "  <f>.lookup.threads.{1,4,16}   lookups/s beside master RPCs/s",
      "  <f>.create.{table,bag}   creates/s (4 B KeyValue in a non-enumerable",
      "      table; empty File in a bag) beside one thread's master RPCs/s",
      "  nodes.list.100000.entries   a table of 100 000 children listed,",
      "      entries/s beside one thread's lookups/s (first fabric only)",
      "  <f>.file.write.replicas.{1,2,3}.bandwidth   a File with 1-3 copies of",
      "      each block (a cluster of three servers of its own), beside replicas 1",
      "  <f>.file.read.afterdeath.bandwidth   a replicas-2 File read right after",
      "      a server holding copies stopped, beside the same read just before",
      "The master's journal is not fsynced per record unless --fsync (Crail",
      "keeps no log at all); removed blocks are reused after 100 ms.",
    },
    optionListHeading = "%nOptions:%n",
    footer = {
      "",
      "Examples:",
      "  ferrite bench nodes --json nodes.json",
      "  ferrite bench nodes --quick --fabrics shm",
      "",
      "JSON (--json FILE): the shape of 'bench fabric':",
      "  {\"suite\": \"nodes\", \"results\": [{\"name\", \"value\", \"unit\",",
      "   \"better\", \"reference\", \"reference_value\", \"ratio\"}, ...]}",
    })
public final class NodesBenchCommand implements Callable<Integer> {
  @CommandLine.Mixin BenchOutput out;

  @CommandLine.Mixin BenchOptions.ClientFabrics fabrics;

  @Option(
      names = "--iterations",
      paramLabel = "N",
      description = "Timed ops per latency (default: 5000; --quick: 200).")
  Integer iterations;

  @Option(
      names = "--duration",
      paramLabel = "TIME",
      converter = DurationConverter.class,
      description = "Length of each rate measurement (default: 2s; --quick: 200ms).")
  Duration duration;

  @Option(
      names = "--file-mib",
      paramLabel = "MIB",
      description = "File size for bandwidth (default: 1024; --quick: 64).")
  Long fileMib;

  @Option(
      names = "--list-children",
      paramLabel = "N",
      description = "Children of the container whose listing is timed (default: 100000; 0 skips).")
  Integer listChildren;

  @Option(
      names = "--fsync",
      description =
          "fsync the master's journal for the whole suite (group commit: one fsync covers what"
              + " was written while the previous one ran). The metadata rows always run with it.")
  boolean fsync;

  @Override
  public Integer call() throws Exception {
    NodesBench.Options d = out.quick() ? NodesBench.Options.quick() : NodesBench.Options.defaults();
    List<String> f = fabrics.given(out);
    NodesBench.Options o =
        new NodesBench.Options(
            f != null ? List.copyOf(f) : d.fabrics(),
            iterations != null ? iterations : d.iterations(),
            duration != null ? duration : d.duration(),
            fileMib != null ? fileMib << 20 : d.fileBytes(),
            fsync,
            listChildren != null ? listChildren : d.listChildren(),
            out.progress());
    BenchReport report = NodesBench.run(o);
    return out.emit(report);
  }
}
