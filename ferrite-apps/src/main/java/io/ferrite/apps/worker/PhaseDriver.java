package io.ferrite.apps.worker;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.memory.Barrier;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * How a coordinator moves its workers through phases with the {@link Barrier} of byte flags (RStore
 * §V-A), the one barrier use RSort and Carafe share: {@link #run} starts a phase and waits until
 * every worker has finished it, while it watches the workers ({@link Liveness}: a process that
 * exited, a thread that died), a deadline, and the workers' failure reports ({@link WorkerError}).
 * {@link #awaitStart} is the worker's half. One coordinator thread per instance.
 */
public final class PhaseDriver {
  /** Whether a worker is still there. */
  @FunctionalInterface
  public interface Liveness {
    /** Null while worker {@code w} runs (or has not started); else what became of it. */
    String gone(int w);
  }

  /** Called every {@link #TICK} while a phase runs (progress lines). */
  @FunctionalInterface
  public interface Tick {
    /**
     * @param pending the workers not done yet, e.g. "0, 2"
     */
    void tick(String pending);
  }

  /** What a failed worker left in its area. */
  @FunctionalInterface
  public interface Failures {
    WorkerError of(int w);
  }

  static final long TICK = TimeUnit.SECONDS.toNanos(2);

  /**
   * The longest single park while a phase's quiet time runs: the workers' liveness, the deadline
   * and the progress tick are still checked at least this often.
   */
  static final long MAX_NAP = TimeUnit.MILLISECONDS.toNanos(20);

  private final Barrier barrier;
  private final int workers;
  private final Liveness liveness;
  private final Failures failures;

  public PhaseDriver(Barrier barrier, int workers, Liveness liveness, Failures failures) {
    this.barrier = barrier;
    this.workers = workers;
    this.liveness = liveness;
    this.failures = failures;
  }

  /**
   * Starts {@code phase} and waits until every worker has finished it.
   *
   * @param name the phase as the user knows it, e.g. "phase 'load'" or "superstep 7"
   * @param tick progress, or null
   * @return how long the phase took, in nanoseconds
   * @throws FerriteException when a worker failed: its code (the workers' common code if several
   *     failed alike, else INTERNAL) and what each said; UNAVAILABLE naming a worker that is gone
   *     before finishing (its pid and exit status); TIMEOUT naming the workers not done
   */
  public long run(int phase, String name, Duration timeout, Tick tick) {
    return run(phase, name, timeout, tick, 0);
  }

  /**
   * {@link #run(int, String, Duration, Tick)} for a phase that takes at least about {@code
   * quietNanos} (e.g. a quarter of the shortest of the last supersteps): for that long the
   * coordinator parks (in naps of at most {@link #MAX_NAP}, checking the workers after each)
   * instead of polling the barrier. A polling coordinator wakes every 10 us to 1 ms ({@link
   * Barrier#pause}): on a machine whose cores the workers fill, each wake-up takes a core from a
   * worker for the poll (measured on 2 cores with 2 worker processes: 41-48 ms of the coordinator's
   * CPU in 22 supersteps of 40 ms, about 90 wake-ups a superstep). A phase done before the quiet
   * time ends is seen when it ends: a quiet time too long costs its excess once.
   */
  public long run(int phase, String name, Duration timeout, Tick tick, long quietNanos) {
    long t0 = System.nanoTime();
    long deadline = t0 + timeout.toNanos();
    long nextTick = t0 + TICK;
    long quietUntil = t0 + Math.max(0, quietNanos);
    int spin = 0;
    barrier.start(phase);
    while (true) {
      boolean done;
      try {
        done = barrier.finished(phase);
      } catch (FerriteException e) {
        throw failed(name, e);
      }
      if (done) {
        return System.nanoTime() - t0;
      }
      int[] status = barrier.statuses();
      for (int w = 0; w < workers; w++) {
        String gone = status[w] == phase ? null : liveness.gone(w);
        if (gone != null) {
          // The flags were read before the worker was found gone: one that marked its byte
          // (finished, or failed after saying why) and then ended in between is not lost. Its
          // byte, read now that it is gone, is its last word.
          int last = barrier.statuses()[w];
          if (last == Barrier.ERROR) {
            throw failed(name, new FerriteException(ErrorCode.INTERNAL, gone));
          }
          if (last != phase) {
            throw new FerriteException(ErrorCode.UNAVAILABLE, gone + " during " + name);
          }
        }
      }
      long now = System.nanoTime();
      if (now > deadline) {
        throw new FerriteException(
            ErrorCode.TIMEOUT,
            name + ": worker(s) " + pending(status, phase) + " not done after " + timeout);
      }
      if (tick != null && now > nextTick) {
        nextTick = now + TICK;
        tick.tick(pending(status, phase));
      }
      if (now < quietUntil) {
        LockSupport.parkNanos(Math.min(quietUntil - now, MAX_NAP));
        spin = Barrier.pollsAfter(System.nanoTime() - t0);
      } else {
        Barrier.pause(spin++);
      }
    }
  }

  private static String pending(int[] status, int phase) {
    StringBuilder pending = new StringBuilder();
    for (int w = 0; w < status.length; w++) {
      if (status[w] != phase) {
        pending.append(pending.length() == 0 ? "" : ", ").append(w);
      }
    }
    return pending.toString();
  }

  /** The failure of phase {@code name}, with what each failed worker wrote in its area. */
  private FerriteException failed(String name, FerriteException cause) {
    int[] status = barrier.statuses();
    StringBuilder why = new StringBuilder();
    ErrorCode code = null;
    boolean same = true;
    for (int w = 0; w < workers; w++) {
      if (status[w] == Barrier.ERROR) {
        WorkerError f = failures.of(w);
        why.append(why.length() == 0 ? "" : "; ").append(f.text());
        same &= code == null || code == f.code();
        code = f.code();
      }
    }
    return new FerriteException(
        same && code != null ? code : ErrorCode.INTERNAL,
        name + " failed: " + (why.length() == 0 ? cause.getMessage() : why),
        cause);
  }

  /**
   * Worker side: waits until the coordinator starts {@code phase} (true) or {@code abort} (false).
   *
   * @param name the phase as the user knows it, for the timeout's message
   * @throws FerriteException TIMEOUT after {@code wait}
   */
  public static boolean awaitStart(
      Barrier barrier, int phase, int abort, Duration wait, String name) {
    long deadline = System.nanoTime() + wait.toNanos();
    for (int spin = 0; ; spin++) {
      int current = barrier.current();
      if (current == phase) {
        return true;
      }
      if (current == abort) {
        return false;
      }
      if (System.nanoTime() > deadline) {
        throw new FerriteException(ErrorCode.TIMEOUT, name + " not started after " + wait);
      }
      Barrier.pause(spin);
    }
  }
}
