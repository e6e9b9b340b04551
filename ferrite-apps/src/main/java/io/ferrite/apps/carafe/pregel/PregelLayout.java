package io.ferrite.apps.carafe.pregel;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The control region of a Pregel job: one allocation in the job's control namespace that the
 * coordinator and every worker map (RStore §V-A, Figure 8: a global field and per-worker fields).
 * Little-endian words.
 *
 * <pre>
 * 0            barrier: coordinator byte, then one byte per worker ({@link io.ferrite.memory.Barrier})
 * GLOBAL       written by the coordinator before it starts a phase:
 *   +0   command i64        LOAD, PREPARE, SUPERSTEP, FINISH or ABORT
 *   +8   superstep i64      the superstep SUPERSTEP runs
 *   +16  aggregate f64      the sum of every worker's aggregate of the previous superstep
 *   +24  mailbox i64        the mailbox allocation's address (PREPARE on)
 * AREA * (1 + w)   worker w's area, AREA bytes:
 *   +0   first vertex i64   the partition [first, end), written by the coordinator before LOAD
 *   +8   end vertex i64
 *   +16  superstep i64      the last superstep the worker finished
 *   +24  sent i64           messages it sent in that superstep
 *   +32  aggregate f64      its aggregate of that superstep
 *   +40  active i64         its vertices that had not voted to halt after it
 *   +48  nanos i64          the superstep's time in the worker (inbox to outbox)
 *   +56  edges i64          adjacency entries of the partition (after LOAD)
 *   +64  error: u16 length, then up to ERROR_MAX bytes of UTF-8 {@code CODE|text}
 *   +ROW capacity i64 x W   messages segment (w, j) of the mailbox holds, counted in LOAD
 * </pre>
 *
 * Each field has one writer at a time: the coordinator writes GLOBAL and the assignments before it
 * starts a phase, a worker writes its area before it finishes one, and the barrier orders the two.
 */
final class PregelLayout {
  private PregelLayout() {}

  static final int GLOBAL = 128;
  static final int G_COMMAND = 0;
  static final int G_SUPERSTEP = 8;
  static final int G_AGGREGATE = 16;
  static final int G_MAILBOX = 24;
  static final int GLOBAL_BYTES = 32;

  static final int AREA = 2048;
  static final int A_FIRST = 0;
  static final int A_END = 8;
  static final int A_SUPERSTEP = 16;
  static final int A_SENT = 24;
  static final int A_AGGREGATE = 32;
  static final int A_ACTIVE = 40;
  static final int A_NANOS = 48;
  static final int A_EDGES = 56;
  static final int STATS_BYTES = 64 - 16;
  static final int A_ERROR = 64;
  static final int ERROR_MAX = 800;
  static final int A_ROW = 1024;

  // Commands.
  static final int LOAD = 1;
  static final int PREPARE = 2;
  static final int SUPERSTEP = 3;
  static final int FINISH = 4;
  static final int ABORT = 5;

  static {
    if (A_ROW + 8 * PregelJob.MAX_WORKERS > AREA || 1 + PregelJob.MAX_WORKERS > GLOBAL) {
      throw new AssertionError("PregelLayout: the fields overlap");
    }
  }

  /** Bytes of the region for {@code workers} workers. */
  static long regionBytes(int workers) {
    return (long) AREA * (1 + workers);
  }

  /** Offset of worker {@code w}'s area. */
  static long area(int w) {
    return (long) AREA * (1 + w);
  }

  static ByteBuffer le(int n) {
    return ByteBuffer.allocateDirect(n).order(ByteOrder.LITTLE_ENDIAN);
  }
}
