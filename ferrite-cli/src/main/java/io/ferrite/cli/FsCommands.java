package io.ferrite.cli;

import io.ferrite.kernel.proto.ClusterStatus;
import io.ferrite.kernel.proto.MemberInfo;
import io.ferrite.kernel.proto.ServerState;
import io.ferrite.kernel.proto.Sizes;
import io.ferrite.nodes.CreateOptions;
import io.ferrite.nodes.NodeInfo;
import io.ferrite.nodes.NodePath;
import io.ferrite.nodes.NodeType;
import io.ferrite.nodes.NodeWriter;
import io.ferrite.nodes.Nodes;
import io.ferrite.nodes.NodesException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** The subcommands of {@code ferrite fs}. */
final class FsCommands {
  private FsCommands() {}

  @Command(
      name = "ls",
      mixinStandardHelpOptions = true,
      description =
          "Lists a container's children in name order (a file or key-value lists itself).",
      footer = {
        "",
        "Type letters with -l: d directory, - file, t table, k key-value, b bag.",
        "Examples:",
        "  ferrite fs ls /",
        "  ferrite fs ls -lR /data"
      })
  static final class Ls extends FsCommand.Base {
    @Option(names = "-l", description = "Long format: type, size, modification time, name.")
    boolean longFormat;

    @Option(names = "-R", description = "Recurse into containers.")
    boolean recursive;

    @Parameters(arity = "0..*", paramLabel = "PATH", description = "Paths (default: /).")
    List<String> paths = new ArrayList<>();

    @Override
    int run(Nodes nodes) {
      if (paths.isEmpty()) {
        paths.add("/");
      }
      int rc = 0;
      boolean headers = paths.size() > 1 || recursive;
      boolean first = true;
      for (String p : paths) {
        NodeInfo n;
        try {
          n = nodes.lookup(p);
        } catch (RuntimeException e) {
          rc = failed(p, e);
          continue;
        }
        if (!n.type().isContainer()) {
          print(n, p);
          continue;
        }
        first = listDir(nodes, p, headers, first);
      }
      return rc;
    }

    private boolean listDir(Nodes nodes, String dir, boolean headers, boolean first) {
      PrintWriter out = out();
      if (headers) {
        if (!first) {
          out.println();
        }
        out.println(dir + ":");
      }
      List<String> subdirs = new ArrayList<>();
      for (NodeInfo c : nodes.list(dir)) {
        print(c, c.path());
        if (recursive && c.type().isContainer()) {
          subdirs.add(FsCommand.child(dir, c.path()));
        }
      }
      for (String s : subdirs) {
        listDir(nodes, s, true, false);
      }
      return false;
    }

    private void print(NodeInfo n, String name) {
      if (!longFormat) {
        out().println(name);
        return;
      }
      out()
          .printf(
              Locale.ROOT,
              "%c %12d  %s  %s%n",
              FsCommand.letter(n.type()),
              n.size(),
              FsCommand.time(n.mtime()),
              name);
    }
  }

  @Command(
      name = "mkdir",
      mixinStandardHelpOptions = true,
      description = "Creates directories (or, with --table / --bag, a table or a bag).",
      footer = {"", "Examples:", "  ferrite fs mkdir -p /a/b/c", "  ferrite fs mkdir --table /kv"})
  static final class Mkdir extends FsCommand.EachPath {
    @Option(names = "-p", description = "Create missing parents; an existing directory is fine.")
    boolean parents;

    @Option(names = "--table", description = "Create a table (a flat container of key-values).")
    boolean table;

    @Option(
        names = "--non-enumerable",
        description = "With --table: keep no names (ls shows nothing; creates are cheaper).")
    boolean nonEnumerable;

    @Option(names = "--bag", description = "Create a bag (files that read as one stream).")
    boolean bag;

