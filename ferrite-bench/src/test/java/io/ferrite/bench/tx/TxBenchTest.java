package io.ferrite.bench.tx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.kv.RedisPeer;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Runs the tx suite for real over shm, briefly, with replicas 1 (replication may not be merged);
 * asserts on counts (one-sided reads per lock-free read), on which figure stands beside which, and
 * on the invariant (the suite checks the total after each transfer run), never on time.
 */
class TxBenchTest {
  @Test
  void quickRunMeasuresReadsCommitsAndTransfersBesideTheirCeilings() throws Exception {
    TxBench.Options o =
        TxBench.Options.quick()
            .withFabrics(List.of("shm"))
            .withThreads(List.of(2))
            .withReplicas(List.of(1))
            .withDuration(Duration.ofMillis(40))
            .withAccounts(50)
            .withProgress(null);
    BenchReport report = TxBench.run(o, false);
    assertEquals(
        1.0,
        report.require("tx.shm.lockfree-read.8B.reads-per-read").value(),
        "one one-sided read per uncontended lock-free read");
    assertEquals(
        "ceiling.tx.shm.read.64B.p50", report.require("tx.shm.lockfree-read.8B.p50").reference());
    for (String c : List.of("commit-1server", "commit-2server")) {
      BenchResult r = report.require("tx.shm.r1." + c + ".p50");
      assertEquals("ceiling.tx.shm.r1.rpc-empty.p50", r.reference(), c);
      assertTrue(r.value() > 0, c + ": at least 100 commits timed");
    }
    assertTrue(report.require("tx.shm.r1.commit-2server.round-trips").value() > 0);
    // Transfers in 40 ms may be none on a loaded machine: their figures are there; the total was
    // checked by the suite after the run (it throws otherwise).
    report.require("tx.shm.r1.bank.t2.throughput");
    double aborts = report.require("tx.shm.r1.bank.t2.abort-rate").value();
    assertTrue(aborts >= 0 && aborts < 100, "abort rate " + aborts);
    assertTrue(
        report.require("tx.shm.r1.tao.t2.throughput").value() > 0,
        "the Tao mix ran on a loaded graph (a failed operation would have thrown)");
    List<TxTargets.Verdict> verdicts = TxTargets.judge(report, List.of(1), List.of(2));
    assertNotNull(verdicts.get(0).measured(), "the lock-free read target is judged");
    assertTrue(
        verdicts.stream()
            .filter(v -> v.what().startsWith("transfers over tcp"))
            .allMatch(v -> v.measured() == null),
        "no tcp, no redis: transfers vs Redis not measured");
  }

  @Test
  void aTaoMixCanBeSwappedOrLeftOut() throws Exception {
    TxBench.Options o =
        TxBench.Options.quick()
            .withFabrics(List.of("shm"))
            .withThreads(List.of(1))
            .withReplicas(List.of(1))
            .withDuration(Duration.ofMillis(10))
            .withAccounts(4)
            .withProgress(null)
            .withTaoMix((client, threads, d) -> 42.0 * threads);
    BenchReport report = TxBench.run(o, false);
    assertEquals(42.0, report.require("tx.shm.r1.tao.t1.throughput").value());
    assertNull(
        TxBench.run(o.withTaoMix(null), false).get("tx.shm.r1.tao.t1.throughput"),
        "null: not measured");
  }

  @Test
  void redisRunsTheSameTransfersAndTcpStandsBesideIt() throws Exception {
    assumeTrue(RedisPeer.binary() != null, "redis-server is not installed");
    TxBench.Options o =
        TxBench.Options.quick()
            .withFabrics(List.of("tcp"))
            .withThreads(List.of(2))
            .withReplicas(List.of(1))
            .withDuration(Duration.ofMillis(40))
            .withAccounts(20)
            .withProgress(null);
    // The suite checks both totals after their runs (redis by GETs) and throws otherwise.
    BenchReport report = TxBench.run(o, true);
    assertEquals(
        "redis.bank.t2.throughput", report.require("tx.tcp.r1.bank.t2.throughput").reference());
    report.require("redis.bank.t2.abort-rate");
    List<TxTargets.Verdict> verdicts = TxTargets.judge(report, List.of(1), List.of(2));
    assertTrue(
        verdicts.stream()
            .anyMatch(
                v ->
                    v.what().equals("transfers over tcp, replicas 1, 2 thread(s): >= 2 x Redis")
                        && v.measured() != null),
        verdicts.toString());
  }
}
