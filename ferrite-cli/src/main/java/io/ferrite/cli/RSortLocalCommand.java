package io.ferrite.cli;

import io.ferrite.apps.rsort.LocalSort;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ferrite rsort-local}: the single-JVM reference sort of {@code bench rsort}, in a JVM of
 * its own (hidden: started by the benchmark). See {@link LocalSort}.
 */
@Command(
    name = "rsort-local",
    hidden = true,
    mixinStandardHelpOptions = true,
    description = "The single-JVM reference sort of 'ferrite bench rsort' (started by it).")
final class RSortLocalCommand implements Callable<Integer> {
  @Option(names = "--records", required = true)
  long records;

  @Option(names = "--seed", defaultValue = "0")
  long seed;

  @Option(names = "--input")
  Path input;

  @Option(names = "--result", required = true)
  Path result;

  @Override
  public Integer call() throws Exception {
    LocalSort.run(records, seed, input).write(result);
    return 0;
  }
}
