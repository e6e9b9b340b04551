package io.ferrite.cli.bench;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.HtmlReport;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Supplier;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/**
 * The options and output every {@code bench} suite shares: {@code --json}, {@code --html}, {@code
 * --quick}, {@code --quiet}; the report table on stdout, progress on stderr, the JSON file, the
 * HTML page. A picocli mixin.
 */
public final class BenchOutput {
  @CommandLine.Spec(CommandLine.Spec.Target.MIXEE)
  CommandSpec spec;

  @Option(
      names = "--json",
      paramLabel = "FILE",
      description = "Also write the results as JSON to FILE.")
  Path json;

  @Option(
      names = "--html",
      paramLabel = "FILE",
      description =
          "Also write the results as a self-contained HTML page (bars beside the"
              + " reference, latency percentile charts; inline SVG, no network) to FILE.")
  Path html;

  @Option(
      names = "--quick",
      description =
          "A short smoke-test run (seconds); numbers are noisy. Explicit options still win.")
  boolean quick;

  @Option(
      names = {"-q", "--quiet"},
      description = "No progress lines on stderr.")
  boolean quiet;

  /** Whether {@code --quick} was given. */
  public boolean quick() {
    return quick;
  }

  /** Where progress goes: stderr, or nowhere with {@code --quiet}. */
  public PrintStream progress() {
    return quiet ? null : System.err;
  }

  /**
   * A bad option value: the command line fails with {@code message} and the usage (exit status 2),
   * not with a stack trace.
   */
  public CommandLine.ParameterException invalid(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }

  /**
   * The suite's options as {@code build} makes them; an {@link IllegalArgumentException} it throws
   * (a suite's options check their values) is an {@link #invalid} command line.
   */
  public <O> O options(Supplier<O> build) {
    try {
      return build.get();
    } catch (IllegalArgumentException e) {
      throw invalid(e.getMessage());
    }
  }

  /**
   * Whether {@code --vs} asked for {@code peer}: false when it was not given; a peer other than
   * {@code peer} is an {@link #invalid} command line.
   */
  public boolean vs(String vs, String peer) {
    if (vs != null && !vs.equals(peer)) {
      throw invalid("--vs: unknown peer " + vs + " (expected: " + peer + ")");
    }
    return vs != null;
  }

  /** Fails the command line unless every name in {@code fabrics} is one of {@code allowed}. */
  public void checkFabrics(List<String> fabrics, List<String> allowed) {
    for (String f : fabrics) {
      if (!allowed.contains(f)) {
        throw invalid(
            "--fabrics: unknown fabric "
                + f
                + " (expected one of: "
                + String.join(", ", allowed)
                + ")");
      }
    }
  }

  /**
   * Prints the report's table and writes its JSON and its HTML page when asked; returns the exit
   * status.
   */
  public int emit(BenchReport report) throws IOException {
    spec.commandLine().getOut().print(report.table());
    spec.commandLine().getOut().flush();
    if (json != null) {
      report.writeJson(json);
      spec.commandLine().getErr().println("wrote " + json.toAbsolutePath());
    }
    if (html != null) {
      HtmlReport.write(html, "ferrite bench " + report.suite(), List.of(report));
      spec.commandLine().getErr().println("wrote " + html.toAbsolutePath());
    }
    return 0;
  }
}
