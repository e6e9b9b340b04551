package io.ferrite.cli;

import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * The child JVM of {@link ExamplesTest}: runs command lines through {@link FerriteCli} as {@code
 * ferrite} does (same command line, same handlers), one after the other, in this JVM's user.home
 * and working directory. Input: one command a line, words separated by tabs, the first word {@code
 * setup} or {@code example}. Output: one line per command in the results file, {@code <line number>
 * TAB <exit status> TAB <milliseconds> TAB <stderr, newlines as \n>}; what commands print on stdout
 * goes to stdout.
 */
final class ExamplesRunner {
  private ExamplesRunner() {}

  public static void main(String[] args) throws IOException {
    List<String> lines = Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8);
    PrintWriter stdout =
        new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), true);
    try (PrintWriter results =
        new PrintWriter(Files.newBufferedWriter(Path.of(args[1]), StandardCharsets.UTF_8), true)) {
      for (int i = 0; i < lines.size(); i++) {
        String[] words = lines.get(i).split("\t");
        String[] argv = Arrays.copyOfRange(words, 1, words.length);
        stdout.println("### " + words[0] + ": ferrite " + String.join(" ", argv));
        StringWriter err = new StringWriter();
        picocli.CommandLine cli = FerriteCli.commandLine();
        cli.setOut(stdout);
        cli.setErr(new PrintWriter(err, true));
        long t0 = System.nanoTime();
        int rc = cli.execute(argv);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        stdout.flush();
        System.err.print(err);
        System.err.flush();
        results.println(i + "\t" + rc + "\t" + ms + "\t" + err.toString().replace("\n", "\\n"));
      }
    }
  }
}
