package io.ferrite.cli;

import io.ferrite.apps.rsort.RSortCoordinator;
import io.ferrite.apps.rsort.RSortJob;
import io.ferrite.apps.rsort.RSortResult;
import io.ferrite.apps.rsort.RecordFiles;
import io.ferrite.apps.rsort.Records;
import io.ferrite.apps.worker.ClusterAccess;
import io.ferrite.apps.worker.JvmLauncher;
import io.ferrite.apps.worker.LocalCluster;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.memory.RStore;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;
import picocli.CommandLine;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code ferrite rsort}: RStore's distributed sort (§V-C) with worker processes. */
@Command(
    name = "rsort",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    sortOptions = false,
    header = "Sorts sortbenchmark records (gensort layout) with RSort on the memory face.",
    description = {
      "RSort, RStore's two-phase bucket sort (RStore paper section V-C), with --workers worker"
          + " processes (JVMs started here) that coordinate through a barrier of byte flags in a"
          + " shared namespace:",
      "  load       worker i generates (--gen, from --seed) or reads (--input) its",
      "             share of the records into namespace input_i (not timed)",
      "  phase one  each worker reads its share and classifies it by key range into",
      "             its private bucket namespaces worker_i_bucket_j, one large",
      "             one-sided write per bucket",
      "  phase two  worker j maps every worker_*_bucket_j, assembles and sorts key",
      "             range j and writes it to namespace final_j",
      "  validate   like valsort: the final_j read back in order hold the input's",
      "             record count and checksum (sum of per-record XXH3-64), every key",
      "             in order (not timed)",
      "Records: 100 B, a 10-byte key (unsigned order), gensort's binary layout. The sort time"
          + " is from the start of phase one until every worker has written its final_j.",
      "",
      "The cluster: --local starts one in this process (a master and --servers memory servers"
          + " on 127.0.0.1, sized for the sort); otherwise --cluster / FERRITE_CLUSTER / the"
          + " cluster file of 'ferrite local' (workers use the same secret file). Progress goes"
          + " to stderr, the summary to stdout. The final_j namespaces stay (they are the output)"
          + " unless --delete-output; input and buckets are deleted. Exit status 0 only if the"
          + " output validated. Ctrl-C stops every worker.",
    },
    footer = {
      "",
      "Examples:",
      "  ferrite rsort --gen 256MiB --workers 2     on the cluster of 'ferrite local'",
      "  ferrite rsort --local --gen 1GiB --workers 2",
      "  ferrite rsort --local --gen 20MB --workers 2 --output /tmp/sorted --seed 7",
      "  ferrite rsort --input /data/gensort-out --workers 4 --namespace-prefix job1/",
      "  ferrite rsort --clean --workers 4 --namespace-prefix job1/",
      "      (deletes the output job1/final_j of the sort above)",
    })
