package io.ferrite.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Writes {@link BenchReport}s as one self-contained HTML page: inline CSS and inline SVG, no
 * script, no font, no link to anything (the page reads the same offline and in ten years). Per
 * suite:
 *
 * <ul>
 *   <li>each result that has a reference (ceiling or peer) as a pair of bars, the result filled and
 *       its reference outlined, scaled to the larger of the two, with the ratio printed beside;
 *   <li>latency percentiles ({@code <prefix>.p50}, {@code .p90}, {@code .p99}, {@code .p99.9}) as
 *       one small chart per prefix on a log scale, the reference's percentiles beside them;
 *   <li>every result in a table (name, value, unit, reference, its value, ratio), as the console
 *       prints it.
 * </ul>
 *
 * <p>The markup is well-formed XML (every element closed, text escaped, numeric character
 * references only), so a page can be checked with any XML parser. The SVG elements carry no {@code
 * xmlns}: HTML5 puts inline {@code svg} in the SVG namespace by itself.
 */
public final class HtmlReport {
  private HtmlReport() {}

  /** The statistic ending a percentile result's name; group 1 is the prefix. */
  private static final Pattern PERCENTILE = Pattern.compile("^(.+)\\.(p50|p90|p99|p99\\.9)$");

  private static final List<String> PERCENTILES = List.of("p50", "p90", "p99", "p99.9");

  private static final String CSS =
      "body{font-family:sans-serif;margin:2em;color:#222;max-width:1100px}"
          + "h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid #ccc}"
          + "h3{font-size:1.05em;margin-top:1.5em}"
          + "table{border-collapse:collapse;font-size:0.85em}"
          + "td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left}"
          + "td.n{text-align:right;font-variant-numeric:tabular-nums}"
          + "svg text{font-family:sans-serif;font-size:12px;fill:#222}"
          + "svg text.small{font-size:10px;fill:#666}"
          + "rect.v{fill:#3b6ea8}rect.r{fill:#fff;stroke:#888;stroke-width:1}"
          + "line.grid{stroke:#ddd}line.axis{stroke:#888}"
          + ".charts{display:flex;flex-wrap:wrap;gap:12px}"
          + ".legend rect{vertical-align:middle}";

  /** The page for {@code reports} under {@code title}. */
  public static String write(String title, List<BenchReport> reports) {
    StringBuilder sb = new StringBuilder(8192);
    sb.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>")
        .append("<title>")
        .append(esc(title))
        .append("</title><style>")
        .append(CSS)
        .append("</style></head>\n<body>\n<h1>")
        .append(esc(title))
        .append("</h1>\n<p>Each result beside its reference (a ceiling: the fastest anything")
        .append(" could do the same work on this machine, or a peer system), measured in the")
        .append(" same run. ratio &gt; 1 means better than the reference; a ceiling is rarely")
        .append(" beaten, so a ratio reads as the fraction of the ceiling reached.</p>\n")
        .append("<p class=\"legend\"><svg width=\"14\" height=\"10\"><rect class=\"v\"")
        .append(" width=\"14\" height=\"10\"/></svg> result <svg width=\"14\" height=\"10\">")
        .append("<rect class=\"r\" x=\"0.5\" y=\"0.5\" width=\"13\" height=\"9\"/></svg>")
        .append(" reference</p>\n");
    for (BenchReport r : reports) {
      section(sb, r);
    }
    sb.append("</body></html>\n");
    return sb.toString();
  }

