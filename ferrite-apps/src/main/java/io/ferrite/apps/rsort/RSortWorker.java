package io.ferrite.apps.rsort;

import io.ferrite.apps.worker.ClusterAccess;
import io.ferrite.apps.worker.PhaseDriver;
import io.ferrite.apps.worker.WorkerProcesses;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.memory.Barrier;
import io.ferrite.memory.Mapping;
import io.ferrite.memory.MemoryFlags;
import io.ferrite.memory.Namespace;
import io.ferrite.memory.RAddress;
import io.ferrite.memory.RStore;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Locale;

/**
 * One RSort worker process (RStore §V-C). It joins the coordinator's namespace, maps the
 * coordination region and then runs the phases the coordinator starts through the {@link Barrier}:
 *
 * <ol>
 *   <li>{@code READY}: connected and mapped.
 *   <li>{@code LOAD} (not timed): generates or reads its share of the input into {@code input_i};
 *       prepares what the timed phases need (RStore's separation: the control path before the data
 *       path): the input stays mapped, the bucket namespaces {@code worker_i_bucket_j} and {@code
 *       final_i} are created and reserved for the expected sizes, local buffers are allocated, and
 *       the sort code is warmed up.
 *   <li>{@code CLASSIFY} (phase one): reads the share back (one large one-sided read), classifies
 *       its records by key range into one local buffer, and writes each range to its bucket
 *       namespace with one large write; the bucket table in its area says where.
 *   <li>{@code SORT} (phase two): for its assigned key range j, maps every {@code
 *       worker_*_bucket_j} and reads them all into one buffer, sorts, and writes the result to
 *       {@code final_j}.
 *   <li>{@code VALIDATE} (not timed): reads {@code final_j} back and summarizes it (count,
 *       checksum, order, first and last key); writes it to {@code part-j} with an output directory.
 *   <li>{@code CLEANUP}: deletes its input and bucket namespaces (and {@code final_j} if asked).
 * </ol>
 *
 * A failure is written to its area and reported by {@link Barrier#fail}. A worker that fails, or
 * that sees the coordinator start {@link #ABORT} instead of its next phase, drops its mappings and
 * deletes the namespaces it created, then exits. A worker whose coordinator process dies halts.
 */
public final class RSortWorker {
  public static final int READY = 1;
  public static final int LOAD = 2;
  public static final int PREPARE = 3;
  public static final int CLASSIFY = 4;
  public static final int SORT = 5;
  public static final int VALIDATE = 6;
  public static final int CLEANUP = 7;

  /** The coordinator's byte when it gives up on a sort: every worker cleans up and exits. */
  public static final int ABORT = Barrier.MAX_PHASE;

  /** How long a worker that abandons a sort retries deleting a namespace another one still maps. */
  static final Duration ABANDON = Duration.ofSeconds(5);

  static final String[] PHASE_NAMES = {
    "", "start", "load", "prepare", "classify", "sort", "validate", "cleanup"
  };

  /** How long a worker waits for the next phase; its coordinator's death ends it sooner. */
  static final Duration WAIT = Duration.ofHours(2);

  /**
   * What a worker is told on its command line.
   *
   * @param cluster how to reach the cluster
   * @param job the sort (its namespace names, sizes, input and output)
   * @param coordinatorAddress the coordination region's address in the coordinator's namespace
   * @param worker this worker's index
   * @param parentPid the coordinator's process id: the worker halts when it is gone (0: none)
   */
  public record Args(
      ClusterAccess cluster, RSortJob job, long coordinatorAddress, int worker, long parentPid) {}

  private final int me;
  private final PrintStream log;
  private final WorkerArea area;
  private final WorkerPhases work;

  private RSortWorker(Args args, RStore store, Mapping coord, PrintStream log) {
    this.me = args.worker();
    this.log = log;
    this.area = new WorkerArea(coord, me);
    this.work = new WorkerPhases(args.job(), me, store, coord, area, this::log);
  }

  /**
   * Runs worker {@code args.worker()} to the end; returns the process exit status.
   *
   * @param log where the worker says what it did (and why it failed), or null for failures only (on
   *     stderr)
   */
  public static int run(Args args, PrintStream log) {
    WorkerProcesses.haltWithParent(args.parentPid());
    RSortJob job = args.job();
    try (FerriteClient client = args.cluster().connect("rsort-worker-" + args.worker())) {
      RStore store = new RStore(client, 0);
      Namespace coordNs = store.joinNamespace(job.coordinatorNamespace());
      long regionBytes = RSortLayout.regionBytes(job.workers());
      try (Mapping coord =
          RAddress.init(coordNs, args.coordinatorAddress(), regionBytes)
              .map(MemoryFlags.MAP_NO_BUFFER)) {
        return new RSortWorker(args, store, coord, log).phases();
      }
    }
  }

  private int phases() {
    Barrier barrier = work.barrier();
    int phase = 0;
    try {
      for (phase = READY; phase <= CLEANUP; phase++) {
        if (!PhaseDriver.awaitStart(barrier, phase, ABORT, WAIT, "phase " + PHASE_NAMES[phase])) {
          log("the coordinator aborted the sort before phase " + PHASE_NAMES[phase]);
          work.abandon();
          return 2;
        }
        long t0 = System.nanoTime();
        switch (phase) {
          case READY -> {}
          case LOAD -> work.load();
          case PREPARE -> work.prepare();
          case CLASSIFY -> work.classify();
          case SORT -> work.sort();
          case VALIDATE -> work.validate();
          case CLEANUP -> work.cleanup();
          default -> throw new IllegalStateException("phase " + phase);
        }
        area.timings(work.timings());
        barrier.finish(me, phase);
        log(PHASE_NAMES[phase] + " done in " + ms(System.nanoTime() - t0));
      }
      return 0;
    } catch (RuntimeException | IOException | OutOfMemoryError e) {
      String what =
          "worker "
              + me
              + " failed in phase "
              + (phase >= READY && phase <= CLEANUP ? PHASE_NAMES[phase] : "?")
              + ": "
              + (e instanceof FerriteException fe ? fe.getMessage() : e.toString());
      log(what);
      if (log == null) {
        System.err.println(what);
      }
      try {
        area.error(e instanceof FerriteException fe ? fe.code() : ErrorCode.INTERNAL, what);
        barrier.fail(me);
      } catch (RuntimeException e2) {
        log("could not report the failure: " + e2);
      }
      work.abandon();
      return 1;
    }
  }

  private void log(String line) {
    if (log != null) {
      log.println(line);
      log.flush();
    }
  }

  static String ms(long nanos) {
    return String.format(Locale.ROOT, "%.1f ms", nanos / 1e6);
  }
}
