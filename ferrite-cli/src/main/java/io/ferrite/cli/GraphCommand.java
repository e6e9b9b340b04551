package io.ferrite.cli;

import io.ferrite.apps.carafe.CarafeGraph;
import io.ferrite.apps.carafe.Csr;
import io.ferrite.apps.carafe.Dijkstra;
import io.ferrite.apps.carafe.EdgeListImporter;
import io.ferrite.apps.carafe.EdgeListWriter;
import io.ferrite.apps.carafe.GraphLayout;
import io.ferrite.apps.carafe.RmatGenerator;
import io.ferrite.apps.carafe.VertexHandle;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Role;
import io.ferrite.memory.RStore;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code ferrite graph ...}: Carafe, RStore's graph engine (§V-B), for a person at a terminal. */
@Command(
    name = "graph",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    header = "Graphs in remote memory: import, explore (Dijkstra), Pregel (PageRank, components).",
    description = {
      "Carafe, RStore's graph engine (RStore paper section V-B). A graph NAME lives in two"
          + " namespaces: NAME.vertices (a header and one 48-byte record per vertex) and NAME.edges"
          + " (adjacency lists, 8 bytes per entry; an undirected edge is stored both ways).",
      "Vertex ids on the command line are the file's (external) ids. Progress goes to stderr"
          + " (per import phase, per superstep), results to stdout.",
    },
    footer = {
      "",
      "Examples:",
      "  ferrite graph generate web --preset small --out web.txt",
      "  ferrite graph import web2 web.txt",
      "  ferrite graph stat web",
      "  ferrite graph sssp web --from 0 --to 9",
      "  ferrite graph pagerank web --iterations 20 --workers 2 --top 5",
      "  ferrite graph generate friends --preset small --undirected",
      "  ferrite graph components friends --workers 2",
      "  ferrite graph delete web2",
    },
    subcommands = {
      GraphCommand.Generate.class,
      GraphCommand.Import.class,
      GraphPregelCommands.PageRankCommand.class,
      GraphPregelCommands.ComponentsCommand.class,
      GraphCommand.Sssp.class,
      GraphCommand.Stat.class,
      GraphCommand.Delete.class,
    })
final class GraphCommand extends CommandGroup {
  /** Connects, runs {@code body} with an RStore on the cluster, closes. */
  static <T> T withStore(ClusterTarget target, Function<RStore, T> body) {
    return target.withClient(Role.CLIENT, "ferrite-graph", true, c -> body.apply(new RStore(c)));
  }

  /** Opens graph {@code name}, runs {@code body}, closes the graph's mappings. */
  static <T> T withGraph(ClusterTarget target, String name, Function<CarafeGraph, T> body) {
    return withStore(
        target,
        store -> {
          CarafeGraph g = CarafeGraph.open(store, name);
          try {
            return body.apply(g);
          } finally {
            g.close();
          }
        });
  }

  /** What every graph command shares: the graph's name, the cluster, the output, -q. */
  abstract static class Sub {
    @Spec CommandSpec spec;
    @Mixin ClusterTarget target;

    @Parameters(index = "0", paramLabel = "NAME", description = "the graph's name")
    String name;

    @Option(
        names = {"-q", "--quiet"},
        description = "No progress lines on stderr.")
    boolean quiet;

    PrintWriter out() {
      return spec.commandLine().getOut();
    }

    GraphProgress progress() {
      return new GraphProgress(quiet ? null : spec.commandLine().getErr());
    }
  }

  /** Stores {@code csr} as {@code name} and prints what was stored. */
  static int store(Sub cmd, String name, Csr csr, GraphProgress p, long startNanos) {
    p.line("storing " + csr.vertices() + " vertices, " + csr.edges() + " adjacency entries");
    CarafeGraph g = withStore(cmd.target, s -> CarafeGraph.create(s, name, csr, p));
    return printStored(cmd, g, startNanos);
  }

