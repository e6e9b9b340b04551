package io.ferrite.apps.worker;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A coordinator's worker JVMs (RStore §V-A's workers, as processes): started with their share of
 * the machine (heap, direct memory, threads), watched while a phase runs ({@link #gone}), and
 * stopped, by themselves after cleanup or by the coordinator ({@link #close}, also from a shutdown
 * hook). Shared by RSort and Carafe. Thread-safe against a {@code close} racing a {@code launch}.
 */
public final class WorkerProcesses implements AutoCloseable, PhaseDriver.Liveness {
  private final WorkerLauncher launcher;
  private final List<Process> processes = new ArrayList<>();
  private boolean closed;

  public WorkerProcesses(WorkerLauncher launcher) {
    this.launcher = launcher;
  }

  /**
   * The arguments every worker command takes first: how to reach the cluster (never the secret
   * itself, only its file) and the coordinator's pid, so that a worker halts when its coordinator
   * is gone (see {@link #haltWithParent}).
   */
  public static List<String> accessArgs(ClusterAccess access) {
    return List.of(
        "--cluster",
        access.uri(),
        "--cluster-id",
        access.clusterId(),
        "--secret-file",
        access.secretFile().toString(),
        "--fabric",
        access.fabric(),
        "--parent-pid",
        Long.toString(ProcessHandle.current().pid()));
  }

  /**
   * Worker side: halts this JVM (status 3) as soon as process {@code pid} is gone, so that the
   * workers of a coordinator killed with SIGKILL do not linger (0: no watch).
   */
  public static void haltWithParent(long pid) {
    if (pid <= 0) {
      return;
    }
    ProcessHandle.of(pid)
        .ifPresentOrElse(
            h -> h.onExit().thenRun(() -> Runtime.getRuntime().halt(3)),
            () -> Runtime.getRuntime().halt(3));
  }

  /**
   * Starts the next worker ({@link #size()} before the call is its index): {@code ferrite <args>}
   * in a JVM of shape {@code jvm}, its output labelled {@code label}.
   *
   * @throws FerriteException UNAVAILABLE if {@link #close} came first (the process is stopped)
   */
  public void launch(String label, List<String> args, WorkerLauncher.Jvm jvm) throws IOException {
    Process p = launcher.start(label, args, jvm);
    synchronized (this) {
      if (closed) {
        p.destroyForcibly();
        throw new FerriteException(ErrorCode.UNAVAILABLE, "the job was stopped");
      }
      processes.add(p);
    }
  }

  /** Worker {@code w}'s process (after its {@link #launch}). */
  public synchronized Process get(int w) {
    return processes.get(w);
  }

  public synchronized int size() {
    return processes.size();
  }

  @Override
  public String gone(int w) {
    Process p;
    synchronized (this) {
      if (w >= processes.size()) {
        return null;
      }
      p = processes.get(w);
    }
    return p.isAlive()
        ? null
        : "worker " + w + " (pid " + p.pid() + ") exited with status " + p.exitValue();
  }

  /** Waits up to {@code wait} in all for the workers to exit by themselves. */
  public void awaitExit(Duration wait) throws InterruptedException {
    long deadline = System.nanoTime() + wait.toNanos();
    for (Process p : snapshot()) {
      long left = deadline - System.nanoTime();
      if (left > 0) {
        p.waitFor(left, TimeUnit.NANOSECONDS);
      }
    }
  }

  /** After their last phase the workers exit by themselves; give them a while, then stop them. */
  public void awaitExitAfterCleanup(Consumer<String> step) throws InterruptedException {
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
