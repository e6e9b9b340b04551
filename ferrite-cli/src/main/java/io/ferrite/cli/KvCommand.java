package io.ferrite.cli;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.fabric.Role;
import io.ferrite.kv.KvClient;
import io.ferrite.kv.KvRebalancer;
import io.ferrite.kv.KvReplicator;
import io.ferrite.kv.KvTable;
import io.ferrite.kv.ShardStats;
import io.ferrite.kv.TableInfo;
import io.ferrite.kv.TableOptions;
import io.ferrite.kv.master.KvDirectory;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code ferrite kv ...}: the kv face for a person at a terminal. */
@Command(
    name = "kv",
    mixinStandardHelpOptions = true,
    description = {
      "Key-value tables whose gets are one-sided reads of a self-verifying hash table (FaRM's"
          + " hopscotch table by default, or Pilaf's cuckoo table); puts and deletes go to the"
          + " shard's memory server.",
      "Keys and values are UTF-8 text, or hex with --hex."
    },
    footer = {
      "",
      "Examples:",
      "  ferrite kv put users alice '{\"age\": 42}'   creates table 'users' if needed",
      "  ferrite kv get users alice",
      "  ferrite kv get --hex users 00ff10",
      "  ferrite kv del users alice",
      "  ferrite kv load users users.tsv     KEY<TAB>VALUE lines, progress on stderr",
      "  ferrite kv scan-stats users       per shard: keys, occupancy, extents, moves",
      "  ferrite kv create big --shards 8 --slots 262144 --durability always",
      "  ferrite kv create cuckoo --layout pilaf",
      "  ferrite kv resize big --slots 1048576   grows every shard while it serves",
      "  ferrite kv rebalance --dry-run    which shards would move to new servers",
      "  ferrite kv rebalance users        moves them, live (progress on stderr)",
      "  ferrite kv tables",
      "  ferrite kv compact-log            rewrites every server's kv log now"
    },
    subcommands = {
      KvCommand.Get.class,
      KvCommand.Put.class,
      KvCommand.Load.class,
      KvCommand.Del.class,
      KvCommand.ScanStats.class,
      KvCommand.Create.class,
      KvCommand.Resize.class,
      KvCommand.Rebalance.class,
      KvCommand.Tables.class,
      KvCommand.Drop.class,
      KvCommand.CompactLog.class,
    })
final class KvCommand extends CommandGroup {
  /**
   * What the kv subcommands share: {@link FaceCommand}'s, and a kv client for the length of one
   * command.
   */
  abstract static class Sub extends FaceCommand {
    /** Connects with the least role, CLIENT, runs {@code body} with a kv client, closes. */
    <T> T withKv(Function<KvClient, T> body) {
      return withKv(Role.CLIENT, body);
    }

    /**
     * As {@link #withKv(Function)} with the secret of {@code role}: ADMIN for drop, rebalance and
     * compact-log, whose shard opcodes refuse a CLIENT.
     */
    <T> T withKv(Role role, Function<KvClient, T> body) {
      return target.withClient(role, "ferrite-kv", false, c -> body.apply(new KvClient(c)));
    }
  }

  /** A kv subcommand on one table, its first parameter. */
  abstract static class TableSub extends Sub {
    @Parameters(index = "0", description = "table")
    String table;
  }

  /** A kv subcommand on one key of one table, its first two parameters. */
  abstract static class KeySub extends TableSub {
    @Parameters(index = "1", description = "key")
    String key;
  }

  @Command(
      name = "get",
      mixinStandardHelpOptions = true,
      description = "Prints the value of a key (one-sided reads only); exit code 1 if absent.")
  static final class Get extends KeySub implements Callable<Integer> {
    @Override
    public Integer call() {
      return printValue(withKv(kv -> kv.table(table).get(codec.decode(key))));
    }
  }

  @Command(
      name = "put",
      mixinStandardHelpOptions = true,
      description =
          "Stores a value under a key (creating the table with default options if needed).")
  static final class Put extends KeySub implements Callable<Integer> {
    @Parameters(index = "2", description = "value")
    String value;

    @Option(names = "--if-absent", description = "Only if the key is absent (exit code 1 if not).")
    boolean ifAbsent;

    @Override
    public Integer call() {
      boolean[] applied = new boolean[1];
      String what =
          withKv(
              kv -> {
                KvTable t = openOrCreate(kv, table);
                byte[] k = codec.decode(key);
                byte[] v = codec.decode(value);
                if (ifAbsent) {
                  applied[0] = t.putIfAbsent(k, v);
                  return applied[0] ? "created" : "exists, unchanged";
                }
                applied[0] = true;
                return t.put(k, v) ? "created" : "replaced";
              });
      out().println(what);
      out().flush();
      return applied[0] ? 0 : 1;
    }
  }

