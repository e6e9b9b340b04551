package io.ferrite.cli;

import io.ferrite.fabric.Role;
import io.ferrite.nodes.NodeInfo;
import io.ferrite.nodes.NodePath;
import io.ferrite.nodes.NodeType;
import io.ferrite.nodes.Nodes;
import java.io.PrintWriter;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code ferrite fs}: the nodes face from the shell (NodeKernel's namespace of files, directories,
 * key-values, tables and bags). Each subcommand is in {@link FsCommands}.
 */
@Command(
    name = "fs",
    mixinStandardHelpOptions = true,
    description = {
      "The node namespace: directories and files, tables of key-values, bags of files.",
      "Paths are absolute (/a/b). With no flags the cluster is the one 'ferrite local' started."
    },
    footer = {
      "",
      "Examples:",
      "  ferrite fs mkdir -p /data/in",
      "  ferrite fs put big.bin /data/in/",
      "  ferrite fs ls -l /data/in",
      "  ferrite fs cat /data/in/big.bin | sha256sum",
      "  ferrite fs mkdir --table /cache && ferrite fs put value.json /cache/key1",
      "  ferrite fs df",
    },
    subcommands = {
      FsCommands.Ls.class,
      FsCommands.Mkdir.class,
      FsCommands.Put.class,
      FsCommands.Get.class,
      FsCommands.Cat.class,
      FsCommands.Rm.class,
      FsCommands.Mv.class,
      FsCommands.Stat.class,
      FsCommands.Df.class,
    })
final class FsCommand extends CommandGroup {
  /** What every fs subcommand shares: the cluster to talk to and a connection to it. */
  abstract static class Base implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ClusterTarget target;

    PrintWriter out() {
      return spec.commandLine().getOut();
    }

    PrintWriter err() {
      return spec.commandLine().getErr();
    }

    @Override
    public final Integer call() throws Exception {
      return target.withClient(
          Role.CLIENT,
          "ferrite-fs-" + spec.name(),
          true,
          c -> {
            int rc = run(new Nodes(c));
            out().flush();
            return rc;
          });
    }

    abstract int run(Nodes nodes) throws Exception;

    /** Prints "fs <cmd>: <path>: <reason>" for one failed operand, like a shell tool. */
    int failed(String operand, RuntimeException e) {
      String msg = FerriteCli.describe(FerriteCli.rootOf(e));
      err().println("ferrite fs " + spec.name() + ": " + operand + ": " + msg);
      err().flush();
      return 1;
    }
  }

  /**
   * A subcommand that does the same to each of its PATH operands, like a shell tool: a path that
   * fails is reported on stderr ({@link Base#failed}) and the next one is done; exit code 1 if any
   * failed.
   */
  abstract static class EachPath extends Base {
    @Parameters(arity = "1..*", paramLabel = "PATH")
    List<String> paths;

    @Override
    int run(Nodes nodes) throws java.io.IOException {
      int rc = 0;
      for (String p : paths) {
        try {
          each(nodes, p);
        } catch (RuntimeException e) {
          rc = failed(p, e);
        }
      }
      return rc;
    }

    /** Does the command to {@code path}; a RuntimeException fails this path only. */
    abstract void each(Nodes nodes, String path) throws java.io.IOException;
  }

  static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm", Locale.ROOT).withZone(ZoneId.systemDefault());

  static String time(long epochMillis) {
    return TIME.format(Instant.ofEpochMilli(epochMillis));
  }

  /** One letter per type, in the place where ls -l puts d or -. */
  static char letter(NodeType t) {
    return switch (t) {
      case FILE -> '-';
      case DIRECTORY -> 'd';
      case KEYVALUE -> 'k';
      case TABLE -> 't';
      case BAG -> 'b';
    };
  }

  /** The path of {@code name} in {@code dir}. */
  static String child(String dir, String name) {
    return NodePath.join(dir, name);
  }

  static String describe(NodeInfo n) {
    return n.type().label()
        + (n.type() == NodeType.TABLE && !n.enumerable() ? " (non-enumerable)" : "");
  }
}
