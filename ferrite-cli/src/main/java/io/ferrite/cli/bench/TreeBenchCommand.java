package io.ferrite.cli.bench;

import io.ferrite.bench.tree.TreeBench;
import io.ferrite.cli.DurationConverter;
import io.ferrite.cli.VersionProvider;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ferrite bench tree}: see {@link TreeBench}. */
@Command(
    name = "tree",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    sortOptions = false,
    header = "tree face: gets and 100-key scans by each search path; the tree's shape.",
    description = {
      "Starts a master and a memory server (tcp + shm) in this process, loads --keys",
      "16 B keys with 32 B values in a scattered order, and measures:",
      "  tree.shape.{meganodes,levels,splits,node-fill}   at --meganode / --node",
      "      (Cell: 5 levels at 64 MiB / 1 KiB, at its scale)",
      "  tree.<fabric>.get-client.reads-per-get   one-sided reads per client-side",
      "      get with warm caches, from the handle's counters (node + extent reads),",
      "      beside get-client-nocache.reads-per-get (tree.cache.bytes=0)",
      "  tree.<fabric>.{get,scan100}-{server,client}.t<n>.{throughput,p50,p99}",
      "      server: one RPC per meganode; client: one-sided reads of the nodes;",
      "      uniform keys; scan100 = 100 pairs from a key; client beside server;",
      "      get-auto.t<n>: the locality selector, beside the better fixed path",
      "  tree.<fabric>.shift.{idle,busy,idle-again}.{server,client,auto}.t<n>",
      "      the load-shift experiment (Cell Figure 10): in 'busy' 4 threads of",
      "      another client keep the server's service threads busy with 1000-pair",
      "      server-side scans; the selector beside the better fixed path and",
      "      (throughput-vs-worse) the worse one; client-share of its searches",
      "With --vs redis (tcp): redis.zscore.t<n> and redis.zrangebylex100.t<n> on",
      "  a redis-server sorted set of the same keys (ZSCORE; ZRANGEBYLEX [key +",
      "  LIMIT 0 100), one connection per thread, and the tree's gets and scans",
      "  by both paths beside them.",
      "Throughput in ops/s, latency in ns. ratio > 1 means better than the reference.",
      "Progress goes to stderr, the table to stdout.",
    },
    optionListHeading = "%nOptions:%n",
    footer = {
      "",
      "Examples:",
      "  ferrite bench tree --quick",
      "  ferrite bench tree --quick --vs redis --json tree.json",
      "  ferrite bench tree --fabrics tcp --threads 16 --keys 1000000",
      "  ferrite bench tree --meganode 64m --node 1k --keys 1000000",
      "",
      "JSON (--json FILE): the shape of 'bench fabric':",
      "  {\"suite\": \"tree\", \"results\": [{\"name\", \"value\", \"unit\",",
      "   \"better\", \"reference\", \"reference_value\", \"ratio\"}, ...]}",
    })
public final class TreeBenchCommand implements Callable<Integer> {
  @CommandLine.Mixin BenchOutput out;

  @CommandLine.Mixin BenchOptions.ClientFabrics fabrics;

  @CommandLine.Mixin BenchOptions.ClientThreads threads;

  @Option(
      names = "--duration",
      paramLabel = "TIME",
      converter = DurationConverter.class,
      description = "Length of each measurement (default: 1s; --quick: 300ms).")
  Duration duration;

  @Option(
      names = "--keys",
      paramLabel = "N",
      description = "Keys loaded (default: 100000; --quick: 20000).")
  Integer keys;

  @Option(
      names = "--meganode",
      paramLabel = "SIZE",
      description = "tree.meganode.size of the server (default: 64m; --quick: 1m).")
  String meganode;

  @Option(
      names = "--node",
      paramLabel = "SIZE",
      description = "tree.node.size of the server (default: 1k).")
  String node;

  @Option(
      names = "--vs",
      paramLabel = "PEER",
      description =
          "Also drive a peer with the same harness: 'redis' starts redis-server on 127.0.0.1"
              + " (apt-get install redis-server): tcp gets vs ZSCORE, 100-key scans vs"
              + " ZRANGEBYLEX with LIMIT, on a sorted set of the same keys.")
  String vs;

  @Override
  public Integer call() throws Exception {
    TreeBench.Options o = out.quick() ? TreeBench.Options.quick() : TreeBench.Options.defaults();
    List<String> f = fabrics.given(out);
    if (f != null) {
      o = o.withFabrics(f);
    }
    List<Integer> t = threads.given();
    if (t != null) {
      o = o.withThreads(t);
    }
    if (duration != null) {
      o = o.withDuration(duration);
    }
    if (keys != null) {
      o = o.withKeys(keys);
    }
    if (meganode != null) {
      o = o.withMeganode(meganode);
    }
    if (node != null) {
      o = o.withNode(node);
    }
    boolean redis = out.vs(vs, "redis");
    return out.emit(TreeBench.run(o.withProgress(out.progress()), redis));
  }
}