    @Override
    void each(Nodes nodes, String p) {
      if (parents && !table && !bag) {
        nodes.mkdirs(p);
        return;
      }
      if (parents) {
        nodes.mkdirs(NodePath.parent(NodePath.check(p)));
      }
      if (table) {
        nodes.createTable(p, !nonEnumerable);
      } else if (bag) {
        nodes.createBag(p);
      } else {
        nodes.mkdir(p);
      }
    }
  }

  /**
   * Progress of a transfer over 4 MiB on stderr: a bar redrawn in place when there is a terminal
   * (or with --progress), otherwise a line every {@link #LINE_EVERY_NANOS} (5 s), so a log or a CI
   * job shows a long copy moving without a line per buffer.
   */
  static final class Progress {
    private static final long THRESHOLD = 4L << 20;
    static final long LINE_EVERY_NANOS = 5_000_000_000L;
    private final PrintWriter err;
    private final String what;
    private final long total;
    private final boolean bar;
    private final boolean lines;
    private final long lineEvery;
    private final long start = System.nanoTime();
    private long done;
    private long lastDraw;

    Progress(PrintWriter err, String what, long total, boolean force) {
      this(err, what, total, force || System.console() != null, LINE_EVERY_NANOS);
    }

    /**
     * {@code terminal}: draw a bar; otherwise lines every {@code lineEveryNanos}. A transfer of a
     * known size up to 4 MiB shows nothing; one of unknown size ({@code total < 0}: stdin) shows
     * lines.
     */
    Progress(PrintWriter err, String what, long total, boolean terminal, long lineEveryNanos) {
      this.err = err;
      this.what = what;
      this.total = total;
      boolean big = total > THRESHOLD || total < 0;
      this.bar = big && total > 0 && terminal;
      this.lines = big && !bar;
      this.lineEvery = lineEveryNanos;
      this.lastDraw = start;
    }

    void add(long n) {
      done += n;
      long now = System.nanoTime();
      double secs = Math.max(1e-9, (now - start) / 1e9);
      if (bar && (now - lastDraw > 100_000_000L || done == total)) {
        lastDraw = now;
        int width = 30;
        int filled = (int) (width * done / Math.max(1, total));
        err.printf(
            Locale.ROOT,
            "\r[%s%s] %3d%% %s / %s  %s/s ",
            "#".repeat(filled),
            " ".repeat(width - filled),
            (int) (100 * done / Math.max(1, total)),
            Sizes.format(done),
            Sizes.format(total),
            Sizes.format((long) (done / secs)));
        err.flush();
      } else if (lines && now - lastDraw >= lineEvery) {
        lastDraw = now;
        err.printf(
            Locale.ROOT,
            "%s: %s%s, %s/s%n",
            what,
            Sizes.format(done),
            total > 0
                ? String.format(
                    Locale.ROOT, " of %s (%d%%)", Sizes.format(total), 100 * done / total)
                : "",
            Sizes.format((long) (done / secs)));
        err.flush();
      }
    }

    void finish() {
      if (bar) {
        err.println();
        err.flush();
      }
    }
  }

  static long copy(InputStream in, OutputStream out, Progress progress) throws IOException {
    byte[] buf = new byte[1 << 20];
    long total = 0;
    int n;
    while ((n = in.read(buf)) > 0) {
      out.write(buf, 0, n);
      total += n;
      progress.add(n);
    }
    progress.finish();
    return total;
  }

  @Command(
      name = "put",
      mixinStandardHelpOptions = true,
      description = {
        "Copies a local file (or - for stdin) to a node. Into a directory or bag it makes a file;"
            + " into a table it puts a key-value (replacing the old value atomically).",
        "A destination ending in / or naming a container gets the local file's name."
      },
      footer = {
        "",
        "Examples:",
        "  ferrite fs put data.bin /in/",
        "  ferrite fs put --replicas 2 data.bin /in/",
        "  ferrite fs put v.json /kv/key"
      })
  static final class Put extends FsCommand.Base {
    @Parameters(index = "0", paramLabel = "LOCAL")
    String local;

    @Parameters(index = "1", paramLabel = "PATH")
    String remote;

