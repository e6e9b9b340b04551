package io.ferrite.bench.kv;

import io.ferrite.bench.BenchReport;
import io.ferrite.bench.BenchResult;
import io.ferrite.bench.Better;
import io.ferrite.bench.Progress;
import io.ferrite.fabric.FabricConnection;
import io.ferrite.fabric.OpKind;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.LookupStats;
import io.ferrite.kv.TableOptions;
import java.util.Random;

/**
 * The table-quality part of {@link KvBench} (Pilaf Figure 6, FaRM §3.6): one-sided reads and probes
 * per lookup of each layout at 50, 75 and 90% occupancy, counted by the fabric and the client.
 */
final class TableQuality {
  private TableQuality() {}

  /**
   * Fills a one-shard table of {@code layout} to 50, 75 and 90% with 16 B keys and 32 B values and
   * looks up random present keys: one-sided reads per lookup from the fabric's READ counter, probes
   * (table reads: Pilaf entries, hopscotch neighbourhoods and overflow blocks) from the client's
   * lookup counts. The ideal: 2 reads and 1 probe for Pilaf (one entry, one extent), 1 read and 1
   * probe for hopscotch (the neighbourhood, with the pair inline).
   */
  static void measure(
      BenchReport report,
      KvBench.Options o,
      KvClient kv,
      TableOptions.Layout layout,
      Progress progress) {
    int slots = o.qualitySlots();
    String ln = KvBench.layoutName(layout);
    KvTable t =
        kv.createTable(
            "quality-" + ln,
            TableOptions.DEFAULTS
                .withLayout(layout)
                .withShards(1)
                .withSlotsPerShard(slots)
                .withExtents(Math.max(1 << 20, slots * 64), 4)
                .withLimits(64, 64));
    boolean pilaf = layout == TableOptions.Layout.PILAF;
    String ideal = "ideal." + ln;
    report.add(BenchResult.of(ideal + ".reads-per-lookup", pilaf ? 2 : 1, "reads", Better.LOWER));
    report.add(BenchResult.of(ideal + ".probes-per-lookup", 1, "probes", Better.LOWER));
    byte[] value = new byte[32];
    int loaded = 0;
    Random r = new Random(42);
    FabricConnection conn = kv.ferrite().connection(t.serverOf(0));
    for (double occ : KvBench.OCCUPANCIES) {
      int target = (int) (occ * slots);
      String name = "kv." + ln + ".occ" + Math.round(occ * 100);
      progress.step(name + ": loading to " + target + " keys");
      while (loaded < target) {
        t.put(KvBench.key(loaded++), value);
      }
      // A fresh handle: its first get fetches the layout (an RPC, not a read), then only reads;
      // without extent hints, which would answer keys seen before by reading their extent alone
      // and so measure the hints, not the table layout.
      KvTable reader = new KvClient(kv.ferrite()).extentHints(false).table(t.name());
      reader.get(KvBench.key(0));
      LookupStats ls = reader.lookupStats();
      ls.reset();
      long reads0 = conn.counters().ops(OpKind.READ);
      for (int i = 0; i < o.qualityLookups(); i++) {
        if (reader.get(KvBench.key(r.nextInt(loaded))) == null) {
          throw new IllegalStateException("a loaded key is missing");
        }
      }
      double reads = (double) (conn.counters().ops(OpKind.READ) - reads0) / o.qualityLookups();
      double probes = (double) ls.probes() / ls.lookups();
      report.add(
          BenchResult.against(
              name + ".reads-per-lookup.mean",
              reads,
              "reads",
              Better.LOWER,
              report.require(ideal + ".reads-per-lookup")));
      report.add(
          BenchResult.against(
              name + ".probes-per-lookup.mean",
              probes,
              "probes",
              Better.LOWER,
              report.require(ideal + ".probes-per-lookup")));
      report.add(
          BenchResult.against(
              name + ".probes-per-lookup.max",
              ls.maxProbes(),
              "probes",
              Better.LOWER,
              report.require(ideal + ".probes-per-lookup")));
    }
  }
}
