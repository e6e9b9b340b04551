package io.ferrite.apps.carafe.pregel;

import io.ferrite.memory.RStore;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Consumer;

/**
 * Workers as threads of the coordinator's JVM (tests, and a graph small enough for one process):
 * each runs {@link PregelWorker#run} on the coordinator's {@link RStore} (thread-safe), with the
 * same program instance. A thread that ends by an exception the worker did not catch is recorded,
 * and the coordinator reports it as that worker's end.
 */
final class ThreadWorkers implements WorkerSet {
  private final RStore store;
  private final PregelJob job;
  private final VertexProgram program;
  private final Consumer<String> log;
  private final Thread[] threads;
  private final int[] status;
  private final AtomicReferenceArray<Throwable> uncaught;

  ThreadWorkers(RStore store, PregelJob job, VertexProgram program, Consumer<String> log) {
    this.store = store;
    this.job = job;
    this.program = program;
    this.log = log;
    this.threads = new Thread[job.workers()];
    this.status = new int[job.workers()];
    this.uncaught = new AtomicReferenceArray<>(job.workers());
  }

  @Override
  public void start(long regionAddress) {
    for (int w = 0; w < threads.length; w++) {
      int me = w;
      Thread t =
          new Thread(
              () -> status[me] = PregelWorker.run(store, job, program, regionAddress, me, log),
              "pregel-worker-" + w);
      t.setDaemon(true);
      t.setUncaughtExceptionHandler((th, e) -> uncaught.set(me, e));
      threads[w] = t;
      t.start();
    }
  }

  @Override
  public String gone(int w) {
    Thread t = threads[w];
    if (t == null || t.isAlive()) {
      return null;
    }
    // status[] is read after the thread ended: isAlive() false synchronizes with its end (JLS
    // 17.4.4).
    Throwable e = uncaught.get(w);
    return "worker "
        + w
        + " (thread "
        + t.getName()
        + ") "
        + (e != null ? "ended by " + e : "ended with status " + status[w]);
  }

  @Override
  public void awaitExit(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    for (Thread t : threads) {
      if (t != null) {
        long left = deadline - System.nanoTime();
        if (left > 0) {
          t.join(Math.max(1, left / 1_000_000));
        }
      }
    }
  }

  @Override
  public void close() {
    // A worker thread ends by itself after FINISH or ABORT, or when it fails; nothing to kill.
  }
}
