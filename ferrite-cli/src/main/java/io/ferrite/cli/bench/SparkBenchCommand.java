package io.ferrite.cli.bench;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.JsonReport;
import io.ferrite.bench.PeerJars;
import io.ferrite.cli.SizeConverter;
import io.ferrite.cli.VersionProvider;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.FileTrees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ferrite bench spark}: starts the module {@code ferrite-spark-bench} as a child JVM (Spark
 * must not share this class path, as with {@code bench graph --vs graphx}) with a temporary {@code
 * SPARK_HOME} for its local-cluster executors, and reports what it measured.
 */
@Command(
    name = "spark",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    sortOptions = false,
    header = "Spark jobs on Ferrite's shuffle and broadcast beside Spark's built-in ones.",
    description = {
      "In Spark 3.5's local-cluster mode (--executors executor JVMs of one core each, in a"
          + " child JVM of this one), with a Ferrite cluster started in that JVM (a master and"
          + " two memory servers; shm: everything is on this host) unless --cluster names one:",
      "  sortByKey.<size>.*   a TeraSort-like sort of --size bytes of 100-byte",
      "      records (10-byte key, 90-byte value), generated in the map tasks",
      "  groupByKey.<size>.*  the same volume grouped, about 100 records per key",
      "      .job           the job's time (ms)",
      "      .shuffleWrite  the tasks' shuffle write time, summed (task metrics)",
      "      .fetchWait     the tasks' shuffle fetch wait (reads blocked), summed",
      "  broadcast.<size>.x<tasks>  a --broadcast-byte value created and read by",
      "      every task of a job: FerriteBroadcast against sc.broadcast",
      "ferrite.* is Ferrite's shuffle (or FerriteBroadcast), builtin.* Spark's sort shuffle"
          + " (or sc.broadcast), each the median of --reps repetitions run alternately (one"
          + " SparkContext per repetition and side). ratio = builtin / ferrite: > 1 means"
          + " Ferrite is faster. Issue #16's targets: job ratio >= 1.0 (aim: 1.2), fetch wait"
          + " ratio >= 1.43 (<= 0.7 x), broadcast ratio >= 1.0.",
      "Every job checks its output: records and checksum equal to the input's, the sort in"
          + " order; a wrong answer fails the run. Spark's local dirs (built-in shuffle files)"
          + " are under java.io.tmpdir; everything is removed at the end, also on failure or"
          + " Ctrl-C.",
      "",
      "Memory (defaults, --size 2g): the child JVM -Xmx2g (driver, broadcast value, Ferrite's"
          + " servers), executors 2 x 3 GiB heap, Ferrite's DRAM 2 x 1.9 GiB in /dev/shm,"
          + " about 2.2 GiB of built-in shuffle files in the page cache: about 15 GiB in all.",
      "",
      "Needs the module built: mvn -B -q -pl ferrite-spark-bench -am package -DskipTests"
          + " (bin/ferrite's build does it), or FERRITE_SPARK_BENCH=its jar (in target/lib).",
      "",
      "Progress goes to stderr, the table to stdout.",
    },
    optionListHeading = "%nOptions:%n",
    footer = {
      "",
      "Examples:",
      "  ferrite bench spark --quick                 16 MiB, 1 rep: a smoke test",
      "  ferrite bench spark --size 256m --reps 1",
      "  ferrite bench spark --json spark.json       the issue's run: 2 GiB, 3 reps",
      "",
      "JSON (--json FILE):",
      "  {\"suite\": \"spark\", \"results\": [{\"name\", \"value\", \"unit\",",
      "   \"better\", \"reference\", \"reference_value\", \"ratio\"}, ...]}",
    })
public final class SparkBenchCommand implements Callable<Integer> {
  /** Names the bench's jar explicitly (a distribution laid out differently). */
  static final String ENV = "FERRITE_SPARK_BENCH";

  static final String MODULE = "ferrite-spark-bench";

  @CommandLine.Mixin BenchOutput out;

  @Option(
      names = "--size",
      paramLabel = "SIZE",
      converter = SizeConverter.class,
      description = "Bytes of records per shuffle job (default: 2g; --quick: 16m).")
  Long size;

  @Option(
      names = "--reps",
      paramLabel = "N",
      description = "Repetitions per side, alternating (default: 3; --quick: 1).")
  Integer reps;

  @Option(
      names = "--executors",
      paramLabel = "N",
      description = "Executor JVMs, one core each (default: 2).")
  Integer executors;

  @Option(
      names = "--executor-memory",
      paramLabel = "SIZE",
      converter = SizeConverter.class,
      description = "Each executor's heap (default: 3g; --quick: 768m).")
  Long executorMemory;

