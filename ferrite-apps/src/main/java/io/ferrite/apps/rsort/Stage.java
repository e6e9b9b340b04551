package io.ferrite.apps.rsort;

import io.ferrite.fabric.Futures;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Records on their way to one target of a {@link RecordSink}: staged in a small buffer that stays
 * in the CPU's cache and written out whole when full, while the next buffer fills (two per stage,
 * so a write in flight is never overwritten). Staging keeps the records a scatter or a permutation
 * produces out of DRAM: they go from cache straight to the target, instead of through a second
 * buffer as large as the data. One thread per stage; the buffers come from a process-wide pool.
 */
final class Stage {
  /** Records per staging buffer: about 1 MB, half of a core's L2 cache here. */
  static final int RECORDS = 10_000;

  private static final ConcurrentLinkedQueue<ByteBuffer> POOL = new ConcurrentLinkedQueue<>();

  private final RecordSink sink;
  private final int target;
  private final ByteBuffer[] buffers = new ByteBuffer[2];
  private final CompletableFuture<?>[] pending = new CompletableFuture<?>[2];
  private int current;
  private int fill;
  private long offset;

  /** A stage writing target {@code target} of {@code sink} from byte {@code from} on. */
  Stage(RecordSink sink, int target, long from) {
    this.sink = sink;
    this.target = target;
    this.offset = from;
    buffers[0] = take();
    buffers[1] = take();
  }

  private static ByteBuffer take() {
    ByteBuffer b = POOL.poll();
    return b != null ? b : ByteBuffer.allocateDirect(RECORDS * Records.RECORD);
  }

  /** Adds the record at byte {@code at} of {@code src}. */
  void add(ByteBuffer src, int at) {
    buffers[current].put(fill * Records.RECORD, src, at, Records.RECORD);
    if (++fill == RECORDS) {
      flush();
    }
  }

  /** Writes what is staged and switches buffers (waiting for the other one's last write). */
  private void flush() {
    if (fill == 0) {
      return;
    }
    int bytes = fill * Records.RECORD;
    pending[current] = sink.write(target, offset, buffers[current].slice(0, bytes));
    offset += bytes;
    fill = 0;
    current ^= 1;
    if (pending[current] != null) {
      Futures.join(pending[current]);
      pending[current] = null;
    }
  }

  /** Flushes, waits for every write of this stage, and gives its buffers back to the pool. */
  void finish() {
    try {
      flush();
    } finally {
      for (int i = 0; i < 2; i++) {
        if (pending[i] != null) {
          Futures.join(pending[i]);
          pending[i] = null;
        }
        POOL.add(buffers[i]);
      }
    }
  }
}
