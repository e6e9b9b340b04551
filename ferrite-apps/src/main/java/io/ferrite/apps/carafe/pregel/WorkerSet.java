package io.ferrite.apps.carafe.pregel;

import io.ferrite.apps.worker.PhaseDriver;
import java.io.IOException;
import java.time.Duration;

/**
 * The workers of one job as the coordinator sees them: threads of its JVM ({@link ThreadWorkers})
 * or processes ({@link ProcessWorkers}). It starts them, tells the {@link PhaseDriver} whether each
 * is still there ({@link #gone}: "worker 1 (pid 1234) exited with status 137"), and stops them.
 */
interface WorkerSet extends PhaseDriver.Liveness, AutoCloseable {
  /** Starts every worker on the control region at {@code regionAddress}. */
  void start(long regionAddress) throws IOException;

  /** Waits up to {@code timeout} in all for every worker to end by itself. */
  void awaitExit(Duration timeout) throws InterruptedException;

  /** Stops the workers still running (processes: SIGTERM, then SIGKILL). Idempotent. */
  @Override
  void close();
}
