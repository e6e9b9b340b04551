package io.ferrite.cli;

import io.ferrite.ycsb.FerriteKvDb;
import io.ferrite.ycsb.YcsbProperties;
import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code ferrite ycsb}: YCSB's own client against the kv face of a running cluster, with YCSB's own
 * flags ({@code -threads}, {@code -P}, {@code -p}, {@code -s}, {@code -target}, {@code
 * -load}/{@code -t}) beside Ferrite's spelling ({@code --threads}, {@code --load}).
 */
@Command(
    name = "ycsb",
    mixinStandardHelpOptions = true,
    description = {
      "Runs YCSB 0.17.0's Client with the Ferrite kv binding (io.ferrite.ycsb.FerriteKvDb)"
          + " against a running cluster, with Ferrite's workload files a to f (the standard core"
          + " workloads, 10,000 records, 100,000 operations) or your own (-P FILE). Load first,"
          + " then run.",
      "YCSB's flags work as they do with bin/ycsb: -threads N, -target OPS, -P FILE"
          + " (repeatable, later files win), -p KEY=VALUE (wins over files), -s, -load, -t."
          + " Properties are checked first: a key that is neither YCSB's nor the binding's"
          + " (ferrite.*), a workload other than CoreWorkload or a db other than FerriteKvDb is"
          + " refused, since YCSB itself would silently ignore it.",
      "-p ferrite.face=tree runs against the tree face (sorted keys) instead, which serves"
          + " workload e (scans; on the kv face they answer NOT_IMPLEMENTED);"
          + " -p ferrite.tree.path=server|client picks how reads search.",
      "Status lines (YCSB's -s) go to stderr every 10 s; YCSB prints its own report and exits"
          + " the JVM when done."
    },
    footer = {
      "",
      "Examples:",
      "  ferrite ycsb a --load                 insert the records into table usertable",
      "  ferrite ycsb a --threads 16           50%% reads, 50%% updates, zipfian",
      "  ferrite ycsb b -threads 4 -target 20000   YCSB's own flags",
      "  ferrite ycsb -P myworkload -load      a workload file of your own",
      "  ferrite ycsb c -p operationcount=200000 -p ferrite.fabric=tcp",
      "  ferrite ycsb b -p ferrite.cluster.file=/etc/ferrite/cluster",
      "  ferrite ycsb e --load -p ferrite.face=tree   scans need the tree face",
      "  ferrite ycsb e -p ferrite.face=tree -p ferrite.tree.path=client"
    })
