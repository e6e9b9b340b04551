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
    long n = graph.vertexCount();
    long m = graph.edgeCount();
    // Upper bounds, not allocations: heap for the partition's arrays (targets, offsets, state, the
    // n-wide combiner accumulators, grouped messages), direct memory for its vertex records, its
    // outbox and inbox buffers (12 bytes a message) and the 16 MiB load piece; while the load's
    // warm-up runs, its scratch partition has n-wide accumulators and an outbox of its own; with a
    // combiner the edges regrouped by target block (FoldBlocks: 6 bytes an edge, 4 more while
    // built).
    long heap = (256L << 20) + 48 * n + 28 * m / job.workers() + 8 * m;
    long direct = (128L << 20) + 60 * n + 24 * m;
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
      procs.launch(
          "worker " + w, a, new WorkerLauncher.Jvm(heap, direct, 1, m < QUICK_START_EDGES));
    }
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
