package io.ferrite.cli;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;

/**
 * The child JVM of {@link HelpTest}: runs {@code ferrite <path> --help} for every command and
 * subcommand at a usage width of 80 and prints, before each, a marker line {@code ### <path>} on
 * stdout and on stderr, so the test can tell which command printed what. A child JVM because
 * picocli's warnings go to the {@code System.err} of the moment its {@code CommandLine} class was
 * loaded, which in a shared test JVM is not a stream a test can read.
 */
final class HelpWalk {
  static final String MARK = "### ";

  private HelpWalk() {}

  public static void main(String[] args) {
    List<List<String>> paths = new ArrayList<>();
    walk(FerriteCli.commandLine(), new ArrayList<>(), paths);
    PrintWriter out =
        new PrintWriter(new java.io.OutputStreamWriter(System.out, StandardCharsets.UTF_8), true);
    PrintWriter err =
        new PrintWriter(new java.io.OutputStreamWriter(System.err, StandardCharsets.UTF_8), true);
    for (List<String> path : paths) {
      String name = String.join(" ", path);
      out.println(MARK + name);
      err.println(MARK + name);
      CommandLine cli = FerriteCli.commandLine();
      cli.setUsageHelpWidth(80);
      cli.setOut(out);
      cli.setErr(err);
      List<String> argv = new ArrayList<>(path);
      argv.add("--help");
      int rc = cli.execute(argv.toArray(new String[0]));
      out.println(MARK + "exit " + rc);
      out.flush();
      err.flush();
    }
  }

  /** Every command path under {@code cli}, the root (the empty path) first. */
  static void walk(CommandLine cli, List<String> path, List<List<String>> paths) {
    paths.add(List.copyOf(path));
    // getSubcommands() lists aliases too; a command is walked once, by its name.
    for (var e : cli.getSubcommands().entrySet()) {
      if (e.getKey().equals(e.getValue().getCommandName())) {
        List<String> sub = new ArrayList<>(path);
        sub.add(e.getKey());
        walk(e.getValue(), sub, paths);
      }
    }
  }
}
