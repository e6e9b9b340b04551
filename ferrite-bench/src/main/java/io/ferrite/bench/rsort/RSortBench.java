package io.ferrite.bench.rsort;

import io.ferrite.apps.rsort.LocalSort;
import io.ferrite.apps.rsort.RSortCoordinator;
import io.ferrite.apps.rsort.RSortJob;
import io.ferrite.apps.rsort.RSortLayout;
import io.ferrite.apps.rsort.RSortResult;
import io.ferrite.apps.rsort.RSortWorker;
import io.ferrite.apps.rsort.Records;
import io.ferrite.apps.worker.LocalCluster;
import io.ferrite.apps.worker.WorkerLauncher;
import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.Progress;
import io.ferrite.bench.Sizes;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.memory.RStore;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * {@code ferrite bench rsort}: RSort (RStore §V-C) with worker processes on a cluster started in
 * this process, beside the same records sorted in one JVM (the ceiling: no store, no copies through
 * it, no second process), measured in the same run.
 *
 * <p>Both sides use the same sort kernel (packed key prefixes, {@link
 * java.util.Arrays#parallelSort}, one copy in key order), in JVMs started the same way (heap and
 * direct-memory limits; a common fork-join pool as wide as the cores for the single JVM and 1/W of
 * them for each of the W workers, so both sides run as many threads). The distributed time is the
 * paper's: start of phase one to the end of phase two; generating the input is timed apart. Each
 * round runs the single-JVM sort, then the distributed one; with several rounds the best of each is
 * reported. The output of both is validated (count, checksum, order); a wrong output fails the run.
 *
 * <pre>
 * ceiling.local-sort.&lt;size&gt;.time        ms   single JVM: keys + parallelSort + copy
 * rsort.&lt;size&gt;.w&lt;W&gt;.time              ms   vs the ceiling: ratio = local / distributed
 * rsort.&lt;size&gt;.w&lt;W&gt;.bandwidth         MiB/s of input sorted, vs the ceiling's
 * rsort.&lt;size&gt;.w&lt;W&gt;.{classify,sort}   ms   the two phases
 * rsort.&lt;size&gt;.w&lt;W&gt;.{load,prepare}     ms   generating the input into the store and
 *                                          preparing buckets, warm-up (not in the time)
 * machine.load1.{start,end}                load average (1 min) before and after
 * </pre>
 */
public final class RSortBench {
  public static final String SUITE = "rsort";
  private static final String MS = "ms";

  /**
   * What to run.
   *
   * @param bytes data set size (bytes / 100 records)
   * @param workers worker processes
   * @param servers memory servers of the local cluster
   * @param seed the data set
   * @param rounds how many times each side runs (the best is reported)
   * @param fabric the workers' fabric (shm: same host)
   * @param launcher starts the worker and single-JVM processes
   * @param progress progress lines, or null
   */
  public record Options(
      long bytes,
      int workers,
      int servers,
      long seed,
      int rounds,
      String fabric,
      WorkerLauncher launcher,
      PrintStream progress) {
    public Options {
      if (bytes < Records.RECORD) {
        throw new IllegalArgumentException(
            "size: " + bytes + " B (expected: at least one " + Records.RECORD + "-byte record)");
      }
      if (bytes / Records.RECORD > Records.MAX_BUFFER_RECORDS) {
        throw new IllegalArgumentException(
            "size: "
                + bytes
                + " B (expected: at most "
                + (long) Records.MAX_BUFFER_RECORDS * Records.RECORD
                + ", what the single-JVM sort holds in one buffer)");
      }
      if (workers < 1 || workers > RSortJob.MAX_WORKERS) {
        throw new IllegalArgumentException(
            "workers: " + workers + " (expected: 1 to " + RSortJob.MAX_WORKERS + ")");
      }
      if (servers < 1 || servers > 16 || rounds < 1) {
        throw new IllegalArgumentException(
            "servers: " + servers + ", rounds: " + rounds + " (expected: 1 to 16, >= 1)");
      }
    }

    /** 1 GiB, 2 workers, 2 servers, 1 round over shm. */
    public static Options defaults(WorkerLauncher launcher) {
      return new Options(1L << 30, 2, 2, 1, 1, "shm", launcher, System.err);
    }

    /** A smoke test: 64 MiB. */
    public static Options quick(WorkerLauncher launcher) {
      return new Options(64L << 20, 2, 2, 1, 1, "shm", launcher, System.err);
    }
  }

  private RSortBench() {}

  public static BenchReport run(Options o) throws Exception {
    BenchReport report = new BenchReport(SUITE);
    Progress p = new Progress("bench " + SUITE, o.progress());
    long records = o.bytes() / Records.RECORD;
    String size = Sizes.label(o.bytes());
    String name = "rsort." + size + ".w" + o.workers();
    report.add(BenchResult.of("machine.load1.start", loadAverage(), "load", Better.LOWER));

    LocalSort.Result bestLocal = null;
    RSortResult bestDist = null;
    LocalCluster cluster = null;
    try {
      for (int round = 1; round <= o.rounds(); round++) {
        p.step("round " + round + ": single-JVM sort of " + records + " records (" + size + ")");
        LocalSort.Result local = local(o, records);
        p.step(
            String.format(
                Locale.ROOT,
                "single JVM: %.3f s (keys %.3f, parallelSort %.3f, copy %.3f)",
                local.totalNanos() / 1e9,
                local.keysNanos() / 1e9,
                local.sortNanos() / 1e9,
                local.permuteNanos() / 1e9));
        if (bestLocal == null || local.totalNanos() < bestLocal.totalNanos()) {
          bestLocal = local;
        }
        if (cluster == null) {
          long blocks = (long) o.workers() * o.workers() + 2L * o.workers() + 8;
          long perServer =
              ((long) (3.2 * o.bytes()) + blocks * (4L << 20)) / o.servers() + (128L << 20);
          p.step(
              "local cluster: master + "
                  + o.servers()
                  + " memory servers (tcp, shm), "
                  + Sizes.label(perServer / (1 << 20) * (1 << 20))
                  + " dram each");
          cluster = LocalCluster.start(o.servers(), perServer, o.fabric());
        }
        p.step("round " + round + ": RSort with " + o.workers() + " worker processes");
        RSortResult dist = distributed(o, cluster, records, round);
        if (!dist.valid()) {
          throw new IllegalStateException(
              "RSort's output is wrong: " + String.join("; ", dist.problems()));
        }
        if (bestDist == null || dist.sortNanos() < bestDist.sortNanos()) {
          bestDist = dist;
        }
        p.step(
            String.format(
                Locale.ROOT,
                "RSort: %.3f s, %.2f x the single JVM",
                dist.sortNanos() / 1e9,
                dist.sortNanos() / (double) local.totalNanos()));
      }
    } finally {
      if (cluster != null) {
        cluster.close();
      }
    }
    BenchResult localTime =
        report.add(
            BenchResult.of(
                "ceiling.local-sort." + size + ".time",
                bestLocal.totalNanos() / 1e6,
                MS,
                Better.LOWER));
    BenchResult localBandwidth =
        report.add(
            BenchResult.of(
                "ceiling.local-sort." + size + ".bandwidth",
                Sizes.mibPerSecond(o.bytes(), bestLocal.totalNanos()),
                Sizes.BANDWIDTH_UNIT,
                Better.HIGHER));
    report.add(
        BenchResult.of(
            "local-sort." + size + ".keys", bestLocal.keysNanos() / 1e6, MS, Better.LOWER));
    report.add(
        BenchResult.of(
            "local-sort." + size + ".parallelSort", bestLocal.sortNanos() / 1e6, MS, Better.LOWER));
    report.add(
        BenchResult.of(
            "local-sort." + size + ".copy", bestLocal.permuteNanos() / 1e6, MS, Better.LOWER));
    report.add(
        BenchResult.against(
            name + ".time", bestDist.sortNanos() / 1e6, MS, Better.LOWER, localTime));
    report.add(
        BenchResult.against(
            name + ".bandwidth",
            Sizes.mibPerSecond(o.bytes(), bestDist.sortNanos()),
            Sizes.BANDWIDTH_UNIT,
            Better.HIGHER,
            localBandwidth));
    long[] phases = bestDist.phaseNanos();
    report.add(
        BenchResult.of(name + ".classify", phases[RSortWorker.CLASSIFY] / 1e6, MS, Better.LOWER));
    report.add(BenchResult.of(name + ".sort", phases[RSortWorker.SORT] / 1e6, MS, Better.LOWER));
    for (String[] step :
        new String[][] {
          {"read-input", Integer.toString(RSortLayout.T_READ_INPUT)},
          {"scatter", Integer.toString(RSortLayout.T_SCATTER)},
          {"read-buckets", Integer.toString(RSortLayout.T_READ_BUCKETS)},
          {"parallelSort", Integer.toString(RSortLayout.T_SORT)},
          {"permute", Integer.toString(RSortLayout.T_PERMUTE)}
        }) {
      report.add(
          BenchResult.of(
              name + ".slowest-worker." + step[0],
              bestDist.slowest(Integer.parseInt(step[1])) / 1e6,
              MS,
              Better.LOWER));
    }
    report.add(BenchResult.of(name + ".load", phases[RSortWorker.LOAD] / 1e6, MS, Better.LOWER));
    report.add(
        BenchResult.of(name + ".prepare", phases[RSortWorker.PREPARE] / 1e6, MS, Better.LOWER));
    report.add(
        BenchResult.of(
            "local-sort." + size + ".generate", bestLocal.loadNanos() / 1e6, MS, Better.LOWER));
    report.add(BenchResult.of("machine.load1.end", loadAverage(), "load", Better.LOWER));
    p.step("done");
    return report;
  }

  /** The single-JVM sort in a JVM of its own, started like a worker. */
  private static LocalSort.Result local(Options o, long records)
      throws IOException, InterruptedException {
    Path dir = Files.createTempDirectory("ferrite-rsort-local");
    Path result = dir.resolve("result");
    try {
      long bytes = records * Records.RECORD;
      Process proc =
          o.launcher()
              .start(
                  "single JVM",
                  List.of(
                      "rsort-local",
                      "--records",
                      Long.toString(records),
                      "--seed",
                      Long.toString(o.seed()),
                      "--result",
                      result.toString()),
                  new WorkerLauncher.Jvm(
                      (256L << 20) + 24 * records,
                      2 * bytes + (64L << 20),
                      Runtime.getRuntime().availableProcessors(),
                      false));
      try {
        if (!proc.waitFor(30, TimeUnit.MINUTES)) {
          throw new IllegalStateException("the single-JVM sort did not finish in 30 minutes");
        }
      } finally {
        proc.destroyForcibly().waitFor();
      }
      if (proc.exitValue() != 0) {
        throw new IllegalStateException(
            "the single-JVM sort failed with status "
                + proc.exitValue()
                + " (its output is above, lines 'single JVM: ...')");
      }
      return LocalSort.Result.read(result);
    } finally {
      Files.deleteIfExists(result);
      Files.deleteIfExists(dir);
    }
  }

  private static RSortResult distributed(Options o, LocalCluster cluster, long records, int round)
      throws Exception {
    RSortJob job =
        new RSortJob(
            records,
            o.seed(),
            null,
            o.workers(),
            null,
            "r" + round + "/",
            true,
            Duration.ofMinutes(30));
    try (FerriteClient client = cluster.access().connect("bench-rsort");
        RSortCoordinator c =
            new RSortCoordinator(
                new RStore(client), cluster.access(), job, o.launcher(), o.progress())) {
      return c.run();
    }
  }

  /** The 1-minute load average from /proc/loadavg; NaN where there is none. */
  static double loadAverage() {
    try {
      String s = Files.readString(Path.of("/proc/loadavg"), StandardCharsets.US_ASCII);
      return Double.parseDouble(s.substring(0, s.indexOf(' ')));
    } catch (IOException | RuntimeException e) {
      return Double.NaN;
    }
  }
}
