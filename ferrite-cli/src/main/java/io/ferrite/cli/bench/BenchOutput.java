package io.ferrite.cli.bench;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.HtmlReport;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
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

  /** Fails the command line unless every name in {@code fabrics} is one of {@code allowed}. */
  public void checkFabrics(List<String> fabrics, List<String> allowed) {
    for (String f : fabrics) {
      if (!allowed.contains(f)) {
        throw new CommandLine.ParameterException(
            spec.commandLine(),
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
