package io.ferrite.cli;

import io.ferrite.fabric.Role;
import io.ferrite.tree.Tree;
import io.ferrite.tree.TreeClient;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code ferrite tree ...}: the tree face (sorted keys, Cell) for a person at a terminal. */
@Command(
    name = "tree",
    mixinStandardHelpOptions = true,
    description = {
      "Sorted trees after Cell: a B-link tree of large meganodes (tree.meganode.size, 64 MiB) spread"
          + " over the memory servers, each a B-link tree of small nodes (tree.node.size, 1 KiB)."
          + " Keys are ordered by unsigned bytes; scans return them in that order.",
      "Reads search on the servers (--path server: one RPC per server on the way), here"
          + " (--path client: one-sided reads of the nodes, the upper ones cached), or by whichever"
          + " the locality selector finds faster now (--path auto, the default); writes go to the"
          + " leaf's server.",
      "Keys and values are UTF-8 text, or hex with --hex. A key is 1 to tree.node.size / 8 - 22"
          + " bytes (106 at 1 KiB)."
    },
    footer = {
      "",
      "Examples:",
      "  ferrite tree put users alice '{\"age\": 42}'   creates tree 'users' if needed",
      "  ferrite tree get users alice",
      "  ferrite tree get --path client users alice    one-sided reads only",
      "  ferrite tree scan users --from a --to m --limit 20   a <= key < m, in order",
      "  ferrite tree del users alice",
      "  ferrite tree stats users          meganodes, levels, node fill, splits",
      "  ferrite tree create events",
      "  ferrite tree list",
      "  ferrite tree drop events"
    },
    subcommands = {
      TreeCommand.Get.class,
      TreeCommand.Put.class,
      TreeCommand.Del.class,
      TreeCommand.Scan.class,
      TreeCommand.Create.class,
      TreeCommand.Drop.class,
      TreeCommand.ListTrees.class,
      TreeCommand.Stats.class,
    })
final class TreeCommand extends CommandGroup {
  /**
   * What the tree subcommands share: {@link FaceCommand}'s, and a tree client for the length of one
   * command.
   */
  abstract static class Sub extends FaceCommand {
    /** Connects with the least role, CLIENT, runs {@code body} with a tree client, closes. */
    <T> T withTree(Function<TreeClient, T> body) {
      return target.withClient(
          Role.CLIENT, "ferrite-tree", false, c -> body.apply(new TreeClient(c)));
    }
  }

  /** A tree subcommand on one tree, its first parameter. */
  abstract static class TreeSub extends Sub {
    @Parameters(index = "0", description = "tree")
    String tree;
  }

  /** A tree subcommand on one key of one tree, its first two parameters. */
  abstract static class KeySub extends TreeSub {
    @Parameters(index = "1", description = "key")
    String key;
  }

  /** {@code --path}: which way a read searches. A picocli mixin. */
  static final class SearchPath {
    @Option(
        names = "--path",
        description =
            "auto (the locality selector picks per search, by measured latencies), server (the"
                + " server searches: one RPC per server on the way) or client (one-sided reads of"
                + " the nodes, then of the value's extent). Default: auto.")
    Tree.Path path = Tree.Path.AUTO;
  }

  @Command(
      name = "get",
      mixinStandardHelpOptions = true,
      description = "Prints the value of a key; exit code 1 if absent.")
  static final class Get extends KeySub implements Callable<Integer> {
    @Mixin SearchPath search;

    @Override
    public Integer call() {
      return printValue(withTree(c -> c.open(tree).get(codec.decode(key), search.path)));
    }
  }

  @Command(
      name = "put",
      mixinStandardHelpOptions = true,
      description = "Stores a value under a key (creating the tree if needed).")
  static final class Put extends KeySub implements Callable<Integer> {
    @Parameters(index = "2", description = "value")
    String value;

    @Override
    public Integer call() {
      byte[] k = codec.decode(key);
      byte[] v = codec.decode(value);
      boolean created = withTree(c -> c.create(tree).put(k, v));
      out().println(created ? "created" : "replaced");
      out().flush();
      return 0;
    }
  }

  @Command(
      name = "del",
      mixinStandardHelpOptions = true,
      description = "Deletes a key; exit code 1 if it was absent.")
  static final class Del extends KeySub implements Callable<Integer> {
    @Override
    public Integer call() {
      return printDeleted(withTree(c -> c.open(tree).delete(codec.decode(key))));
    }
  }

