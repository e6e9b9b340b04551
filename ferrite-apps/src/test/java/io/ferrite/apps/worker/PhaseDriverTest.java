package io.ferrite.apps.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.apps.AppsCluster;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.memory.Barrier;
import io.ferrite.memory.Mapping;
import io.ferrite.memory.MemoryFlags;
import io.ferrite.memory.Namespace;
import io.ferrite.memory.RStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The coordinator's half of the shared barrier use: a phase ends when every worker finished it, a
 * failed worker's code and text reach the caller, a worker that is gone and a deadline end it with
 * the worker named; the worker's half sees its phase or the abort.
 */
class PhaseDriverTest {
  static final int WORKERS = 3;
  static final int SLOT = 64;
  static final int MAX = SLOT - 2;

  @TempDir Path dir;
  ClusterHarness cluster;
  Mapping region;
  Barrier coordinator;

  @BeforeEach
  void start() throws Exception {
    cluster = AppsCluster.start(dir, "4m", 1);
    Namespace ns = new RStore(cluster.client()).createNamespace("phases");
    ns.reserve(4096);
    region = ns.alloc(4096, MemoryFlags.ALLOC_DEFAULT).map(MemoryFlags.MAP_NO_BUFFER);
    coordinator = new Barrier(region, 0, WORKERS);
    coordinator.reset();
  }

  @AfterEach
  void stop() throws Exception {
    region.unmap();
    cluster.close();
  }

  private PhaseDriver driver(PhaseDriver.Liveness liveness) {
    return new PhaseDriver(
        coordinator, WORKERS, liveness, w -> WorkerError.read(region, 1024 + SLOT * w, MAX));
  }

  /** Worker {@code w} in its own thread: waits for {@code phase}, then does {@code what}. */
  private CompletableFuture<Boolean> worker(int w, int phase, Runnable what) {
    return CompletableFuture.supplyAsync(
        () -> {
          Barrier mine = new Barrier(region, 0, WORKERS);
          boolean started =
              PhaseDriver.awaitStart(mine, phase, Barrier.MAX_PHASE, Duration.ofSeconds(30), "p");
          if (started) {
            what.run();
          }
          return started;
        });
  }

  @Test
  void aPhaseEndsWhenEveryWorkerFinishedIt() throws Exception {
    List<CompletableFuture<Boolean>> ws =
        List.of(
            worker(0, 1, () -> new Barrier(region, 0, WORKERS).finish(0, 1)),
            worker(1, 1, () -> new Barrier(region, 0, WORKERS).finish(1, 1)),
            worker(2, 1, () -> new Barrier(region, 0, WORKERS).finish(2, 1)));
    long nanos = driver(w -> null).run(1, "phase 'one'", Duration.ofSeconds(30), null);
    assertTrue(nanos > 0);
    for (CompletableFuture<Boolean> w : ws) {
      assertTrue(w.get(10, TimeUnit.SECONDS));
    }
  }

