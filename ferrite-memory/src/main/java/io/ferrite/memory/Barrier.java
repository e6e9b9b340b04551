package io.ferrite.memory;

import io.ferrite.fabric.Backoff;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.nio.ByteBuffer;
import java.time.Duration;

/**
 * The global barrier of RStore §V-A: a coordinator and {@code workers} workers take turns through
 * one-byte status flags in a region every one of them maps. A one-byte read or write is atomic (it
 * cannot tear), so no write-write synchronization is needed: each byte has one writer at a time.
 *
 * <pre>
 * offset + 0       coordinator byte: the phase started (1..250), 0 = none yet
 * offset + 1 + i   worker i's byte: the last phase it finished, or ERROR (0xFF)
 * </pre>
 *
 * A phase: the coordinator writes each worker's assignment (application data elsewhere in the
 * region), then {@link #start}s the phase; workers {@link #awaitStart}, read their assignment,
 * work, and {@link #finish} (or {@link #fail}); the coordinator {@link #awaitFinished}. The
 * coordinator's writes complete before it writes the start byte, and a worker reads the start byte
 * before its assignment, so the worker sees the assignment (on shm by acquire/release fences, on
 * tcp because the assignment was applied at the server before the start byte was sent).
 *
 * <p>Phases are numbered 1 to {@value #MAX_PHASE}, then wrap to 1 (a worker that falls a whole
 * cycle behind is not detected). Not thread-safe: one coordinator or worker per instance.
 */
public final class Barrier {
  public static final int MAX_PHASE = 250;

  /** A worker's status byte after {@link #fail}. */
  public static final int ERROR = 0xFF;

  private final Mapping mapping;
  private final long offset;
  private final int workers;
  private final ByteBuffer one = ByteBuffer.allocateDirect(1);
  private final ByteBuffer all;

