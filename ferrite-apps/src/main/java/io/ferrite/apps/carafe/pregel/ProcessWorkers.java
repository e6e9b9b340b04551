package io.ferrite.apps.carafe.pregel;

import io.ferrite.apps.carafe.CarafeGraph;
import io.ferrite.apps.worker.ClusterAccess;
import io.ferrite.apps.worker.WorkerLauncher;
import io.ferrite.apps.worker.WorkerProcesses;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Workers as processes: {@code ferrite graph-worker ...} JVMs started through the shared {@link
 * WorkerProcesses} (each halts when the coordinator's process is gone), sized for their partition.
 */
final class ProcessWorkers implements WorkerSet {
  /** Below this many adjacency entries a worker JVM starts fast (C1) rather than runs fast. */
  static final long QUICK_START_EDGES = 4_000_000;

  /**
   * A worker JVM of a large job compiles with C2 only. With the tiered default, the paths the
   * load's warm-up does not run (the superstep's one-sided reads and writes of the mailbox and the
   * barrier, their futures, the fabric's batch) reach C1's thresholds during the first supersteps
   * and about a hundred small C1 compiles, then C2 compiles of some of them, run there: 35-60 ms of
   * each worker's compiler threads inside 22 supersteps (measured, /proc schedstat), on the core
   * the other worker computes on once there are as many workers as cores. Without tiers those
   * paths, run a few hundred times a job, stay interpreted (microseconds a superstep), while the
   * warm-up's loops, run millions of times, reach C2 as before: the compilers' CPU in the
   * supersteps fell to 3-14 ms a worker (docs/PERFORMANCE.md, "Carafe's 1 to 2 workers,
   * interleaved"). The cost is a slower load (the import's paths run interpreted longer).
   */
  static final List<String> STEADY_JIT = List.of("-XX:-TieredCompilation");

  private final ClusterAccess access;
  private final PregelJob job;
  private final CarafeGraph graph;
  private final boolean quiet;
  private final WorkerProcesses procs;

  ProcessWorkers(
      ClusterAccess access,
      PregelJob job,
      CarafeGraph graph,
      WorkerLauncher launcher,
      boolean quiet) {
    this.access = access;
    this.job = job;
    this.graph = graph;
    this.quiet = quiet;
    this.procs = new WorkerProcesses(launcher);
  }

  @Override
  public void start(long regionAddress) throws IOException {
    WorkerLauncher.Jvm jvm = jvm(graph.vertexCount(), graph.edgeCount(), job.workers());
    for (int w = 0; w < job.workers(); w++) {
      List<String> a = new ArrayList<>(List.of("graph-worker"));
      a.addAll(WorkerProcesses.accessArgs(access));
      a.addAll(
          List.of(
              "--graph",
              job.graph(),
              "--program",
              job.program(),
              "--workers",
              Integer.toString(job.workers()),
              "--worker",
              Integer.toString(w),
              "--namespace-prefix",
              job.prefix(),
              "--region-address",
              Long.toString(regionAddress)));
      if (quiet) {
        a.add("--quiet");
      }
      procs.launch("worker " + w, a, jvm);
    }
  }

  /**
   * The JVM of each of {@code workers} workers of a graph of {@code n} vertices, {@code m} edges.
   */
  static WorkerLauncher.Jvm jvm(long n, long m, int workers) {
    // Upper bounds, not allocations: heap for the partition's arrays (targets, offsets, state, the
    // n-wide combiner accumulators, grouped messages), direct memory for its vertex records, its
    // outbox and inbox buffers (12 bytes a message) and the 16 MiB load piece; while the load's
    // warm-up runs, its scratch partition has n-wide accumulators and an outbox of its own; with a
    // combiner the edges regrouped by target block (FoldBlocks: 6 bytes an edge, 4 more while
    // built).
    long heap = (256L << 20) + 48 * n + 28 * m / workers + 8 * m;
    long direct = (128L << 20) + 60 * n + 24 * m;
    boolean quick = m < QUICK_START_EDGES;
    return new WorkerLauncher.Jvm(heap, direct, 1, quick, quick ? List.of() : STEADY_JIT);
  }

  @Override
  public String gone(int w) {
    return procs.gone(w);
  }

  @Override
  public void awaitExit(Duration timeout) throws InterruptedException {
    procs.awaitExit(timeout);
  }

  @Override
  public void close() {
    procs.close();
  }
}
