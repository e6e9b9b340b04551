package io.ferrite.apps.carafe.pregel;

import io.ferrite.apps.carafe.CarafeGraph;
import io.ferrite.apps.worker.ClusterAccess;
import io.ferrite.apps.worker.PhaseDriver;
import io.ferrite.apps.worker.WorkerLauncher;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.memory.Barrier;
import io.ferrite.memory.MemoryFlags;
import io.ferrite.memory.Namespace;
import io.ferrite.memory.RAddress;
import io.ferrite.memory.RStore;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * The coordinator of a Pregel job (Carafe, RStore §V-A and §V-B): partitions the graph ({@link
 * Partitioner}), lays out the control region in the job's control namespace (the {@link Barrier}
 * and every worker's area, {@link PregelLayout}), starts the partition workers, sizes and allocates
 * the shared {@link Mailbox} from the rows the workers counted, and drives the supersteps: before
 * each it writes the command and the previous superstep's aggregate, starts a barrier phase, and
 * waits until every worker has finished it, while it watches them. The job ends when every vertex
 * has voted to halt and no message was sent, or at the superstep cap.
 *
 * <p>On success and on failure the coordinator deletes every namespace the job made (the graph
 * keeps the results). A failure names the worker and the superstep: "worker 1 (pid 1234) exited
 * with status 137 during superstep 7", or what a failed worker wrote in its area. Not thread-safe;
 * one run per instance.
 */
public final class PregelCoordinator implements AutoCloseable {
  /** How long workers get to end by themselves after the job ended or was aborted. */
  static final Duration EXIT_WAIT = Duration.ofSeconds(10);

  /**
   * The supersteps whose shortest time, quartered, is the next superstep's quiet time (see {@link
   * PhaseDriver#run(int, String, Duration, PhaseDriver.Tick, long)}). A quarter: PageRank's last
   * two supersteps, which send nothing, take 0.25-0.5 of the ones before them on the {@code bench}
   * graph (17 of 65 ms with one worker, 13-20 of 40 with two), and components' shrink step by step.
   */
  static final int QUIET_WINDOW = 3;

  /** How long the coordinator retries deleting a namespace a dying worker still maps. */
  static final Duration DELETE_WAIT = Duration.ofSeconds(20);

  private final RStore store;
  private final PregelJob job;
  private final PrintStream progress;
  private final int workers;
  private Partitioner partitioner = Partitioner.defaults();
  private final long startNanos = System.nanoTime();

  private ControlRegion ctl;
  private Barrier barrier;
  private PhaseDriver driver;
  private volatile WorkerSet running;
  private int phase;

  /**
   * @param store this process's client of the cluster
   * @param progress a line per superstep, or null for none
   */
  public PregelCoordinator(RStore store, PregelJob job, PrintStream progress) {
    this.store = store;
    this.job = job;
    this.progress = progress;
    this.workers = job.workers();
  }

  /** Partitions with {@code p} instead of {@link Partitioner#defaults()}. */
  public PregelCoordinator partitioner(Partitioner p) {
    this.partitioner = p;
    return this;
  }

  /** Runs the job's program with its workers as threads of this JVM. */
  public PregelResult runInThreads() throws InterruptedException {
    return runInThreads(VertexProgram.parse(job.program()));
  }

  /**
   * Runs {@code program} (any program, e.g. a test's; {@link PregelJob#program()} is not used) with
   * the workers as threads of this JVM.
   */
  public PregelResult runInThreads(VertexProgram program) throws InterruptedException {
    Consumer<String> log = progress == null ? s -> {} : this::step;
    try {
      return run(program, new ThreadWorkers(store, job, program, log));
    } catch (IOException e) {
      throw new FerriteException(ErrorCode.INTERNAL, "threads do not do I/O to start", e);
    }
  }

  /**
   * Runs the job with its workers as processes ({@code ferrite graph-worker}, started by {@code
   * launcher}), which reach the cluster through {@code access}.
   */
  public PregelResult runInProcesses(ClusterAccess access, WorkerLauncher launcher)
      throws IOException, InterruptedException {
    VertexProgram program = VertexProgram.parse(job.program());
    CarafeGraph graph = CarafeGraph.open(store, job.graph());
    return run(program, new ProcessWorkers(access, job, graph, launcher, progress == null));
  }

