package io.ferrite.cli.bench;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.HtmlReport;
import io.ferrite.bench.JsonReport;
import io.ferrite.cli.VersionProvider;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ferrite bench html}: the page {@code --html} writes, from JSON files written earlier by
 * {@code --json}, so pages of quoted figures need no rerun.
 */
@Command(
    name = "html",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    header = "Renders bench results saved with --json as one HTML page.",
    description = {
      "Reads one or more JSON files written by 'ferrite bench <suite> --json' and",
      "writes one self-contained page (inline SVG and CSS, no script, no network):",
      "per suite, each result beside its reference as bars with the ratio, latency",
      "percentiles (p50, p90, p99, p99.9) as charts, and the table of all results.",
    },
    footer = {
      "",
      "Examples:",
      "  ferrite bench html --from kv.json --out kv.html",
      "  ferrite bench html --from fabric.json kv.json --out bench.html",
    })
public final class HtmlBenchCommand implements Callable<Integer> {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Option(
      names = "--from",
      paramLabel = "JSON",
      arity = "1..*",
      required = true,
      description = "JSON files of 'ferrite bench ... --json', one section each, in order.")
  List<Path> from;

  @Option(names = "--out", paramLabel = "FILE", required = true, description = "The page to write.")
  Path out;

  @Option(
      names = "--title",
      paramLabel = "TEXT",
      description = "The page's title (default: the suites' names).")
  String title;

  @Override
  public Integer call() throws IOException {
    List<BenchReport> reports = new ArrayList<>();
    List<String> suites = new ArrayList<>();
    for (Path p : from) {
      BenchReport r;
      try {
        r = JsonReport.read(p);
      } catch (IllegalArgumentException e) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--from " + e.getMessage());
      } catch (IOException e) {
        throw new CommandLine.ParameterException(
            spec.commandLine(), "--from " + p + ": cannot read it (" + e + ")");
      }
      reports.add(r);
      suites.add(r.suite());
    }
    HtmlReport.write(
        out, title != null ? title : "ferrite bench " + String.join(", ", suites), reports);
    spec.commandLine().getErr().println("wrote " + out.toAbsolutePath());
    return 0;
  }
}