  private static int printStored(Sub cmd, CarafeGraph g, long startNanos) {
    cmd.out()
        .printf(
            Locale.ROOT,
            "graph %s: %d vertices, %d edges%s%s, %s in RStore, in %.2f s%n",
            g.name(),
            g.vertexCount(),
            g.edgeCount(),
            g.undirected() ? " (undirected: each stored both ways)" : " (directed)",
            g.weighted() ? ", weighted" : "",
            mib(g.bytes()),
            (System.nanoTime() - startNanos) / 1e9);
    cmd.out().flush();
    return 0;
  }

  static String mib(long bytes) {
    return String.format(Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
  }

  @Command(
      name = "generate",
      mixinStandardHelpOptions = true,
      description = {
        "Generates an R-MAT graph (a, b, c = 0.57, 0.19, 0.19, seeded) and stores it as NAME."
            + " Presets: tiny (64 ids, 300 edges), small (16,384 ids, 100,000 edges), bench (2^21"
            + " ids, 2^24 edges: the benchmark's graph), livejournal (4,847,571 ids, 68,993,773"
            + " edges: the paper's graph's shape, a, b, c = 0.5, 0.17, 0.17). Vertices are the ids"
            + " some edge touches.",
      })
  static final class Generate extends Sub implements Callable<Integer> {
    @Option(
        names = "--preset",
        required = true,
        paramLabel = "P",
        description = "tiny, small, bench or livejournal.")
    String preset;

    @Option(names = "--seed", defaultValue = "1", description = "The graph (default: 1).")
    long seed;

    @Option(names = "--undirected", description = "Store every edge in both directions.")
    boolean undirected;

    @Option(
        names = "--out",
        paramLabel = "FILE",
        description = "Also write the edge list (SNAP format) to FILE, for 'graph import'.")
    Path out;

    @Override
    public Integer call() {
      long t0 = System.nanoTime();
      RmatGenerator gen = RmatGenerator.preset(preset, seed);
      if (undirected) {
        gen = gen.asUndirected();
      }
      GraphProgress p = progress();
      p.line("generating R-MAT '" + preset + "' (seed " + seed + ")");
      Csr csr = gen.generate(p);
      if (out != null) {
        EdgeListWriter.write(csr, out, p);
        p.line("wrote " + out.toAbsolutePath());
      }
      return store(this, name, csr, p, t0);
    }
  }

  @Command(
      name = "import",
      mixinStandardHelpOptions = true,
      description = {
        "Imports a SNAP edge list and stores it as NAME: '# comment' lines, then 'src dst' or"
            + " 'src dst weight' per line (ids: non-negative integers; all lines weighted or"
            + " none). Internal ids follow ascending file ids. A malformed line is an error that"
            + " names its line number; nothing is stored then.",
      })
  static final class Import extends Sub implements Callable<Integer> {
    @Parameters(index = "1", paramLabel = "FILE", description = "the edge list")
    Path file;

    @Option(names = "--undirected", description = "Store every edge in both directions.")
    boolean undirected;

    @Option(
        names = "--max-id",
        paramLabel = "N",
        defaultValue = "-1",
        description = "Refuse an id above N (default: no limit).")
    long maxId;

    @Override
    public Integer call() {
      long t0 = System.nanoTime();
      GraphProgress p = progress();
      p.line("importing " + file);
      // importGraph refuses a taken name before parsing, and touches the cluster only once the
      // file parsed: a bad line leaves nothing behind.
      CarafeGraph g =
          withStore(
              target,
              s ->
                  EdgeListImporter.importGraph(
                      s, name, file, new EdgeListImporter.Options(undirected, maxId), p));
      return printStored(this, g, t0);
    }
  }

  @Command(
      name = "sssp",
      mixinStandardHelpOptions = true,
      description = {
        "The shortest path from one vertex to another (Dijkstra, with early exit at the target)"
            + " on the stored graph: every vertex record and adjacency list it visits is read with"
            + " one-sided reads. Weights are the edges' (1 if unweighted). Prints the distance"
            + " (or unreachable), hops, the path and how many vertices were explored.",
      })
  static final class Sssp extends Sub implements Callable<Integer> {
    @Option(names = "--from", required = true, paramLabel = "ID", description = "Source id.")
    long from;

    @Option(names = "--to", required = true, paramLabel = "ID", description = "Target id.")
    long to;

    @Override
    public Integer call() {
      return withGraph(
          target,
          name,
          g -> {
            long src = internal(g, from);
            long dst = internal(g, to);
            long t0 = System.nanoTime();
            Dijkstra.Path path = Dijkstra.shortest(g, src, dst);
            long t1 = System.nanoTime();
            PrintWriter o = out();
            if (path.reachable()) {
              o.println("distance: " + format(path.distance()));
              o.println("hops: " + path.hops());
              StringBuilder ids = new StringBuilder();
              try (VertexHandle h = g.vertex(src)) {
                for (long v : path.vertices()) {
                  ids.append(ids.length() == 0 ? "" : " -> ").append(h.moveTo(v).externalId());
                }
              }
              o.println("path: " + ids);
            } else {
              o.println("distance: unreachable (no path from " + from + " to " + to + ")");
            }
            o.printf(
                Locale.ROOT,
                "explored: %d vertices in %.1f ms%n",
                path.explored(),
                (t1 - t0) / 1e6);
            o.flush();
            return 0;
          });
    }

    private long internal(CarafeGraph g, long external) {
      long v = g.internalId(external);
      if (v < 0) {
        throw new FerriteException(
            ErrorCode.NOT_FOUND, "vertex " + external + " is not in graph " + g.name());
      }
      return v;
    }

    private static String format(double d) {
      return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d);
    }
  }