    @Option(names = "--class", description = "Preferred storage class (default: dram, then disk).")
    String storageClass = "";

    @Option(
        names = "--replicas",
        paramLabel = "N",
        description =
            "Copies of each block of a file, 1 (default) to 3, each on another memory server:"
                + " reads fall back to another copy when a server dies, and the master makes lost"
                + " copies again.")
    int replicas = 1;

    @Option(
        names = "--progress",
        description = "Show the progress bar even when not on a terminal.")
    boolean progress;

    @Override
    int run(Nodes nodes) throws IOException {
      String dst = remote;
      String base = local.equals("-") ? "stdin" : Path.of(local).getFileName().toString();
      NodeInfo parent;
      if (dst.endsWith("/") && dst.length() > 1) {
        dst = dst.substring(0, dst.length() - 1) + "/" + base;
      } else {
        try {
          NodeInfo existing = nodes.lookup(dst);
          if (existing.type().isContainer()) {
            dst = FsCommand.child(dst, base);
          }
        } catch (NodesException e) {
          if (e.reason() != NodesException.Reason.NOT_FOUND) {
            return failed(remote, e);
          }
        }
      }
      try {
        parent = nodes.lookup(NodePath.parent(NodePath.check(dst)));
      } catch (RuntimeException e) {
        return failed(dst, e);
      }
      if (replicas < 1 || replicas > io.ferrite.nodes.NodesProtocol.MAX_REPLICAS) {
        err().println("error: --replicas " + replicas + " (expected: 1 to 3)");
        return 2;
      }
      long size = local.equals("-") ? -1 : Files.size(Path.of(local));
      Progress p = new Progress(err(), "ferrite fs put " + dst, size, progress);
      try (InputStream in = local.equals("-") ? System.in : Files.newInputStream(Path.of(local))) {
        if (parent.type() == NodeType.TABLE) {
          if (replicas > 1) {
            err().println("error: --replicas is for files, not key-values in a table");
            return 2;
          }
          byte[] value = in.readAllBytes();
          nodes.put(dst, java.nio.ByteBuffer.wrap(value));
          return 0;
        }
        NodeWriter w =
            nodes.create(dst, CreateOptions.inClass(storageClass).withReplicas(replicas));
        try (OutputStream out = w.outputStream()) {
          copy(in, out, p);
        } catch (IOException | RuntimeException e) {
          w.abort();
          throw e;
        }
      } catch (RuntimeException e) {
        return failed(dst, e);
      }
      return 0;
    }
  }

  @Command(
      name = "get",
      mixinStandardHelpOptions = true,
      description = "Copies a file, key-value or whole bag to a local file (- for stdout).",
      footer = {
        "",
        "Examples:",
        "  ferrite fs get /in/data.bin .",
        "  ferrite fs get /kv/key v.json"
      })
  static final class Get extends FsCommand.Base {
    @Parameters(index = "0", paramLabel = "PATH")
    String remote;

    @Parameters(index = "1", paramLabel = "LOCAL", defaultValue = ".")
    String local;

    @Option(
        names = "--progress",
        description = "Show the progress bar even when not on a terminal.")
    boolean progress;

    @Override
    int run(Nodes nodes) throws IOException {
      NodeInfo n;
      try {
        n = nodes.lookup(remote);
      } catch (RuntimeException e) {
        return failed(remote, e);
      }
      Path target = Path.of(local);
      if (!local.equals("-") && Files.isDirectory(target)) {
        target = target.resolve(remote.equals("/") ? "root" : NodePath.name(remote));
      }
      try (InputStream in = open(nodes, n, remote);
          OutputStream out =
              local.equals("-")
                  ? new NonClosing(System.out)
                  : Files.newOutputStream(
                      target,
                      StandardOpenOption.CREATE,
                      StandardOpenOption.TRUNCATE_EXISTING,
                      StandardOpenOption.WRITE)) {
        copy(
            in,
            out,
            new Progress(
                err(),
                "ferrite fs get " + remote,
                n.type() == NodeType.BAG ? -1 : n.size(),
                progress));
      } catch (RuntimeException e) {
        return failed(remote, e);
      }
      return 0;
    }
  }

