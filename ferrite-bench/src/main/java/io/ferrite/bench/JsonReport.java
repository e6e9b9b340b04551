package io.ferrite.bench;

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
            sb.append(String.format(java.util.Locale.ROOT, "\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    return sb.append('"').toString();
  }
}
