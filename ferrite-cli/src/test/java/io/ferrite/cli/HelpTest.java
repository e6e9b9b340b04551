package io.ferrite.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --help} of every command and subcommand renders at 80 columns: no line wider, no picocli
 * warning (an unescaped {@code %} in a text makes picocli print the raw text and a WARN), exit
 * status 0. Runs {@link HelpWalk} in a child JVM, whose stderr is where picocli warns.
 */
@Tag("multiprocess")
class HelpTest {
  static final int WIDTH = 80;

  @Test
  void everyHelpFitsEightyColumnsWithoutWarnings(@TempDir Path dir) throws Exception {
    Path outFile = dir.resolve("out.txt");
    Path errFile = dir.resolve("err.txt");
    Process p =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                System.getProperty("java.class.path"),
                HelpWalk.class.getName())
            .redirectOutput(outFile.toFile())
            .redirectError(errFile.toFile())
            .start();
    try {
      assertTrue(p.waitFor(60, TimeUnit.SECONDS), "help walk did not finish");
    } finally {
      p.destroyForcibly();
      p.waitFor();
    }
    assertEquals(0, p.exitValue(), read(errFile));
    Map<String, List<String>> out = sections(read(outFile));
    Map<String, List<String>> err = sections(read(errFile));
    assertTrue(out.size() > 30, "every command walked: " + out.keySet());
    for (String cmd :
        List.of(
            "",
            "ycsb",
            "rsort",
            "kv get",
            "fs put",
            "bench fabric",
            "local",
            "tx bank",
            "tx tao",
            "bench tx")) {
      assertTrue(out.containsKey(cmd), "'" + cmd + "' walked: " + out.keySet());
    }
    List<String> problems = new ArrayList<>();
    for (Map.Entry<String, List<String>> e : out.entrySet()) {
      String cmd = "ferrite " + e.getKey();
      List<String> lines = e.getValue();
      if (!lines.contains(HelpWalk.MARK + "exit 0")) {
        problems.add(cmd + " --help: not exit 0: " + lines);
      }
      if (lines.size() < 3) {
        problems.add(cmd + " --help: printed nothing");
      }
      for (String line : lines) {
        if (line.length() > WIDTH) {
          problems.add(cmd + " --help: " + line.length() + " columns: " + line);
        }
      }
    }
    for (Map.Entry<String, List<String>> e : err.entrySet()) {
      for (String line : e.getValue()) {
        if (!line.isBlank()) {
          problems.add("ferrite " + e.getKey() + " --help: on stderr: " + line);
        }
      }
    }
    assertTrue(problems.isEmpty(), String.join("\n", problems));
  }

  /**
   * Picocli wraps every text element at the width, so a text wrapped by hand breaks mid-sentence
   * (the element ends a line early and picocli wraps it again). Two habits keep help readable at 80
   * columns: an element that starts with a space is preformatted (a table row, an example) and fits
   * the width; a longer element is a whole paragraph, left to picocli, and does not end
   * mid-sentence with the next element carrying on in lower case.
   */
  @Test
  void helpTextsArePreformattedRowsOrWholeParagraphs() {
    List<List<String>> paths = new ArrayList<>();
    HelpWalk.walk(FerriteCli.commandLine(), new ArrayList<>(), paths);
    List<String> problems = new ArrayList<>();
    for (List<String> path : paths) {
      picocli.CommandLine cli = FerriteCli.commandLine();
      for (String name : path) {
        cli = cli.getSubcommands().get(name);
      }
      var usage = cli.getCommandSpec().usageMessage();
      String cmd = "ferrite " + String.join(" ", path);
      for (String[] texts : List.of(usage.header(), usage.description(), usage.footer())) {
        for (int i = 0; i < texts.length; i++) {
          String t = texts[i];
          if (t.startsWith(" ") && t.length() > WIDTH) {
            problems.add(cmd + ": preformatted line of " + t.length() + " columns: " + t);
          }
          if (t.length() > WIDTH
              && i + 1 < texts.length
              && !texts[i + 1].isEmpty()
              && Character.isLowerCase(texts[i + 1].charAt(0))) {
            problems.add(cmd + ": wrapped by hand: '" + t + "' / '" + texts[i + 1] + "'");
          }
        }
      }
      for (String t : usage.footer()) {
        if (t.length() > WIDTH) {
          problems.add(cmd + ": footer line of " + t.length() + " columns: " + t);
        }
      }
    }
    assertTrue(problems.isEmpty(), String.join("\n", problems));
  }

  private static String read(Path f) throws IOException {
    return Files.readString(f, StandardCharsets.UTF_8);
  }

  /** The lines after each {@code ### <command>} marker, by command. */
  private static Map<String, List<String>> sections(String text) {
    Map<String, List<String>> m = new LinkedHashMap<>();
    List<String> cur = null;
    for (String line : text.split("\n", -1)) {
      if (line.startsWith(HelpWalk.MARK) && !line.startsWith(HelpWalk.MARK + "exit ")) {
        cur = new ArrayList<>();
        m.put(line.substring(HelpWalk.MARK.length()), cur);
      } else if (cur != null) {
        cur.add(line);
      }
    }
    return m;
  }
}
