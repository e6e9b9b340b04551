package io.ferrite.cli.bench;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.kv.KvBench;
import io.ferrite.cli.DurationConverter;
import io.ferrite.cli.VersionProvider;
import io.ferrite.kv.TableOptions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ferrite bench kv}: see {@link KvBench}. */
@Command(
    name = "kv",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    sortOptions = false,
    header = "kv face: table quality and get/put/mix speed beside the fabric ops they are made of.",
    description = {
      "Starts a master and a memory server (tcp + shm) in this process and measures,",
      "for each table layout (pilaf, hopscotch):",
      "  kv.<layout>.occ{50,75,90}.reads-per-lookup.mean   one-sided reads per get,",
      "      from the fabric's counters (reference: the ideal: pilaf 2, entry + extent;",
      "      hopscotch 1, the two-bucket neighbourhood with the pair inline)",
      "  kv.<layout>.occ{50,75,90}.probes-per-lookup.{mean,max}   table reads per get",
      "  kv.<layout>.<fabric>.<op>.<value>.t<threads>.{throughput,p50,p99}",
      "      op = get (one-sided), get-rpc (served by the server, Pilaf-VO), put,",
      "      mix95 (95%% get, 5%% put); 16 B zipfian keys; 32 B and 1 KiB values;",
      "      beside ceiling.kv.<same>: the raw fabric ops of the operation (a get of",
      "      a pair out of line, as pilaf's always are: one extent-sized read, what a",
      "      get reads when its extent hint holds; of an inline hopscotch pair: one",
      "      neighbourhood read;",
      "      a put: an RPC of the same size that does nothing; mix95: the same mix).",
      "With --vs redis: ferrite.<layout>.{get,put,multiget16,multiput16}.<value>.t<n>",
      "  beside redis.vs-<layout>.{get,set,get16,set16}.<value>.t<n> (16 pipelined",
      "  commands), measured interleaved with it, one connection per thread on both",
      "  sides; and {put,multiput16}-always (a table with durability always, its log",
      "  on disk in java.io.tmpdir) beside {set,set16}-always (a second redis-server",
      "  with appendfsync always, its AOF in the same directory); vs-redis.* are",
      "  ratios.",
      "Throughput in ops/s, latency in ns. ratio > 1 means better than the reference.",
      "Progress goes to stderr, the table to stdout.",
    },
    optionListHeading = "%nOptions:%n",
    footer = {
      "",
      "Examples:",
      "  ferrite bench kv                        shm and tcp, 1 and 16 threads",
      "  ferrite bench kv --quick --json kv.json",
      "  ferrite bench kv --fabrics tcp --threads 16 --duration 3s",
      "  ferrite bench kv --vs redis --fabrics tcp   beside redis-server, as ratios",
      "  ferrite bench kv --layouts hopscotch --fabrics shm --threads 1",
      "  ferrite bench kv --scrape-every 1s --quick   what a scrape a second costs",
      "",
      "JSON (--json FILE): the shape of 'bench fabric':",
      "  {\"suite\": \"kv\", \"results\": [{\"name\", \"value\", \"unit\",",
      "   \"better\", \"reference\", \"reference_value\", \"ratio\"}, ...]}",
    })
public final class KvBenchCommand implements Callable<Integer> {
  @CommandLine.Mixin BenchOutput out;

  @CommandLine.Mixin BenchOptions.ClientFabrics fabrics;

  @Option(
      names = "--layouts",
      split = ",",
      paramLabel = "LAYOUT",
      description = "Table layouts, comma-separated: pilaf, hopscotch (default: both).")
  List<TableOptions.Layout> layouts;

  @Option(
      names = "--ops",
      split = ",",
      paramLabel = "OP",
      description = "Operations, comma-separated: get, get-rpc, put, mix95 (default: all).")
  List<String> ops;

  @Option(
      names = "--inline-values",
      description =
          "Hopscotch tables of the operations keep every pair inline (1 KiB values too: one"
              + " read per get, of two 4 KiB buckets) instead of the default 56 inline bytes;"
              + " their results are named kv.hopscotch-inline.*, vs-redis.hopscotch-inline.*.")
  boolean inlineValues;

  @CommandLine.Mixin BenchOptions.ClientThreads threads;

  @Option(
      names = "--duration",
      paramLabel = "TIME",
      converter = DurationConverter.class,
      description = "Length of each measurement (default: 1s; --quick: 150ms).")
  Duration duration;

  @Option(
      names = "--keys",
      paramLabel = "N",
      description = "Keys loaded for the operations (default: 20000; --quick: 2000).")
  Integer keys;

  @Option(
      names = "--vs",
      paramLabel = "PEER",
      description =
          "Also drive a peer with the same harness: 'redis' starts redis-server on 127.0.0.1"
              + " (apt-get install redis-server) and compares tcp get, put and 16-key batches"
              + " (multiGet vs pipelining).")
  String vs;

  @Option(
      names = "--scrape-every",
      paramLabel = "TIME",
      converter = DurationConverter.class,
      description =
          "Instead of the suite: the cost of Prometheus scrapes. The hopscotch 32 B get"
              + " throughput, 3 rounds without and 3 with a thread scraping the master's and the"
              + " server's /metrics every TIME (e.g. 1s), as kv.scrape.*.scraped beside"
              + " .unscraped.")
  Duration scrapeEvery;

  @Option(
      names = "--replicas",
      description =
          "Instead of the suite: replicated shards. 1-thread puts of 32 B values to tables with"
              + " 1, 2 and 3 copies per shard on each fabric (r2 and r3 beside r1), and the time"
              + " from a memory server declared DEAD to the first put of a shard it was the"
              + " primary of (4 in-process servers, heartbeat timeout 1 s).")
  boolean replicas;

  @Override
  public Integer call() throws Exception {
    KvBench.Options o = out.quick() ? KvBench.Options.quick() : KvBench.Options.defaults();
    List<String> f = fabrics.given(out);
    if (f != null) {
      o = o.withFabrics(f);
    }
    if (layouts != null) {
      o = o.withLayouts(layouts);
    }
    if (ops != null) {
      for (String op : ops) {
        if (!List.of("get", "get-rpc", "put", "mix95").contains(op)) {
          throw out.invalid("--ops: unknown " + op + " (expected: get, get-rpc, put, mix95)");
        }
      }
      o = o.withOps(ops);
    }
    o = o.withInlineValues(inlineValues);
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
    o = o.withProgress(out.progress());
    boolean redis = out.vs(vs, "redis");
    if (replicas) {
      return out.emit(KvBench.runReplicas(o));
    }
    BenchReport report =
        scrapeEvery != null ? KvBench.runScrapeCost(o, scrapeEvery) : KvBench.run(o, redis);
    return out.emit(report);
  }
}
