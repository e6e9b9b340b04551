package io.ferrite.apps.carafe.pregel;

import java.time.Duration;

/**
 * The workers of one job as the coordinator sees them: threads of its JVM or processes. It starts
 * them, watches whether each is still there, and stops them.
 */
interface WorkerSet extends AutoCloseable {
  /** Starts every worker on the control region at {@code regionAddress}. */
  void start(long regionAddress) throws java.io.IOException;

  /** Whether worker {@code w} is still running (true before {@link #start}). */
  boolean alive(int w);

  /** "worker w (pid 1234)" or "worker w (thread pregel-worker-w)". */
  String describe(int w);

  /** How worker {@code w} ended: "exited with status 137", "ended (...)". */
  String ended(int w);

  /** Waits up to {@code timeout} for every worker to end. */
  void awaitExit(Duration timeout) throws InterruptedException;

  /** Stops the workers still running (processes: SIGTERM, then SIGKILL). Idempotent. */
  @Override
  void close();
}
