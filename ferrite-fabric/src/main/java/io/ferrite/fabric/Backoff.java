package io.ferrite.fabric;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import java.util.random.RandomGenerator;

/**
 * The one backoff policy of Ferrite's retry and polling loops: how long to wait before attempt
 * {@code n + 1} after {@code n} failed. Immutable and shared; a loop that needs a deadline, jitter
 * or a reset takes an {@link Attempts} from {@link #start}.
 *
 * <p>Pause {@code n} (1-based) is: nothing but {@link Thread#onSpinWait} for the first {@code
 * spins} pauses (a polling loop whose condition usually turns within microseconds does not pay a
 * park, ~50 us on Linux); then {@code initial}, and each next one {@code previous * multiplier +
 * step}, capped at {@code max}. Exponential ({@code multiplier} 2, {@code step} 0) for retries
 * against a peer that may be down, linear ({@code multiplier} 1) for a poll that must notice its
 * condition soon. With {@code jitter} j > 0 a pause is drawn uniformly from {@code [d * (1 - j),
 * d]}, never above the cap, so that clients that failed together do not retry together.
 *
 * <p>The loops keep the timings they had before this class: {@link #builder()} documents each.
 */
public final class Backoff {
  private final int spins;
  private final long initialNanos;
  private final long maxNanos;
  private final double multiplier;
  private final long stepNanos;
  private final double jitter;

  private Backoff(Builder b) {
    if (b.spins < 0) {
      throw new IllegalArgumentException("spins: " + b.spins + " (expected: >= 0)");
    }
    if (b.initialNanos <= 0 || b.maxNanos < b.initialNanos) {
      throw new IllegalArgumentException(
          "initial: "
              + b.initialNanos
              + " ns, max: "
              + b.maxNanos
              + " ns (expected: 0 < initial <= max)");
    }
    if (!(b.multiplier >= 1) || b.stepNanos < 0) {
      throw new IllegalArgumentException(
          "multiplier: " + b.multiplier + ", step: " + b.stepNanos + " (expected: >= 1, >= 0)");
    }
    if (!(b.jitter >= 0 && b.jitter < 1)) {
      throw new IllegalArgumentException("jitter: " + b.jitter + " (expected: >= 0 and < 1)");
    }
    this.spins = b.spins;
    this.initialNanos = b.initialNanos;
    this.maxNanos = b.maxNanos;
    this.multiplier = b.multiplier;
    this.stepNanos = b.stepNanos;
    this.jitter = b.jitter;
  }

  /**
   * A policy: by default no spins, 1 ms doubling to 1 s, no jitter. The loops of Ferrite use:
   *
   * <ul>
   *   <li>client retries ({@code FerriteClient}): 20 ms doubling (up to {@code maxAttempts});
   *   <li>a memory server reaching its master ({@code MasterLink}): 50 ms doubling to 2 s;
   *   <li>a kv lookup of a torn copy ({@code KvTable}): 4 spins, then 1 us doubling to 1 ms;
   *   <li>a barrier poll ({@code Barrier}): 100 spins, then 10 us more each time up to 1 ms.
   * </ul>
   */
  public static Builder builder() {
    return new Builder();
  }

  /** Builds a {@link Backoff}; every setting has a default. */
  public static final class Builder {
    private int spins;
    private long initialNanos = 1_000_000L;
    private long maxNanos = 1_000_000_000L;
    private double multiplier = 2;
    private long stepNanos;
    private double jitter;

    private Builder() {}

    /** Pauses that only spin before the first timed one. */
    public Builder spins(int spins) {
      this.spins = spins;
      return this;
    }

    public Builder initial(Duration initial) {
      this.initialNanos = initial.toNanos();
      return this;
    }

    public Builder max(Duration max) {
      this.maxNanos = max.toNanos();
      return this;
    }

    /** Each pause is the one before times this ({@code 1}: linear, with {@link #step}). */
    public Builder multiplier(double multiplier) {
      this.multiplier = multiplier;
      return this;
    }

    /** Added to each pause after the multiplier. */
    public Builder step(Duration step) {
      this.stepNanos = step.toNanos();
      return this;
    }

    /** The fraction (0 to 1, excluded) a pause may be shortened by at random. */
    public Builder jitter(double jitter) {
      this.jitter = jitter;
      return this;
    }

    public Backoff build() {
      return new Backoff(this);
    }
  }

