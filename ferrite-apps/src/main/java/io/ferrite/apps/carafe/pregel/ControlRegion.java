package io.ferrite.apps.carafe.pregel;

import io.ferrite.apps.worker.WorkerError;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.memory.Barrier;
import io.ferrite.memory.Mapping;
import java.nio.ByteBuffer;

/**
 * The control region ({@link PregelLayout}) through one mapping, read and written with one-sided
 * ops: the global words, the workers' areas and the barrier at byte 0. One thread per instance.
 */
final class ControlRegion {
  final Mapping mapping;
  final int workers;
  private final ByteBuffer word = PregelLayout.le(PregelLayout.GLOBAL_BYTES);

  ControlRegion(Mapping mapping, int workers) {
    this.mapping = mapping;
    this.workers = workers;
  }

  Barrier barrier() {
    return new Barrier(mapping, 0, workers);
  }

  /** What the coordinator writes before it starts a phase. */
  record Global(int command, int superstep, double aggregate, long mailbox) {}

  void global(Global g) {
    word.clear()
        .putLong(PregelLayout.G_COMMAND, g.command())
        .putLong(PregelLayout.G_SUPERSTEP, g.superstep())
        .putDouble(PregelLayout.G_AGGREGATE, g.aggregate())
        .putLong(PregelLayout.G_MAILBOX, g.mailbox());
    mapping.writeSync(PregelLayout.GLOBAL, word);
  }

  Global global() {
    mapping.readSync(PregelLayout.GLOBAL, word.clear());
    return new Global(
        (int) word.getLong(PregelLayout.G_COMMAND),
        (int) word.getLong(PregelLayout.G_SUPERSTEP),
        word.getDouble(PregelLayout.G_AGGREGATE),
        word.getLong(PregelLayout.G_MAILBOX));
  }

  /** Worker w's partition {first, end}. */
  long[] assignment(int w) {
    ByteBuffer b = PregelLayout.le(16);
    mapping.readSync(PregelLayout.area(w) + PregelLayout.A_FIRST, b);
    return new long[] {b.getLong(0), b.getLong(8)};
  }

  void assign(int w, long first, long end) {
    ByteBuffer b = PregelLayout.le(16).putLong(0, first).putLong(8, end);
    mapping.writeSync(PregelLayout.area(w) + PregelLayout.A_FIRST, b);
  }

  /** What a worker reports after a superstep (and LOAD: its edges). */
  record Stats(long superstep, long sent, double aggregate, long active, long nanos, long edges) {}

  void stats(int w, Stats s) {
    ByteBuffer b =
        PregelLayout.le(PregelLayout.STATS_BYTES)
            .putLong(0, s.superstep())
            .putLong(8, s.sent())
            .putDouble(16, s.aggregate())
            .putLong(24, s.active())
            .putLong(32, s.nanos())
            .putLong(40, s.edges());
    mapping.writeSync(PregelLayout.area(w) + PregelLayout.A_SUPERSTEP, b);
  }

  Stats stats(int w) {
    ByteBuffer b = PregelLayout.le(PregelLayout.STATS_BYTES);
    mapping.readSync(PregelLayout.area(w) + PregelLayout.A_SUPERSTEP, b);
    return new Stats(
        b.getLong(0), b.getLong(8), b.getDouble(16), b.getLong(24), b.getLong(32), b.getLong(40));
  }

  /** Worker w's mailbox row: the capacity of each segment (w, j). */
  void row(int w, long[] capacity) {
    ByteBuffer b = PregelLayout.le(8 * workers);
    for (int j = 0; j < workers; j++) {
      b.putLong(8 * j, capacity[j]);
    }
    mapping.writeSync(PregelLayout.area(w) + PregelLayout.A_ROW, b);
  }

  /** Every worker's row: the W x W capacities, row-major. */
  long[] grid() {
    long[] grid = new long[workers * workers];
    ByteBuffer b = PregelLayout.le(8 * workers);
    for (int i = 0; i < workers; i++) {
      mapping.readSync(PregelLayout.area(i) + PregelLayout.A_ROW, b.clear());
      for (int j = 0; j < workers; j++) {
        grid[i * workers + j] = b.getLong(8 * j);
      }
    }
    return grid;
  }

  /** What failed worker w left. */
  WorkerError error(int w) {
    return WorkerError.read(
        mapping, PregelLayout.area(w) + PregelLayout.A_ERROR, PregelLayout.ERROR_MAX);
  }

  /** Leaves {@code code} and {@code text} (truncated to ERROR_MAX bytes) for the coordinator. */
  void error(int w, ErrorCode code, String text) {
    WorkerError.write(
        mapping, PregelLayout.area(w) + PregelLayout.A_ERROR, PregelLayout.ERROR_MAX, code, text);
  }
}
