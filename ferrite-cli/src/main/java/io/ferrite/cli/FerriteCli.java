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
      ConfigCommand.class,
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
    configureLogging(System.getProperties());
    System.exit(commandLine().execute(args));
  }

  /** {@code --log-level}, global: every subcommand accepts it (picocli copies it down). */
  @CommandLine.Option(
      names = "--log-level",
      paramLabel = "LEVEL",
      scope = CommandLine.ScopeType.INHERIT,
      description = "log level of Ferrite's loggers: SEVERE, WARNING, INFO (default), FINE, ALL")
  void logLevel(String level) {
    setLogLevel(level);
  }

  private static final String LOGGING =
      "handlers=java.util.logging.ConsoleHandler\n"
          + ".level=INFO\n"
          + "java.util.logging.ConsoleHandler.level=ALL\n"
          + "java.util.logging.SimpleFormatter.format=%1$tT.%1$tL %4$s %3$s: %5$s%6$s%n\n";

  /**
   * One-line log records on stderr (processes log through System.Logger, i.e. JUL), unless the user
   * configured JUL (a {@code java.util.logging.config.file} or {@code .config.class} system
   * property): then the LogManager has already read the user's configuration and it is left alone.
   *
   * @return whether Ferrite's format was installed
   */
  static boolean configureLogging(java.util.Properties system) {
    if (system.getProperty("java.util.logging.config.file") != null
        || system.getProperty("java.util.logging.config.class") != null) {
      return false;
    }
    try {
      java.util.logging.LogManager.getLogManager()
          .readConfiguration(
              new java.io.ByteArrayInputStream(
                  LOGGING.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
      return true;
    } catch (IOException e) {
      // Keep the JDK's default logging.
      return false;
    }
  }

  /**
   * Sets the level of the root logger and of its handlers (a handler at INFO would drop FINE
   * records the logger lets through). An explicit flag wins over a user's configuration file.
   */
  static void setLogLevel(String name) {
    java.util.logging.Level level;
    try {
      level = java.util.logging.Level.parse(name.trim().toUpperCase(java.util.Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new CommandLine.TypeConversionException(
          "'"
              + name
              + "' (expected: SEVERE, WARNING, INFO, CONFIG, FINE, FINER, FINEST, ALL, OFF)");
    }
    java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
    root.setLevel(level);
    for (java.util.logging.Handler h : root.getHandlers()) {
      h.setLevel(level);
    }
  }
}
