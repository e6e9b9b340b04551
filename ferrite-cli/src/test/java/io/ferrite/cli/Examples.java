package io.ferrite.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;

/**
 * The examples Ferrite documents, as a user would type them: every {@code ferrite ...} (or {@code
 * bin/ferrite ...}) line of README.md's code blocks and of every command's {@code --help} footer. A
 * trailing comment ({@code # ...}) or explanation (after two or more spaces, in the help footers)
 * is dropped; a line ending in {@code \} continues on the next.
 */
final class Examples {
  /** One example: where it is written, its text, and its arguments after {@code ferrite}. */
  record Example(String source, String text, List<String> args) {
    @Override
    public String toString() {
      return source + ": " + text;
    }
  }

  private Examples() {}

  /** Every example of {@code readme} (README.md) and of every --help footer, in that order. */
  static List<Example> all(Path readme) throws IOException {
    List<Example> all = new ArrayList<>(readme(readme));
    all.addAll(help());
    return all;
  }

  static List<Example> readme(Path readme) throws IOException {
    List<Example> out = new ArrayList<>();
    boolean inCode = false;
    List<String> lines = Files.readAllLines(readme, StandardCharsets.UTF_8);
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).trim();
      if (line.startsWith("```")) {
        inCode = !inCode;
        continue;
      }
      if (inCode) {
        StringBuilder full = new StringBuilder(line);
        while (full.toString().endsWith("\\") && i + 1 < lines.size()) {
          full.setLength(full.length() - 1);
          trimEnd(full).append(' ').append(lines.get(++i).trim());
        }
        add(out, "README.md:" + (i + 1), full.toString(), false);
      }
    }
    return out;
  }

  static List<Example> help() {
    List<Example> out = new ArrayList<>();
    List<List<String>> paths = new ArrayList<>();
    HelpWalk.walk(FerriteCli.commandLine(), new ArrayList<>(), paths);
    for (List<String> path : paths) {
      CommandLine cli = FerriteCli.commandLine();
      for (String name : path) {
        cli = cli.getSubcommands().get(name);
      }
      String[] footer = cli.getCommandSpec().usageMessage().footer();
      for (int i = 0; i < footer.length; i++) {
        // picocli's format: %% is a literal %.
        StringBuilder full = new StringBuilder(footer[i].trim().replace("%%", "%"));
        while (full.toString().endsWith("\\") && i + 1 < footer.length) {
          full.setLength(full.length() - 1);
          trimEnd(full).append(' ').append(footer[++i].trim());
        }
        add(out, "ferrite " + String.join(" ", path) + " --help", full.toString(), true);
      }
    }
    return out;
  }

  private static StringBuilder trimEnd(StringBuilder b) {
    while (b.length() > 0 && b.charAt(b.length() - 1) == ' ') {
      b.setLength(b.length() - 1);
    }
    return b;
  }

  /**
   * Adds the example of {@code line}: {@code a && b} is two examples; of {@code a | b} only {@code
   * a} runs (its exit status is the example's).
   */
  private static void add(List<Example> out, String source, String line, boolean explained) {
    String text = line.startsWith("bin/ferrite ") ? line.substring("bin/".length()) : line;
    if (!text.startsWith("ferrite ")) {
      return;
    }
    List<String> words = words(text, explained);
    List<String> one = new ArrayList<>();
    for (int i = 0; i <= words.size(); i++) {
      String w = i < words.size() ? words.get(i) : "&&";
      if (w.equals("&&") || w.equals("|")) {
        if (!one.isEmpty()) {
          out.add(new Example(source, "ferrite " + String.join(" ", one), List.copyOf(one)));
        }
        one.clear();
        if (w.equals("|")) {
          i = words.indexOf("&&") > i ? words.indexOf("&&") : words.size();
        }
      } else if (!(one.isEmpty() && w.equals("ferrite") && i > 0)) {
        one.add(w);
      }
    }
  }

  /**
   * The words after {@code ferrite}, split as a shell does (single and double quotes, backslash in
   * double quotes), up to a {@code #} comment or, for help footers, the explanation column: two or
   * more spaces outside quotes.
   */
  static List<String> words(String text, boolean explained) {
    List<String> words = new ArrayList<>();
    StringBuilder w = null;
    char quote = 0;
    String s = text.substring("ferrite ".length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (quote != 0) {
        if (c == quote) {
          quote = 0;
        } else if (quote == '"' && c == '\\' && i + 1 < s.length()) {
          w.append(s.charAt(++i));
        } else {
          w.append(c);
        }
      } else if (c == '\'' || c == '"') {
        quote = c;
        w = w == null ? new StringBuilder() : w;
      } else if (c == ' ') {
        if (w != null) {
          words.add(w.toString());
          w = null;
        }
        if (explained && i + 1 < s.length() && s.charAt(i + 1) == ' ') {
          break;
        }
      } else if (c == '#' && w == null) {
        break;
      } else {
        w = w == null ? new StringBuilder() : w;
        w.append(c);
      }
    }
    if (w != null) {
      words.add(w.toString());
    }
    return words;
  }
}
