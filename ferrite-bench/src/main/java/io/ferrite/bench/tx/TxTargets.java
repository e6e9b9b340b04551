package io.ferrite.bench.tx;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Issue #13's targets, read off a {@code bench tx} report (so a saved report can be judged again):
 *
 * <ul>
 *   <li>lock-free read over shm: p50 &le; 1 &micro;s, and exactly one one-sided read per read;
 *   <li>single-server commit over shm: p50 &le; 10 &micro;s;
 *   <li>two-server commit: p50 &le; 4 round trips of the empty RPC measured in the same run;
 *   <li>transfers over tcp: &ge; 2 &times; Redis WATCH/MULTI/EXEC with the same threads at replicas
 *       1, &ge; 1 &times; at replicas 2.
 * </ul>
 *
 * A figure the run did not measure (a fabric or replicas value left out, no {@code --vs redis}) is
 * "not measured", never met.
 */
public final class TxTargets {
  private TxTargets() {}

  /**
   * One target.
   *
   * @param what the target, as the issue states it
   * @param measured the figure that decides it, or null when it was not measured
   * @param met whether it is met (false when not measured)
   */
  public record Verdict(String what, String measured, boolean met) {
    /** One line for the terminal: what, the figure, met / NOT MET / not measured. */
    public String line() {
      return String.format(
          Locale.ROOT,
          "  %-58s %-26s %s",
          what,
          measured == null ? "-" : measured,
          measured == null ? "not measured" : met ? "met" : "NOT MET");
    }
  }

  /** Every target of the issue, judged on {@code report}. */
  public static List<Verdict> judge(
      BenchReport report, List<Integer> replicas, List<Integer> threads) {
    List<Verdict> out = new ArrayList<>();
    BenchResult lf = report.get("tx.shm.lockfree-read.8B.p50");
    BenchResult reads = report.get("tx.shm.lockfree-read.8B.reads-per-read");
    out.add(
        lf == null || reads == null
            ? new Verdict("lock-free read over shm: p50 <= 1 us, 1 one-sided read", null, false)
            : new Verdict(
                "lock-free read over shm: p50 <= 1 us, 1 one-sided read",
                String.format(Locale.ROOT, "%.0f ns, %.3f reads", lf.value(), reads.value()),
                lf.value() <= 1000 && reads.value() == 1.0));
    for (int r : replicas) {
      BenchResult c = report.get("tx.shm.r" + r + ".commit-1server.p50");
      String what = "single-server commit over shm, replicas " + r + ": p50 <= 10 us";
      out.add(
          c == null
              ? new Verdict(what, null, false)
              : new Verdict(
                  what, String.format(Locale.ROOT, "%.0f ns", c.value()), c.value() <= 10_000));
      for (String fabric : List.of("shm", "tcp")) {
        BenchResult rt = report.get("tx." + fabric + ".r" + r + ".commit-2server.round-trips");
        String w2 = "two-server commit over " + fabric + ", replicas " + r + ": <= 4 RPC rtt";
        out.add(
            rt == null
                ? new Verdict(w2, null, false)
                : new Verdict(
                    w2, String.format(Locale.ROOT, "%.2f rtt", rt.value()), rt.value() <= 4));
      }
      double goal = r == 1 ? 2 : 1;
      for (int t : threads) {
        BenchResult b = report.get("tx.tcp.r" + r + ".bank.t" + t + ".throughput");
        String what3 =
            String.format(
                Locale.ROOT,
                "transfers over tcp, replicas %d, %d thread(s): >= %.0f x Redis",
                r,
                t,
                goal);
        out.add(
            b == null || !b.hasReference()
                ? new Verdict(what3, null, false)
                : new Verdict(
                    what3, String.format(Locale.ROOT, "%.2f x", b.ratio()), b.ratio() >= goal));
      }
    }
    return out;
  }

  /** The verdicts as lines for the terminal, under a heading. */
  public static String table(List<Verdict> verdicts) {
    StringBuilder sb = new StringBuilder("\nissue #13 targets:\n");
    for (Verdict v : verdicts) {
      sb.append(v.line()).append('\n');
    }
    return sb.toString();
  }
}