  @Command(
      name = "load",
      mixinStandardHelpOptions = true,
      description = {
        "Puts many key-values from FILE (- for stdin), one a line: KEY<TAB>VALUE (UTF-8 text, or"
            + " hex with --hex), --batch lines per multiPut (one MULTI_PUT per server), creating"
            + " the table with default options if needed. A line without a tab is an error that"
            + " names the line; what was loaded before it stays.",
        "Progress on stderr: a line every 5 s (keys, keys/s); the summary on stdout."
      },
      footer = {
        "",
        "Examples:",
        "  ferrite kv load users users.tsv",
        "  ferrite kv load --hex --batch 1024 blobs blobs.hex",
        "  cut -f1,3 data.tsv | ferrite kv load users -"
      })
  static final class Load extends TableSub implements Callable<Integer> {
    static final long LINE_EVERY_NANOS = 5_000_000_000L;

    @Parameters(index = "1", paramLabel = "FILE", description = "KEY<TAB>VALUE lines, - for stdin")
    String file;

    @Option(
        names = "--batch",
        defaultValue = "256",
        description = "Lines per multiPut (default: 256).")
    int batch;

    /** Progress lines every this often; tests set 0 to see one per batch. */
    long lineEveryNanos = LINE_EVERY_NANOS;

    @Override
    public Integer call() throws java.io.IOException {
      if (batch < 1) {
        throw new IllegalArgumentException("--batch: " + batch + " (expected: >= 1)");
      }
      PrintWriter err = spec.commandLine().getErr();
      try (java.io.BufferedReader in =
          file.equals("-")
              ? new java.io.BufferedReader(
                  new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8))
              : java.nio.file.Files.newBufferedReader(java.nio.file.Path.of(file))) {
        long[] loaded = new long[1];
        long start = System.nanoTime();
        withKv(
            kv -> {
              KvTable t = openOrCreate(kv, table);
              List<byte[]> keys = new java.util.ArrayList<>();
              List<byte[]> values = new java.util.ArrayList<>();
              long last = start;
              long lineNo = 0;
              try {
                for (String line; (line = in.readLine()) != null; ) {
                  lineNo++;
                  int tab = line.indexOf('\t');
                  if (tab < 0) {
                    throw new IllegalArgumentException(
                        file + ":" + lineNo + ": no tab (expected: KEY<TAB>VALUE)");
                  }
                  keys.add(codec.decode(line.substring(0, tab)));
                  values.add(codec.decode(line.substring(tab + 1)));
                  if (keys.size() == batch) {
                    t.multiPut(keys, values);
                    loaded[0] += keys.size();
                    keys.clear();
                    values.clear();
                    long now = System.nanoTime();
                    if (now - last >= lineEveryNanos) {
                      last = now;
                      progress(err, loaded[0], now - start);
                    }
                  }
                }
              } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
              }
              if (!keys.isEmpty()) {
                t.multiPut(keys, values);
                loaded[0] += keys.size();
              }
              return null;
            });
        out()
            .printf(
                Locale.ROOT,
                "loaded %d key(s) into %s in %.1f s%n",
                loaded[0],
                table,
                (System.nanoTime() - start) / 1e9);
        out().flush();
      }
      return 0;
    }

    private void progress(PrintWriter err, long keys, long nanos) {
      err.printf(
          Locale.ROOT,
          "ferrite kv load %s: %d keys, %.0f keys/s%n",
          table,
          keys,
          keys / Math.max(1e-9, nanos / 1e9));
      err.flush();
    }
  }

  static KvTable openOrCreate(KvClient kv, String table) {
    try {
      return kv.table(table);
    } catch (FerriteException e) {
      if (e.code() != ErrorCode.NOT_FOUND) {
        throw e;
      }
      return kv.createTable(table, TableOptions.DEFAULTS);
    }
  }

  @Command(
      name = "del",
      mixinStandardHelpOptions = true,
      description = "Deletes a key; exit code 1 if it was absent.")
  static final class Del extends KeySub implements Callable<Integer> {
    @Override
    public Integer call() {
      return printDeleted(withKv(kv -> kv.table(table).delete(codec.decode(key))));
    }
  }

  @Command(
      name = "scan-stats",
      mixinStandardHelpOptions = true,
      description =
          "Per shard: server, keys, slots, occupancy, extent bytes used/free, extent regions,"
              + " moves (cuckoo or hopscotch displacements), keys and blocks in overflow chains"
              + " (hopscotch), puts, full errors, layout epoch.")
  static final class ScanStats extends TableSub implements Callable<Integer> {
    @Override
    public Integer call() {
      String text =
          withKv(
              kv -> {
                KvTable t = kv.table(table);
                // A lost shard (docs/KV.md "Lost shards") is listed as such; the others' counts
                // are read as usual.
                List<ShardStats> all = new java.util.ArrayList<>();
                for (int i = 0; i < t.info().options().shards(); i++) {
                  all.add(t.info().lost(i) ? null : t.stats(i));
                }
                StringBuilder sb = new StringBuilder();
                sb.append(
                    String.format(
                        Locale.ROOT,
                        "table %s (id %016x): %s layout, %d shards, %d replicas, max key %d B,"
                            + " max value %d B%n",
                        t.name(),
                        t.info().tableId(),
                        t.info().options().layout().name().toLowerCase(Locale.ROOT),
                        all.size(),
                        t.info().options().replicas(),
                        t.info().options().maxKey(),
                        t.info().options().maxValue()));
                sb.append(
                    String.format(
                        Locale.ROOT,
                        "%5s %6s %10s %10s %6s %12s %12s %4s %8s %8s %7s %10s %5s %5s %12s%n",
                        "shard",
                        "server",
                        "keys",
                        "slots",
                        "occ",
                        "extent-used",
                        "extent-free",
                        "regs",
                        "moves",
                        "overflow",
                        "blocks",
                        "puts",
                        "full",
                        "epoch",
                        "region-bytes"));
                long keys = 0;
                long slots = 0;
                int lost = 0;
                for (int i = 0; i < all.size(); i++) {
                  ShardStats s = all.get(i);
                  if (s == null) {
                    sb.append(String.format(Locale.ROOT, "%5d %6s  DATA_LOST%n", i, "-"));
                    lost++;
                    continue;
                  }
                  keys += s.count();
                  slots += s.slots();
                  sb.append(
                      String.format(
                          Locale.ROOT,
                          "%5d %6d %10d %10d %5.1f%% %12d %12d %4d %8d %8d %7d %10d %5d %5d %12d%n",
                          i,
                          t.serverOf(i),
                          s.count(),
                          s.slots(),
                          100 * s.occupancy(),
                          s.extentBytesUsed(),
                          s.extentBytesFree(),
                          s.extentRegions(),
                          s.moves(),
                          s.overflowKeys(),
                          s.overflowBlocks(),
                          s.puts(),
                          s.fullErrors(),
                          s.epoch(),
                          s.regionBytes()));
                }
                sb.append(
                    String.format(
                        Locale.ROOT,
                        "total: %d keys in %d slots (%.1f%%)%s",
                        keys,
                        slots,
                        slots == 0 ? 0.0 : 100.0 * keys / slots,
                        lost == 0
                            ? ""
                            : "; "
                                + lost
                                + " shard(s) lost with a server's memory (their keys are gone;"
                                + " ferrite kv drop frees the rest)"));
                return sb.toString();
              });
      out().println(text);
      out().flush();
      return 0;
    }
  }

  @Command(
      name = "create",
      mixinStandardHelpOptions = true,
      showDefaultValues = true,
      description = "Creates a table (shards placed on the ALIVE servers by consistent hashing).")
  static final class Create extends TableSub implements Callable<Integer> {
    @Option(names = "--shards", description = "Shards (keys go to shards by jump consistent hash).")
    int shards = TableOptions.DEFAULTS.shards();

    @Option(
        names = "--layout",
        description =
            "hopscotch (FaRM: buckets of 4 slots, a get is one read of two buckets, small pairs"
                + " inline) or pilaf (3-way cuckoo entries pointing to extents, >= 2 reads).")
    TableOptions.Layout layout = TableOptions.DEFAULTS.layout();

    @Option(names = "--slots", description = "Slots per shard to start with (see kv resize).")
    int slots = TableOptions.DEFAULTS.slotsPerShard();

    @Option(
        names = "--inline",
        description =
            "Hopscotch: bytes of key plus value a slot holds inline (larger pairs live in"
                + " extents, one more read).")
    int inline = TableOptions.DEFAULTS.inlineBytes();

    @Option(names = "--extent-region", description = "Bytes of each extent region.")
    int extentRegion = TableOptions.DEFAULTS.extentRegionBytes();

    @Option(names = "--max-extent-regions", description = "Extent regions a shard may grow to.")
    int maxRegions = TableOptions.DEFAULTS.maxExtentRegions();

    @Option(names = "--max-key", description = "Largest key, bytes.")
    int maxKey = TableOptions.DEFAULTS.maxKey();

    @Option(names = "--max-value", description = "Largest value, bytes.")
    int maxValue = TableOptions.DEFAULTS.maxValue();

    @Option(
        names = "--durability",
        description =
            "none (DRAM only), interval (operation log, fsync every 100 ms) or always (fsync"
                + " before each write is acknowledged); the log is replayed on restart.")
    TableOptions.Durability durability = TableOptions.Durability.NONE;

    @Option(
        names = "--replicas",
        description =
            "Copies of each shard, each on another server: 1 (default), 2 or 3. Every write is"
                + " applied at each copy before it is acknowledged; when a primary's server dies"
                + " a backup takes over.")
    int replicas = 1;

    @Override
    public Integer call() {
      TableOptions o =
          new TableOptions(
                  shards,
                  slots,
                  extentRegion,
                  maxRegions,
                  maxKey,
                  maxValue,
                  durability,
                  layout,
                  inline,
                  replicas)
              .validate();
      TableInfo t = withKv(kv -> kv.createTable(table, o).info());
      out()
          .printf(
              Locale.ROOT,
              "table %s: %d shards on servers %s%s%n",
              t.name(),
              t.servers().length,
              java.util.Arrays.toString(t.servers()),
              t.options().replicas() > 1
                  ? ", backups " + java.util.Arrays.deepToString(t.backups())
                  : "");
      out().flush();
      return 0;
    }
  }

  @Command(
      name = "resize",
      mixinStandardHelpOptions = true,
      description = {
        "Grows every shard's table array to at least --slots slots, one shard at a time, while"
            + " the table serves: each server builds the new array, marks the old one moved and"
            + " bumps the layout epoch; clients with the old layout fetch the new one."
      })
  static final class Resize extends TableSub implements Callable<Integer> {
    @Option(names = "--slots", required = true, description = "Slots per shard.")
    int slots;

    @Override
    public Integer call() {
      String text =
          withKv(
              kv -> {
                KvTable t = kv.table(table);
                t.resize(slots);
                StringBuilder sb = new StringBuilder();
                List<ShardStats> all = t.stats();
                for (int i = 0; i < all.size(); i++) {
                  sb.append(
                      String.format(
                          Locale.ROOT,
                          "shard %d: %d slots, %d keys (%.1f%%), epoch %d%n",
                          i,
                          all.get(i).slots(),
                          all.get(i).count(),
                          100 * all.get(i).occupancy(),
                          all.get(i).epoch()));
                }
                return sb.toString();
              });
      out().print(text);
      out().flush();
      return 0;
    }
  }

  @Command(
      name = "rebalance",
      mixinStandardHelpOptions = true,
      description = {
        "Moves the shards whose owner on the consistent-hash ring of ALIVE memory servers changed"
            + " (servers were added) to their new owner, with their keys, while the tables serve:"
            + " writes of a moving shard wait (retried) for the copy, reads go on; then the old"
            + " server retires the shard and the master journals the new placement.",
        "First finishes or aborts moves a previous rebalance left pending (its mover died).",
        "Without tables: every table. Progress goes to stderr; exit code 1 if a move failed (that"
            + " shard serves from where it was)."
      })
  static final class Rebalance extends Sub implements Callable<Integer> {
    @Parameters(arity = "0..*", description = "tables (default: all)")
    List<String> tables = new java.util.ArrayList<>();

    @Option(
        names = "--dry-run",
        description = "Only print which shards would move where (and the pending moves).")
    boolean dryRun;

    @Override
    public Integer call() {
      PrintWriter err = spec.commandLine().getErr();
      return withKv(
          Role.ADMIN,
          kv -> {
            KvRebalancer r =
                new KvRebalancer(
                    kv,
                    line -> {
                      err.println(line);
                      err.flush();
                    });
            if (dryRun) {
              List<KvDirectory.Move> plan = r.plan(tables);
              for (KvDirectory.Move m : r.pending()) {
                if (tables.isEmpty() || tables.contains(m.name())) {
                  out().println("pending: " + describe(m) + " (rebalance finishes or aborts it)");
                }
              }
              for (KvDirectory.Move m : plan) {
                out().println("would move: " + describe(m));
              }
              if (plan.isEmpty()) {
                out().println("nothing to move: every shard lives on its ring owner");
              }
              out().flush();
              return 0;
            }
            KvRebalancer.Report rep = r.rebalance(tables);
            for (KvDirectory.Move m : rep.resolved()) {
              out().println("resolved: " + describe(m));
            }
            for (KvDirectory.Move m : rep.moved()) {
              out().println("moved: " + describe(m));
            }
            for (String f : rep.failures()) {
              out().println("failed: " + f);
            }
            if (rep.moved().isEmpty() && rep.resolved().isEmpty() && rep.ok()) {
              out().println("nothing to move: every shard lives on its ring owner");
            }
            // Replicated tables: shards that lost a copy (a failover) get a new one.
            boolean repaired = true;
            try {
              int copies =
                  new KvReplicator(
                          kv,
                          line -> {
                            out().println("copied: " + line);
                          })
                      .repair(tables);
              if (copies == 0) {
                out().println("no copy to repair: every replicated shard has its copies");
              }
            } catch (io.ferrite.fabric.FerriteException e) {
              out().println("failed: repairing copies: " + e.getMessage());
              repaired = false;
            }
            out().flush();
            return rep.ok() && repaired ? 0 : 1;
          });
    }

    private static String describe(KvDirectory.Move m) {
      return m.name() + " shard " + m.shard() + ": server " + m.from() + " -> server " + m.to();
    }
  }

  @Command(
      name = "tables",
      mixinStandardHelpOptions = true,
      description =
          "Lists the tables, and says how many shards a rebalance would move (servers were"
              + " added).")
  static final class Tables extends Sub implements Callable<Integer> {
    @Override
    public Integer call() {
      String text =
          withKv(
              kv -> {
                StringBuilder sb = new StringBuilder();
                for (TableInfo t : kv.tables()) {
                  sb.append(
                      String.format(
                          Locale.ROOT,
                          "%s  %s, %d shards x %d slots, servers %s%s%n",
                          t.name(),
                          t.options().layout().name().toLowerCase(Locale.ROOT),
                          t.options().shards(),
                          t.options().slotsPerShard(),
                          java.util.Arrays.toString(t.servers()),
                          t.options().replicas() > 1
                              ? ", "
                                  + t.options().replicas()
                                  + " replicas, backups "
                                  + java.util.Arrays.deepToString(t.backups())
                              : ""));
                }
                int off = new KvRebalancer(kv, line -> {}).plan(List.of()).size();
                if (off > 0) {
                  sb.append(
                      off
                          + " shard(s) are not on their ring owner (servers were added):"
                          + " ferrite kv rebalance --dry-run shows them, ferrite kv rebalance"
                          + " moves them\n");
                }
                return sb.toString();
              });
      out().print(text);
      out().flush();
      return 0;
    }
  }

  @Command(
      name = "compact-log",
      mixinStandardHelpOptions = true,
      description = {
        "Rewrites the kv operation log of every alive memory server (or of --server) as a"
            + " snapshot of its durable tables' shards, now. Servers do it by themselves once the"
            + " log passes kv.log.compact (64m) and twice its last size; this is for a restart"
            + " you want fast, or for disk space.",
        "Each server's kv requests wait while it copies its durable pairs."
      })
  static final class CompactLog extends Sub implements Callable<Integer> {
    @Option(names = "--server", paramLabel = "ID", description = "Only this memory server.")
    Integer server;

    @Override
    public Integer call() {
      List<KvClient.LogSizes> done =
          withKv(
              Role.ADMIN,
              kv -> {
                List<Integer> ids = new java.util.ArrayList<>();
                if (server != null) {
                  ids.add(server);
                } else {
                  for (io.ferrite.kernel.proto.MemberInfo m : kv.ferrite().refreshMembers()) {
                    if (m.state() == io.ferrite.kernel.proto.ServerState.ALIVE) {
                      ids.add(m.serverId());
                    }
                  }
                }
                List<KvClient.LogSizes> sizes = new java.util.ArrayList<>();
                for (int id : ids) {
                  sizes.add(kv.compactLog(id));
                }
                return sizes;
              });
      for (KvClient.LogSizes s : done) {
        out()
            .printf(
                Locale.ROOT,
                "server %d: kv log %,d B -> %,d B%n",
                s.server(),
                s.before(),
                s.after());
      }
      if (done.isEmpty()) {
        out().println("no alive memory server");
      }
      out().flush();
      return 0;
    }
  }

  @Command(name = "drop", mixinStandardHelpOptions = true, description = "Drops a table.")
  static final class Drop extends TableSub implements Callable<Integer> {
    @Override
    public Integer call() {
      withKv(
          Role.ADMIN,
          kv -> {
            kv.dropTable(table);
            return null;
          });
      out().println("dropped " + table);
      out().flush();
      return 0;
    }
  }
}
