package io.ferrite.cli.bench;

import io.ferrite.apps.worker.JvmLauncher;
import io.ferrite.bench.BenchReport;
import io.ferrite.bench.graph.GraphBench;
import io.ferrite.bench.graph.GraphXPeer;
import io.ferrite.cli.FerriteCli;
import io.ferrite.cli.SizeConverter;
import io.ferrite.cli.VersionProvider;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ferrite bench graph}: see {@link GraphBench}. */
@Command(
    name = "graph",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    sortOptions = false,
    header = "Carafe (graphs on the memory face) beside in-memory ceilings and Spark GraphX.",
    description = {
      "Generates an R-MAT graph (preset bench: 2^21 ids, 2^24 edges, about 1.1 M vertices;"
          + " --quick: small) into a temporary edge-list file that every side reads, starts a"
          + " local cluster in this process (--servers memory servers, shm) and measures:",
      "  ceiling.parse.edges-per-s          the file parsed and built in memory",
      "  carafe.import.edges-per-s          parsed, built and stored in RStore",
      "  ceiling.dijkstra.csr.explored-per-s  Dijkstra on --pairs random pairs on",
      "      the in-memory graph (vertices explored per second)",
      "  carafe.dijkstra.explored-per-s     the same searches on the stored graph,",
      "      every record and adjacency list read through the fabric",
      "  ceiling.reference.pagerank.*       PageRank, one thread, in this JVM",
      "  carafe.pagerank.w<W>.*             PageRank (--iterations) with W worker",
      "      processes: ms per superstep (mean; .median: the steady state, without",
      "      the JIT's first supersteps), supersteps' time, load; .vs-w1: beside",
      "      1 worker (target for W = 2: ratio >= 1.67, i.e. <= 0.6 x the time)",
      "  graphx.pagerank.*                  with --vs graphx: Spark GraphX 3.5",
      "      PageRank.run on the same file, local[cores], graph cached first",
      "  carafe.pagerank.w2.time.vs-graphx  ratio = GraphX time / Carafe's (target:",
      "      >= 2)",
      "",
      "Rounds (--rounds N, default 4; --quick: 1): each round times the reference (the"
          + " machine's speed in that round) and runs PageRank once with each worker count, the"
          + " counts ascending in the 1st, 3rd, ... round and descending in the others (1, 2, 2,"
          + " 1, 1, 2, 2, 1: ABBA), so each 2-worker job has a 1-worker job seconds away. This"
          + " machine's speed can move 2 x within minutes; a ratio taken within a round cancels"
          + " that. With more than one round:",
      "  ceiling.reference.pagerank.round<R>.ms-per-iteration  the machine's speed",
      "  carafe.pagerank.round<R>.w<W>.ms-per-superstep[.median]  each job",
      "  carafe.pagerank.round<R>.w<W>.x-w1[.by-medians]  W-worker / 1-worker time in",
      "      round R (by the supersteps' means; by their medians)",
      "  carafe.pagerank.w<W>.x-w1.rounds.{median,mean}  over the rounds (target for",
      "      W = 2: <= 0.6); .by-medians.{median,mean}: the same by medians",
      "  and every carafe.pagerank.w<W>.* and ceiling.reference.pagerank.* row above is",
      "      the median of its rounds'.",
      "Every answer is checked: stored Dijkstra = in-memory Dijkstra (the first 5 pairs also"
          + " = the plain reference); every PageRank, GraphX's too, within 1e-9 of the reference"
          + " per vertex. A wrong answer fails the run. Nothing is pinned to cores.",
      "",
      "--vs graphx needs the peer built: mvn -B -q -pl ferrite-graphx-peer -am package"
          + " -DskipTests (bin/ferrite's build does it), or FERRITE_GRAPHX_PEER=its jar.",
      "",
      "ratio > 1 means better than the reference. Progress goes to stderr, the table to stdout.",
    },
    optionListHeading = "%nOptions:%n",
    footer = {
      "",
      "Examples:",
      "  ferrite bench graph --quick                   small graph, seconds",
      "  ferrite bench graph --vs graphx --json graph.json",
      "  ferrite bench graph --workers 2 --pairs 20 --vs graphx",
      "  ferrite bench graph --pairs 1 --workers 1,2 --rounds 8   1 vs 2 workers, ABBA",
      "",
      "JSON (--json FILE):",
      "  {\"suite\": \"graph\", \"results\": [{\"name\", \"value\", \"unit\",",
      "   \"better\", \"reference\", \"reference_value\", \"ratio\"}, ...]}",
    })