  /** Runs {@code program} on {@code set}; every namespace of the job is gone when this returns. */
  PregelResult run(VertexProgram program, WorkerSet set) throws IOException, InterruptedException {
    long t0 = System.nanoTime();
    CarafeGraph graph = CarafeGraph.open(store, job.graph());
    program.check(graph);
    Namespace controlNs = create(job.controlNamespace());
    Namespace mailboxNs;
    try {
      mailboxNs = create(job.mailboxNamespace());
    } catch (RuntimeException e) {
      deleteQuietly(job.controlNamespace());
      throw e;
    }
    RuntimeException failure = null;
    running = set;
    try {
      return supersteps(graph, program, set, controlNs, mailboxNs, t0);
    } catch (RuntimeException e) {
      failure = e;
      abort(set);
      throw e;
    } finally {
      set.close();
      if (ctl != null) {
        ctl.mapping.unmap();
      }
      List<String> left = deleteNamespaces();
      if (!left.isEmpty()) {
        FerriteException e =
            new FerriteException(
                ErrorCode.CONFLICT,
                "namespace(s) "
                    + String.join(", ", left)
                    + " of the job could not be deleted (still mapped after "
                    + DELETE_WAIT
                    + ")");
        if (failure != null) {
          failure.addSuppressed(e);
        } else {
          throw e;
        }
      }
    }
  }

  /**
   * Stops the worker processes of a job that is running (from a shutdown hook: Ctrl-C); the job
   * then fails and deletes its namespaces. Idempotent; nothing to do for threads.
   */
  @Override
  public void close() {
    WorkerSet set = running;
    if (set != null) {
      set.close();
    }
  }

  private PregelResult supersteps(
      CarafeGraph graph,
      VertexProgram program,
      WorkerSet set,
      Namespace controlNs,
      Namespace mailboxNs,
      long t0)
      throws IOException, InterruptedException {
    long[] bounds = partitioner.bounds(graph, workers);
    long regionBytes = PregelLayout.regionBytes(workers);
    controlNs.reserve(regionBytes);
    RAddress ra = controlNs.alloc(regionBytes, MemoryFlags.ALLOC_DEFAULT);
    ctl = new ControlRegion(ra.map(MemoryFlags.MAP_NO_BUFFER), workers);
    barrier = ctl.barrier();
    barrier.reset();
    driver = new PhaseDriver(barrier, workers, set, ctl::error);
    for (int w = 0; w < workers; w++) {
      ctl.assign(w, bounds[w], bounds[w + 1]);
    }
    step(
        "running "
            + program.spec()
            + " on "
            + graph
            + " with "
            + workers
            + " worker(s); partitions "
            + java.util.Arrays.toString(bounds));
    set.start(ra.address());
    phase(PregelLayout.LOAD, 0, 0, 0, "load");
    long[] edges = new long[workers];
    for (int w = 0; w < workers; w++) {
      edges[w] = ctl.stats(w).edges();
    }
    Mailbox mailbox = new Mailbox(workers, ctl.grid());
    mailboxNs.reserve(mailbox.bytes());
    RAddress ma = mailboxNs.alloc(mailbox.bytes(), MemoryFlags.ALLOC_DEFAULT);
    phase(PregelLayout.PREPARE, 0, 0, ma.address(), "prepare");
    long loadNanos = System.nanoTime() - t0;
    step(
        String.format(
            Locale.ROOT,
            "loaded in %.3f s; mailbox %.1f MiB",
            loadNanos / 1e9,
            mailbox.bytes() / (double) (1 << 20)));
    List<long[]> steps = new ArrayList<>();
    long[] workerNanos = new long[workers];
    double aggregate = 0;
    boolean halted = false;
    for (int k = 0; k < job.maxSupersteps() && !halted; k++) {
      long quiet = Long.MAX_VALUE;
      for (int i = Math.max(0, steps.size() - QUIET_WINDOW); i < steps.size(); i++) {
        quiet = Math.min(quiet, steps.get(i)[0] / 4);
      }
      long s0 = System.nanoTime();
      phase(
          PregelLayout.SUPERSTEP,
          k,
          aggregate,
          ma.address(),
          "superstep " + k,
          steps.isEmpty() ? 0 : quiet);
      long nanos = System.nanoTime() - s0;
      long sent = 0;
      long active = 0;
      aggregate = 0;
      long slowest = 0;
      int laggard = 0;
      for (int w = 0; w < workers; w++) {
        ControlRegion.Stats s = ctl.stats(w);
        sent += s.sent();
        workerNanos[w] += s.nanos();
        if (s.nanos() > slowest) {
          slowest = s.nanos();
          laggard = w;
        }
        active += s.active();
        aggregate += s.aggregate();
      }
      steps.add(new long[] {nanos, sent});
      halted = sent == 0 && active == 0;
      // The slowest worker's own time (inbox to outbox): the rest of the superstep is the
      // barrier and the coordinator.
      step(
          String.format(
              Locale.ROOT,
              "superstep %d: %.1f ms, %d messages, %d active; slowest worker %d: %.1f ms",
              k,
              nanos / 1e6,
              sent,
              active,
              laggard,
              slowest / 1e6));
    }
    phase(PregelLayout.FINISH, 0, 0, ma.address(), "finish");
    set.awaitExit(EXIT_WAIT);
    long[] nanos = new long[steps.size()];
    long[] messages = new long[steps.size()];
    for (int k = 0; k < nanos.length; k++) {
      nanos[k] = steps.get(k)[0];
      messages[k] = steps.get(k)[1];
    }
    return new PregelResult(
        job,
        bounds,
        edges,
        nanos,
        messages,
        workerNanos,
        loadNanos,
        System.nanoTime() - t0,
        halted);
  }

