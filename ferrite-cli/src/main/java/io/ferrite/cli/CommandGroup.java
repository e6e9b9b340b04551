package io.ferrite.cli;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * A command that groups subcommands ({@code ferrite}, {@code kv}, {@code tree}, {@code fs}, {@code
 * graph}, {@code tls}, {@code bench}): run without one, it prints its usage on stdout.
 */
public abstract class CommandGroup implements Runnable {
  @Spec protected CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }
}
