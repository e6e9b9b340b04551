package io.ferrite.apps.rsort;

import io.ferrite.apps.worker.ClusterAccess;
import io.ferrite.apps.worker.WorkerLauncher;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The coordinator's worker JVMs (RStore §V-C's worker processes): started with their share of the
 * machine (heap, direct memory, threads), watched while a phase runs, and stopped, by themselves
 * after cleanup or by the coordinator ({@link #close}, also from a shutdown hook). Thread-safe
 * against a {@code close} racing a {@code launch}.
 */
final class WorkerProcesses implements AutoCloseable {
  private final ClusterAccess access;
  private final RSortJob job;
  private final WorkerLauncher launcher;
  private final boolean quiet;
  private final int workers;
  private final List<Process> processes = new ArrayList<>();
  private boolean closed;

  WorkerProcesses(ClusterAccess access, RSortJob job, WorkerLauncher launcher, boolean quiet) {
    this.access = access;
    this.job = job;
    this.launcher = launcher;
    this.quiet = quiet;
    this.workers = job.workers();
  }

  /** Worker {@code w}'s process (after {@link #launch}). */
  synchronized Process get(int w) {
    return processes.get(w);
  }

  /** Starts the worker JVMs, told where the coordination region is. */
  void launch(long coordAddress) throws IOException {
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
      a.addAll(
          List.of(
              "--cluster",
              access.uri(),
              "--cluster-id",
              access.clusterId(),
              "--secret-file",
              access.secretFile().toString(),
              "--fabric",
              access.fabric(),
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
              Long.toString(job.seed()),
              "--parent-pid",
              Long.toString(ProcessHandle.current().pid())));
      if (job.input() != null) {
        a.addAll(List.of("--input", job.input().toAbsolutePath().toString()));
      }
      if (quiet) {
        a.add("--quiet");
      }
      if (job.output() != null) {
        a.addAll(List.of("--output", job.output().toAbsolutePath().toString()));
      }
      Process p =
          launcher.start(
              "worker " + w,
              a,
              new WorkerLauncher.Jvm(
                  heap, direct, threads, job.bytes() < RSortCoordinator.QUICK_START_BYTES));
      synchronized (this) {
        if (closed) {
          p.destroyForcibly();
          throw new FerriteException(ErrorCode.UNAVAILABLE, "the sort was stopped");
        }
        processes.add(p);
      }
    }
  }

  /** Waits up to {@code wait} in all for the workers to exit by themselves. */
  void awaitExit(Duration wait) throws InterruptedException {
    long deadline = System.nanoTime() + wait.toNanos();
    for (Process p : snapshot()) {
      long left = deadline - System.nanoTime();
      if (left > 0) {
        p.waitFor(left, TimeUnit.NANOSECONDS);
      }
    }
  }

  /** After CLEANUP the workers exit by themselves; give them a little while, then stop them. */
  void awaitExitAfterCleanup(Consumer<String> step) throws InterruptedException {
    for (Process p : snapshot()) {
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        step.accept("worker pid " + p.pid() + " did not exit after cleanup: stopping it");
        p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    }
  }

  private synchronized List<Process> snapshot() {
    return List.copyOf(processes);
  }

  /**
   * Stops every worker process still running: asks them to stop (SIGTERM), then kills those still
   * there after 3 s. Idempotent.
   */
  @Override
  public void close() {
    List<Process> stop;
    synchronized (this) {
      closed = true;
      stop = List.copyOf(processes);
    }
    for (Process p : stop) {
      p.destroy();
    }
    for (Process p : stop) {
      try {
        if (!p.waitFor(3, TimeUnit.SECONDS)) {
          p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        p.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }
}
