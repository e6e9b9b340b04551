package io.ferrite.apps.rsort;

import io.ferrite.apps.worker.ClusterAccess;
import io.ferrite.apps.worker.PhaseDriver;
import io.ferrite.apps.worker.WorkerLauncher;
import io.ferrite.apps.worker.WorkerProcesses;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.proto.Sizes;
import io.ferrite.memory.Barrier;
import io.ferrite.memory.Mapping;
import io.ferrite.memory.MemoryFlags;
import io.ferrite.memory.Namespace;
import io.ferrite.memory.RAddress;
import io.ferrite.memory.RStore;
import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * RSort's coordinator (RStore §V-A, §V-C): lays out the coordination region in its own namespace,
 * starts the worker processes, assigns each phase's work through the workers' areas and moves them
 * from phase to phase with the {@link Barrier}; then checks the result like valsort (the output's
 * count and checksum are the input's, and the key ranges are in order, inside and across).
 *
 * <p>The sort time is the paper's: from the start of phase one (classification) until every worker
 * has finished phase two (assembly and sorting) and written its {@code final_j}. Loading the input
 * and validating the output are timed apart.
 *
 * <p>While it waits, the coordinator watches its worker processes: one that exits before it
 * finished its phase fails the sort at once, with its status; a worker that fails reports why in
 * its area. {@link #close} stops every worker still running (also from a shutdown hook).
 */
public final class RSortCoordinator implements AutoCloseable {
  /** Below this size the workers start fast rather than run fast, and skip the JIT warm-up. */
  public static final long QUICK_START_BYTES = 256L << 20;

  /** How long workers get to abandon a failed sort (and delete their namespaces) by themselves. */
  static final java.time.Duration ABORT_WAIT = java.time.Duration.ofSeconds(10);

  private final RStore store;
  private final RSortJob job;
  private final PrintStream progress;
  private final int workers;
  private final WorkerProcesses procs;
  private final ClusterAccess access;
  private final boolean quiet;
  private final long startNanos = System.nanoTime();

  private Mapping coord;
  private Barrier barrier;
  private PhaseDriver driver;

  /** Whether this coordinator created the coordinator namespace (its prefix is this sort's). */
  private boolean ownsPrefix;

  private long[] phaseNanos = new long[RSortWorker.CLEANUP + 1];

  /**
   * @param store this process's client of the cluster (the coordinator's namespace and mapping)
   * @param access how the workers reach the same cluster
   * @param progress progress lines, or null for none
   */
  public RSortCoordinator(
      RStore store,
      ClusterAccess access,
      RSortJob job,
      WorkerLauncher launcher,
      PrintStream progress) {
    this.store = store;
    this.job = job;
    this.progress = progress;
    this.workers = job.workers();
    this.access = access;
    this.quiet = progress == null;
    this.procs = new WorkerProcesses(launcher);
  }

  /**
   * Runs the whole sort and returns what it measured and found; throws if it could not run (after
   * telling the workers to abandon the sort: they delete what they made and exit).
   */
  public RSortResult run() throws IOException, InterruptedException {
    Namespace ns;
    try {
      ns = store.createNamespace(job.coordinatorNamespace());
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.CONFLICT) {
        throw new FerriteException(
            ErrorCode.CONFLICT,
            "namespace '"
                + job.coordinatorNamespace()
                + "' exists: another sort with namespace prefix '"
                + job.prefix()
                + "' runs, or one failed without cleaning up; use another --namespace-prefix",
            e);
      }
      throw e;
    }
    ownsPrefix = true; // the coordinator namespace is this sort's: so are the others it names
    List<String> exist = new ArrayList<>();
    for (String name : names()) {
      if (!name.equals(job.coordinatorNamespace()) && exists(name)) {
        exist.add(name);
      }
    }
    if (!exist.isEmpty()) {
      ownsPrefix = false;
      store.deleteNamespace(job.coordinatorNamespace());
      throw new FerriteException(
          ErrorCode.CONFLICT,
          "namespace(s) "
              + String.join(", ", exist.subList(0, Math.min(4, exist.size())))
              + (exist.size() > 4 ? " and " + (exist.size() - 4) + " more" : "")
              + " exist (the output of an earlier sort?): delete them with 'ferrite rsort --clean"
              + " --workers "
              + workers
              + (job.prefix().isEmpty() ? "" : " --namespace-prefix " + job.prefix())
              + "', or use another --namespace-prefix");
    }
    try {
      return phases(ns);
    } catch (IOException | InterruptedException | RuntimeException e) {
      abort();
      throw e;
    } finally {
      if (coord != null) {
        coord.unmap(); // idempotent; after a failure, deleteNamespaces() cleans up
      }
    }
  }

  private boolean exists(String name) {
    try {
      store.joinNamespace(name);
      return true;
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.NOT_FOUND) {
        return false;
      }
      throw e;
    }
  }

  /** Every namespace name of the sort. */
  private List<String> names() {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < workers; i++) {
      names.add(job.inputNamespace(i));
      for (int j = 0; j < workers; j++) {
        names.add(job.bucketNamespace(i, j));
      }
      names.add(job.finalNamespace(i));
    }
    names.add(job.coordinatorNamespace());
    return names;
  }

  /**
   * After a failure: starts {@link RSortWorker#ABORT}, so the workers still running drop their
   * mappings, delete their namespaces and exit; waits a little for them, then stops the rest.
   */
  private void abort() throws InterruptedException {
    if (barrier != null) {
      try {
        barrier.start(RSortWorker.ABORT);
      } catch (RuntimeException e) {
        step("could not signal the abort to the workers: " + e);
      }
    }
    procs.awaitExit(ABORT_WAIT);
    close();
  }

  private RSortResult phases(Namespace ns) throws IOException, InterruptedException {
    long regionBytes = RSortLayout.regionBytes(workers);
    ns.reserve(regionBytes);
    RAddress ra = ns.alloc(regionBytes, MemoryFlags.ALLOC_DEFAULT);
    coord = ra.map(MemoryFlags.MAP_NO_BUFFER);
    barrier = new Barrier(coord, 0, workers);
    barrier.reset();
    driver = new PhaseDriver(barrier, workers, procs, w -> new WorkerArea(coord, w).error());
    step(
        "sorting "
            + job.records()
            + " records ("
            + Sizes.format(job.bytes())
            + ") on "
            + workers
            + " worker process(es); "
            + (job.input() == null ? "generated with seed " + job.seed() : "from " + job.input()));
    launchWorkers(ra.address());
    phase(RSortWorker.READY, null);
    for (int w = 0; w < workers; w++) {
      assign(w, job.shareFirst(w), job.shareCount(w));
    }
    phase(RSortWorker.LOAD, "load");
    RecordValidator.Summary input = RecordValidator.Summary.EMPTY;
    for (int w = 0; w < workers; w++) {
      RecordValidator.Summary s = summary(w);
      input =
          new RecordValidator.Summary(
              input.records() + s.records(),
              input.checksum() + s.checksum(),
              0,
              -1,
              0,
              new byte[0],
              new byte[0]);
    }
    // Key range j goes to worker j (§V-C: the coordinator assigns each range to one worker).
    for (int w = 0; w < workers; w++) {
      assign(w, w, 0);
    }
    phase(RSortWorker.PREPARE, null);
    long sortStart = System.nanoTime();
    phase(RSortWorker.CLASSIFY, null);
    phase(RSortWorker.SORT, null);
    long sortNanos = System.nanoTime() - sortStart;
    step(
        String.format(
            Locale.ROOT,
            "sorted in %.3f s (classify %.3f s, sort %.3f s): %.0f MiB/s",
            sortNanos / 1e9,
            phaseNanos[RSortWorker.CLASSIFY] / 1e9,
            phaseNanos[RSortWorker.SORT] / 1e9,
            job.bytes() / (double) (1 << 20) / (sortNanos / 1e9)));
    phase(RSortWorker.VALIDATE, null);
    RecordValidator.Summary output = RecordValidator.Summary.EMPTY;
    long[][] timings = new long[workers][];
    for (int w = 0; w < workers; w++) {
      output = output.then(summary(w)); // worker w sorted key range w
      timings[w] = timings(w);
    }
    List<String> problems = RecordValidator.problems(input, output);
    for (int w = 0; w < workers; w++) {
      assign(w, job.deleteOutput() ? 1 : 0, 0);
    }
    phase(RSortWorker.CLEANUP, null);
    procs.awaitExitAfterCleanup(this::step);
    coord.unmap();
    store.deleteNamespace(job.coordinatorNamespace());
    return new RSortResult(job, input, output, problems, phaseNanos.clone(), sortNanos, timings);
  }

  /** Starts {@code phase} and waits until every worker has finished it. */
  private void phase(int phase, String progressLabel) {
    String name = RSortWorker.PHASE_NAMES[phase];
    PhaseDriver.Tick tick =
        pending -> {
          if (progressLabel == null) {
            step(name + ": waiting for worker(s) " + pending);
            return;
          }
          long bytes = 0;
          for (int w = 0; w < workers; w++) {
            bytes += new WorkerArea(coord, w).progress();
          }
          step(
              String.format(
                  Locale.ROOT,
                  "%s: %s of %s (%.0f%%)",
                  progressLabel,
                  Sizes.format(bytes),
                  Sizes.format(job.bytes()),
                  100.0 * bytes / Math.max(1, job.bytes())));
        };
    phaseNanos[phase] = driver.run(phase, "phase '" + name + "'", job.phaseTimeout(), tick);
    if (phase != RSortWorker.CLASSIFY && phase != RSortWorker.SORT) {
      step(name + " done in " + RSortWorker.ms(phaseNanos[phase]));
    }
  }

  /** Starts the worker JVMs, told where the coordination region is. */
  private void launchWorkers(long coordAddress) throws IOException {
    long maxRange = Math.min(job.records(), Records.MAX_BUFFER_RECORDS);
    // A record buffer as large as the largest key range (a skewed input may put every record in
    // one) and the stages; a long per record, parallelSort's scratch array and a byte per record.
    long direct = maxRange * Records.RECORD + (128L << 20);
    long heap = (256L << 20) + 24 * maxRange;
    // The workers share the cores: each gets a share of the threads, so that all of them together
    // use as many as the single-JVM sort of the same records.
    int threads = Math.max(1, Runtime.getRuntime().availableProcessors() / workers);
    for (int w = 0; w < workers; w++) {
      List<String> a = new ArrayList<>(List.of("rsort-worker"));
      a.addAll(WorkerProcesses.accessArgs(access));
      a.addAll(
          List.of(
              "--namespace-prefix",
              job.prefix(),
              "--coordinator-address",
              Long.toString(coordAddress),
              "--worker",
              Integer.toString(w),
              "--workers",
              Integer.toString(workers),
              "--records",
              Long.toString(job.records()),
              "--seed",
              Long.toString(job.seed())));
      if (job.input() != null) {
        a.addAll(List.of("--input", job.input().toAbsolutePath().toString()));
      }
      if (quiet) {
        a.add("--quiet");
      }
      if (job.output() != null) {
        a.addAll(List.of("--output", job.output().toAbsolutePath().toString()));
      }
      procs.launch(
          "worker " + w,
          a,
          new WorkerLauncher.Jvm(heap, direct, threads, job.bytes() < QUICK_START_BYTES));
    }
  }

  private void assign(int w, long a0, long a1) {
    new WorkerArea(coord, w).assign(a0, a1);
  }

  private RecordValidator.Summary summary(int w) {
    return new WorkerArea(coord, w).summary();
  }

  private long[] timings(int w) {
    return new WorkerArea(coord, w).timings();
  }

  private void step(String line) {
    if (progress != null) {
      progress.printf(
          Locale.ROOT, "[rsort %6.1fs] %s%n", (System.nanoTime() - startNanos) / 1e9, line);
      progress.flush();
    }
  }

  /**
   * Stops every worker process still running: asks them to stop (SIGTERM), then kills those still
   * there after 3 s. Idempotent.
   */
  @Override
  public void close() {
    procs.close();
  }

  /**
   * Deletes whatever namespaces of this job's names exist (the output of earlier sorts with this
   * prefix, or what a killed sort left): {@code ferrite rsort --clean}. Returns {deleted, left}; a
   * namespace still mapped by someone is left.
   */
  public List<List<String>> clean() {
    List<String> deleted = new ArrayList<>();
    List<String> left = new ArrayList<>();
    for (String n : names()) {
      try {
        store.deleteNamespace(n);
        deleted.add(n);
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.NOT_FOUND) {
          left.add(n + " (" + e.code() + ")");
        }
      }
    }
    return List.of(deleted, left);
  }

  /**
   * After a failed sort: deletes the namespaces of the sort that still exist (best effort: one a
   * stopped worker still maps stays until its session expires) and returns the names left behind.
   * Does nothing if this coordinator did not own the namespace prefix (another sort's namespaces
   * are not touched).
   */
  public List<String> deleteNamespaces() {
    if (!ownsPrefix) {
      return List.of();
    }
    if (coord != null) {
      coord.unmap();
    }
    List<String> left = new ArrayList<>();
    for (String n : names()) {
      try {
        store.deleteNamespace(n);
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.NOT_FOUND) {
          left.add(n);
        }
      }
    }
    return left;
  }
}
