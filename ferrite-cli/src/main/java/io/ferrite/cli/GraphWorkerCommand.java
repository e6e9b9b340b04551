package io.ferrite.cli;

import io.ferrite.apps.carafe.pregel.PregelJob;
import io.ferrite.apps.carafe.pregel.PregelWorker;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ferrite graph-worker}: one partition worker process of a Pregel job ({@code ferrite graph
 * pagerank|components}), started by the job's coordinator (hidden: not for people to type). See
 * {@link PregelWorker}.
 */
@Command(
    name = "graph-worker",
    hidden = true,
    mixinStandardHelpOptions = true,
    description = "One partition worker process of a Pregel job (started by its coordinator).")
final class GraphWorkerCommand implements Callable<Integer> {
  @Mixin WorkerAccessOptions access;

  @Option(names = "--graph", required = true)
  String graph;

  @Option(names = "--program", required = true)
  String program;

  @Option(names = "--workers", required = true)
  int workers;

  @Option(names = "--worker", required = true)
  int worker;

  @Option(names = "--namespace-prefix", defaultValue = "")
  String prefix;

  @Option(names = "--region-address", required = true)
  long regionAddress;

  @Option(names = "--quiet")
  boolean quiet;

  @Override
  public Integer call() {
    // The superstep cap and the phase timeout are the coordinator's: a worker follows its phases.
    PregelJob job = new PregelJob(graph, program, workers, 1, prefix, Duration.ofHours(1));
    return PregelWorker.run(
        new PregelWorker.Args(access.access(), job, regionAddress, worker, access.parentPid),
        quiet ? null : System.err);
  }
}
