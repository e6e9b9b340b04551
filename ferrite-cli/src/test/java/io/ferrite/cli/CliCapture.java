package io.ferrite.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/**
 * Runs {@code ferrite} commands in this JVM and keeps what they print: tests extend it and read
 * {@link #out} and {@link #err}.
 */
public abstract class CliCapture {
  protected final StringWriter out = new StringWriter();
  protected final StringWriter err = new StringWriter();

  /** Runs one command line and returns its exit code; output accumulates in out and err. */
  protected int run(String... args) {
    CommandLine cli = FerriteCli.commandLine();
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(err, true));
    return cli.execute(args);
  }
}
