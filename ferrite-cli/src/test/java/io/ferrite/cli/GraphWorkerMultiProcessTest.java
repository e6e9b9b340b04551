package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.apps.carafe.CarafeGraph;
import io.ferrite.apps.carafe.Csr;
import io.ferrite.apps.carafe.Reference;
import io.ferrite.apps.carafe.pregel.PregelCoordinator;
import io.ferrite.apps.carafe.pregel.PregelJob;
import io.ferrite.apps.carafe.pregel.PregelResult;
import io.ferrite.apps.worker.JvmLauncher;
import io.ferrite.apps.worker.LocalCluster;
import io.ferrite.apps.worker.WorkerLauncher;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.memory.RStore;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Pregel with its partition workers as processes ({@code ferrite graph-worker}): PageRank on 2
 * worker processes equals the reference; a worker SIGKILLed while the supersteps run fails the job
 * with an error naming the worker and the superstep, every namespace of the job is released, and a
 * rerun succeeds. No worker process outlives a test.
 */
@Tag("multiprocess")
class GraphWorkerMultiProcessTest {
  static final int ITERATIONS = 8;

  LocalCluster cluster;
  FerriteClient client;
  RStore store;
  final List<Process> started = new CopyOnWriteArrayList<>();

  @BeforeEach
  void start() {
    cluster = LocalCluster.start(1, 64L << 20, "auto");
    client = cluster.access().connect("graph-test");
    store = new RStore(client);
  }

  @AfterEach
  void stop() {
    List<ProcessHandle> alive =
        ProcessHandle.current().children().filter(ProcessHandle::isAlive).toList();
    alive.forEach(ProcessHandle::destroyForcibly);
    client.close();
    cluster.close();
    assertEquals(List.of(), alive, "worker processes still running after the job");
  }

  /** A seeded directed graph with sinks, self-loops and duplicate edges. */
  static Csr graph(long seed, int n, int perVertex) {
    Random r = new Random(seed);
    long[] first = new long[n + 1];
    for (int v = 0; v < n; v++) {
      first[v + 1] = first[v] + (r.nextInt(5) == 0 ? 0 : 1 + r.nextInt(2 * perVertex));
    }
    int[] t = new int[(int) first[n]];
    for (int v = 0; v < n; v++) {
      for (long e = first[v]; e < first[v + 1]; e++) {
        t[(int) e] = e == first[v] && r.nextInt(4) == 0 ? v : r.nextInt(n);
      }
      if (first[v + 1] - first[v] > 1 && r.nextInt(4) == 0) {
        t[(int) first[v] + 1] = t[(int) first[v]];
      }
    }
    long[] ext = new long[n];
    for (int v = 0; v < n; v++) {
      ext[v] = v;
    }
    return new Csr(ext, first, t, null, false).check();
  }

  private WorkerLauncher recording() {
    JvmLauncher jvm = new JvmLauncher(FerriteCli.class.getName(), System.err);
    return (label, args, shape) -> {
      Process p = jvm.start(label, args, shape);
      started.add(p);
      return p;
    };
  }

  private static PrintStream lines(Consumer<String> each) {
    return new PrintStream(
        new OutputStream() {
          private final StringBuilder line = new StringBuilder();

          @Override
          public void write(int b) {
            if (b == '\n') {
              String s = line.toString();
              line.setLength(0);
              System.err.println(s);
              each.accept(s);
            } else {
              line.append((char) b);
            }
          }
        },
        true,
        StandardCharsets.UTF_8);
  }

  private void assertPageRank(Csr csr, CarafeGraph g, int iterations) {
    double[] expected = Reference.pageRank(csr, iterations);
    double[] ranks = PregelResult.readDoubleValues(g);
    for (int v = 0; v < expected.length; v++) {
      assertEquals(expected[v], ranks[v], 1e-9, "vertex " + v);
    }
  }

  private void assertNamespacesGone(PregelJob job) {
    for (String ns : job.namespaces()) {
      FerriteException e = assertThrows(FerriteException.class, () -> store.joinNamespace(ns));
      assertEquals(ErrorCode.NOT_FOUND, e.code(), ns);
    }
  }

  @Test
  void pageRankOnTwoWorkerProcessesEqualsTheReference() throws Exception {
    Csr csr = graph(5, 3000, 6);
    CarafeGraph g = CarafeGraph.create(store, "g", csr, CarafeGraph.Progress.NONE);
    PregelJob job =
        new PregelJob("g", "pagerank:" + ITERATIONS, 2, 1000, "mp/", Duration.ofMinutes(1));
    PregelResult r =
        new PregelCoordinator(store, job, lines(s -> {}))
            .runInProcesses(cluster.access(), recording());
    assertEquals(ITERATIONS + 2, r.supersteps());
    assertEquals(2, started.size());
    assertPageRank(csr, g, ITERATIONS);
    assertNamespacesGone(job);
  }

  @Test
  void aWorkerKilledMidSuperstepFailsTheJobByNameAndARerunSucceeds() throws Exception {
    Csr csr = graph(7, 20_000, 8);
    CarafeGraph g = CarafeGraph.create(store, "k", csr, CarafeGraph.Progress.NONE);
    // Enough supersteps that the job is still running when worker 1 is killed.
    PregelJob job = new PregelJob("k", "pagerank:100000", 2, 100_000, "mp/", Duration.ofMinutes(1));
    AtomicReference<Thread> killer = new AtomicReference<>();
    PrintStream progress =
        lines(
            s -> {
              if (s.contains("superstep 2:") && killer.get() == null) {
                // Kill from another thread a moment later, while the next supersteps run.
                Thread t =
                    new Thread(
                        () -> {
                          LockSupport.parkNanos(20_000_000L);
                          started.get(1).destroyForcibly(); // SIGKILL
                        },
                        "killer");
                killer.set(t);
                t.start();
              }
            });
    FerriteException e =
        assertThrows(
            FerriteException.class,
            () ->
                new PregelCoordinator(store, job, progress)
                    .runInProcesses(cluster.access(), recording()));
    killer.get().join();
    assertEquals(ErrorCode.UNAVAILABLE, e.code(), e.getMessage());
    assertTrue(
        java.util.regex.Pattern.compile(
                "worker 1 \\(pid "
                    + started.get(1).pid()
                    + "\\) exited with status 137 during superstep [0-9]+$")
            .matcher(e.getMessage())
            .find(),
        e.getMessage());
    assertNamespacesGone(job);

    started.clear();
    PregelJob rerun = new PregelJob("k", "pagerank:5", 2, 1000, "mp/", Duration.ofMinutes(1));
    new PregelCoordinator(store, rerun, lines(s -> {}))
        .runInProcesses(cluster.access(), recording());
    assertPageRank(csr, g, 5);
    assertNamespacesGone(rerun);
  }
}
