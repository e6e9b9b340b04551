package io.ferrite.kernel.server;

import io.ferrite.fabric.Backoff;
import io.ferrite.fabric.ErrorCategory;
import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * A boot step of a face's service that needs the master (a region for a replayed record): done
 * again, with backoff, while the master cannot be asked, and failing at once for any other reason.
 *
 * <p>Why: at boot a server's capacity is all block pool ({@link RegionStore}), so a region a replay
 * makes exists only once the master retired an empty pool region. With the master away (killed, its
 * group electing a leader) that step used to fail: the kv service skipped the record and served
 * without the shard, losing acknowledged writes (Jepsen, int34), and the tree service failed the
 * server's start. Waiting for the master is what the server's own link does at boot. Any other
 * failure (a capacity lowered below what the log holds, a corrupt record) is the caller's to
 * report: it cannot go away by waiting.
 */
public final class MasterWait {
  /** 50 ms doubling to 2 s, as the server's link to the master. */
  private static final Backoff BACKOFF =
      Backoff.builder().initial(Duration.ofMillis(50)).max(Duration.ofSeconds(2)).build();

  private MasterWait() {}

  /**
   * {@code step}'s result, once it no longer fails because the master is away; {@code what} names
   * the step in the log lines that say it waits (every tenth refusal) and that it got through.
   *
   * @throws FerriteException what {@code step} threw for any other reason; UNAVAILABLE if
   *     interrupted while waiting
   */
  public static <T> T untilAnswered(System.Logger log, Supplier<String> what, Supplier<T> step) {
    Backoff.Attempts pauses = BACKOFF.start();
    while (true) {
      try {
        T out = step.get();
        if (pauses.failures() > 0) {
          log.log(
              System.Logger.Level.INFO,
              "{0}: done after {1} refusal(s) while the master was away",
              what.get(),
              pauses.failures());
        }
        return out;
      } catch (FerriteException e) {
        if (!masterAway(e)) {
          throw e;
        }
        if (pauses.failures() % 10 == 0) {
          log.log(
              System.Logger.Level.WARNING,
              "{0}: waits for the master: {1}",
              what.get(),
              e.getMessage());
        }
        try {
          pauses.sleep();
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw new FerriteException(
              ErrorCode.UNAVAILABLE, what.get() + ": interrupted while waiting for the master", e);
        }
      }
    }
  }

  /**
   * Whether {@code e} says the master could not be asked, not that the thing cannot be done: the
   * master unreachable, silent or not the leader (UNAVAILABLE, DROPPED, NOT_LEADER, TIMEOUT), or
   * NO_SPACE that one of those caused ({@link RegionStore}: no empty block-pool region could be
   * retired). Other retryable codes (BUSY, CONFLICT) are no reason to wait for the master.
   */
  public static boolean masterAway(FerriteException e) {
    if (away(e)) {
      return true;
    }
    return e.code() == ErrorCode.NO_SPACE && e.getCause() instanceof FerriteException c && away(c);
  }

  private static boolean away(FerriteException e) {
    ErrorCategory c = e.category();
    return e.retryable() && (c == ErrorCategory.UNAVAILABLE || c == ErrorCategory.TIMEOUT);
  }
}
