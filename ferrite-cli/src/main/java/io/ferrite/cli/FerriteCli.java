package io.ferrite.cli;

import io.ferrite.cli.bench.BenchCommand;
import io.ferrite.fabric.ErrorCode;
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
      GraphCommand.class,
      GraphWorkerCommand.class,
      KvCommand.class,
      LocalCommand.class,
      MasterCommand.class,
      RSortCommand.class,
      RSortLocalCommand.class,
      RSortWorkerCommand.class,
      ServerCommand.class,
      StatusCommand.class,
      TlsCommand.class,
      TreeCommand.class,
      TxCommand.class,
      YcsbCommand.class,
    })
public final class FerriteCli extends CommandGroup {
  /** The command line with Ferrite's settings; tests drive it without exiting the JVM. */
  public static CommandLine commandLine() {
    CommandLine cli =
        new CommandLine(new FerriteCli())
            .setCaseInsensitiveEnumValuesAllowed(true)
            .setExecutionExceptionHandler(FerriteCli::onFailure);
    // YCSB's flags are single-dash words (-threads, -target, -load): clustered short options
    // would read a misspelt -threds as -t -h ... and print the help instead of an error.
    cli.getSubcommands().get("ycsb").setPosixClusteredShortOptionsAllowed(false);
    return cli;
  }

  /**
   * A command failed: say what failed in one line, {@code error: CODE: message}, and on a second
   * line what to do where that is known. Wrappers the user did not ask for (an {@link IOException}
   * around a Ferrite error, a {@code CompletionException}) are taken off: the first {@link
   * FerriteException} in the cause chain is what failed. Anything that is neither Ferrite's nor an
   * I/O or argument error is a bug, so its stack trace follows.
   */
  static int onFailure(Exception e, CommandLine cmd, CommandLine.ParseResult parsed) {
    PrintWriter err = cmd.getErr();
    Throwable what = rootOf(e);
    err.println("error: " + describe(what));
    String hint = what instanceof FerriteException fe ? hint(fe.code()) : null;
    if (hint != null) {
      err.println("  " + hint);
    }
    if (!(what instanceof FerriteException
        || what instanceof IOException
        || what instanceof IllegalArgumentException)) {
      err.println("  (unexpected failure in " + cmd.getCommandSpec().qualifiedName() + ")");
      e.printStackTrace(err);
    }
    err.flush();
    return 1;
  }

  /**
   * The failure to show for {@code e}: the first {@link FerriteException} in its cause chain, else
   * {@code e} without the plain wrappers ({@code IOException}, {@code UncheckedIOException}, {@code
   * RuntimeException}, {@code CompletionException}, {@code ExecutionException}) whose only content
   * is their cause.
   */
  static Throwable rootOf(Throwable e) {
    for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
      if (t instanceof FerriteException) {
        return t;
      }
    }
    Throwable t = e;
    while (t.getCause() != null && isWrapper(t)) {
      t = t.getCause();
    }
    return t;
  }

  private static boolean isWrapper(Throwable t) {
    Class<?> c = t.getClass();
    return c == IOException.class
        || c == java.io.UncheckedIOException.class
        || c == RuntimeException.class
        || c == java.util.concurrent.CompletionException.class
        || c == java.util.concurrent.ExecutionException.class;
  }

  /**
   * One line for a failure: {@code CODE: message} for Ferrite's errors (with "(retryable)" when a
   * retry can help), the message alone for an argument error, and the exception's simple name and
   * message otherwise ({@code NoSuchFileException: /x}: the name is half of what such a message
   * says).
   */
  static String describe(Throwable t) {
    if (t instanceof FerriteException fe) {
      return fe.getMessage() + (fe.retryable() ? " (retryable)" : "");
    }
    if (t instanceof IllegalArgumentException && t.getMessage() != null) {
      return t.getMessage();
    }
    return t.getClass().getSimpleName() + (t.getMessage() != null ? ": " + t.getMessage() : "");
  }

  /** What a user can do about an error with {@code code}, or null when there is nothing general. */
  static String hint(ErrorCode code) {
    return switch (code) {
      case NO_SPACE, TOO_LARGE ->
          "the cluster is out of space: 'ferrite status' shows capacity;"
              + " free some ('ferrite fs rm', 'ferrite kv drop') or give servers more"
              + " ('ferrite local --dram SIZE --disk SIZE', 'ferrite server --dram')";
      case NOT_FOUND, NO_SUCH_REGION ->
          "check the name: 'ferrite fs ls', 'ferrite kv tables', 'ferrite tree list'";
      case UNAVAILABLE, TIMEOUT ->
          "is the cluster running? 'ferrite status' checks;" + " 'ferrite local' starts one";
      case AUTH_FAILED, PERMISSION_DENIED ->
          "check the secret: --secret-file, or the cluster"
              + " file 'ferrite local' wrote (admin commands need the root secret)";
      case BUSY, CONFLICT -> "retry: the cluster is busy or another client got there first";
      case DATA_LOST ->
          "the memory that held it is gone (a server restarted without it): delete it and write"
              + " it again; 'ferrite status' shows what was lost";
      default -> null;
    };
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