  /**
   * A barrier on bytes {@code [offset, offset + 1 + workers)} of {@code mapping}.
   *
   * @throws FerriteException OUT_OF_BOUNDS if they are not inside the mapping, INVALID_ARGUMENT for
   *     fewer than 1 or more than 65535 workers
   */
  public Barrier(Mapping mapping, long offset, int workers) {
    if (workers < 1 || workers > 65535) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "workers: " + workers + " (expected: 1 to 65535)");
    }
    if (offset < 0 || offset > mapping.length() - 1 - workers) {
      throw new FerriteException(
          ErrorCode.OUT_OF_BOUNDS,
          "barrier offset: "
              + offset
              + " with "
              + workers
              + " workers needs "
              + (1 + workers)
              + " B (expected: inside "
              + mapping
              + ")");
    }
    this.mapping = mapping;
    this.offset = offset;
    this.workers = workers;
    this.all = ByteBuffer.allocateDirect(workers);
  }

  /** Bytes a barrier of {@code workers} workers occupies. */
  public static int size(int workers) {
    return 1 + workers;
  }

  /** The next phase after {@code phase}. */
  public static int next(int phase) {
    return phase >= MAX_PHASE ? 1 : phase + 1;
  }

  private static void checkPhase(int phase) {
    if (phase < 1 || phase > MAX_PHASE) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT, "phase: " + phase + " (expected: 1 to " + MAX_PHASE + ")");
    }
  }

  private void checkWorker(int worker) {
    if (worker < 0 || worker >= workers) {
      throw new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          "worker: " + worker + " (expected: 0 to " + (workers - 1) + ")");
    }
  }

  private void put(long at, int value) {
    one.clear();
    one.put(0, (byte) value);
    mapping.writeSync(at, one);
  }

  private int get(long at) {
    one.clear();
    mapping.readSync(at, one);
    return one.get(0) & 0xFF;
  }

  /** Coordinator: clears every flag (before the first phase). */
  public void reset() {
    ByteBuffer zeros = ByteBuffer.allocateDirect(1 + workers);
    mapping.writeSync(offset, zeros);
  }

  /** Coordinator: signals every worker that {@code phase} starts. */
  public void start(int phase) {
    checkPhase(phase);
    put(offset, phase);
  }

  /**
   * Coordinator: waits until every worker has finished {@code phase}.
   *
   * @throws FerriteException CONFLICT naming the workers that failed, TIMEOUT naming the workers
   *     not done when {@code timeout} ran out
   */
  public void awaitFinished(int phase, Duration timeout) {
    checkPhase(phase);
    long deadline = System.nanoTime() + timeout.toNanos();
    for (int spin = 0; !finished(phase); spin++) {
      if (System.nanoTime() > deadline) {
        throw new FerriteException(
            ErrorCode.TIMEOUT,
            "phase " + phase + ": worker(s) " + pending(phase) + " not finished after " + timeout);
      }
      pause(spin);
    }
  }

  /**
   * Coordinator: whether every worker has finished {@code phase}, from one read of the worker
   * bytes; for a coordinator that watches other things (its worker processes, progress) while it
   * waits.
   *
   * @throws FerriteException CONFLICT naming the workers that failed
   */
  public boolean finished(int phase) {
    checkPhase(phase);
    all.clear();
    mapping.readSync(offset + 1, all);
    StringBuilder failed = new StringBuilder();
    boolean done = true;
    for (int i = 0; i < workers; i++) {
      int v = all.get(i) & 0xFF;
      if (v == ERROR) {
        failed.append(failed.length() == 0 ? "" : ", ").append(i);
      } else if (v != phase) {
        done = false;
      }
    }
    if (failed.length() > 0) {
      throw new FerriteException(
          ErrorCode.CONFLICT, "phase " + phase + ": worker(s) " + failed + " failed");
    }
    return done;
  }

  /**
   * Coordinator: every worker's status byte (the last phase it finished, {@link #ERROR}, or 0),
   * from one read; for a coordinator that checks on the workers not done yet.
   */
  public int[] statuses() {
    all.clear();
    mapping.readSync(offset + 1, all);
    int[] out = new int[workers];
    for (int i = 0; i < workers; i++) {
      out[i] = all.get(i) & 0xFF;
    }
    return out;
  }

  /** The workers whose byte says they have not finished {@code phase} (from the last read). */
  private String pending(int phase) {
    StringBuilder pending = new StringBuilder();
    for (int i = 0; i < workers; i++) {
      if ((all.get(i) & 0xFF) != phase) {
        pending.append(pending.length() == 0 ? "" : ", ").append(i);
      }
    }
    return pending.toString();
  }

  /** Polling: 100 spins, then parks of 10 us, 10 us longer each time, up to 1 ms. */
  static final Backoff POLL =
      Backoff.builder()
          .spins(100)
          .initial(Duration.ofNanos(10_000))
          .multiplier(1)
          .step(Duration.ofNanos(10_000))
          .max(Duration.ofMillis(1))
          .build();

  /**
   * The poll count at which {@link #pause}'s ramp stands after {@code elapsedNanos} of polling:
   * past {@link #POLL}'s 100 spins the n-th park is 10 us x n, so n parks take about 5 us x n^2
   * (until the 1 ms cap, after which any larger count pauses the same). A waiter that parked
   * through part of a wait resumes the ramp there: it notices the end as soon as polling all along
   * would have.
   */
  public static int pollsAfter(long elapsedNanos) {
    return 100 + (int) Math.sqrt(Math.max(0, elapsedNanos) / 5_000.0);
  }

  /** Waits a little in a polling loop, after {@code spin} (0-based) polls: see {@link #POLL}. */
  public static void pause(int spin) {
    POLL.pause(spin + 1);
  }

  /**
   * Worker {@code worker}: waits until the coordinator starts {@code phase}.
   *
   * @throws FerriteException TIMEOUT if it does not within {@code timeout}
   */
  public void awaitStart(int worker, int phase, Duration timeout) {
    checkWorker(worker);
    checkPhase(phase);
    long deadline = System.nanoTime() + timeout.toNanos();
    for (int spin = 0; get(offset) != phase; spin++) {
      if (System.nanoTime() > deadline) {
        throw new FerriteException(
            ErrorCode.TIMEOUT,
            "worker " + worker + ": phase " + phase + " not started after " + timeout);
      }
      pause(spin);
    }
  }

  /**
   * The phase the coordinator started last (0 before the first): for a worker that waits for more
   * than one value (e.g. the next phase or an abort the application defines).
   */
  public int current() {
    return get(offset);
  }

  /** Worker {@code worker}: marks {@code phase} finished (after its results are written). */
  public void finish(int worker, int phase) {
    checkWorker(worker);
    checkPhase(phase);
    put(offset + 1 + worker, phase);
  }

  /** Worker {@code worker}: marks its work failed; the coordinator's wait reports it. */
  public void fail(int worker) {
    checkWorker(worker);
    put(offset + 1 + worker, ERROR);
  }
}
