package io.ferrite.cli;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.logging.LogManager;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code ferrite} command: one CLI for every Ferrite process and tool. */
@Command(
    name = "ferrite",
    mixinStandardHelpOptions = true,
    version = "ferrite 0.1.0",
    description = "Ferrite: a distributed remote-memory store for the JVM.",
    footer = {
      "",
      "Start a cluster on this machine:  ferrite local",
      "Then, in another terminal:        ferrite status"
    },
    subcommands = {
      LocalCommand.class,
      MasterCommand.class,
      ServerCommand.class,
      StatusCommand.class,
      CommandLine.HelpCommand.class,
    })
public final class FerriteCli {
  private static final String LOGGING =
      "handlers=java.util.logging.ConsoleHandler\n"
          + ".level=INFO\n"
          + "java.util.logging.ConsoleHandler.level=ALL\n"
          + "java.util.logging.SimpleFormatter.format=%1$tT.%1$tL %4$s %3$s: %5$s%6$s%n\n";

  public static void main(String[] args) {
    System.exit(run(args));
  }

  /** Runs the command line and returns the exit code (for tests and the launcher). */
  public static int run(String... args) {
    configureLogging();
    return commandLine().execute(args);
  }

  /** The command line with Ferrite's error handling: a failure prints one line, exit code 1. */
  public static CommandLine commandLine() {
    CommandLine cl = new CommandLine(new FerriteCli());
    cl.setExecutionExceptionHandler(
        (ex, cmd, parse) -> {
          cmd.getErr().println("ferrite " + cmd.getCommandName() + ": " + ex.getMessage());
          return 1;
        });
    return cl;
  }

  /** One-line log records on stderr; no system properties are touched. */
  static void configureLogging() {
    try {
      LogManager.getLogManager()
          .readConfiguration(new ByteArrayInputStream(LOGGING.getBytes(StandardCharsets.UTF_8)));
    } catch (IOException e) {
      // Keep the JDK's default logging.
    }
  }
}
