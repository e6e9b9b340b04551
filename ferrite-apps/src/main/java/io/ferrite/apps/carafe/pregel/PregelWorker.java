package io.ferrite.apps.carafe.pregel;

import io.ferrite.apps.carafe.CarafeGraph;
import io.ferrite.apps.carafe.GraphLayout;
import io.ferrite.apps.worker.ClusterAccess;
import io.ferrite.apps.worker.WorkerProcesses;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Futures;
import io.ferrite.kernel.client.FerriteClient;
import io.ferrite.memory.Barrier;
import io.ferrite.memory.Mapping;
import io.ferrite.memory.MemoryFlags;
import io.ferrite.memory.Namespace;
import io.ferrite.memory.RAddress;
import io.ferrite.memory.RStore;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * One partition worker of a Pregel job (Carafe, RStore §V-B), as a thread of the coordinator's JVM
 * or as a process of its own. It maps the control region and runs what the coordinator starts
 * through the {@link Barrier}, phase after phase:
 *
 * <ol>
 *   <li>{@code LOAD}: reads its partition's vertex records (one large read; they stay in local
 *       memory for the write-back) and adjacency lists (16 MiB pieces) from the graph, keeps the
 *       targets in an int array it iterates sequentially, runs {@code init} on every vertex, runs
 *       the program's warm-up ({@link VertexProgram#warmUp()}) on a scratch partition (so that the
 *       timed supersteps run compiled code) and writes its mailbox row (the capacity of each
 *       segment it sends into).
 *   <li>{@code PREPARE}: maps the mailbox allocation the coordinator made for the capacities of
 *       every row, and allocates its inbox buffers.
 *   <li>{@code SUPERSTEP k}: reads its inbox column's containers of parity k % 2 (a count word,
 *       then the messages in one read per segment), runs compute, writes its outbox row's
 *       containers of parity (k + 1) % 2 (one write per segment, count word included), and reports
 *       what it sent, aggregated and left active.
 *   <li>{@code FINISH}: writes the vertex state back into the graph's records (1 MiB writes), drops
 *       its mappings and ends. {@code ABORT}: drops its mappings and ends (an aborted job writes no
 *       vertex state; one that fails in FINISH may have written some partitions').
 * </ol>
 *
 * A failure is written to its area ("worker w failed in superstep k: ...") and reported by {@link
 * Barrier#fail}; the worker then drops its mappings and ends. The coordinator deletes the job's
 * namespaces.
 */
public final class PregelWorker {
  /** Bytes per read while the adjacency lists load. */
  static final int EDGE_PIECE = 16 << 20;

  /** Vertex records per write of the state write-back: 1 MiB. */
  static final int STATE_PIECE = (1 << 20) / GraphLayout.VERTEX;

  /** How long a worker waits for the next phase; its coordinator's death ends it sooner. */
  static final Duration WAIT = Duration.ofHours(2);

  /**
   * What a worker process is told on its command line.
   *
   * @param cluster how to reach the cluster
   * @param job the job
   * @param regionAddress the control region's address in the job's control namespace
   * @param worker this worker's index
   * @param parentPid the coordinator's process id: the worker halts when it is gone (0: none)
   */
  public record Args(
      ClusterAccess cluster, PregelJob job, long regionAddress, int worker, long parentPid) {}

  private final RStore store;
  private final PregelJob job;
  private final VertexProgram program;
  private final int me;
  private final int workers;
  private final ControlRegion ctl;
  private final Consumer<String> log;

  private Mapping vertexMap;
  private ByteBuffer records;
  private Partition part;
  private Mailbox mailbox;
  private Mapping mailboxMap;
  private ByteBuffer[] inbox;
  private final ByteBuffer countWord = PregelLayout.le(Mailbox.COUNT);

  private PregelWorker(
      RStore store,
      PregelJob job,
      VertexProgram program,
      Mapping control,
      int me,
      Consumer<String> log) {
    this.store = store;
    this.job = job;
    this.program = program;
    this.me = me;
    this.workers = job.workers();
    this.ctl = new ControlRegion(control, workers);
    this.log = log;
  }

  /** Runs worker {@code args.worker()} in this process to the end; returns the exit status. */
  public static int run(Args args, PrintStream log) {
    WorkerProcesses.haltWithParent(args.parentPid());
    try (FerriteClient client = args.cluster().connect("pregel-worker-" + args.worker())) {
      RStore store = new RStore(client, 0);
      return run(
          store,
          args.job(),
          VertexProgram.parse(args.job().program()),
          args.regionAddress(),
          args.worker(),
          log == null
              ? s -> {}
              : s -> {
                log.println(s);
                log.flush();
              });
    }
  }

  /**
   * Runs worker {@code me} on {@code store} (a thread's or a process's) to the end; returns 0 when
   * the job finished, 1 when this worker failed (it said why in its area), 2 when the coordinator
   * aborted the job.
   */
  static int run(
      RStore store,
      PregelJob job,
      VertexProgram program,
      long regionAddress,
      int me,
      Consumer<String> log) {
    Namespace controlNs = store.joinNamespace(job.controlNamespace());
    try (Mapping control =
        RAddress.init(controlNs, regionAddress, PregelLayout.regionBytes(job.workers()))
            .map(MemoryFlags.MAP_NO_BUFFER)) {
      return new PregelWorker(store, job, program, control, me, log).phases();
    }
  }

  private int phases() {
    Barrier barrier = ctl.barrier();
    String where = "start";
    try {
      for (int done = 0; ; ) {
        int phase = awaitChange(barrier, done);
        // The command word was written before the start byte this worker just read (the
        // barrier's order). An abort may start a phase past the one this worker waited for (it
        // failed elsewhere before this worker saw the phase start): ABORT is checked first.
        ControlRegion.Global g = ctl.global();
        if (g.command() != PregelLayout.ABORT && phase != Barrier.next(done)) {
          throw new FerriteException(
              ErrorCode.PROTOCOL,
              "the coordinator started phase "
                  + phase
                  + " after "
                  + done
                  + " (expected: the next)");
        }
        switch (g.command()) {
          case PregelLayout.LOAD -> {
            where = "load";
            load();
          }
          case PregelLayout.PREPARE -> {
            where = "prepare";
            prepare(g.mailbox());
          }
          case PregelLayout.SUPERSTEP -> {
            where = "superstep " + g.superstep();
            superstep(g.superstep(), g.aggregate());
          }
          case PregelLayout.FINISH -> {
            where = "finish";
            if (part != null) {
              writeBack();
            }
            release();
            barrier.finish(me, phase);
            return 0;
          }
          case PregelLayout.ABORT -> {
            log.accept("worker " + me + ": the coordinator aborted the job");
            release();
            return 2;
          }
          default ->
              throw new FerriteException(
                  ErrorCode.PROTOCOL, "unknown command " + g.command() + " in the control region");
        }
        barrier.finish(me, phase);
        done = phase;
      }
    } catch (RuntimeException | OutOfMemoryError | StackOverflowError e) {
      String what =
          "worker "
              + me
              + " failed in "
              + where
              + ": "
              + (e instanceof FerriteException fe ? fe.getMessage() : e.toString());
      log.accept(what);
      try {
        ctl.error(me, e instanceof FerriteException fe ? fe.code() : ErrorCode.INTERNAL, what);
        barrier.fail(me);
      } catch (RuntimeException e2) {
        log.accept("worker " + me + ": could not report the failure: " + e2);
      }
      release();
      return 1;
    }
  }

  /** Waits until the coordinator's byte is no longer {@code done}; returns it. */
  private static int awaitChange(Barrier barrier, int done) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    for (int spin = 0; ; spin++) {
      int current = barrier.current();
      if (current != done) {
        return current;
      }
      if (System.nanoTime() > deadline) {
        throw new FerriteException(ErrorCode.TIMEOUT, "no next phase after " + WAIT);
      }
      Barrier.pause(spin);
    }
  }

  /** LOAD: the partition's records and adjacency lists, in large reads. */
  private void load() {
    long[] bounds = new long[workers + 1];
    for (int w = 0; w < workers; w++) {
      bounds[w] = ctl.assignment(w)[0];
    }
    long[] mine = ctl.assignment(me);
    bounds[workers] = workers == me + 1 ? mine[1] : ctl.assignment(workers - 1)[1];
    long first = mine[0];
    long count = mine[1] - mine[0];
    CarafeGraph graph = CarafeGraph.open(store, job.graph());
    if (bounds[workers] != graph.vertexCount()) {
      throw new FerriteException(
          ErrorCode.PROTOCOL,
          "the partitions end at "
              + bounds[workers]
              + " but "
              + graph
              + " has "
              + graph.vertexCount()
              + " vertices");
    }
    if (count * GraphLayout.VERTEX > Integer.MAX_VALUE - 8) {
      throw new FerriteException(
          ErrorCode.TOO_LARGE,
          "partition " + me + " has " + count + " vertices, too many for one worker: use more");
    }
    int size = (int) count;
    records = GraphLayout.le(size * GraphLayout.VERTEX);
    int[] off = new int[size + 1];
    long firstEdge = 0;
    if (size > 0) {
      vertexMap = graph.vertices(first, size).map(MemoryFlags.MAP_NO_BUFFER);
      vertexMap.readSync(0, records);
      firstEdge = records.getLong(GraphLayout.V_FIRST_EDGE);
      for (int v = 0; v < size; v++) {
        int at = v * GraphLayout.VERTEX;
        long fe = records.getLong(at + GraphLayout.V_FIRST_EDGE);
        long end = (long) off[v] + records.getInt(at + GraphLayout.V_DEGREE);
        if (fe != firstEdge + off[v] || end > Integer.MAX_VALUE - 8) {
          throw new FerriteException(
              ErrorCode.PROTOCOL,
              "vertex "
                  + (first + v)
                  + ": its adjacency list starts at "
                  + fe
                  + " (expected: "
                  + (firstEdge + off[v])
                  + ", after its predecessor's, under 2^31 per partition)");
        }
        off[v + 1] = (int) end;
      }
    }
    int m = off[size];
    int[] targets = new int[m];
    float[] weights = graph.weighted() ? new float[m] : null;
    if (m > 0) {
      ByteBuffer piece = GraphLayout.le(Math.min(EDGE_PIECE, m * GraphLayout.EDGE));
      int perPiece = piece.capacity() / GraphLayout.EDGE;
      try (Mapping em = graph.edges(firstEdge, m).map(MemoryFlags.MAP_NO_BUFFER)) {
        for (int e0 = 0; e0 < m; e0 += perPiece) {
          int n = Math.min(perPiece, m - e0);
          em.readSync((long) e0 * GraphLayout.EDGE, piece.clear().limit(n * GraphLayout.EDGE));
          for (int e = 0; e < n; e++) {
            targets[e0 + e] = piece.getInt(e * GraphLayout.EDGE + GraphLayout.E_TARGET);
          }
          if (weights != null) {
            for (int e = 0; e < n; e++) {
              weights[e0 + e] = piece.getFloat(e * GraphLayout.EDGE + GraphLayout.E_WEIGHT);
            }
          }
        }
      }
    }
    part = new Partition(me, bounds, graph.vertexCount(), off, targets, weights, program);
    VertexProgram.WarmUp warm = program.warmUp();
    if (warm != null && m > 0) {
      // A new worker JVM compiles the superstep loops while it runs them: in the first supersteps
      // (and again when a late superstep takes a new branch, e.g. PageRank's normalization) two
      // workers on two cores compute at C1's speed and their C2 compiles take the cores they
      // compute on. A short run of the program on a scratch partition over the same adjacency
      // does that compiling here, in the untimed load. It writes scratch state into the local
      // records, which every superstep overwrites whole before it writes them back.
      new Partition(
              me, bounds, graph.vertexCount(), off, targets, weights, warm.program(), part.blocks)
          .runAlone(warm.supersteps(), records);
    }
    ctl.row(me, part.capacity);
    ctl.stats(me, new ControlRegion.Stats(-1, 0, 0, size, 0, m));
  }

  /** PREPARE: maps the mailbox and allocates the inbox buffers. */
  private void prepare(long mailboxAddress) {
    mailbox = new Mailbox(workers, ctl.grid());
    Namespace ns = store.joinNamespace(job.mailboxNamespace());
    mailboxMap = RAddress.init(ns, mailboxAddress, mailbox.bytes()).map(MemoryFlags.MAP_NO_BUFFER);
    inbox = new ByteBuffer[workers];
    for (int i = 0; i < workers; i++) {
      inbox[i] = GraphLayout.le((int) (Mailbox.MESSAGE * mailbox.capacity(i, me)));
    }
  }

  /** SUPERSTEP k: inbox, compute, outbox. */
  private void superstep(int k, double previousAggregate) {
    long t0 = System.nanoTime();
    long[] counts = new long[workers];
    List<CompletableFuture<Void>> io = new ArrayList<>(workers + 1);
    if (k > 0) {
      for (int i = 0; i < workers; i++) {
        long at = mailbox.container(i, me, k & 1);
        mailboxMap.readSync(at, countWord.clear());
        long c = countWord.getLong(0);
        if (c < 0 || c > mailbox.capacity(i, me)) {
          throw new FerriteException(
              ErrorCode.PROTOCOL,
              "superstep "
                  + k
                  + ": the container from partition "
                  + i
                  + " says "
                  + c
                  + " messages (expected: 0 to "
                  + mailbox.capacity(i, me)
                  + "): the mailbox is corrupt");
        }
        counts[i] = c;
        if (c > 0) {
          io.add(
              mailboxMap.read(
                  at + Mailbox.COUNT, inbox[i].clear().limit((int) c * Mailbox.MESSAGE)));
        }
      }
      io.forEach(Futures::join);
      io.clear();
    }
    part.receive(inbox, counts);
    part.compute(k, previousAggregate);
    part.emit();
    int parity = (k + 1) & 1;
    for (int j = 0; j < workers; j++) {
      io.add(
          mailboxMap.write(
              mailbox.container(me, j, parity), part.out[j].slice(0, part.outBytes(j))));
    }
    io.forEach(Futures::join);
    ctl.stats(
        me,
        new ControlRegion.Stats(
            k,
            part.sent,
            part.aggregate,
            part.active,
            System.nanoTime() - t0,
            part.targets.length));
  }

  /**
   * FINISH: writes the vertex state into the graph's records, once, when the job has ended (no
   * superstep reads the records: the state lives in the partition's arrays while the job runs, so a
   * write-back each superstep only moved {@code 48 B} a vertex through the memory system, which two
   * workers on one host share). In 1 MiB pieces, each written right after its state slots were put
   * in: the piece is still in the cache when the write copies it (one pass over the records).
   */
  private void writeBack() {
    List<CompletableFuture<Void>> io = new ArrayList<>();
    for (int v0 = 0; v0 < part.size; v0 += STATE_PIECE) {
      int v1 = Math.min(part.size, v0 + STATE_PIECE);
      part.writeState(records, v0, v1);
      io.add(
          vertexMap.write(
              (long) v0 * GraphLayout.VERTEX,
              records.slice(v0 * GraphLayout.VERTEX, (v1 - v0) * GraphLayout.VERTEX)));
    }
    io.forEach(Futures::join);
  }

  /** Drops the worker's mappings (idempotent). */
  private void release() {
    if (vertexMap != null) {
      vertexMap.unmap();
      vertexMap = null;
    }
    if (mailboxMap != null) {
      mailboxMap.unmap();
      mailboxMap = null;
    }
  }
}
