package io.ferrite.cli;

import io.ferrite.apps.rsort.RSortJob;
import io.ferrite.apps.rsort.RSortWorker;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ferrite rsort-worker}: one worker process of {@code ferrite rsort}, started by the
 * coordinator (hidden: not for people to type). See {@link RSortWorker}.
 */
@Command(
    name = "rsort-worker",
    hidden = true,
    mixinStandardHelpOptions = true,
    description = "One worker process of 'ferrite rsort' (started by it).")
final class RSortWorkerCommand implements Callable<Integer> {
  @Mixin WorkerAccessOptions access;

  @Option(names = "--namespace-prefix", defaultValue = "")
  String prefix;

  @Option(names = "--coordinator-address", required = true)
  long coordinatorAddress;

  @Option(names = "--worker", required = true)
  int worker;

  @Option(names = "--workers", required = true)
  int workers;

  @Option(names = "--records", required = true)
  long records;

  @Option(names = "--seed", defaultValue = "0")
  long seed;

  @Option(names = "--input")
  Path input;

  @Option(names = "--output")
  Path output;

  @Option(names = "--quiet")
  boolean quiet;

  @Override
  public Integer call() {
    RSortJob job =
        new RSortJob(records, seed, input, workers, output, prefix, false, Duration.ofHours(1));
    return RSortWorker.run(
        new RSortWorker.Args(access.access(), job, coordinatorAddress, worker, access.parentPid),
        quiet ? null : System.err);
  }
}
