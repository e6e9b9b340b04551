package io.ferrite.cli;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code ferrite ycsb}: YCSB's own client against the kv face of a running cluster. */
@Command(
    name = "ycsb",
    mixinStandardHelpOptions = true,
    description = {
      "Runs YCSB 0.17.0's Client with the Ferrite kv binding (io.ferrite.ycsb.FerriteKvDb)"
          + " against a running cluster, with Ferrite's workload files a to f (the standard core"
          + " workloads, 10,000 records, 100,000 operations). Load first, then run.",
      "Workload e (scans) answers NOT_IMPLEMENTED: the tree face will serve it.",
      "YCSB prints its own report and exits the JVM when done."
    },
    footer = {
      "",
      "Examples:",
      "  ferrite ycsb a --load                 insert the records into table usertable",
      "  ferrite ycsb a --threads 16           50% reads, 50% updates, zipfian",
      "  ferrite ycsb c -p operationcount=1000000 -p ferrite.fabric=tcp",
      "  ferrite ycsb b -p ferrite.cluster.file=/etc/ferrite/cluster"
    })
final class YcsbCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Parameters(index = "0", description = "workload: a, b, c, d, e or f")
  String workload;

  @Option(names = "--load", description = "Run the load phase (insert the records).")
  boolean load;

  @Option(names = "--threads", description = "Client threads.", defaultValue = "1")
  int threads;

  @Option(
      names = "--metrics-port",
      paramLabel = "PORT",
      description = "Serve the client's meters at http://127.0.0.1:PORT/metrics while it runs.")
  Integer metricsPort;

  @Option(
      names = {"-p"},
      description = "A YCSB or binding property, e.g. -p recordcount=100000 -p ferrite.fabric=tcp.")
  Map<String, String> properties = Map.of();

  @Override
  public Integer call() throws IOException {
    if (!workload.matches("[a-f]")) {
      throw new IllegalArgumentException("workload: " + workload + " (expected: a to f)");
    }
    Path file = Files.createTempFile("ferrite-ycsb-workload" + workload, "");
    file.toFile().deleteOnExit();
    try (InputStream in =
        YcsbCommand.class.getResourceAsStream("/io/ferrite/ycsb/workloads/workload" + workload)) {
      Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
    }
    List<String> args = new ArrayList<>();
    args.add(load ? "-load" : "-t");
    args.addAll(List.of("-db", "io.ferrite.ycsb.FerriteKvDb", "-P", file.toString()));
    args.addAll(List.of("-threads", Integer.toString(threads), "-s"));
    if (metricsPort != null) {
      args.addAll(List.of("-p", "ferrite.metrics.port=" + metricsPort));
    }
    properties.forEach((k, v) -> args.addAll(List.of("-p", k + "=" + v)));
    site.ycsb.Client.main(args.toArray(new String[0]));
    return 0;
  }
}
