package io.ferrite.apps.carafe.pregel;

import io.ferrite.apps.carafe.GraphLayout;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * One partition's part of a Pregel job, in local memory: its vertices' adjacency (a compressed
 * sparse row that the worker loaded in large reads and iterates sequentially), their state, and the
 * message buffers of its mailbox row and column. No RStore here: the worker moves the bytes; this
 * runs the supersteps' inner loops on primitive arrays (no per-message object, no boxing).
 *
 * <p>Outgoing messages: without a combiner each one is appended to the buffer of its target's
 * partition (12 bytes, the mailbox's own format, so the buffer is written out as it is); with one,
 * they fold into an accumulator indexed by global target id and are emitted, one per target, in
 * target order when the superstep ends (a send to all neighbours is recorded per vertex and folded
 * then, block by block of target ids: {@link FoldBlocks}). Incoming messages: without a combiner
 * they are grouped by target with a counting sort; with one, folded into a per-vertex accumulator.
 * One thread.
 */
final class Partition {
  final int me;
  final int workers;
  final int[] bounds;
  final int first;
  final int size;
  final long vertexCount;
  final int[] off;
  final int[] targets;
  final float[] weights;
  final long[] value0;
  final long[] value1;
  final boolean[] halted;
  final VertexProgram program;
  final VertexProgram.Combiner combiner;

  /** Messages a container of segment (me, j) must hold: this worker's mailbox row. */
  final long[] capacity;

  // Outgoing: the containers' bytes (count word, then messages) per target partition.
  final ByteBuffer[] out;
  final long[] outCount;
  private final double[] outSum;
  private final long[] outMin;
  private final boolean[] outHas;

  /** With a combiner: the out-edges by target block, for the fold of {@link #sendAll}. */
  final FoldBlocks blocks;

  /**
   * With a combiner: what each local vertex sent along all its edges this superstep, folded (the
   * combiner's identity if it did not): {@link #sendAll} only records it, {@link #emit} folds it
   * into the targets' accumulators.
   */
  private final double[] shareSum;

  private final long[] shareMin;

  /** With a combiner: adjacency entries of the vertices that called sendAll this superstep. */
  private long sentAllEdges;

  /** With a combiner: which vertices called sendAll this superstep, and how many did. */
  private final boolean[] sentAll;

  private int sentAllCount;

  /** With a combiner: whether any single-edge send happened this superstep. */
  private boolean edgeSends;

  /** Vertices of the partition with out-edges. */
  private int senders;

  // Incoming.
  private final double[] inSum;
  private final long[] inMin;
  private final boolean[] inHas;
  private final int[] msgStart;
  private long[] msgs = new long[0];

  // The superstep.
  int superstep;
  double previousAggregate;
  double aggregate;
  long sent;
  long active;
  int current;

  private final Vertex vertex;
  private final Context ctx;
  private final Messages messages;

  /**
   * @param bounds the W + 1 partition bounds (global ids)
   * @param off this partition's {@code size + 1} offsets into {@code targets}
   * @param targets the partition's adjacency entries' targets (global ids)
   * @param weights their weights, or null (unweighted)
   */
  Partition(
      int me,
      long[] bounds,
      long vertexCount,
      int[] off,
      int[] targets,
      float[] weights,
      VertexProgram program) {
    this(me, bounds, vertexCount, off, targets, weights, program, null);
  }

  /**
   * @param blocks the adjacency's fold blocks (another partition's over the same adjacency), or
   *     null to build them if the program has a combiner
   */
  Partition(
      int me,
      long[] bounds,
      long vertexCount,
      int[] off,
      int[] targets,
      float[] weights,
      VertexProgram program,
      FoldBlocks blocks) {
    this.me = me;
    this.workers = bounds.length - 1;
    this.bounds = new int[bounds.length];
    for (int j = 0; j < bounds.length; j++) {
      this.bounds[j] = (int) bounds[j];
    }
    this.first = this.bounds[me];
    this.size = this.bounds[me + 1] - first;
    this.vertexCount = vertexCount;
    this.off = off;
    this.targets = targets;
    this.weights = weights;
    this.program = program;
    this.combiner = program.combiner();
    this.value0 = new long[size];
    this.value1 = new long[size];
    this.halted = new boolean[size];
    this.vertex = new Vertex(this);
    this.ctx = new Context(this);
    this.messages = new Messages(this);
    int n = (int) vertexCount;
    for (int t : targets) {
      if (t < 0 || t >= n) {
        throw new FerriteException(
            ErrorCode.PROTOCOL,
            "partition " + me + ": an edge targets " + t + " (expected: 0 to " + (n - 1) + ")");
      }
    }
    boolean combine = combiner != VertexProgram.Combiner.NONE;
    outHas = combine ? new boolean[n] : null;
    sentAll = combine ? new boolean[size] : null;
    this.blocks =
        !combine ? null : blocks != null ? blocks : new FoldBlocks(this.bounds, off, targets, size);
    shareSum = combiner == VertexProgram.Combiner.SUM_DOUBLE ? new double[size] : null;
    shareMin = combiner == VertexProgram.Combiner.MIN_LONG ? new long[size] : null;
    if (shareMin != null) {
      Arrays.fill(shareMin, Long.MAX_VALUE);
    }
    for (int v = 0; v < size; v++) {
      senders += off[v + 1] > off[v] ? 1 : 0;
    }
    outSum = combiner == VertexProgram.Combiner.SUM_DOUBLE ? new double[n] : null;
    outMin = combiner == VertexProgram.Combiner.MIN_LONG ? new long[n] : null;
    if (outMin != null) {
      Arrays.fill(outMin, Long.MAX_VALUE);
    }
    inHas = combine ? new boolean[size] : null;
    inSum = combiner == VertexProgram.Combiner.SUM_DOUBLE ? new double[size] : null;
    inMin = combiner == VertexProgram.Combiner.MIN_LONG ? new long[size] : null;
    if (inMin != null) {
      Arrays.fill(inMin, Long.MAX_VALUE);
    }
    msgStart = combine ? null : new int[size + 1];
    capacity = countCapacity();
    out = new ByteBuffer[workers];
    outCount = new long[workers];
    for (int j = 0; j < workers; j++) {
      out[j] = GraphLayout.le((int) Mailbox.containerBytes(capacity[j]));
    }
    for (int v = 0; v < size; v++) {
      vertex.local = v;
      program.init(vertex);
    }
  }

  /**
   * The mailbox row: per target partition, the edges into it (without a combiner: one message per
   * edge per superstep at most) or the distinct targets in it (with one).
   */
  private long[] countCapacity() {
    long[] cap = new long[workers];
    if (outHas == null) {
      for (int t : targets) {
        cap[partitionOf(t)]++;
      }
    } else {
      for (int j = 0; j < workers; j++) {
        cap[j] = blocks.reachedIn(j);
      }
    }
    for (int j = 0; j < workers; j++) {
      if (Mailbox.containerBytes(cap[j]) > Integer.MAX_VALUE - 8) {
        throw new FerriteException(
            ErrorCode.TOO_LARGE,
            "partition "
                + me
                + " may send "
                + cap[j]
                + " messages to partition "
                + j
                + " in a superstep, more than one 2 GiB container holds: use more workers");
      }
    }
    return cap;
  }

  int partitionOf(int t) {
    int j = 0;
    while (t >= bounds[j + 1]) {
      j++;
    }
    return j;
  }

  /** Index in {@link #targets} of out-edge {@code k} of local vertex {@code v}. */
  int edge(int v, int k) {
    int e = off[v] + k;
    if (k < 0 || e >= off[v + 1]) {
      throw new IndexOutOfBoundsException("edge " + k + " of " + (off[v + 1] - off[v]));
    }
    return e;
  }

  /** Message {@code i} of the current view ({@link Messages}). */
  long message(int i) {
    return switch (combiner) {
      case SUM_DOUBLE -> Double.doubleToRawLongBits(inSum[i]);
      case MIN_LONG -> inMin[i];
      case NONE -> msgs[i];
    };
  }

  /**
   * Folds or appends the messages received: {@code counts[i]} from partition i in {@code in[i]}.
   */
  void receive(ByteBuffer[] in, long[] counts) {
    switch (combiner) {
      case SUM_DOUBLE -> {
        for (int i = 0; i < workers; i++) {
          ByteBuffer b = in[i];
          int end = (int) counts[i] * Mailbox.MESSAGE;
          for (int at = 0; at < end; at += Mailbox.MESSAGE) {
            int t = target(b, at, i);
            inSum[t] += b.getDouble(at + 4);
            inHas[t] = true;
          }
        }
      }
      case MIN_LONG -> {
        for (int i = 0; i < workers; i++) {
          ByteBuffer b = in[i];
          int end = (int) counts[i] * Mailbox.MESSAGE;
          for (int at = 0; at < end; at += Mailbox.MESSAGE) {
            int t = target(b, at, i);
            inMin[t] = Math.min(inMin[t], b.getLong(at + 4));
            inHas[t] = true;
          }
        }
      }
      case NONE -> group(in, counts);
    }
  }

  /** Counting sort of the messages by target: vertex v's are {@code msgs[msgStart[v] ..]}. */
  private void group(ByteBuffer[] in, long[] counts) {
    Arrays.fill(msgStart, 0);
    long total = 0;
    for (int i = 0; i < workers; i++) {
      ByteBuffer b = in[i];
      int end = (int) counts[i] * Mailbox.MESSAGE;
      for (int at = 0; at < end; at += Mailbox.MESSAGE) {
        msgStart[target(b, at, i) + 1]++;
      }
      total += counts[i];
    }
    if (total > Integer.MAX_VALUE - 8) {
      throw new FerriteException(
          ErrorCode.TOO_LARGE, "partition " + me + " received " + total + " messages");
    }
    if (msgs.length < total) {
      msgs = new long[(int) total];
    }
    for (int v = 0; v < size; v++) {
      msgStart[v + 1] += msgStart[v];
    }
    // Scatter with msgStart[v] as the cursor of v, then shift back: msgStart[v] = start of v.
    for (int i = 0; i < workers; i++) {
      ByteBuffer b = in[i];
      int end = (int) counts[i] * Mailbox.MESSAGE;
      for (int at = 0; at < end; at += Mailbox.MESSAGE) {
        int t = b.getInt(at);
        msgs[msgStart[t]++] = b.getLong(at + 4);
      }
    }
    for (int v = size; v > 0; v--) {
      msgStart[v] = msgStart[v - 1];
    }
    msgStart[0] = 0;
  }

  private int target(ByteBuffer b, int at, int from) {
    int t = b.getInt(at);
    if (t < 0 || t >= size) {
      throw new FerriteException(
          ErrorCode.PROTOCOL,
          "superstep "
              + superstep
              + ": a message from partition "
              + from
              + " targets index "
              + t
              + " of partition "
              + me
              + " (expected: 0 to "
              + (size - 1)
              + "): the mailbox is corrupt");
    }
    return t;
  }

  /**
   * Runs {@code program.compute} on every vertex that is active or has messages; the messages it
   * sends are in {@link #out} after {@link #emit}.
   */
  void compute(int superstep, double previousAggregate) {
    this.superstep = superstep;
    this.previousAggregate = previousAggregate;
    aggregate = 0;
    active = 0;
    Arrays.fill(outCount, 0);
    boolean combine = combiner != VertexProgram.Combiner.NONE;
    for (int v = 0; v < size; v++) {
      boolean has;
      if (combine) {
        has = inHas[v];
        messages.from = v;
        messages.to = has ? v + 1 : v;
      } else {
        messages.from = msgStart[v];
        messages.to = msgStart[v + 1];
        has = messages.to > messages.from;
      }
      if (halted[v] && !has) {
        continue;
      }
      halted[v] = false; // a message wakes a halted vertex
      current = v;
      vertex.local = v;
      program.compute(ctx, vertex, messages);
      if (has && combine) {
        inHas[v] = false;
        if (inSum != null) {
          inSum[v] = 0;
        } else {
          inMin[v] = Long.MAX_VALUE;
        }
      }
      if (!halted[v]) {
        active++;
      }
    }
  }

  /**
   * Sends {@code payload} along every out-edge of the current vertex. With a combiner it only
   * records the payload for the vertex; {@link #emit} folds it into the targets, block by block
   * ({@link FoldBlocks}), and works out which targets got a message from the vertices that sent.
   */
  void sendAll(long payload) {
    int from = off[current];
    int to = off[current + 1];
    // Only vertices with out-edges count: emit compares the count with the partition's senders.
    if (sentAll != null && from < to) {
      if (!sentAll[current]) {
        sentAll[current] = true;
        sentAllCount++;
        sentAllEdges += to - from;
      }
    }
    switch (combiner) {
      case SUM_DOUBLE -> {
        if (from < to) {
          shareSum[current] += Double.longBitsToDouble(payload);
        }
      }
      case MIN_LONG -> {
        if (from < to) {
          shareMin[current] = Math.min(shareMin[current], payload);
        }
      }
      case NONE -> {
        for (int e = from; e < to; e++) {
          append(targets[e], payload);
        }
      }
    }
  }

  /** Sends {@code payload} along adjacency entry {@code e}. */
  void send(int e, long payload) {
    int t = targets[e];
    switch (combiner) {
      case SUM_DOUBLE -> {
        outSum[t] += Double.longBitsToDouble(payload);
        outHas[t] = true;
        edgeSends = true;
      }
      case MIN_LONG -> {
        outMin[t] = Math.min(outMin[t], payload);
        outHas[t] = true;
        edgeSends = true;
      }
      case NONE -> append(t, payload);
    }
  }

  private void append(int t, long payload) {
    int j = partitionOf(t);
    long c = outCount[j];
    if (c == capacity[j]) {
      throw overflow(j);
    }
    int at = Mailbox.COUNT + (int) c * Mailbox.MESSAGE;
    out[j].putInt(at, t - bounds[j]).putLong(at + 4, payload);
    outCount[j] = c + 1;
  }

  private FerriteException overflow(int j) {
    return new FerriteException(
        ErrorCode.TOO_LARGE,
        "superstep "
            + superstep
            + ": partition "
            + me
            + " sends more than "
            + capacity[j]
            + " messages to partition "
            + j
            + ", what its mailbox segment holds (one message per edge from "
            + me
            + " to "
            + j
            + " per superstep): a program may send at most once along each edge per superstep");
  }

  /**
   * Finishes the outgoing containers: folds and emits the combined messages (with a combiner) and
   * writes each container's count word; {@link #sent} is the messages in them.
   */
  void emit() {
    sent = 0;
    // With many senders the fold runs block by block over the partition's every edge (FoldBlocks:
    // the accumulator writes stay in the cache); with few (components' late supersteps) it runs
    // over the senders' edges only, where the blocks would stream every edge for a few.
    boolean blocked = false;
    // Whether every target the partition reaches got a message (PageRank: every edge carried one).
    boolean all = false;
    if (outHas != null) {
      blocked = sentAllEdges > 0 && sentAllEdges * 4 >= targets.length;
      all = sentAllCount == senders && !edgeSends;
      if (!all) {
        // Some vertices sent: mark their edges' targets (single-edge sends marked theirs).
        for (int v = 0; v < size && sentAllCount > 0; v++) {
          if (sentAll[v]) {
            for (int e = off[v]; e < off[v + 1]; e++) {
              outHas[targets[e]] = true;
            }
            if (!blocked) {
              foldEdges(v);
            }
          }
        }
      }
    }
    for (int j = 0; j < workers; j++) {
      ByteBuffer b = out[j];
      if (outHas != null) {
        int base = bounds[j];
        int at = Mailbox.COUNT;
        for (int k = blocks.firstBlock[j]; k < blocks.firstBlock[j + 1]; k++) {
          if (blocked) {
            foldBlock(k);
          }
          // The block's accumulators are still in the cache: emit them now, walking only the
          // targets this partition reaches in the block (every message goes to one of them).
          at = emitBlock(k, all, b, at, base);
        }
        outCount[j] = (at - Mailbox.COUNT) / Mailbox.MESSAGE;
      }
      b.putLong(0, outCount[j]);
      sent += outCount[j];
    }
    if (outHas != null) {
      if (sentAllCount > 0) {
        if (sentAllCount == senders) {
          resetShares(0, size);
        } else {
          for (int v = 0; v < size; v++) {
            if (sentAll[v]) {
              resetShares(v, v + 1);
            }
          }
        }
        Arrays.fill(sentAll, false);
      }
      sentAllCount = 0;
      sentAllEdges = 0;
      edgeSends = false;
    }
  }

  /**
   * Puts block k's messages into {@code b} from {@code at} (target ids less {@code base}),
   * resetting their accumulators; {@code all}: every reached target has one, else those marked in
   * {@link #outHas}. Returns the position after the last.
   */
  private int emitBlock(int k, boolean all, ByteBuffer b, int at, int base) {
    char[] reached = blocks.reached;
    int first = blocks.blockFirst[k];
    int from = blocks.reachStart[k];
    int to = blocks.reachStart[k + 1];
    if (all && outSum != null) {
      double[] acc = outSum;
      for (int i = from; i < to; i++) {
        int t = first + reached[i];
        b.putInt(at, t - base).putLong(at + 4, Double.doubleToRawLongBits(acc[t]));
        acc[t] = 0;
        at += Mailbox.MESSAGE;
      }
      return at;
    }
    for (int i = from; i < to; i++) {
      int t = first + reached[i];
      if (all || outHas[t]) {
        outHas[t] = false;
        long payload;
        if (outSum != null) {
          payload = Double.doubleToRawLongBits(outSum[t]);
          outSum[t] = 0;
        } else {
          payload = outMin[t];
          outMin[t] = Long.MAX_VALUE;
        }
        b.putInt(at, t - base).putLong(at + 4, payload);
        at += Mailbox.MESSAGE;
      }
    }
    return at;
  }

  /** Folds what local vertex v sent along all its edges into its targets' accumulators. */
  private void foldEdges(int v) {
    int from = off[v];
    int to = off[v + 1];
    if (shareSum != null) {
      double d = shareSum[v];
      for (int e = from; e < to; e++) {
        outSum[targets[e]] += d;
      }
    } else {
      long x = shareMin[v];
      for (int e = from; e < to; e++) {
        int t = targets[e];
        outMin[t] = Math.min(outMin[t], x);
      }
    }
  }

  /**
   * Folds the shares of block k's edges into their targets' accumulators: a vertex that did not
   * send has the combiner's identity as its share (0 or Long.MAX_VALUE), which changes nothing.
   */
  private void foldBlock(int k) {
    int[] source = blocks.source;
    char[] target = blocks.target;
    int from = blocks.start[k];
    int to = blocks.start[k + 1];
    int base = blocks.blockFirst[k];
    if (shareSum != null) {
      double[] acc = outSum;
      double[] share = shareSum;
      for (int i = from; i < to; i++) {
        acc[base + target[i]] += share[source[i]];
      }
    } else {
      long[] acc = outMin;
      long[] share = shareMin;
      for (int i = from; i < to; i++) {
        int t = base + target[i];
        acc[t] = Math.min(acc[t], share[source[i]]);
      }
    }
  }

  private void resetShares(int from, int to) {
    if (shareSum != null) {
      Arrays.fill(shareSum, from, to, 0.0);
    } else {
      Arrays.fill(shareMin, from, to, Long.MAX_VALUE);
    }
  }

  /**
   * Runs supersteps 0 to {@code supersteps - 1} of this partition alone, in local memory, with the
   * very loops of a job's superstep (fold, compute, emit, state write into {@code records}):
   * superstep k > 0 receives what superstep k - 1 sent to this partition itself, and nothing from
   * the others. A worker's warm-up ({@link VertexProgram#warmUp()}), on a scratch partition over
   * the job's adjacency.
   */
  void runAlone(int supersteps, ByteBuffer records) {
    ByteBuffer[] in = new ByteBuffer[workers];
    long[] counts = new long[workers];
    ByteBuffer none = GraphLayout.le(0);
    for (int k = 0; k < supersteps; k++) {
      if (k > 0) {
        for (int i = 0; i < workers; i++) {
          in[i] =
              i == me
                  ? out[me]
                      .slice(Mailbox.COUNT, outBytes(me) - Mailbox.COUNT)
                      .order(ByteOrder.LITTLE_ENDIAN)
                  : none;
          counts[i] = i == me ? outCount[me] : 0;
        }
        receive(in, counts);
      }
      compute(k, aggregate);
      emit();
      writeState(records, 0, size);
    }
  }

  /** Bytes of container j's write: the count word and the messages. */
  int outBytes(int j) {
    return Mailbox.COUNT + (int) outCount[j] * Mailbox.MESSAGE;
  }

  /**
   * Puts the state slots of local vertices {@code [from, to)} into the partition's vertex records
   * (byte 0 = the first record).
   */
  void writeState(ByteBuffer records, int from, int to) {
    for (int v = from; v < to; v++) {
      int at = v * GraphLayout.VERTEX + GraphLayout.V_PROPS;
      records.putLong(at, value0[v]).putLong(at + 8, value1[v]);
    }
  }
}
