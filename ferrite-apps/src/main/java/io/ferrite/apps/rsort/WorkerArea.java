package io.ferrite.apps.rsort;

import io.ferrite.apps.worker.WorkerError;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.memory.Mapping;
import java.nio.ByteBuffer;

/**
 * One worker's area of the coordination region ({@link RSortLayout}), read and written through the
 * coordination mapping with one-sided ops. The coordinator writes the assignments; the worker
 * writes the rest; the barrier orders the two. One thread per instance.
 */
final class WorkerArea {
  /** Which table of an area: key range j's bucket as published after phase one, or as prepared. */
  enum Table {
    BUCKETS(RSortLayout.TABLE),
    PREPARED(RSortLayout.PREPARED);

    final int offset;

    Table(int offset) {
      this.offset = offset;
    }
  }

  private final Mapping coord;
  private final long base;
  private final ByteBuffer word = RSortLayout.le(16);

  WorkerArea(Mapping coord, int worker) {
    this.coord = coord;
    this.base = RSortLayout.area(worker);
  }

  /** Assignment word {@code which} (0 or 1) of the current phase. */
  long assignment(int which) {
    return readLong(which == 0 ? RSortLayout.ASSIGN0 : RSortLayout.ASSIGN1);
  }

  void assign(long a0, long a1) {
    word.clear().putLong(0, a0).putLong(8, a1);
    coord.writeSync(base + RSortLayout.ASSIGN0, word);
  }

  long progress() {
    return readLong(RSortLayout.PROGRESS);
  }

  void progress(long bytes) {
    word.clear().putLong(0, bytes).limit(8);
    coord.writeSync(base + RSortLayout.PROGRESS, word);
  }

  /** The summary (40 B of counters, then the two keys). */
  RecordValidator.Summary summary() {
    ByteBuffer b = RSortLayout.le(RSortLayout.SUMMARY_BYTES);
    coord.readSync(base + RSortLayout.SUMMARY, b);
    long records = b.getLong(0);
    byte[] first = new byte[records == 0 ? 0 : Records.KEY];
    byte[] last = new byte[records == 0 ? 0 : Records.KEY];
    b.get(40, first);
    b.get(56, last);
    return new RecordValidator.Summary(
        records, b.getLong(8), b.getLong(16), b.getLong(24), b.getLong(32), first, last);
  }

  void summary(RecordValidator.Summary s) {
    ByteBuffer b = RSortLayout.le(RSortLayout.SUMMARY_BYTES);
    b.putLong(0, s.records());
    b.putLong(8, s.checksum());
    b.putLong(16, s.unordered());
    b.putLong(24, s.firstUnordered());
    b.putLong(32, s.duplicates());
    b.put(40, s.firstKey(), 0, s.firstKey().length);
    b.put(56, s.lastKey(), 0, s.lastKey().length);
    coord.writeSync(base + RSortLayout.SUMMARY, b);
  }

  long[] timings() {
    ByteBuffer b = RSortLayout.le(8 * RSortLayout.TIMING_SLOTS);
    coord.readSync(base + RSortLayout.TIMINGS, b);
    long[] out = new long[RSortLayout.TIMING_SLOTS];
    for (int i = 0; i < out.length; i++) {
      out[i] = b.getLong(8 * i);
    }
    return out;
  }

  void timings(long[] t) {
    ByteBuffer b = RSortLayout.le(8 * RSortLayout.TIMING_SLOTS);
    for (int i = 0; i < t.length; i++) {
      b.putLong(8 * i, t[i]);
    }
    coord.writeSync(base + RSortLayout.TIMINGS, b);
  }

  /** What a failed worker left. */
  WorkerError error() {
    return WorkerError.read(coord, base + RSortLayout.ERROR, RSortLayout.ERROR_MAX);
  }

  /** Leaves {@code code} and {@code text} for the coordinator. */
  void error(ErrorCode code, String text) {
    WorkerError.write(coord, base + RSortLayout.ERROR, RSortLayout.ERROR_MAX, code, text);
  }

  /** Writes a whole table: per key range j, {@code address[j]} and {@code value[j]}. */
  void table(Table t, long[] address, long[] value) {
    ByteBuffer b = RSortLayout.le(16 * address.length);
    for (int j = 0; j < address.length; j++) {
      b.putLong(16 * j, address[j]).putLong(16 * j + 8, value[j]);
    }
    coord.writeSync(base + t.offset, b);
  }

  /** Key range {@code j}'s entry of a table: {address, value}. */
  long[] entry(Table t, int j) {
    coord.readSync(base + t.offset + 16L * j, word.clear());
    return new long[] {word.getLong(0), word.getLong(8)};
  }

  private long readLong(int field) {
    coord.readSync(base + field, word.clear().limit(8));
    return word.getLong(0);
  }
}