  @Command(
      name = "scan",
      mixinStandardHelpOptions = true,
      description = {
        "Prints KEY<TAB>VALUE lines for the keys from --from (inclusive) to --to (exclusive), in"
            + " unsigned byte order, across meganodes and servers, at most --limit of them.",
        "Each leaf's pairs come from one consistent copy of it. The last line says how many"
            + " were printed, and whether --limit cut the scan short."
      })
  static final class Scan extends TreeSub implements Callable<Integer> {
    @Mixin SearchPath search;

    @Option(names = "--from", paramLabel = "KEY", description = "First key (default: the first).")
    String from;

    @Option(names = "--to", paramLabel = "KEY", description = "Stop before it (default: the end).")
    String to;

    @Option(
        names = "--limit",
        defaultValue = "100",
        description = "Most pairs to print, > 0 (default: 100).")
    int limit;

    @Override
    public Integer call() {
      byte[] f = from == null ? null : codec.decode(from);
      byte[] t = to == null ? null : codec.decode(to);
      // One more than asked: tells a scan cut by --limit from one that ended by itself.
      int ask = limit < Integer.MAX_VALUE && limit > 0 ? limit + 1 : limit;
      List<Map.Entry<byte[], byte[]>> pairs =
          withTree(c -> c.open(tree).scan(f, t, ask, search.path));
      int shown = Math.min(pairs.size(), limit);
      for (int i = 0; i < shown; i++) {
        Map.Entry<byte[], byte[]> e = pairs.get(i);
        out().println(codec.show(e.getKey()) + "\t" + codec.show(e.getValue()));
      }
      out()
          .printf(
              Locale.ROOT,
              "(%d pair(s)%s)%n",
              shown,
              pairs.size() > limit ? ", more after --limit " + limit : "");
      out().flush();
      return 0;
    }
  }

  @Command(
      name = "create",
      mixinStandardHelpOptions = true,
      description = {
        "Creates a tree (its first meganode on a memory server), or says it exists.",
        "Meganode and node sizes are the servers' tree.meganode.size and tree.node.size."
      })
  static final class Create extends TreeSub implements Callable<Integer> {
    @Override
    public Integer call() {
      TreeClient.TreeInfo t =
          withTree(
              c -> {
                c.create(tree);
                return c.list().stream().filter(i -> i.name().equals(tree)).findFirst().get();
              });
      out()
          .printf(Locale.ROOT, "tree %s (id %016x): root on server %d%n", tree, t.id(), t.server());
      out().flush();
      return 0;
    }
  }

  @Command(
      name = "drop",
      mixinStandardHelpOptions = true,
      description = "Drops a tree and frees its meganodes; exit code 1 if there was none.")
  static final class Drop extends TreeSub implements Callable<Integer> {
    @Override
    public Integer call() {
      boolean dropped = withTree(c -> c.drop(tree));
      out().println(dropped ? "dropped " + tree : "(not found)");
      out().flush();
      return dropped ? 0 : 1;
    }
  }

  @Command(name = "list", mixinStandardHelpOptions = true, description = "Lists the trees.")
  static final class ListTrees extends Sub implements Callable<Integer> {
    @Override
    public Integer call() {
      List<TreeClient.TreeInfo> all = withTree(TreeClient::list);
      for (TreeClient.TreeInfo t : all) {
        out().printf(Locale.ROOT, "%s  id %016x, server %d%n", t.name(), t.id(), t.server());
      }
      if (all.isEmpty()) {
        out().println("(no trees: ferrite tree create NAME, or ferrite tree put)");
      }
      out().flush();
      return 0;
    }
  }

  @Command(
      name = "stats",
      mixinStandardHelpOptions = true,
      description = {
        "A tree's shape, summed over every memory server holding part of it: meganodes, levels of"
            + " meganodes (the root's level + 1),"
            + " small nodes in use of those the meganodes hold (fill), meganode splits so far."
      })
  static final class Stats extends TreeSub implements Callable<Integer> {
    @Override
    public Integer call() {
      long[] s = withTree(c -> c.open(tree).stats());
      out()
          .printf(
              Locale.ROOT,
              "tree %s: %d meganode(s), %d level(s), nodes %d of %d in use (fill %.1f%%),"
                  + " %d split(s)%s%s%n",
              tree,
              s[0],
              s[1],
              s[3],
              s[4],
              s[4] == 0 ? 0.0 : 100.0 * s[3] / s[4],
              s[2],
              s[6] == 0 ? "" : ", " + s[6] + " pending a split's end",
              // Summed over every server (spread placement): one that did not answer is named as
              // a count, so a short sum is never printed as the whole.
              s[5] == 0
                  ? ""
                  : "; " + s[5] + " server(s) not answering: their meganodes not counted");
      out().flush();
      return 0;
    }
  }
}