final class RSortCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin ClusterTarget target;

  @ArgGroup(exclusive = true, multiplicity = "1")
  Source source;

  static final class Source {
    @Option(
        names = "--gen",
        paramLabel = "SIZE",
        converter = SizeConverter.class,
        description = "Generate SIZE bytes of records (SIZE / 100 records), e.g. 20MB, 1GiB.")
    Long gen;

    @Option(
        names = "--input",
        paramLabel = "PATH",
        description =
            "Sort the records in PATH: a file, or every file of a directory in name order.")
    Path input;

    @Option(
        names = "--clean",
        description =
            "Sort nothing: delete the namespaces of a sort with this --namespace-prefix and"
                + " --workers (an earlier output, or what a killed sort left).")
    boolean clean;
  }

  @Option(
      names = "--workers",
      paramLabel = "N",
      defaultValue = "2",
      description = "Worker processes and key ranges, 1 to 64 (default: 2).")
  int workers;

  @Option(
      names = "--output",
      paramLabel = "DIR",
      description =
          "Also write key range j to DIR/part-0000j (in order: cat DIR/part-* is sorted).")
  Path output;

  @Option(
      names = "--seed",
      paramLabel = "S",
      defaultValue = "1",
      description = "The data set --gen makes (default: 1): the same seed, the same records.")
  long seed;

  @Option(
      names = "--namespace-prefix",
      paramLabel = "P",
      defaultValue = "",
      description = "Prefix of every namespace of this sort (default: none), e.g. job1/.")
  String prefix;

  @Option(
      names = "--local",
      description = "Start a cluster in this process for the sort (stopped at the end).")
  boolean local;

  @Option(
      names = "--servers",
      paramLabel = "N",
      defaultValue = "2",
      description = "With --local: memory servers, 1 to 16 (default: 2).")
  int servers;

  @Option(
      names = "--fabric",
      paramLabel = "NAME",
      defaultValue = "auto",
      description = "Fabric of the one-sided ops: auto (shm on this host), shm or tcp.")
  String fabric;

  @Option(names = "--delete-output", description = "Delete the final_j namespaces at the end.")
  boolean deleteOutput;

  @Option(
      names = "--timeout",
      paramLabel = "TIME",
      defaultValue = "30m",
      converter = DurationConverter.class,
      description = "Longest time any phase may take (default: 30m).")
  Duration timeout;

  @Option(
      names = {"-q", "--quiet"},
      description = "No progress lines on stderr (worker failures are still reported).")
  boolean quiet;

  @Override
  public Integer call() throws Exception {
    CommandLine cl = spec.commandLine();
    if (workers < 1 || workers > RSortJob.MAX_WORKERS) {
      throw new CommandLine.ParameterException(
          cl, "--workers: " + workers + " (expected: 1 to " + RSortJob.MAX_WORKERS + ")");
    }
    if (!List.of("auto", "shm", "tcp").contains(fabric)) {
      throw new CommandLine.ParameterException(
          cl, "--fabric: " + fabric + " (expected: auto, shm or tcp)");
    }
    long records;
    if (source.clean) {
      records = 1;
    } else if (source.gen != null) {
      if (source.gen < Records.RECORD) {
        throw new CommandLine.ParameterException(
            cl,
            "--gen: "
                + source.gen
                + " B is less than one "
                + Records.RECORD
                + "-byte record (expected: e.g. 20MB or 1GiB)");
      }
      records = source.gen / Records.RECORD;
    } else {
      records = RecordFiles.records(RecordFiles.list(source.input));
    }
    if (output != null && Files.exists(output) && !Files.isDirectory(output)) {
      throw new CommandLine.ParameterException(cl, "--output: " + output + " is not a directory");
    }
    RSortJob job =
        new RSortJob(records, seed, source.input, workers, output, prefix, deleteOutput, timeout);
    PrintStream progress = quiet ? null : System.err;
    AtomicReference<RSortCoordinator> running = new AtomicReference<>();
    AtomicReference<LocalCluster> cluster = new AtomicReference<>();
    // Ctrl-C (or any exit) stops every worker process and the local cluster.
    Thread hook =
        new Thread(
            () -> {
              RSortCoordinator c = running.get();
              if (c != null) {
                c.close();
              }
              LocalCluster lc = cluster.get();
              if (lc != null) {
                lc.close();
              }
            },
            "rsort-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      ClusterAccess access;
      if (local) {
        if (servers < 1 || servers > 16) {
          throw new CommandLine.ParameterException(
              cl, "--servers: " + servers + " (expected: 1 to 16)");
        }
        cluster.set(LocalCluster.start(servers, bytesPerServer(job), fabric));
        access = cluster.get().access();
      } else {
        ClusterTarget.Resolved t;
        try {
          t = target.resolve();
        } catch (IllegalArgumentException e) {
          throw new FerriteException(
              ErrorCode.INVALID_ARGUMENT,
              e.getMessage() + "; or pass --local to start a cluster for the sort");
        }
        // The workers read the file this process chose (the client.secret when there is one).
        access =
            new ClusterAccess(
                t.uri(), t.credentials().clusterId(), Path.of(t.credentials().origin()), fabric);
      }
      try (FerriteClient client = access.connect("rsort-coordinator")) {
        RSortCoordinator c =
            new RSortCoordinator(
                new RStore(client),
                access,
                job,
                new JvmLauncher(FerriteCli.class.getName(), System.err),
                progress);
        if (source.clean) {
          List<List<String>> r = c.clean();
          PrintWriter out = cl.getOut();
          out.println("deleted: " + (r.get(0).isEmpty() ? "nothing" : String.join(", ", r.get(0))));
          if (!r.get(1).isEmpty()) {
            out.println("left (still mapped): " + String.join(", ", r.get(1)));
          }
          out.flush();
          return r.get(1).isEmpty() ? 0 : 1;
        }
        running.set(c);
        RSortResult result;
        try {
          result = c.run();
        } catch (Exception e) {
          c.close();
          if (!local) {
            List<String> left = c.deleteNamespaces();
            if (!left.isEmpty()) {
              cl.getErr()
                  .println(
                      "rsort: left behind (mapped by stopped workers until their sessions"
                          + " expire; delete them later): "
                          + String.join(", ", left));
            }
          }
          throw e;
        } finally {
          c.close();
        }
        PrintWriter out = cl.getOut();
        out.print(result.describe());
        if (output != null) {
          out.println("output: " + workers + " file(s) in " + output.toAbsolutePath());
        }
        if (!local && !deleteOutput) {
          out.println(
              "output namespaces: "
                  + job.finalNamespace(0)
                  + (workers > 1 ? " .. " + job.finalNamespace(workers - 1) : ""));
        }
        out.flush();
        return result.valid() ? 0 : 1;
      }
    } finally {
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException e) {
        // Already shutting down: the hook runs.
      }
      if (cluster.get() != null) {
        cluster.get().close();
      }
    }
  }

  /** dram per server: input, buckets and output (a skewed input reserves more), plus slack. */
  private long bytesPerServer(RSortJob job) {
    double factor = job.input() == null ? 3.2 : 4.2;
    long blocks = (long) workers * workers + 2L * workers + 8;
    long total = (long) (job.bytes() * factor) + blocks * (4L << 20) + (64L << 20);
    return (total + servers - 1) / servers;
  }
}