  static InputStream open(Nodes nodes, NodeInfo n, String path) {
    if (n.type() == NodeType.BAG) {
      return nodes.openBag(path);
    }
    return nodes.open(n).inputStream();
  }

  /** System.out for a try-with-resources that must not close it. */
  static final class NonClosing extends java.io.FilterOutputStream {
    NonClosing(OutputStream out) {
      super(out);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len);
    }

    @Override
    public void close() throws IOException {
      flush();
    }
  }

  @Command(
      name = "cat",
      mixinStandardHelpOptions = true,
      description = "Writes files, key-values or bags (all their files in order) to stdout.",
      footer = {"", "Example:", "  ferrite fs cat /shuffle/part-0 | wc -c"})
  static final class Cat extends FsCommand.EachPath {
    private OutputStream stdout;

    @Override
    int run(Nodes nodes) throws IOException {
      stdout = new NonClosing(System.out);
      int rc = super.run(nodes);
      stdout.flush();
      return rc;
    }

    @Override
    void each(Nodes nodes, String p) throws IOException {
      try (InputStream in = open(nodes, nodes.lookup(p), p)) {
        in.transferTo(stdout);
      }
    }
  }

  @Command(
      name = "rm",
      mixinStandardHelpOptions = true,
      description = "Removes nodes; a non-empty container only with -r. Their blocks are freed.",
      footer = {"", "Examples:", "  ferrite fs rm /in/data.bin", "  ferrite fs rm -r /in"})
  static final class Rm extends FsCommand.EachPath {
    @Option(
        names = {"-r", "-R"},
        description = "Remove containers with everything in them.")
    boolean recursive;

    @Option(names = "-f", description = "Ignore paths that do not exist.")
    boolean force;

    @Override
    void each(Nodes nodes, String p) {
      try {
        nodes.remove(p, recursive);
      } catch (NodesException e) {
        if (!(force && e.reason() == NodesException.Reason.NOT_FOUND)) {
          throw e;
        }
      }
    }
  }

  @Command(
      name = "mv",
      mixinStandardHelpOptions = true,
      description = "Moves a node atomically; into a directory if DST is one.",
      footer = {"", "Examples:", "  ferrite fs mv /in/a /out/a", "  ferrite fs mv /in/a /out"})
  static final class Mv extends FsCommand.Base {
    @Parameters(index = "0", paramLabel = "SRC")
    String src;

    @Parameters(index = "1", paramLabel = "DST")
    String dst;

    @Override
    int run(Nodes nodes) {
      String to = dst;
      try {
        NodeInfo d = nodes.lookup(dst);
        if (d.type().isContainer()) {
          to = FsCommand.child(dst, NodePath.name(NodePath.check(src)));
        }
      } catch (NodesException e) {
        if (e.reason() != NodesException.Reason.NOT_FOUND) {
          return failed(dst, e);
        }
      }
      try {
        nodes.move(src, to);
      } catch (RuntimeException e) {
        return failed(src, e);
      }
      return 0;
    }
  }

  @Command(
      name = "stat",
      mixinStandardHelpOptions = true,
      description = "Prints what the master knows about nodes.",
      footer = {"", "Example:", "  ferrite fs stat /in/data.bin"})
  static final class Stat extends FsCommand.EachPath {
    @Override
    void each(Nodes nodes, String p) {
      NodeInfo n = nodes.lookup(p);
      PrintWriter out = out();
      out.println("  Path: " + p);
      out.println("  Type: " + FsCommand.describe(n));
      out.println(
          n.type().isContainer()
              ? "  Children: " + n.size()
              : "  Size: " + n.size() + " B (" + Sizes.format(n.size()) + ")");
      if (n.type().hasData()) {
        out.println(
            "  Blocks: "
                + n.blockCount()
                + (n.inline() != null ? " (value kept in the master's metadata)" : ""));
      }
      out.println(
          "  Storage class: "
              + (n.storageClass().isEmpty() ? "(cluster order)" : n.storageClass()));
      if (!n.location().isEmpty()) {
        out.println("  Location hint: " + n.location());
      }
      if (n.type().hasData()) {
        out.println(
            "  Replicas: "
                + n.replicas()
                + (n.underReplicated()
                    ? " (under-replicated: "
                        + n.missingCopies()
                        + " block copies missing, being made again)"
                    : ""));
      }
      if (n.isLost()) {
        // Reads of these bytes answer DATA_LOST; the rest of the node still reads.
        out.println(
            "  Lost: "
                + n.lostBlocks()
                + " of its blocks ("
                + (n.lost().isEmpty()
                    ? "past its size"
                    : n.lost().stream()
                            .map(NodeInfo.LostRange::toString)
                            .collect(java.util.stream.Collectors.joining(", "))
                        + ", "
                        + Sizes.format(n.lostBytes()))
                + "): their memory server came back without them; 'ferrite fs rm' it and"
                + " write it again");
      }
      out.println("  Modified: " + FsCommand.time(n.mtime()));
      out.println("  Id: " + n.id() + (n.writing() ? "  (open for writing)" : ""));
    }
  }

  @Command(
      name = "df",
      mixinStandardHelpOptions = true,
      description = "Capacity and use per storage class over the live memory servers.",
      footer = {"", "Example:", "  ferrite fs df"})
  static final class Df extends FsCommand.Base {
    @Override
    int run(Nodes nodes) {
      ClusterStatus st = nodes.client().status();
      PrintWriter out = out();
      out.printf(
          Locale.ROOT,
          "%-10s %10s %10s %10s %5s %s%n",
          "Class",
          "Size",
          "Used",
          "Avail",
          "Use%",
          "Servers");
      for (Map.Entry<String, long[]> e : st.totals(ServerState.ALIVE).entrySet()) {
        long size = e.getValue()[0];
        long used = e.getValue()[1];
        int servers = 0;
        for (ClusterStatus.Member m : st.members()) {
          MemberInfo info = m.info();
          if (info.state() == ServerState.ALIVE
              && m.usage().stream()
                  .anyMatch(u -> u.storageClass().equals(e.getKey()) && u.capacityBytes() > 0)) {
            servers++;
          }
        }
        out.printf(
            Locale.ROOT,
            "%-10s %10s %10s %10s %4d%% %d%n",
            e.getKey(),
            Sizes.format(size),
            Sizes.format(used),
            Sizes.format(size - used),
            size == 0 ? 0 : (int) Math.round(100.0 * used / size),
            servers);
      }
      Nodes.LostSummary lost;
      try {
        lost = nodes.lostSummary();
      } catch (io.ferrite.fabric.FerriteException e) {
        if (e.code() != io.ferrite.fabric.ErrorCode.UNKNOWN_OPCODE
            && e.code() != io.ferrite.fabric.ErrorCode.UNKNOWN_SERVICE) {
          throw e;
        }
        return 0; // a master without the nodes face, or from before lost memory was declared
      }
      if (lost.nodes() > 0) {
        out.printf(
            Locale.ROOT,
            "Lost: %d node(s), %s of data in %d block(s) whose memory server came back without"
                + " them ('ferrite fs stat' says which bytes):%n",
            lost.nodes(),
            Sizes.format(lost.bytes()),
            lost.blocks());
        for (String p : lost.paths()) {
          out.println("  " + p);
        }
        if (lost.paths().size() < lost.nodes()) {
          out.println("  ...");
        }
      }
      if (lost.underReplicated() > 0) {
        out.printf(
            Locale.ROOT,
            "Under-replicated: %d file(s), %d block copies missing (their server died or came back"
                + " without them; every block still has a copy, the master is making them again)%n",
            lost.underReplicated(),
            lost.missingCopies());
      }
      return 0;
    }
  }
}