  @Test
  void aFailedWorkersCodeAndTextReachTheCoordinator() throws Exception {
    CompletableFuture<Boolean> failing =
        worker(
            1,
            1,
            () -> {
              WorkerError.write(region, 1024 + SLOT, MAX, ErrorCode.NO_SPACE, "worker 1: full");
              new Barrier(region, 0, WORKERS).fail(1);
            });
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> driver(w -> null).run(1, "superstep 4", Duration.ofSeconds(30), null));
    assertEquals(ErrorCode.NO_SPACE, e.code());
    assertEquals("superstep 4 failed: worker 1: full", e.detail());
    assertTrue(failing.get(10, TimeUnit.SECONDS));
  }

  @Test
  void aWorkerThatIsGoneIsNamedWithThePhase() {
    new Barrier(region, 0, WORKERS).finish(0, 1); // worker 0 finished earlier: not "gone"
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () ->
                driver(
                        w ->
                            w == 0 || w == 2
                                ? "worker " + w + " (pid 7) exited with status 137"
                                : null)
                    .run(1, "superstep 1", Duration.ofSeconds(30), null));
    assertEquals(ErrorCode.UNAVAILABLE, e.code());
    assertEquals("worker 2 (pid 7) exited with status 137 during superstep 1", e.detail());
  }

  @Test
  void aWorkerThatFinishedJustBeforeItEndedIsNotLost() {
    Barrier workers = new Barrier(region, 0, WORKERS);
    workers.finish(0, 1);
    workers.finish(1, 1);
    // Worker 2 marks its byte and exits between the driver's read of the flags and its question.
    long nanos =
        driver(
                w -> {
                  workers.finish(w, 1);
                  return "worker " + w + " (pid 9) exited with status 0";
                })
            .run(1, "phase 'last'", Duration.ofSeconds(30), null);
    assertTrue(nanos > 0);
  }

  @Test
  void aDeadlineNamesTheWorkersNotDoneAndTheAbortReachesWaitingWorkers() throws Exception {
    new Barrier(region, 0, WORKERS).finish(1, 2);
    StringBuilder ticks = new StringBuilder();
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () -> driver(w -> null).run(2, "phase 'x'", Duration.ofMillis(50), ticks::append));
    assertEquals(ErrorCode.TIMEOUT, e.code());
    assertEquals("phase 'x': worker(s) 0, 2 not done after PT0.05S", e.detail());
    CompletableFuture<Boolean> waiting = worker(0, 3, () -> {});
    coordinator.start(Barrier.MAX_PHASE);
    assertFalse(waiting.get(10, TimeUnit.SECONDS), "the abort, not phase 3");
  }

  /** A quiet time far longer than the test: only the checks between naps can end these phases. */
  static final long LONG_QUIET = TimeUnit.MINUTES.toNanos(10);

  /**
   * Runs {@code phase} with {@link #LONG_QUIET} and returns what it throws; the test fails if it
   * does not throw within a minute (the naps' checks must end it, not the quiet time).
   */
  FerriteException quietPhaseFails(
      PhaseDriver.Liveness liveness, int phase, String name, Duration timeout) {
    return assertTimeoutPreemptively(
        Duration.ofSeconds(60),
        () ->
            assertThrows(
                FerriteException.class,
                () -> driver(liveness).run(phase, name, timeout, null, LONG_QUIET)));
  }

  @Test
  void duringAQuietTimeTheWorkersAreStillWatched() throws Exception {
    new Barrier(region, 0, WORKERS).finish(0, 1);
    FerriteException gone =
        quietPhaseFails(
            w -> w == 1 ? "worker 1 (pid 8) exited with status 137" : null,
            1,
            "superstep 3",
            Duration.ofMinutes(30));
    assertEquals(ErrorCode.UNAVAILABLE, gone.code());
    assertEquals("worker 1 (pid 8) exited with status 137 during superstep 3", gone.detail());

    CompletableFuture<Boolean> failing =
        worker(
            2,
            2,
            () -> {
              WorkerError.write(region, 1024 + 2 * SLOT, MAX, ErrorCode.NO_SPACE, "worker 2: full");
              new Barrier(region, 0, WORKERS).fail(2);
            });
    FerriteException failed = quietPhaseFails(w -> null, 2, "superstep 4", Duration.ofMinutes(30));
    assertEquals(ErrorCode.NO_SPACE, failed.code());
    assertEquals("superstep 4 failed: worker 2: full", failed.detail());
    assertTrue(failing.get(10, TimeUnit.SECONDS));

    coordinator.reset(); // worker 2's error byte
    FerriteException late = quietPhaseFails(w -> null, 3, "superstep 5", Duration.ofMillis(50));
    assertEquals(ErrorCode.TIMEOUT, late.code());
  }

  @Test
  void aPhaseThatEndsWithinTheQuietTimeEnds() throws Exception {
    List<CompletableFuture<Boolean>> ws =
        List.of(
            worker(0, 1, () -> new Barrier(region, 0, WORKERS).finish(0, 1)),
            worker(1, 1, () -> new Barrier(region, 0, WORKERS).finish(1, 1)),
            worker(2, 1, () -> new Barrier(region, 0, WORKERS).finish(2, 1)));
    long quiet = TimeUnit.MILLISECONDS.toNanos(30);
    long nanos = driver(w -> null).run(1, "superstep 1", Duration.ofSeconds(30), null, quiet);
    assertTrue(nanos > 0);
    for (CompletableFuture<Boolean> w : ws) {
      assertTrue(w.get(10, TimeUnit.SECONDS));
    }
  }

  @Test
  void afterANapThePollRampResumesWherePollingAllAlongWouldBe() {
    // Barrier.pause: 100 busy polls, then parks of 10 us, 20 us, ...: n parks take 5 us x n(n+1).
    assertEquals(100, Barrier.pollsAfter(0));
    assertEquals(100, Barrier.pollsAfter(-5));
    int last = 100;
    for (long us = 1; us <= 200_000; us = us * 3 / 2 + 1) {
      int spin = Barrier.pollsAfter(us * 1000);
      int n = spin - 100;
      assertTrue(5L * n * n <= us && us < 5L * (n + 1) * (n + 1), us + " us: " + spin);
      assertTrue(spin >= last, us + " us");
      last = spin;
    }
  }
}