  /**
   * Writes the command, starts the next barrier phase and waits until every worker has finished it,
   * watching that each is still there ({@link PhaseDriver}).
   */
  private void phase(int command, int superstep, double aggregate, long mailbox, String name) {
    phase(command, superstep, aggregate, mailbox, name, 0);
  }

  /** {@link #phase} that parks for {@code quietNanos} before it polls the barrier. */
  private void phase(
      int command, int superstep, double aggregate, long mailbox, String name, long quietNanos) {
    ctl.global(new ControlRegion.Global(command, superstep, aggregate, mailbox));
    phase = Barrier.next(phase);
    driver.run(
        phase,
        name,
        job.phaseTimeout(),
        pending -> step(name + ": waiting for worker(s) " + pending),
        quietNanos);
  }

  /** After a failure: tells the workers still running to abort, and waits a little for them. */
  private void abort(WorkerSet set) throws InterruptedException {
    if (barrier != null) {
      try {
        ctl.global(new ControlRegion.Global(PregelLayout.ABORT, 0, 0, 0));
        phase = Barrier.next(phase);
        barrier.start(phase);
      } catch (RuntimeException e) {
        step("could not signal the abort to the workers: " + e);
      }
    }
    set.awaitExit(EXIT_WAIT);
  }

  private Namespace create(String name) {
    try {
      return store.createNamespace(name);
    } catch (FerriteException e) {
      if (e.code() == ErrorCode.CONFLICT) {
        throw new FerriteException(
            ErrorCode.CONFLICT,
            "namespace '"
                + name
                + "' exists: another Pregel job with namespace prefix '"
                + job.prefix()
                + "' runs, or one was killed before it cleaned up (delete the namespace, or use"
                + " another prefix)",
            e);
      }
      throw e;
    }
  }

  /**
   * Deletes the job's namespaces, retrying one a dying worker still maps for up to {@link
   * #DELETE_WAIT}; returns those left.
   */
  private List<String> deleteNamespaces() {
    long deadline = System.nanoTime() + DELETE_WAIT.toNanos();
    List<String> left = new ArrayList<>(job.namespaces());
    while (true) {
      left.removeIf(this::deleted);
      if (left.isEmpty() || System.nanoTime() > deadline) {
        return left;
      }
      LockSupport.parkNanos(50_000_000L);
    }
  }

  private boolean deleted(String name) {
    try {
      store.deleteNamespace(name);
      return true;
    } catch (FerriteException e) {
      return e.code() != ErrorCode.CONFLICT; // NOT_FOUND: gone already
    }
  }

  private void deleteQuietly(String name) {
    try {
      store.deleteNamespace(name);
    } catch (RuntimeException e) {
      // Cleanup after a failure: the first failure is the one to report.
    }
  }

  private void step(String line) {
    if (progress != null) {
      progress.printf(
          Locale.ROOT, "[pregel %6.1fs] %s%n", (System.nanoTime() - startNanos) / 1e9, line);
      progress.flush();
    }
  }
}
