package io.ferrite.cli;

import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;

/**
 * Runs several {@code ferrite} commands in one JVM, for a client on another host (see {@link
 * NetHosts}): the arguments are the commands' words, commands separated by {@code ;;}. Prints, per
 * command, {@code == <words>}, what it printed (stdout, then stderr), and {@code == exit <code>};
 * one JVM start instead of one per command.
 */
final class CliScript {
  private CliScript() {}

  static final String SEPARATOR = ";;";

  public static void main(String[] args) {
    List<List<String>> commands = new ArrayList<>();
    List<String> current = new ArrayList<>();
    for (String a : args) {
      if (a.equals(SEPARATOR)) {
        commands.add(current);
        current = new ArrayList<>();
      } else {
        current.add(a);
      }
    }
    commands.add(current);
    PrintWriter stdout =
        new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), true);
    for (List<String> c : commands) {
      StringWriter out = new StringWriter();
      StringWriter err = new StringWriter();
      CommandLine cl = FerriteCli.commandLine();
      cl.setOut(new PrintWriter(out, true));
      cl.setErr(new PrintWriter(err, true));
      int code = cl.execute(c.toArray(new String[0]));
      stdout.println("== " + String.join(" ", c));
      stdout.print(out);
      stdout.print(err);
      stdout.println("== exit " + code);
    }
    stdout.flush();
    System.exit(0);
  }
}
