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

/**
 * Writes a {@link BenchReport} as JSON of exactly this shape (one result per line, so reports can
 * be grepped and diffed):
 *
 * <pre>
 * {
 *   "suite": "fabric",
 *   "results": [
 *     {"name": "shm.read.8B.p50", "value": 151.0, "unit": "ns", "better": "lower",
 *      "reference": "ceiling.memcpy.8B.p50", "reference_value": 40.0, "ratio": 0.2649}
 *   ]
 * }
 * </pre>
 *
 * A result with no reference (a ceiling) has {@code "reference": null, "reference_value": null,
 * "ratio": null}; a value that is not finite is written as {@code null} (JSON has no NaN).
 *
 * <p>Hand-written rather than a JSON library: the shape is fixed and flat, and one escaping routine
 * ({@link #quote}) is less to audit than a dependency. The output is pure ASCII: every character
 * outside printable ASCII is written as a {@code \}{@code uXXXX} escape, so the file is valid in
 * any encoding a reader assumes.
 */
public final class JsonReport {
  private JsonReport() {}

  public static String write(BenchReport report) {
    StringBuilder sb = new StringBuilder(256 + 192 * report.results().size());
    sb.append("{\n  \"suite\": ").append(quote(report.suite())).append(",\n  \"results\": [");
    boolean first = true;
    for (BenchResult r : report.results()) {
      sb.append(first ? "\n" : ",\n");
      first = false;
      sb.append("    {\"name\": ")
          .append(quote(r.name()))
          .append(", \"value\": ")
          .append(number(r.value()))
          .append(", \"unit\": ")
          .append(quote(r.unit()))
          .append(", \"better\": ")
          .append(quote(r.better().label()))
          .append(", \"reference\": ")
          .append(r.reference() == null ? "null" : quote(r.reference()))
          .append(", \"reference_value\": ")
          .append(r.reference() == null ? "null" : number(r.referenceValue()))
          .append(", \"ratio\": ")
          .append(r.reference() == null ? "null" : number(r.ratio()))
          .append('}');
    }
    sb.append(first ? "]\n}\n" : "\n  ]\n}\n");
    return sb.toString();
  }

  /**
   * The report {@code json} holds, as {@link #write} writes it (any JSON of that shape: member
   * order and white space are free; {@code null} numbers read as NaN). For pages of figures
   * measured earlier ({@link HtmlReport}).
   *
   * @throws IllegalArgumentException naming the offset and what was expected, if it is not JSON of
   *     that shape
   */
  public static BenchReport read(String json) {
    Parser p = new Parser(json);
    Object root = p.value();
    p.end();
    Map<?, ?> top = p.as(root, Map.class, "the report object");
    BenchReport report = new BenchReport(p.as(top.get("suite"), String.class, "\"suite\""));
    for (Object o : p.as(top.get("results"), List.class, "\"results\"")) {
      Map<?, ?> r = p.as(o, Map.class, "a result object");
      String name = p.as(r.get("name"), String.class, "\"name\"");
      String better = p.as(r.get("better"), String.class, "\"better\" of " + name);
      Better b;
      try {
        b = Better.valueOf(better.toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "\"better\" of " + name + ": '" + better + "' (expected: higher or lower)", e);
      }
      report.add(
          new BenchResult(
              name,
              p.number(r.get("value")),
              p.as(r.get("unit"), String.class, "\"unit\" of " + name),
              b,
              r.get("reference") == null
                  ? null
                  : p.as(r.get("reference"), String.class, "\"reference\" of " + name),
              p.number(r.get("reference_value")),
              p.number(r.get("ratio"))));
    }
    return report;
  }

  /** Reads {@link #read} from {@code file} (UTF-8). */
  public static BenchReport read(Path file) throws IOException {
    try {
      return read(Files.readString(file, StandardCharsets.UTF_8));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(file + ": " + e.getMessage(), e);
    }
  }

  /** JSON to maps, lists, strings, doubles, booleans and null: the little a report needs. */
  private static final class Parser {
    private final String s;
    private int i;