  /**
   * Pause {@code n} (1-based) in nanoseconds without jitter: 0 while spinning. A linear policy's is
   * computed at once; a multiplying one's steps until the cap (log of max/initial steps, a few
   * dozen at most), so a pause costs well under a microsecond before the park it precedes.
   */
  public long delayNanos(int n) {
    if (n <= spins) {
      return 0;
    }
    int k = n - spins - 1;
    double d;
    if (multiplier == 1) {
      d = initialNanos + (double) k * stepNanos;
    } else {
      d = initialNanos;
      for (; k > 0 && d < maxNanos; k--) {
        d = d * multiplier + stepNanos;
      }
    }
    return (long) Math.min(d, maxNanos);
  }

  /** Pause {@code n} with this policy's jitter drawn from {@code random}. */
  public long delayNanos(int n, RandomGenerator random) {
    long d = delayNanos(n);
    if (jitter == 0 || d == 0) {
      return d;
    }
    return d - (long) (d * jitter * random.nextDouble());
  }

  /** {@link #delayNanos(int)} in whole milliseconds (rounded up: a pause is never shortened). */
  public long delayMillis(int n) {
    return TimeUnit.NANOSECONDS.toMillis(delayNanos(n) + 999_999);
  }

  /**
   * Waits pause {@code n} on this thread: spins or parks, for polling loops that check their own
   * condition and deadline. An interrupt ends the park early and stays set for the caller.
   */
  public void pause(int n) {
    long d = delayNanos(n);
    if (d == 0) {
      Thread.onSpinWait();
    } else {
      LockSupport.parkNanos(d);
    }
  }

  /** The pauses of one loop with no deadline, jitter from a fresh generator. */
  public Attempts start() {
    return start(null);
  }

  /** The pauses of one loop that gives up {@code deadline} from now (null: never). */
  public Attempts start(Duration deadline) {
    return start(deadline, System::nanoTime, RandomGenerator.getDefault());
  }

  /**
   * The pauses of one loop, with the clock ({@link System#nanoTime} in production) and the jitter
   * source given: tests pass a fake clock and a seeded generator.
   */
  public Attempts start(Duration deadline, LongSupplier clock, RandomGenerator random) {
    return new Attempts(deadline, clock, random);
  }

  /**
   * One loop's pauses: counts failed attempts and knows the deadline. Confined to the loop's
   * thread.
   */
  public final class Attempts {
    private final LongSupplier clock;
    private final RandomGenerator random;
    private final long deadline;
    private final boolean hasDeadline;
    private int failures;

    private Attempts(Duration deadline, LongSupplier clock, RandomGenerator random) {
      this.clock = clock;
      this.random = random;
      this.hasDeadline = deadline != null;
      this.deadline = hasDeadline ? clock.getAsLong() + deadline.toNanos() : 0;
    }

    /** Failed attempts so far (since the last {@link #reset}). */
    public int failures() {
      return failures;
    }

    /** After a success: the next failure pauses as the first one did. */
    public void reset() {
      failures = 0;
    }

    /** Whether the deadline has passed. */
    public boolean expired() {
      return hasDeadline && clock.getAsLong() - deadline >= 0;
    }

    /**
     * Counts a failure and returns the pause before the next attempt in nanoseconds (0: spin),
     * shortened to what is left before the deadline, or -1 when the deadline has passed (give up).
     */
    public long next() {
      failures++;
      long d = delayNanos(failures, random);
      if (!hasDeadline) {
        return d;
      }
      long left = deadline - clock.getAsLong();
      return left <= 0 ? -1 : Math.min(d, left);
    }

    /**
     * Counts a failure and sleeps the next pause (a spin for a spinning one).
     *
     * @return false, without sleeping, if the deadline has passed
     * @throws InterruptedException if interrupted while sleeping (the loop should stop)
     */
    public boolean sleep() throws InterruptedException {
      long d = next();
      if (d < 0) {
        return false;
      }
      if (d == 0) {
        Thread.onSpinWait();
      } else {
        TimeUnit.NANOSECONDS.sleep(d);
      }
      return true;
    }
  }

  @Override
  public String toString() {
    return "Backoff[spins="
        + spins
        + ", initial="
        + initialNanos
        + "ns, max="
        + maxNanos
        + "ns, multiplier="
        + multiplier
        + ", step="
        + stepNanos
        + "ns, jitter="
        + jitter
        + "]";
  }
}