  /** Writes {@link #write} to {@code file} (UTF-8), creating parent directories. */
  public static void write(Path file, String title, List<BenchReport> reports) throws IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Files.writeString(file, write(title, reports), StandardCharsets.UTF_8);
  }

  private static void section(StringBuilder sb, BenchReport report) {
    sb.append("<section>\n<h2>suite: ").append(esc(report.suite())).append("</h2>\n");
    List<BenchResult> referenced = new ArrayList<>();
    for (BenchResult r : report.results()) {
      if (r.hasReference()) {
        referenced.add(r);
      }
    }
    if (!referenced.isEmpty()) {
      sb.append("<h3>Each result beside its reference</h3>\n");
      bars(sb, referenced);
    }
    Map<String, Map<String, BenchResult>> groups = percentileGroups(report);
    if (!groups.isEmpty()) {
      sb.append("<h3>Latency percentiles</h3>\n<div class=\"charts\">\n");
      for (Map.Entry<String, Map<String, BenchResult>> g : groups.entrySet()) {
        percentileChart(sb, g.getKey(), g.getValue(), groups);
      }
      sb.append("</div>\n");
    }
    sb.append("<h3>All results</h3>\n");
    table(sb, report);
    sb.append("</section>\n");
  }

  // ---------------------------------------------------------------- bars

  private static final int WIDTH = 1000;
  private static final int LABEL = 400; // the name column
  private static final int BAR = 420; // the longest bar
  private static final int ROW = 44;

  private static void bars(StringBuilder sb, List<BenchResult> rows) {
    int h = ROW * rows.size() + 4;
    sb.append("<svg width=\"")
        .append(WIDTH)
        .append("\" height=\"")
        .append(h)
        .append("\" viewBox=\"0 0 ")
        .append(WIDTH)
        .append(' ')
        .append(h)
        .append("\" role=\"img\">\n");
    int y = 2;
    for (BenchResult r : rows) {
      double max = Math.max(pos(r.value()), pos(r.referenceValue()));
      sb.append("<g>");
      text(sb, 0, y + 15, null, r.name());
      text(sb, 0, y + 31, "small", "vs " + r.reference());
      bar(sb, "v", y + 4, r.value(), max, r.unit(), r.name());
      bar(sb, "r", y + 22, r.referenceValue(), max, r.unit(), r.reference());
      text(sb, LABEL + BAR + 110, y + 25, null, "ratio " + ratio(r.ratio()));
      sb.append("</g>\n");
      y += ROW;
    }
    sb.append("</svg>\n");
  }

  private static void bar(
      StringBuilder sb, String cls, int y, double value, double max, String unit, String name) {
    double w = max > 0 ? Math.max(1, BAR * pos(value) / max) : 1;
    sb.append("<rect class=\"")
        .append(cls)
        .append("\" x=\"")
        .append(LABEL)
        .append("\" y=\"")
        .append(y)
        .append("\" width=\"")
        .append(num(w))
        .append("\" height=\"14\"><title>")
        .append(esc(name + ": " + BenchReport.formatValue(value) + " " + unit))
        .append("</title></rect>");
    text(
        sb,
        LABEL + (int) Math.ceil(w) + 6,
        y + 11,
        "small",
        BenchReport.formatValue(value) + " " + unit);
  }

  // ---------------------------------------------------------------- percentiles

  /** Percentile results by prefix ({@code shm.read.8B} -> p50, p99, ...), in report order. */
  private static Map<String, Map<String, BenchResult>> percentileGroups(BenchReport report) {
    Map<String, Map<String, BenchResult>> groups = new LinkedHashMap<>();
    for (BenchResult r : report.results()) {
      Matcher m = PERCENTILE.matcher(r.name());
      if (m.matches() && r.better() == Better.LOWER) {
        groups.computeIfAbsent(m.group(1), k -> new LinkedHashMap<>()).put(m.group(2), r);
      }
    }
    groups.values().removeIf(g -> g.size() < 2); // a lone p50 is no distribution
    return groups;
  }

  private static final int CW = 320;
  private static final int CH = 210;
  private static final int PLOT_X = 52;
  private static final int PLOT_TOP = 28;
  private static final int PLOT_BOTTOM = 180;

  private static void percentileChart(
      StringBuilder sb,
      String prefix,
      Map<String, BenchResult> group,
      Map<String, Map<String, BenchResult>> all) {
    List<String> stats = new ArrayList<>();
    for (String p : PERCENTILES) {
      if (group.containsKey(p)) {
        stats.add(p);
      }
    }
    String unit = group.get(stats.get(0)).unit();
    double lo = Double.POSITIVE_INFINITY;
    double hi = 0;
    for (String p : stats) {
      BenchResult r = group.get(p);
      for (double v : new double[] {r.value(), r.hasReference() ? r.referenceValue() : 0}) {
        if (v > 0 && !Double.isInfinite(v)) {
          lo = Math.min(lo, v);
          hi = Math.max(hi, v);
        }
      }
    }
    if (!(hi > 0)) {
      return;
    }
    // Log scale over whole decades: p99.9 is often 10-100x p50. The bottom decade at least half
    // the smallest value below it, so no bar is a sliver.
    int d0 = (int) Math.floor(Math.log10(lo / 2));
    int d1 = Math.max(d0 + 1, (int) Math.ceil(Math.log10(hi)));
    sb.append("<svg width=\"")
        .append(CW)
        .append("\" height=\"")
        .append(CH)
        .append("\" viewBox=\"0 0 ")
        .append(CW)
        .append(' ')
        .append(CH)
        .append("\" role=\"img\">\n");
    text(sb, 4, 14, null, prefix + " (" + unit + ", log scale)");
    for (int d = d0; d <= d1; d++) {
      double y = yOf(Math.pow(10, d), d0, d1);
      sb.append("<line class=\"grid\" x1=\"")
          .append(PLOT_X)
          .append("\" x2=\"")
          .append(CW - 4)
          .append("\" y1=\"")
          .append(num(y))
          .append("\" y2=\"")
          .append(num(y))
          .append("\"/>");
      text(sb, 2, (int) y + 4, "small", decade(d));
    }
    sb.append("<line class=\"axis\" x1=\"")
        .append(PLOT_X)
        .append("\" x2=\"")
        .append(PLOT_X)
        .append("\" y1=\"")
        .append(PLOT_TOP)
        .append("\" y2=\"")
        .append(PLOT_BOTTOM)
        .append("\"/>\n");
    int slot = (CW - 4 - PLOT_X) / stats.size();
    for (int i = 0; i < stats.size(); i++) {
      BenchResult r = group.get(stats.get(i));
      int x = PLOT_X + i * slot + slot / 2 - 16;
      column(sb, "v", x, r.value(), d0, d1, r.name(), unit);
      if (r.hasReference()) {
        column(sb, "r", x + 17, r.referenceValue(), d0, d1, r.reference(), unit);
      }
      text(sb, x, PLOT_BOTTOM + 14, "small", stats.get(i));
    }
    BenchResult any = group.get(stats.get(0));
    if (any.hasReference()) {
      text(sb, 4, CH - 4, "small", "vs " + any.reference().replaceFirst("\\.p50$", ""));
    }
    sb.append("</svg>\n");
  }

  private static void column(
      StringBuilder sb, String cls, int x, double v, int d0, int d1, String name, String unit) {
    if (!(v > 0) || Double.isInfinite(v)) {
      return;
    }
    double y = yOf(v, d0, d1);
    sb.append("<rect class=\"")
        .append(cls)
        .append("\" x=\"")
        .append(x)
        .append("\" y=\"")
        .append(num(y))
        .append("\" width=\"15\" height=\"")
        .append(num(Math.max(1, PLOT_BOTTOM - y)))
        .append("\"><title>")
        .append(esc(name + ": " + BenchReport.formatValue(v) + " " + unit))
        .append("</title></rect>");
  }

  private static double yOf(double v, int d0, int d1) {
    double f = (Math.log10(v) - d0) / (d1 - d0);
    return PLOT_BOTTOM - f * (PLOT_BOTTOM - PLOT_TOP);
  }

  private static String decade(int d) {
    double v = Math.pow(10, d);
    if (d >= 9) {
      return (long) (v / 1e9) + "G";
    } else if (d >= 6) {
      return (long) (v / 1e6) + "M";
    } else if (d >= 3) {
      return (long) (v / 1e3) + "k";
    } else if (d >= 0) {
      return Long.toString((long) v);
    }
    return String.format(Locale.ROOT, "%." + (-d) + "f", v);
  }

  // ---------------------------------------------------------------- table

  private static void table(StringBuilder sb, BenchReport report) {
    sb.append("<table><tr><th>name</th><th>value</th><th>unit</th><th>reference</th>")
        .append("<th>ref value</th><th>ratio</th></tr>\n");
    for (BenchResult r : report.results()) {
      sb.append("<tr><td>")
          .append(esc(r.name()))
          .append("</td><td class=\"n\">")
          .append(esc(BenchReport.formatValue(r.value())))
          .append("</td><td>")
          .append(esc(r.unit()))
          .append("</td><td>")
          .append(r.hasReference() ? esc(r.reference()) : "-")
          .append("</td><td class=\"n\">")
          .append(r.hasReference() ? esc(BenchReport.formatValue(r.referenceValue())) : "-")
          .append("</td><td class=\"n\">")
          .append(r.hasReference() ? ratio(r.ratio()) : "-")
          .append("</td></tr>\n");
    }
    sb.append("</table>\n");
  }

  // ---------------------------------------------------------------- text

  /** The ratio as the console table prints it. */
  static String ratio(double ratio) {
    return Double.isNaN(ratio) ? "-" : String.format(Locale.ROOT, "%.3f", ratio);
  }

  private static double pos(double v) {
    return v > 0 && !Double.isInfinite(v) ? v : 0;
  }

  private static String num(double v) {
    return String.format(Locale.ROOT, "%.1f", v);
  }

  private static void text(StringBuilder sb, int x, int y, String cls, String s) {
    sb.append("<text x=\"").append(x).append("\" y=\"").append(y).append('"');
    if (cls != null) {
      sb.append(" class=\"").append(cls).append('"');
    }
    sb.append('>').append(esc(s)).append("</text>");
  }

  /**
   * {@code s} as XML/HTML text or attribute content: the five markup characters as references, and
   * control characters XML does not allow dropped.
   */
  static String esc(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 8);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '&' -> sb.append("&amp;");
        case '<' -> sb.append("&lt;");
        case '>' -> sb.append("&gt;");
        case '"' -> sb.append("&quot;");
        case '\'' -> sb.append("&#39;");
        default -> {
          if (c >= 0x20 || c == '\n' || c == '\t') {
            sb.append(c);
          }
        }
      }
    }
    return sb.toString();
  }
}
