package io.ferrite.bench.tx;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.tx.TxResult;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts of a transfer workload, updated by every client thread: commits, aborts by reason ({@link
 * TxResult.Reason}, or a peer's: {@code EXEC nil} for Redis), and retried failures by error code
 * ({@code error BUSY}). Thread-safe; {@link #snapshot} for a consistent-enough view (each counter
 * read once).
 */
public final class BankStats {
  private final LongAdder commits = new LongAdder();
  private final Map<String, LongAdder> aborts = new ConcurrentHashMap<>();

  /** A transfer committed. */
  public void committed() {
    commits.increment();
  }

  /** A transaction aborted for {@code reason}. */
  public void aborted(TxResult.Reason reason) {
    aborted(reason.name());
  }

  /** A transaction aborted for {@code reason} (a label). */
  public void aborted(String reason) {
    aborts.computeIfAbsent(reason, k -> new LongAdder()).increment();
  }

  /** A retryable failure ({@code code}) made the transfer try again. */
  public void failed(ErrorCode code) {
    aborted("error " + code.name());
  }

  /** The counters now. */
  public Snapshot snapshot() {
    Map<String, Long> a = new TreeMap<>();
    aborts.forEach((k, v) -> a.put(k, v.sum()));
    return new Snapshot(commits.sum(), a);
  }

  /**
   * Counters at one instant.
   *
   * @param commits transfers committed
   * @param aborts aborted attempts by reason, sorted by reason
   */
  public record Snapshot(long commits, Map<String, Long> aborts) {
    public Snapshot {
      aborts = Map.copyOf(aborts);
    }

    /** Aborted attempts, all reasons. */
    public long abortTotal() {
      return aborts.values().stream().mapToLong(Long::longValue).sum();
    }

    /** Aborted attempts per attempt, in percent (0 when nothing was attempted). */
    public double abortPercent() {
      long attempts = commits + abortTotal();
      return attempts == 0 ? 0 : 100.0 * abortTotal() / attempts;
    }

    /** What happened between {@code earlier} and this. */
    public Snapshot minus(Snapshot earlier) {
      Map<String, Long> a = new TreeMap<>();
      aborts.forEach((k, v) -> a.put(k, v - earlier.aborts.getOrDefault(k, 0L)));
      return new Snapshot(commits - earlier.commits, a);
    }

    /**
     * The aborts by reason, each as a percentage of attempts: {@code "LOCKED 1.2%, VALIDATION
     * 0.3%"}, or {@code "none"}.
     */
    public String abortsByReason() {
      long attempts = commits + abortTotal();
      StringBuilder sb = new StringBuilder();
      new TreeMap<>(aborts)
          .forEach(
              (k, v) -> {
                if (v > 0) {
                  sb.append(sb.length() == 0 ? "" : ", ")
                      .append(k)
                      .append(' ')
                      .append(String.format(java.util.Locale.ROOT, "%.2f%%", 100.0 * v / attempts));
                }
              });
      return sb.length() == 0 ? "none" : sb.toString();
    }
  }
}
