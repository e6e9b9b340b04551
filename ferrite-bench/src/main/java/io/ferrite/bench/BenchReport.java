package io.ferrite.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The results of one suite run, in the order they were measured. Prints itself as an aligned table
 * and writes itself as JSON (see {@link JsonReport}).
 *
 * <p>Not thread-safe: a suite fills it from its one driving thread.
 */
public final class BenchReport {
  private final String suite;
  private final Map<String, BenchResult> results = new LinkedHashMap<>();

  public BenchReport(String suite) {
    this.suite = suite;
  }

  public String suite() {
    return suite;
  }

  /** Adds {@code result}; returns it. Names are unique within a report. */
  public BenchResult add(BenchResult result) {
    if (results.putIfAbsent(result.name(), result) != null) {
      throw new IllegalArgumentException("duplicate result name: " + result.name());
    }
    return result;
  }

  /** The result called {@code name}, or null. */
  public BenchResult get(String name) {
    return results.get(name);
  }

  /** The result called {@code name}; fails if it has not been measured. */
  public BenchResult require(String name) {
    BenchResult r = results.get(name);
    if (r == null) {
      throw new IllegalStateException("no result " + name + " in suite " + suite);
    }
    return r;
  }

  public List<BenchResult> results() {
    return Collections.unmodifiableList(new ArrayList<>(results.values()));
  }

  /** Prints {@link #table()}. */
  public void printTable(PrintStream out) {
    out.print(table());
    out.flush();
  }

  /** An aligned table: name, value, unit, reference, reference value, ratio; one line each. */
  public String table() {
    String[] header = {"name", "value", "unit", "reference", "ref value", "ratio"};
    List<String[]> rows = new ArrayList<>();
    rows.add(header);
    for (BenchResult r : results.values()) {
      rows.add(
          new String[] {
            r.name(),
            formatValue(r.value()),
            r.unit(),
            r.hasReference() ? r.reference() : "-",
            r.hasReference() ? formatValue(r.referenceValue()) : "-",
            Double.isNaN(r.ratio()) ? "-" : String.format(Locale.ROOT, "%.3f", r.ratio())
          });
    }
    int[] width = new int[header.length];
    for (String[] row : rows) {
      for (int i = 0; i < row.length; i++) {
        width[i] = Math.max(width[i], row[i].length());
      }
    }
    // Text columns are left-aligned, numbers right-aligned.
    boolean[] numeric = {false, true, false, false, true, true};
    StringBuilder sb = new StringBuilder();
    sb.append("suite: ").append(suite).append(System.lineSeparator());
    for (int r = 0; r < rows.size(); r++) {
      String[] row = rows.get(r);
      for (int i = 0; i < row.length; i++) {
        if (i > 0) {
          sb.append("  ");
        }
        String cell = row[i];
        String pad = " ".repeat(width[i] - cell.length());
        if (numeric[i]) {
          sb.append(pad).append(cell);
        } else if (i == row.length - 1) {
          sb.append(cell);
        } else {
          sb.append(cell).append(pad);
        }
      }
      sb.append(System.lineSeparator());
      if (r == 0) {
        int total = 0;
        for (int w : width) {
          total += w;
        }
        sb.append("-".repeat(total + 2 * (width.length - 1))).append(System.lineSeparator());
      }
    }
    sb.append("ratio > 1 means better than the reference; a ceiling is rarely beaten, so fabric ")
        .append("ratios read as the fraction of the ceiling reached.")
        .append(System.lineSeparator());
    return sb.toString();
  }

  /** This report as JSON; see {@link JsonReport#write}. */
  public String toJson() {
    return JsonReport.write(this);
  }

  /** Writes {@link #toJson()} to {@code file} (UTF-8), creating parent directories. */
  public void writeJson(Path file) throws IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Files.writeString(file, toJson(), StandardCharsets.UTF_8);
  }

  /** Three significant digits or so, never scientific notation, for the table. */
  static String formatValue(double v) {
    if (Double.isNaN(v)) {
      return "-";
    }
    double a = Math.abs(v);
    if (a >= 100) {
      return String.format(Locale.ROOT, "%.0f", v);
    } else if (a >= 10) {
      return String.format(Locale.ROOT, "%.1f", v);
    } else {
      return String.format(Locale.ROOT, "%.2f", v);
    }
  }
}
