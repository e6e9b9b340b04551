package io.ferrite.cli;

import io.ferrite.apps.carafe.CarafeGraph;
import io.ferrite.apps.carafe.VertexHandle;
import io.ferrite.apps.carafe.pregel.PregelCoordinator;
import io.ferrite.apps.carafe.pregel.PregelJob;
import io.ferrite.apps.carafe.pregel.PregelResult;
import io.ferrite.apps.worker.ClusterAccess;
import io.ferrite.apps.worker.JvmLauncher;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.memory.RStore;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ferrite graph pagerank|components}: Pregel jobs on a stored graph with the shared mailbox
 * (RStore §V-B), workers as processes (JVMs started here, like rsort's) or, with {@code
 * --in-process}, as threads of this JVM.
 */
final class GraphPregelCommands {
  private GraphPregelCommands() {}

  /**
   * What both jobs share: the workers, how they run (the graph's name: {@link GraphCommand.Sub}).
   */
  abstract static class PregelSub extends GraphCommand.Sub {
    @Option(
        names = "--workers",
        paramLabel = "N",
        defaultValue = "2",
        description = "Partition workers, 1 to 64 (default: 2).")
    int workers;

    @Option(
        names = "--in-process",
        description = "Run the workers as threads of this JVM instead of worker processes.")
    boolean inProcess;

    @Option(
        names = "--namespace-prefix",
        paramLabel = "P",
        defaultValue = "",
        description = "Prefix of the job's namespaces (default: none); two jobs at once need two.")
    String prefix;

    @Option(
        names = "--timeout",
        paramLabel = "TIME",
        defaultValue = "10m",
        converter = DurationConverter.class,
        description = "Longest time a superstep (or the load) may take (default: 10m).")
    Duration timeout;

    /** Runs {@code program} on the graph; the results stay in the vertices' slot 0. */
    PregelResult run(String program, int maxSupersteps) throws Exception {
      if (workers < 1 || workers > PregelJob.MAX_WORKERS) {
        throw new CommandLine.ParameterException(
            spec.commandLine(),
            "--workers: " + workers + " (expected: 1 to " + PregelJob.MAX_WORKERS + ")");
      }
      PregelJob job = new PregelJob(name, program, workers, maxSupersteps, prefix, timeout);
      PrintStream progress = quiet ? null : System.err;
      ClusterTarget.Resolved t = target.resolve();
      // The workers read the file this process chose (the client.secret when there is one).
      ClusterAccess access =
          new ClusterAccess(
              t.uri(), t.credentials().clusterId(), Path.of(t.credentials().origin()), "auto");
      try (FerriteClient client = access.connect("graph-coordinator");
          PregelCoordinator c = new PregelCoordinator(new RStore(client), job, progress)) {
        if (inProcess) {
          return c.runInThreads();
        }
        // Ctrl-C (or any exit) stops every worker process, as rsort's does.
        Thread hook = new Thread(c::close, "graph-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
          return c.runInProcesses(access, new JvmLauncher(FerriteCli.class.getName(), System.err));
        } finally {
          try {
            Runtime.getRuntime().removeShutdownHook(hook);
          } catch (IllegalStateException e) {
            // Already shutting down: the hook runs.
          }
        }
      }
    }

    void summary(PregelResult r) {
      long steps = r.supersteps();
      out()
          .printf(
              Locale.ROOT,
              "%d supersteps with %d %s in %.3f s (%.1f ms per superstep), %d messages;"
                  + " load %.3f s, total %.3f s%n",
              steps,
              workers,
              inProcess ? "worker threads" : "worker processes",
              r.computeNanos() / 1e9,
              steps == 0 ? 0.0 : r.computeNanos() / 1e6 / steps,
              r.messages(),
              r.loadNanos() / 1e9,
              r.totalNanos() / 1e9);
    }
  }

  @Command(
      name = "pagerank",
      mixinStandardHelpOptions = true,
      description = {
        "PageRank as Spark GraphX 3.5's static PageRank computes it (reset 0.15, every rank"
            + " starts at 1.0, ranks normalized to sum to the vertex count), --iterations"
            + " supersteps on the Pregel engine. The ranks stay in the graph's vertex records"
            + " (slot 0); the --top highest are printed with their file ids.",
      })
  static final class PageRankCommand extends PregelSub implements Callable<Integer> {
    @Option(
        names = "--iterations",
        paramLabel = "N",
        defaultValue = "20",
        description = "Iterations (default: 20).")
    int iterations;

    @Option(
        names = "--top",
        paramLabel = "K",
        defaultValue = "10",
        description = "Print the K highest ranks (default: 10; 0: none).")
    int top;

    @Override
    public Integer call() throws Exception {
      if (iterations < 1 || top < 0) {
        throw new CommandLine.ParameterException(
            spec.commandLine(),
            "--iterations: " + iterations + ", --top: " + top + " (expected: >= 1, >= 0)");
      }
      PregelResult r = run("pagerank:" + iterations, iterations + 2);
      summary(r);
      GraphCommand.withGraph(
          target,
          name,
          g -> {
            printTop(g, r.doubleValues(g));
            return null;
          });
      return 0;
    }

    private void printTop(CarafeGraph g, double[] ranks) {
      PrintWriter o = out();
      Integer[] order = new Integer[ranks.length];
      for (int v = 0; v < order.length; v++) {
        order[v] = v;
      }
      Arrays.sort(order, (a, b) -> Double.compare(ranks[b], ranks[a]));
      int k = Math.min(top, ranks.length);
      if (k > 0) {
        o.println("rank  vertex  pagerank");
      }
      try (VertexHandle h = g.vertex(0)) {
        for (int i = 0; i < k; i++) {
          o.printf(
              Locale.ROOT,
              "%4d  %d  %.6f%n",
              i + 1,
              h.moveTo(order[i]).externalId(),
              ranks[order[i]]);
        }
      }
      o.flush();
    }
  }

  @Command(
      name = "components",
      mixinStandardHelpOptions = true,
      description = {
        "Connected components of an undirected graph (one stored with --undirected) by min-label"
            + " propagation on the Pregel engine, until no label changes. Each vertex's label (the"
            + " smallest internal id in its component) stays in slot 0; prints the number of"
            + " components and the largest ones.",
      })
  static final class ComponentsCommand extends PregelSub implements Callable<Integer> {
    @Option(
        names = "--top",
        paramLabel = "K",
        defaultValue = "5",
        description = "Print the K largest components (default: 5).")
    int top;

    @Override
    public Integer call() throws Exception {
      PregelResult r = run("components", 100_000);
      summary(r);
      GraphCommand.withGraph(
          target,
          name,
          g -> {
            printComponents(g, r.values(g));
            return null;
          });
      return 0;
    }

    private void printComponents(CarafeGraph g, long[] labels) {
      Map<Long, Integer> size = new HashMap<>();
      for (long l : labels) {
        size.merge(l, 1, Integer::sum);
      }
      PrintWriter o = out();
      o.println("components: " + size.size());
      Long[] order = size.keySet().toArray(new Long[0]);
      Arrays.sort(order, (a, b) -> Integer.compare(size.get(b), size.get(a)));
      try (VertexHandle h = g.vertex(0)) {
        for (int i = 0; i < Math.min(top, order.length); i++) {
          o.printf(
              Locale.ROOT,
              "%8d vertices  (smallest id %d)%n",
              size.get(order[i]),
              h.moveTo(order[i]).externalId());
        }
      }
      o.flush();
    }
  }
}