final class YcsbCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Parameters(
      index = "0",
      arity = "0..1",
      paramLabel = "WORKLOAD",
      description = "Ferrite's workload file a, b, c, d, e or f (optional with -P).")
  String workload;

  @Option(
      names = {"--load", "-load"},
      description = "Run the load phase (insert the records).")
  boolean load;

  @Option(
      names = {"-t", "--run"},
      description = "Run the transaction phase (the default).")
  boolean run;

  @Option(
      names = {"--threads", "-threads"},
      paramLabel = "N",
      description = "Client threads (default: 1, or the files' threadcount).")
  Integer threads;

  @Option(
      names = {"--target", "-target"},
      paramLabel = "OPS",
      description = "Target operations per second over all threads (default: as fast as it can).")
  Integer target;

  @Option(
      names = {"-P"},
      paramLabel = "FILE",
      description = "A YCSB workload properties file; repeatable.")
  List<Path> files = new ArrayList<>();

  @Option(
      names = "--metrics-port",
      paramLabel = "PORT",
      description = "Serve the client's meters at http://127.0.0.1:PORT/metrics while it runs.")
  Integer metricsPort;

  @Option(
      names = {"-p"},
      paramLabel = "KEY=VALUE",
      description = "A YCSB or binding property, e.g. -p recordcount=100000 -p ferrite.fabric=tcp.")
  Map<String, String> properties = new LinkedHashMap<>();

  @Option(
      names = {"-s", "--status"},
      description = "Status every 10 s on stderr (always on; accepted as YCSB spells it).")
  boolean status;

  @Option(
      names = {"-db"},
      paramLabel = "CLASS",
      description = "The YCSB binding; only io.ferrite.ycsb.FerriteKvDb (the default).")
  String db;

  @Override
  public Integer call() throws IOException {
    List<String> args = clientArgs();
    String note = YcsbProperties.note(merged());
    if (note != null) {
      spec.commandLine().getErr().println("ferrite ycsb: note: " + note);
      spec.commandLine().getErr().flush();
    }
    site.ycsb.Client.main(args.toArray(new String[0]));
    return 0;
  }

  /**
   * The arguments for YCSB's {@code Client.main}, after checking them: Ferrite's workload file (a
   * temporary copy of the resource) and the -P files in order, then threads, target, status and the
   * -p properties, which YCSB applies last.
   */
  List<String> clientArgs() throws IOException {
    if (load && run) {
      throw new IllegalArgumentException("-load and -t: one phase at a time (load first)");
    }
    if (workload == null && files.isEmpty()) {
      throw new IllegalArgumentException("no workload: name one of a to f, or give -P FILE");
    }
    if (workload != null && !workload.matches("[a-f]")) {
      throw new IllegalArgumentException("workload: " + workload + " (expected: a to f)");
    }
    if (db != null && !db.equals(FerriteKvDb.class.getName())) {
      throw new IllegalArgumentException(
          "-db " + db + ": Ferrite's ycsb runs " + FerriteKvDb.class.getName() + " only");
    }
    if (threads != null && threads < 1) {
      throw new IllegalArgumentException("-threads: " + threads + " (expected: >= 1)");
    }
    if (target != null && target < 0) {
      throw new IllegalArgumentException("-target: " + target + " (expected: >= 0)");
    }
    List<String> problems = YcsbProperties.problems(merged());
    if (!problems.isEmpty()) {
      throw new IllegalArgumentException(String.join("; ", problems));
    }
    List<String> args = new ArrayList<>();
    args.add(load ? "-load" : "-t");
    args.addAll(List.of("-db", FerriteKvDb.class.getName()));
    if (workload != null) {
      args.addAll(List.of("-P", workloadFile(workload).toString()));
    }
    for (Path f : files) {
      args.addAll(List.of("-P", f.toString()));
    }
    if (threads != null || !merged().containsKey("threadcount")) {
      args.addAll(List.of("-threads", Integer.toString(threads == null ? 1 : threads)));
    }
    if (target != null) {
      args.addAll(List.of("-target", Integer.toString(target)));
    }
    args.add("-s");
    if (metricsPort != null) {
      args.addAll(List.of("-p", "ferrite.metrics.port=" + metricsPort));
    }
    properties.forEach((k, v) -> args.addAll(List.of("-p", k + "=" + v)));
    return args;
  }

  /** Every property of the run as YCSB will see it: workload file, -P files in order, -p. */
  private Properties merged() throws IOException {
    Properties p = new Properties();
    if (workload != null && workload.matches("[a-f]")) {
      try (InputStream in = resource(workload)) {
        p.load(in);
      }
    }
    for (Path f : files) {
      if (!Files.isReadable(f)) {
        throw new IllegalArgumentException("-P " + f + ": no such readable file");
      }
      try (Reader r = Files.newBufferedReader(f, StandardCharsets.ISO_8859_1)) {
        p.load(r);
      }
    }
    properties.forEach(p::setProperty);
    return p;
  }

  private static InputStream resource(String w) {
    return YcsbCommand.class.getResourceAsStream("/io/ferrite/ycsb/workloads/workload" + w);
  }

  private static Path workloadFile(String w) throws IOException {
    Path file = Files.createTempFile("ferrite-ycsb-workload" + w, "");
    file.toFile().deleteOnExit();
    try (InputStream in = resource(w)) {
      Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
    }
    return file;
  }
}