  @Option(
      names = "--broadcast",
      paramLabel = "SIZE",
      converter = SizeConverter.class,
      description = "The broadcast value's size, 0 for none (default: 256m; --quick: 8m).")
  Long broadcast;

  @Option(
      names = "--driver-memory",
      paramLabel = "SIZE",
      converter = SizeConverter.class,
      description = "The child JVM's -Xmx (driver and Ferrite's servers; default: 2g).")
  Long driverMemory;

  @Option(
      names = "--cluster",
      paramLabel = "URI",
      description =
          "Use this Ferrite cluster (ferrite://host:port; its secret as spark.ferrite.* finds"
              + " it: FERRITE_CLUSTER_SECRET_FILE or the cluster file) instead of one started"
              + " in the child JVM.")
  String cluster;

  @Override
  public Integer call() throws Exception {
    // The child checks these too; here a bad value is a usage error before a JVM starts.
    check(size == null || size >= 1 << 20, "--size: " + size + " (expected: >= 1 MiB)");
    check(reps == null || (reps >= 1 && reps <= 20), "--reps: " + reps + " (expected: 1 to 20)");
    check(
        executors == null || (executors >= 1 && executors <= 16),
        "--executors: " + executors + " (expected: 1 to 16)");
    check(
        executorMemory == null || executorMemory >= 256 << 20,
        "--executor-memory: " + executorMemory + " (expected: >= 256 MiB)");
    check(
        broadcast == null || (broadcast >= 0 && broadcast <= 1 << 30),
        "--broadcast: " + broadcast + " (expected: 0 to 1 GiB)");
    Path jar = find();
    List<String> args = new ArrayList<>();
    if (out.quick()) {
      args.add("--quick");
    }
    add(args, "--size", size);
    add(args, "--reps", reps);
    add(args, "--executors", executors);
    add(args, "--executor-memory", executorMemory);
    add(args, "--broadcast", broadcast);
    add(args, "--cluster", cluster);
    if (out.progress() == null) {
      args.add("--quiet");
    }
    long heap = driverMemory != null ? driverMemory : 2L << 30;
    BenchReport report = run(jar, heap, args);
    return out.emit(report);
  }

  private void check(boolean ok, String message) {
    if (!ok) {
      throw out.invalid(message);
    }
  }

  private static void add(List<String> args, String name, Object value) {
    if (value != null) {
      args.add(name);
      args.add(value.toString());
    }
  }

  /**
   * Runs the bench's jar with {@code args} in a child JVM of {@code heapBytes}, its stderr
   * (progress, Spark's warnings) on ours, and returns its report.
   *
   * @throws IllegalStateException when the child fails (its output is above)
   */
  static BenchReport run(Path jar, long heapBytes, List<String> args)
      throws IOException, InterruptedException {
    Path home = Files.createTempDirectory("ferrite-spark-home-");
    Path json = home.resolve("report.json");
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx" + (heapBytes >> 20) + "m");
    cmd.add("-XX:MaxDirectMemorySize=1g");
    cmd.add("-jar");
    cmd.add(jar.toString());
    cmd.addAll(args);
    cmd.add("--json");
    cmd.add(json.toString());
    ProcessBuilder pb =
        new ProcessBuilder(cmd)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .redirectError(ProcessBuilder.Redirect.INHERIT);
    pb.environment().put("SPARK_HOME", home.toString());
    pb.environment().put("SPARK_SCALA_VERSION", "2.13");
    pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    Process p = pb.start();
    // Ctrl-C reaches the child too (same process group); a kill of this JVM alone ends the child
    // (its own hook removes its cluster and directories) and then the SPARK_HOME.
    Thread hook =
        new Thread(
            () -> {
              p.destroy();
              try {
                p.waitFor();
                FileTrees.delete(home);
              } catch (InterruptedException | IOException e) {
                Thread.currentThread().interrupt();
              }
            },
            "bench-spark-stop");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      int status = p.waitFor();
      if (status != 0) {
        throw new IllegalStateException(
            "the Spark bench failed with status " + status + " (its output is above)");
      }
      return JsonReport.read(json);
    } finally {
      p.destroy();
      p.waitFor();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // The hook runs anyway.
      }
      FileTrees.delete(home);
    }
  }

  /**
   * The bench's jar: {@code $FERRITE_SPARK_BENCH}, else {@code
   * <checkout>/ferrite-spark-bench/target/lib/ferrite-spark-bench-*.jar}, the checkout being the
   * nearest ancestor of this class's jar or directory that has {@code ferrite-spark-bench/} (as
   * {@code GraphXPeer} finds the GraphX peer).
   *
   * @throws FerriteException NOT_FOUND saying how to build it
   */
  static Path find() {
    return PeerJars.find(MODULE, ENV, "the Spark bench", SparkBenchCommand.class);
  }
}
