package io.ferrite.cli;

import io.ferrite.cli.bench.BenchCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code ferrite}: the one command line of Ferrite. Each subcommand is a class of its own; the list
 * below has one entry per line so that branches adding commands merge without conflicts.
 */
@Command(
    name = "ferrite",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description = {
      "Ferrite: a distributed remote-memory store for the JVM.",
      "Memory servers lend their DRAM to clients, which reach it with one-sided reads, writes and"
          + " atomics (shm, tcp or in-JVM fabrics) and with RPC; a master keeps the metadata.",
    },
    footer = {
      "",
      "Examples:",
      "  ferrite local                      start a master and 2 memory servers on 127.0.0.1",
      "  ferrite bench fabric --quick       measure the fabrics against their ceilings",
      "  ferrite <command> --help           what a command does, its options, an example",
    },
    subcommands = {
      CommandLine.HelpCommand.class,
      BenchCommand.class,
    })
public final class FerriteCli implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  /** Without a subcommand, print the usage. */
  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /** The command line with Ferrite's settings; tests drive it without exiting the JVM. */
  public static CommandLine commandLine() {
    return new CommandLine(new FerriteCli()).setCaseInsensitiveEnumValuesAllowed(true);
  }

  public static void main(String[] args) {
    System.exit(commandLine().execute(args));
  }
}
