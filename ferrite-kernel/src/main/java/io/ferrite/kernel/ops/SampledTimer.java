package io.ferrite.kernel.ops;

import io.micrometer.core.instrument.Timer;
import java.util.concurrent.TimeUnit;

/**
 * A latency timer that records one call in {@link #EVERY}: {@code ferrite.rpc.latency} and {@code
 * ferrite.face.latency} time the data path's RPCs, and a Micrometer timer with published
 * percentiles costs a few hundred nanoseconds a record (count, sum, a time-window max and a
 * rotating ring of histograms). Recording every call took a 32 B kv put over shm from 1.3 to 1.9 µs
 * p50 (0.66–0.73 of its throughput, measured with {@code bench kv --ops put}); one call in 16 keeps
 * the percentiles' shape at a sixteenth of the cost. Counts stay exact where they are counted
 * ({@code ferrite.rpc.requests}, {@code ferrite.face.ops}); the timer's {@code _count} and {@code
 * _sum} are of the sampled calls.
 *
 * <p>The call counter is a plain int, read and written without synchronization: under concurrency a
 * thread may see a stale count and record one call more or fewer than one in 16, which only moves
 * the sample, never the counts.
 */
final class SampledTimer {
  /** One call in this many is timed (a power of two). */
  static final int EVERY = 16;

  private final Timer timer;

  /** Calls seen; racy on purpose (see the class comment). */
  private int calls;

  SampledTimer(Timer timer) {
    this.timer = timer;
  }

  /**
   * Starts a call: {@link System#nanoTime} if this call is sampled, else 0 (an unsampled call does
   * not even read the clock). Pass the value to {@link #stop}.
   */
  long start() {
    long start = peek();
    calls++;
    return start;
  }

  /**
   * What {@link #start} would return, without taking the call's turn: for a caller that learns only
   * afterwards whether the call is its own (an RPC a handler may decline inline); it calls {@link
   * #advance} when it is.
   */
  long peek() {
    return (calls & (EVERY - 1)) == 0 ? System.nanoTime() : 0;
  }

  /** Takes a call's turn after {@link #peek}. */
  void advance() {
    calls++;
  }

  /** Ends a call {@link #start} began: records its time if it was sampled. */
  void stop(long start) {
    if (start != 0) {
      timer.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
    }
  }
}