    Parser(String s) {
      this.s = s;
    }

    private IllegalArgumentException error(String expected) {
      return new IllegalArgumentException(
          "not a bench report: at offset " + i + " (expected: " + expected + ")");
    }

    <T> T as(Object o, Class<T> type, String what) {
      if (!type.isInstance(o)) {
        throw new IllegalArgumentException(
            "not a bench report: "
                + what
                + " is "
                + o
                + " (expected: a "
                + type.getSimpleName()
                + ")");
      }
      return type.cast(o);
    }

    double number(Object o) {
      return o == null ? Double.NaN : as(o, Double.class, "a number");
    }

    private void ws() {
      while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
        i++;
      }
    }

    void end() {
      ws();
      if (i != s.length()) {
        throw error("the end");
      }
    }

    Object value() {
      ws();
      if (i >= s.length()) {
        throw error("a value");
      }
      char c = s.charAt(i);
      switch (c) {
        case '{' -> {
          i++;
          Map<String, Object> m = new LinkedHashMap<>();
          ws();
          if (peek('}')) {
            return m;
          }
          do {
            ws();
            if (i >= s.length() || s.charAt(i) != '"') {
              throw error("a member name");
            }
            String k = string();
            ws();
            expect(':');
            m.put(k, value());
            ws();
          } while (peek(','));
          expect('}');
          return m;
        }
        case '[' -> {
          i++;
          List<Object> l = new ArrayList<>();
          ws();
          if (peek(']')) {
            return l;
          }
          do {
            l.add(value());
            ws();
          } while (peek(','));
          expect(']');
          return l;
        }
        case '"' -> {
          return string();
        }
        default -> {
          for (String lit : new String[] {"null", "true", "false"}) {
            if (s.startsWith(lit, i)) {
              i += lit.length();
              return lit.equals("null") ? null : Boolean.valueOf(lit);
            }
          }
          int start = i;
          while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
            i++;
          }
          try {
            return Double.valueOf(s.substring(start, i));
          } catch (NumberFormatException e) {
            i = start;
            throw error("a value");
          }
        }
      }
    }

    private boolean peek(char c) {
      if (i < s.length() && s.charAt(i) == c) {
        i++;
        return true;
      }
      return false;
    }

    private void expect(char c) {
      if (!peek(c)) {
        throw error("'" + c + "'");
      }
    }

    private String string() {
      i++; // the opening quote
      StringBuilder sb = new StringBuilder();
      while (i < s.length()) {
        char c = s.charAt(i++);
        if (c == '"') {
          return sb.toString();
        }
        if (c != '\\') {
          sb.append(c);
          continue;
        }
        if (i >= s.length()) {
          break;
        }
        char e = s.charAt(i++);
        switch (e) {
          case 'n' -> sb.append('\n');
          case 'r' -> sb.append('\r');
          case 't' -> sb.append('\t');
          case 'b' -> sb.append('\b');
          case 'f' -> sb.append('\f');
          case 'u' -> {
            if (i + 4 > s.length()) {
              throw error("four hex digits");
            }
            try {
              sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
            } catch (NumberFormatException ex) {
              throw error("four hex digits");
            }
            i += 4;
          }
          default -> sb.append(e); // \" \\ \/
        }
      }
      throw error("the end of a string");
    }
  }

  /** A JSON number, or {@code null} for NaN and infinities. */
  static String number(double v) {
    if (Double.isNaN(v) || Double.isInfinite(v)) {
      return "null";
    }
    if (v == Math.rint(v) && Math.abs(v) < 1e15) {
      // Integral values without an exponent: 1234.0, not 1.234E3.
      return (long) v + ".0";
    }
    // Double.toString yields "1.0E-5" style for small/large values: valid JSON numbers.
    return Double.toString(v);
  }

  /** {@code s} as a JSON string literal, ASCII only. */
  public static String quote(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 2);
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        case '\b' -> sb.append("\\b");
        case '\f' -> sb.append("\\f");
        default -> {
          if (c < 0x20 || c > 0x7e) {
            sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    return sb.append('"').toString();
  }
}
