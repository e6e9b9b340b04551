package io.ferrite.apps.carafe.pregel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrite.apps.AppsCluster;
import io.ferrite.apps.carafe.CarafeGraph;
import io.ferrite.apps.carafe.Csr;
import io.ferrite.apps.carafe.Reference;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.testing.SeedExtension;
import io.ferrite.kernel.testing.ClusterHarness;
import io.ferrite.memory.RStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Pregel engine with workers as threads: PageRank and connected components equal the single-JVM
 * reference on 1, 2 and 3 workers (with and without a combiner), on graphs with sinks, self-loops,
 * duplicate edges, isolated vertices and a partition without edges; the failures (a mailbox
 * overflow, a worker that throws, a directed graph for components) name what failed, and leave no
 * namespace of the job behind.
 */
@ExtendWith(SeedExtension.class)
class PregelTest {
  @TempDir Path dir;
  ClusterHarness cluster;
  RStore store;

  @BeforeEach
  void start() throws Exception {
    cluster = AppsCluster.start(dir, "24m", 2);
    store = new RStore(cluster.client());
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  static PregelJob job(String graph, String program, int workers) {
    return new PregelJob(graph, program, workers, 1000, "t/", Duration.ofMinutes(1));
  }

  private PregelResult run(PregelJob job, VertexProgram program) throws InterruptedException {
    return new PregelCoordinator(store, job, null).runInThreads(program);
  }

  private void assertJobNamespacesGone(PregelJob job) {
    for (String ns : job.namespaces()) {
      FerriteException e = assertThrows(FerriteException.class, () -> store.joinNamespace(ns));
      assertEquals(ErrorCode.NOT_FOUND, e.code(), ns);
    }
  }

  @Test
  void pageRankEqualsTheReference(Random random) throws Exception {
    Csr csr = TestGraphs.directed(random, 400, 250, 4);
    CarafeGraph g = CarafeGraph.create(store, "pr", csr, CarafeGraph.Progress.NONE);
    int iterations = 5 + random.nextInt(8);
    double[] expected = Reference.pageRank(csr, iterations);
    boolean sawEmptyPartition = false;
    for (int w = 1; w <= 3; w++) {
      for (boolean combine : new boolean[] {true, false}) {
        PregelJob job = job("pr", "pagerank:" + iterations, w);
        VertexProgram p = new PageRank(iterations);
        PregelResult r = run(job, combine ? p : new Uncombined(p));
        String what = w + " worker(s), combiner " + combine;
        double[] ranks = r.doubleValues(g);
        for (int v = 0; v < expected.length; v++) {
          assertEquals(expected[v], ranks[v], 1e-9, "vertex " + v + ", " + what);
        }
        assertEquals(iterations + 2, r.supersteps(), what);
        assertTrue(r.halted(), what);
        sawEmptyPartition |= Arrays.stream(r.edges()).anyMatch(e -> e == 0);
        assertJobNamespacesGone(job);
      }
    }
    assertTrue(sawEmptyPartition, "the isolated tail makes a partition without edges");
  }

  @Test
  void componentsEqualTheReference(Random random) throws Exception {
    Csr csr = TestGraphs.undirected(random, 400, 200, 300);
    CarafeGraph g = CarafeGraph.create(store, "cc", csr, CarafeGraph.Progress.NONE);
    long[] expected = Reference.components(csr);
    for (int w = 1; w <= 3; w++) {
      for (boolean combine : new boolean[] {true, false}) {
        PregelJob job = job("cc", "components", w);
        VertexProgram p = new ConnectedComponents();
        PregelResult r = run(job, combine ? p : new Uncombined(p));
        assertArrayEquals(expected, r.values(g), w + " worker(s), combiner " + combine);
        assertTrue(r.halted());
        assertJobNamespacesGone(job);
      }
    }
  }

  @Test
  void theWarmUpRunsOnScratchStateAndLeavesNoTrace(Random random) throws Exception {
    Csr csr = TestGraphs.directed(random, 300, 100, 4);
    CarafeGraph g = CarafeGraph.create(store, "wu", csr, CarafeGraph.Progress.NONE);
    int iterations = 3 + random.nextInt(5);
    double[] expected = Reference.pageRank(csr, iterations);
    for (int w = 1; w <= 3; w++) {
      for (boolean combine : new boolean[] {true, false}) {
        AtomicLong warmCalls = new AtomicLong();
        VertexProgram pr = new PageRank(iterations);
        // A warm-up that would wreck the result if any of it reached the job's state, mailbox or
        // aggregate: other initial values, other sends, a huge aggregate, every vertex halted.
        VertexProgram wrecker =
            new VertexProgram() {
              @Override
              public Combiner combiner() {
                return combine ? Combiner.SUM_DOUBLE : Combiner.NONE;
              }

              @Override
              public void init(Vertex v) {
                v.doubleValue(1e9);
                v.value1(-1);
              }

              @Override
              public void compute(Context ctx, Vertex v, Messages messages) {
                warmCalls.incrementAndGet();
                v.doubleValue(v.doubleValue() * 3 + messages.count());
                ctx.sendToAllNeighbors(1e6 + ctx.previousAggregate());
                ctx.aggregate(1e12);
                ctx.voteToHalt();
              }

              @Override
              public String spec() {
                return "wrecker";
              }
            };
        VertexProgram withWarmUp =
            new Uncombined(pr) {
              @Override
              public Combiner combiner() {
                return combine ? pr.combiner() : Combiner.NONE;
              }

              @Override
              public WarmUp warmUp() {
                return new WarmUp(wrecker, 3);
              }
            };
        PregelJob job = job("wu", "pagerank:" + iterations, w);
        PregelResult r = run(job, withWarmUp);
        String what = w + " worker(s), combiner " + combine;
        assertTrue(warmCalls.get() > 0, "the warm-up ran, " + what);
        double[] ranks = r.doubleValues(g);
        for (int v = 0; v < expected.length; v++) {
          assertEquals(expected[v], ranks[v], 1e-9, "vertex " + v + ", " + what);
        }
        assertEquals(iterations + 2, r.supersteps(), what);
        assertJobNamespacesGone(job);
      }
    }
  }

  @Test
  void aWarmUpNeedsAProgramAndASuperstep() {
    for (FerriteException e :
        new FerriteException[] {
          assertThrows(FerriteException.class, () -> new VertexProgram.WarmUp(null, 3)),
          assertThrows(FerriteException.class, () -> new VertexProgram.WarmUp(new PageRank(2), 0))
        }) {
      assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
      assertTrue(e.getMessage().contains("warm-up"), e.getMessage());
    }
    assertEquals(4, new PageRank(20).warmUp().supersteps());
  }

  @Test
  void partitionsOfAStoredGraphAreThoseOfItsDegrees(Random random) throws Exception {
    // More vertices than one 4 MiB read of records holds: the degrees come in pieces.
    int n = Partitioner.PIECE_VERTICES + 1 + random.nextInt(1000);
    long[] first = new long[n + 1];
    int[] degree = new int[n];
    for (int v = 0; v < n; v++) {
      degree[v] = random.nextInt(8) == 0 ? random.nextInt(6) : 0;
      first[v + 1] = first[v] + degree[v];
    }
    int[] targets = new int[(int) first[n]];
    for (int e = 0; e < targets.length; e++) {
      targets[e] = random.nextInt(n);
    }
    Csr csr = new Csr(new long[n], first, targets, null, false);
    CarafeGraph g = CarafeGraph.create(store, "big", csr, CarafeGraph.Progress.NONE);
    Partitioner p = Partitioner.defaults();
    for (int w = 1; w <= 4; w++) {
      assertArrayEquals(p.bounds(degree, w), p.bounds(g, w), w + " partitions");
    }
  }

  /**
   * In superstep 0 vertices with id % 7 == 0 send 1 along every edge and those with id % 7 == 1
   * send 2 along their first edge only; in superstep 1 a vertex that received keeps the sum. Only
   * the targets of those edges receive (a vertex none sent to keeps -1): with a combiner, with
   * none, whatever partition the senders are in.
   */
  @Test
  void onlyTheTargetsOfSentMessagesReceiveThem(Random random) throws Exception {
    Csr csr = TestGraphs.directed(random, 300, 40, 3);
    CarafeGraph g = CarafeGraph.create(store, "wake", csr, CarafeGraph.Progress.NONE);
    double[] expected = new double[csr.vertices()];
    Arrays.fill(expected, -1);
    for (int v = 0; v < csr.vertices(); v++) {
      for (long e = csr.firstEdge()[v]; e < csr.firstEdge()[v + 1]; e++) {
        int t = csr.targets()[(int) e];
        double add = v % 7 == 0 ? 1 : v % 7 == 1 && e == csr.firstEdge()[v] ? 2 : 0;
        if (add > 0) {
          expected[t] = (expected[t] < 0 ? 0 : expected[t]) + add;
        }
      }
    }
    VertexProgram wake =
        new VertexProgram() {
          @Override
          public Combiner combiner() {
            return Combiner.SUM_DOUBLE;
          }

          @Override
          public void init(Vertex v) {
            v.doubleValue(-1);
          }

          @Override
          public void compute(Context ctx, Vertex v, Messages messages) {
            if (ctx.superstep() == 0) {
              if (v.id() % 7 == 0) {
                ctx.sendToAllNeighbors(1.0);
              } else if (v.id() % 7 == 1 && v.degree() > 0) {
                ctx.send(0, 2.0);
              }
            } else {
              double sum = 0;
              for (int i = 0; i < messages.count(); i++) {
                sum += messages.getDouble(i);
              }
              v.doubleValue(sum);
            }
            ctx.voteToHalt();
          }

          @Override
          public String spec() {
            return "wake";
          }
        };
    for (int w = 1; w <= 3; w++) {
      for (boolean combine : new boolean[] {true, false}) {
        PregelJob job = job("wake", "components", w);
        PregelResult r = run(job, combine ? wake : new Uncombined(wake));
        assertArrayEquals(expected, r.doubleValues(g), w + " worker(s), combiner " + combine);
        assertEquals(2, r.supersteps());
      }
    }
  }

  /** More supersteps than the barrier has phases (250): the phase numbers wrap, the job goes on. */
  @Test
  void supersteppingGoesPastTheBarriersWrap(Random random) throws Exception {
    Csr csr = TestGraphs.directed(random, 60, 10, 2);
    CarafeGraph g = CarafeGraph.create(store, "wrap", csr, CarafeGraph.Progress.NONE);
    PregelJob job = job("wrap", "pagerank:300", 2);
    PregelResult r = new PregelCoordinator(store, job, null).runInThreads();
    assertEquals(302, r.supersteps());
    double[] expected = Reference.pageRank(csr, 300);
    double[] ranks = r.doubleValues(g);
    for (int v = 0; v < expected.length; v++) {
      assertEquals(expected[v], ranks[v], 1e-9, "vertex " + v);
    }
  }

  @Test
  void anEmptyGraphRunsWithEmptyPartitions() throws Exception {
    Csr empty = new Csr(new long[0], new long[] {0}, new int[0], null, true);
    CarafeGraph g = CarafeGraph.create(store, "empty", empty, CarafeGraph.Progress.NONE);
    for (String program : new String[] {"pagerank:3", "components"}) {
      PregelJob job = job("empty", program, 2);
      PregelResult r = new PregelCoordinator(store, job, null).runInThreads();
      assertTrue(r.halted(), program);
      assertEquals(1, r.supersteps(), program); // nothing active after superstep 0
      assertEquals(0, r.values(g).length);
      assertJobNamespacesGone(job);
    }
  }

  /**
   * Every vertex sends along all its edges except one, whose edge is the only one into some vertex:
   * that vertex receives nothing, though a sink called sendAll in its place (it has no edge to send
   * along).
   */
  @Test
  void aVertexThatDoesNotSendIsNotHeardFrom(Random random) throws Exception {
    Csr csr = TestGraphs.directed(random, 300, 0, 2);
    int n = csr.vertices();
    int[] in = new int[n];
    for (int t : csr.targets()) {
      in[t]++;
    }
    int skip = -1;
    for (int v = 0; v < n && skip < 0; v++) {
      for (long e = csr.firstEdge()[v]; e < csr.firstEdge()[v + 1]; e++) {
        if (in[csr.targets()[(int) e]] == 1 && csr.targets()[(int) e] != v) {
          skip = v;
        }
      }
    }
    assertTrue(skip >= 0, "a vertex whose edge is the only one into its target");
    double[] expected = new double[n];
    Arrays.fill(expected, -1);
    for (int v = 0; v < n; v++) {
      for (long e = csr.firstEdge()[v]; e < csr.firstEdge()[v + 1] && v != skip; e++) {
        int t = csr.targets()[(int) e];
        expected[t] = (expected[t] < 0 ? 0 : expected[t]) + 1;
      }
    }
    // One sink sends too, the one nearest the quiet vertex (in its partition, mostly): as many
    // vertices call sendAll as have edges, but not the same ones.
    int sink = -1;
    for (int v = 0; v < n; v++) {
      if (csr.degree(v) == 0 && (sink < 0 || Math.abs(v - skip) < Math.abs(sink - skip))) {
        sink = v;
      }
    }
    assertTrue(sink >= 0, "a sink");
    CarafeGraph g = CarafeGraph.create(store, "quiet", csr, CarafeGraph.Progress.NONE);
    int quiet = skip;
    int loud = sink;
    VertexProgram allButOne =
        new VertexProgram() {
          @Override
          public Combiner combiner() {
            return Combiner.SUM_DOUBLE;
          }

          @Override
          public void init(Vertex v) {
            v.doubleValue(-1);
          }

          @Override
          public void compute(Context ctx, Vertex v, Messages messages) {
            if (ctx.superstep() == 0) {
              if (v.id() != quiet && (v.degree() > 0 || v.id() == loud)) {
                ctx.sendToAllNeighbors(1.0); // the sink has nothing to send along
              }
            } else {
              double sum = 0;
              for (int i = 0; i < messages.count(); i++) {
                sum += messages.getDouble(i);
              }
              v.doubleValue(sum);
            }
            ctx.voteToHalt();
          }

          @Override
          public String spec() {
            return "quiet";
          }
        };
    for (int w = 1; w <= 3; w++) {
      PregelResult r = run(job("quiet", "components", w), allButOne);
      assertArrayEquals(expected, r.doubleValues(g), w + " worker(s)");
    }
  }

  @Test
  void componentsRefuseADirectedGraph(Random random) throws Exception {
    CarafeGraph.create(
        store, "d", TestGraphs.directed(random, 50, 0, 2), CarafeGraph.Progress.NONE);
    PregelJob job = job("d", "components", 2);
    FerriteException e =
        assertThrows(
            FerriteException.class, () -> new PregelCoordinator(store, job, null).runInThreads());
    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
    assertTrue(e.getMessage().contains("undirected graph"), e.getMessage());
    assertJobNamespacesGone(job);
  }

  @Test
  void aMailboxOverflowIsAClearError(Random random) throws Exception {
    CarafeGraph.create(
        store, "o", TestGraphs.directed(random, 200, 0, 4), CarafeGraph.Progress.NONE);
    PregelJob job = job("o", "components", 2);
    VertexProgram twice =
        new Uncombined(new PageRank(3)) {
          @Override
          public void compute(Context ctx, Vertex v, Messages messages) {
            ctx.sendToAllNeighbors(1L);
            ctx.sendToAllNeighbors(2L); // two messages per edge: more than a segment holds
          }
        };
    FerriteException e = assertThrows(FerriteException.class, () -> run(job, twice));
    assertEquals(ErrorCode.TOO_LARGE, e.code(), e.getMessage());
    assertTrue(e.getMessage().contains("superstep 0"), e.getMessage());
    assertTrue(e.getMessage().contains("sends more than"), e.getMessage());
    assertJobNamespacesGone(job);
  }

  @Test
  void aWorkerThatThrowsFailsTheJobByNameAndARerunSucceeds(Random random) throws Exception {
    Csr csr = TestGraphs.directed(random, 200, 0, 4);
    CarafeGraph g = CarafeGraph.create(store, "f", csr, CarafeGraph.Progress.NONE);
    PregelJob job = job("f", "pagerank:6", 2);
    VertexProgram pr = new PageRank(6);
    VertexProgram throwing =
        new Uncombined(pr) {
          @Override
          public Combiner combiner() {
            return pr.combiner();
          }

          @Override
          public void compute(Context ctx, Vertex v, Messages messages) {
            if (ctx.superstep() == 3 && v.id() == csr.vertices() - 1) {
              throw new IllegalStateException("boom at the last vertex");
            }
            pr.compute(ctx, v, messages);
          }
        };
    FerriteException e = assertThrows(FerriteException.class, () -> run(job, throwing));
    assertTrue(e.getMessage().contains("worker 1 failed in superstep 3"), e.getMessage());
    assertTrue(e.getMessage().contains("boom at the last vertex"), e.getMessage());
    assertJobNamespacesGone(job);

    PregelResult r = new PregelCoordinator(store, job, null).runInThreads();
    double[] expected = Reference.pageRank(csr, 6);
    double[] ranks = r.doubleValues(g);
    for (int v = 0; v < expected.length; v++) {
      assertEquals(expected[v], ranks[v], 1e-9, "vertex " + v);
    }
    assertJobNamespacesGone(job);
  }

  @Test
  void aJobPrefixInUseIsRefused(Random random) throws Exception {
    CarafeGraph.create(
        store, "p", TestGraphs.directed(random, 20, 0, 2), CarafeGraph.Progress.NONE);
    PregelJob job = job("p", "pagerank:2", 1);
    store.createNamespace(job.controlNamespace());
    FerriteException e =
        assertThrows(
            FerriteException.class, () -> new PregelCoordinator(store, job, null).runInThreads());
    assertEquals(ErrorCode.CONFLICT, e.code());
    assertTrue(e.getMessage().contains("another Pregel job"), e.getMessage());
    store.joinNamespace(job.controlNamespace()); // not deleted: it is not this job's
    FerriteException gone =
        assertThrows(FerriteException.class, () -> store.joinNamespace(job.mailboxNamespace()));
    assertFalse(gone.code() == ErrorCode.OK);
  }

  /** A program with its combiner off: every message is delivered and grouped by target. */
  static class Uncombined extends VertexProgram {
    final VertexProgram p;

    Uncombined(VertexProgram p) {
      this.p = p;
    }

    @Override
    public void init(Vertex v) {
      p.init(v);
    }

    @Override
    public void compute(Context ctx, Vertex v, Messages messages) {
      p.compute(ctx, v, messages);
    }

    @Override
    public String spec() {
      return p.spec();
    }
  }
}