public final class GraphBenchCommand implements Callable<Integer> {
  @CommandLine.Mixin BenchOutput out;

  @Option(
      names = "--vs",
      paramLabel = "PEER",
      description = "Also run the peer: graphx (Spark GraphX 3.5, a child JVM).")
  String vs;

  @Option(
      names = "--preset",
      paramLabel = "P",
      description = "The graph: tiny, small, bench, livejournal (default: bench; --quick: small).")
  String preset;

  @Option(names = "--seed", paramLabel = "S", description = "The graph and pairs (default: 1).")
  Long seed;

  @Option(
      names = "--workers",
      paramLabel = "N",
      split = ",",
      description = "Worker counts for PageRank, e.g. 1,2,4 (default: 1,2,4).")
  List<Integer> workers;

  @Option(
      names = "--pairs",
      paramLabel = "N",
      description = "Dijkstra's random pairs (default: 100).")
  Integer pairs;

  @Option(
      names = "--iterations",
      paramLabel = "N",
      description = "PageRank iterations (default: 20).")
  Integer iterations;

  @CommandLine.Mixin BenchOptions.Servers servers;

  @Option(
      names = "--in-process",
      description = "PageRank's workers as threads of this JVM instead of processes.")
  boolean inProcess;

  @Option(
      names = "--graphx-partitions",
      paramLabel = "N",
      description = "GraphX's edge partitions (default: one per core).")
  Integer graphxPartitions;

  @Option(
      names = "--graphx-heap",
      paramLabel = "SIZE",
      converter = SizeConverter.class,
      description = "The GraphX JVM's -Xmx (default: 6GiB; --quick: 1GiB).")
  Long graphxHeap;

  @Option(
      names = "--vertex-weight",
      paramLabel = "W",
      description =
          "The partitioner's vertex weight, an edge weighing 1 (default: Partitioner's, measured).")
  Long vertexWeight;

  @Option(
      names = "--rounds",
      paramLabel = "N",
      description =
          "Rounds of PageRank runs, every worker count once a round in ABBA order, ratios taken"
              + " within each round (default: 4; --quick: 1).")
  Integer rounds;

  @Override
  public Integer call() throws Exception {
    Path jar = out.vs(vs, "graphx") ? GraphXPeer.find() : null;
    JvmLauncher launcher =
        inProcess ? null : new JvmLauncher(FerriteCli.class.getName(), System.err);
    GraphBench.Options d =
        out.quick()
            ? GraphBench.Options.quick(jar, launcher)
            : GraphBench.Options.defaults(jar, launcher);
    GraphBench.Options o =
        out.options(
            () ->
                new GraphBench.Options(
                    preset != null ? preset : d.preset(),
                    seed != null ? seed : d.seed(),
                    pairs != null ? pairs : d.pairs(),
                    iterations != null ? iterations : d.iterations(),
                    workers != null ? workers : d.workers(),
                    servers.or(d.servers()),
                    d.fabric(),
                    jar,
                    graphxHeap != null ? graphxHeap : d.graphxHeapBytes(),
                    graphxPartitions != null ? graphxPartitions : d.graphxPartitions(),
                    launcher,
                    out.progress(),
                    vertexWeight != null ? vertexWeight : d.vertexWeight(),
                    rounds != null ? rounds : d.rounds()));
    BenchReport report = GraphBench.run(o);
    return out.emit(report);
  }
}