  @Command(
      name = "stat",
      mixinStandardHelpOptions = true,
      description = "What graph NAME holds: vertices, edges, kind, bytes, when it was stored.")
  static final class Stat extends Sub implements Callable<Integer> {
    @Override
    public Integer call() {
      return withGraph(
          target,
          name,
          g -> {
            PrintWriter o = out();
            o.println("graph: " + g.name());
            o.println("vertices: " + g.vertexCount());
            o.println(
                "edges: "
                    + g.edgeCount()
                    + (g.undirected() ? " adjacency entries (undirected: each edge twice)" : ""));
            o.println("directed: " + !g.undirected());
            o.println("weighted: " + g.weighted());
            o.printf(
                Locale.ROOT,
                "mean out-degree: %.2f%n",
                g.vertexCount() == 0 ? 0.0 : g.edgeCount() / (double) g.vertexCount());
            o.println(
                "bytes: "
                    + g.bytes()
                    + " ("
                    + mib(g.bytes())
                    + "; "
                    + GraphLayout.VERTEX
                    + " B per vertex, "
                    + GraphLayout.EDGE
                    + " B per entry)");
            o.println(
                "namespaces: "
                    + GraphLayout.verticesNamespace(g.name())
                    + ", "
                    + GraphLayout.edgesNamespace(g.name()));
            o.println("stored: " + Instant.ofEpochMilli(g.importedMillis()));
            o.flush();
            return 0;
          });
    }
  }

  @Command(
      name = "delete",
      mixinStandardHelpOptions = true,
      description = "Deletes graph NAME (both namespaces); an error if there is none.")
  static final class Delete extends Sub implements Callable<Integer> {
    @Override
    public Integer call() {
      boolean deleted = withStore(target, s -> CarafeGraph.delete(s, name));
      if (!deleted) {
        throw new FerriteException(ErrorCode.NOT_FOUND, "no graph " + name);
      }
      out().println("deleted graph " + name);
      out().flush();
      return 0;
    }
  }
}
