package io.ferrite.cli;

import io.ferrite.cli.bench.BenchCommand;
import io.ferrite.fabric.FerriteException;
import java.io.IOException;
import java.io.PrintWriter;
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
      "  ferrite local                 master + 2 memory servers on 127.0.0.1",
      "  ferrite bench fabric --quick  the fabrics against their ceilings",
      "  ferrite <command> --help      what a command does, its options, examples",
    },
    subcommands = {
      CommandLine.HelpCommand.class,
      BenchCommand.class,
      FsCommand.class,
      KvCommand.class,
      LocalCommand.class,
      MasterCommand.class,
      RSortCommand.class,
      RSortLocalCommand.class,
      RSortWorkerCommand.class,
      ServerCommand.class,
      StatusCommand.class,
      TlsCommand.class,
      YcsbCommand.class,
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
    return new CommandLine(new FerriteCli())
        .setCaseInsensitiveEnumValuesAllowed(true)
        .setExecutionExceptionHandler(FerriteCli::onFailure);
  }

  /**
   * A command failed: say what failed in one line. Ferrite's own errors carry their code and
   * whether a retry can help; anything else is a bug, so its stack trace follows.
   */
  static int onFailure(Exception e, CommandLine cmd, CommandLine.ParseResult parsed) {
    PrintWriter err = cmd.getErr();
    String command = cmd.getCommandSpec().qualifiedName();
    if (e instanceof FerriteException fe) {
      err.println(
          command
              + ": "
              + fe.getMessage()
              + (fe.retryable() ? " (retryable)" : "")
              + (fe.getCause() != null ? " [cause: " + fe.getCause() + "]" : ""));
    } else if (e instanceof IOException || e instanceof IllegalArgumentException) {
      err.println(command + ": " + e);
    } else {
      err.println(command + ": unexpected failure: " + e);
      e.printStackTrace(err);
    }
    err.flush();
    return 1;
  }

  public static void main(String[] args) {
    configureLogging();
    System.exit(commandLine().execute(args));
  }

  private static final String LOGGING =
      "handlers=java.util.logging.ConsoleHandler\n"
          + ".level=INFO\n"
          + "java.util.logging.ConsoleHandler.level=ALL\n"
          + "java.util.logging.SimpleFormatter.format=%1$tT.%1$tL %4$s %3$s: %5$s%6$s%n\n";

  /** One-line log records on stderr (processes log through System.Logger, i.e. JUL). */
  static void configureLogging() {
    try {
      java.util.logging.LogManager.getLogManager()
          .readConfiguration(
              new java.io.ByteArrayInputStream(
                  LOGGING.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    } catch (IOException e) {
      // Keep the JDK's default logging.
    }
  }
}
