package io.ferrite.cli.bench;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.tx.TxBench;
import io.ferrite.bench.tx.TxTargets;
import io.ferrite.cli.DurationConverter;
import io.ferrite.cli.VersionProvider;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ferrite bench tx}: see {@link TxBench}. */
@Command(
    name = "tx",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    sortOptions = false,
    header = "tx face: lock-free reads, commits, bank transfers; the issue's targets.",
    description = {
      "Starts a master and two memory servers (tcp + shm) in this process, a",
      "cluster per --replicas value (tx.replicas), creates --accounts accounts",
      "(8 B balances, spread over both servers) and measures, per fabric:",
      "  tx.<fabric>.lockfree-read.8B.{p50,p99}   one account, beside",
      "      ceiling.tx.<fabric>.read.64B: a raw one-sided read of its line;",
      "      .reads-per-read: one-sided reads per lock-free read (counters)",
      "  tx.<fabric>.r<r>.commit-{1server,2server}.{p50,p99}   txCommit alone",
      "      of a read-and-write of 1 account / 2 accounts on 2 servers, beside",
      "      ceiling.tx.<fabric>.rpc-empty: an empty RPC to a server's service",
      "      executor; commit-2server.round-trips = its p50 in empty-RPC p50s",
      "  tx.<fabric>.r<r>.bank.t<n>.{throughput,p50,abort-rate}   transfers",
      "      (read 2, write 2, retried until committed) on n threads; the",
      "      total is checked after each run",
      "With --vs redis: redis.bank.t<n>.* on redis-server: the same accounts,",
      "  draws and threads with WATCH a b; GET a; GET b | MULTI; SET a; SET b;",
      "  EXEC (each batch pipelined; a nil EXEC is an abort, retried), and the",
      "  tcp transfers beside it.",
      "Then the issue's targets, each met, NOT MET or not measured. A build",
      "without replication does not know tx.replicas: replicas 2 is skipped.",
      "Throughput in ops/s, latency in ns. ratio > 1 means better than the",
      "reference. Progress goes to stderr, the table to stdout.",
    },
    optionListHeading = "%nOptions:%n",
    footer = {
      "",
      "Examples:",
      "  ferrite bench tx --quick",
      "  ferrite bench tx --quick --vs redis --json tx.json",
      "  ferrite bench tx --vs redis --fabrics tcp --threads 1,16 --replicas 1",
      "  ferrite bench tx --accounts 100 --threads 16   a contended bank",
      "",
      "JSON (--json FILE): the shape of 'bench fabric':",
      "  {\"suite\": \"tx\", \"results\": [{\"name\", \"value\", \"unit\",",
      "   \"better\", \"reference\", \"reference_value\", \"ratio\"}, ...]}",
    })
public final class TxBenchCommand implements Callable<Integer> {
  @CommandLine.Mixin BenchOutput out;

  @CommandLine.Mixin BenchOptions.ClientFabrics fabrics;

  @CommandLine.Mixin BenchOptions.ClientThreads threads;

  @Option(
      names = "--replicas",
      split = ",",
      paramLabel = "N",
      description = "tx.replicas values, a cluster each: 1, 2 (default: 1,2).")
  List<Integer> replicas;

  @Option(
      names = "--duration",
      paramLabel = "TIME",
      converter = DurationConverter.class,
      description = "Length of each measurement (default: 1s; --quick: 300ms).")
  Duration duration;

  @Option(
      names = "--accounts",
      paramLabel = "N",
      description = "Bank accounts (default: 10000; --quick: 1000).")
  Integer accounts;

  @Option(
      names = "--vs",
      paramLabel = "PEER",
      description =
          "Also drive a peer with the same harness: 'redis' starts redis-server on 127.0.0.1"
              + " (apt-get install redis-server): the same transfers with WATCH/MULTI/EXEC.")
  String vs;

  @Override
  public Integer call() throws Exception {
    TxBench.Options base = out.quick() ? TxBench.Options.quick() : TxBench.Options.defaults();
    List<String> f = fabrics.given(out);
    List<Integer> t = threads.given();
    TxBench.Options o =
        out.options(
            () -> {
              TxBench.Options x = base;
              if (f != null) {
                x = x.withFabrics(f);
              }
              if (t != null) {
                x = x.withThreads(t);
              }
              if (replicas != null) {
                x = x.withReplicas(replicas);
              }
              if (duration != null) {
                x = x.withDuration(duration);
              }
              if (accounts != null) {
                x = x.withAccounts(accounts);
              }
              return x;
            });
    boolean redis = out.vs(vs, "redis");
    BenchReport report = TxBench.run(o.withProgress(out.progress()), redis);
    int status = out.emit(report);
    out.spec
        .commandLine()
        .getOut()
        .print(TxTargets.table(TxTargets.judge(report, o.replicas(), o.threads())));
    out.spec.commandLine().getOut().flush();
    return status;
  }
}
