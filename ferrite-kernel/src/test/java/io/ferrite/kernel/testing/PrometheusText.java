package io.ferrite.kernel.testing;

import io.ferrite.kernel.ops.OpsServer;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A parser of the Prometheus text exposition format (version 0.0.4), strict enough for tests: every
 * line is a {@code # HELP name text}, a {@code # TYPE name type}, another comment, a blank line or
 * a sample {@code name{label="value",...} value [timestamp]}, with label values escaped ({@code
 * \\}, {@code \"}, {@code \n}) and help text escaped ({@code \\}, {@code \n}). Anything else fails
 * the parse, naming the line: a malformed exposition fails the test that scraped it.
 */
public final class PrometheusText {
  /** One sample line. */
  public record Sample(String name, Map<String, String> labels, double value) {}

  private final List<Sample> samples = new ArrayList<>();
  private final Map<String, String> types = new LinkedHashMap<>();
  private final Map<String, String> help = new LinkedHashMap<>();

  private PrometheusText() {}

  private static final HttpClient HTTP = HttpClient.newHttpClient();

  /**
   * GETs {@code ops}'s {@code /metrics} and parses it; fails (AssertionError) on anything but 200
   * or when the process serves no metrics.
   */
  public static PrometheusText scrape(OpsServer ops) throws IOException, InterruptedException {
    if (ops == null) {
      throw new AssertionError("metrics endpoint not started (metrics.port)");
    }
    HttpResponse<String> r =
        HTTP.send(
            HttpRequest.newBuilder(ops.url().resolve("/metrics")).build(),
            HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) {
      throw new AssertionError("GET " + ops.url() + "metrics: " + r.statusCode() + " " + r.body());
    }
    return parse(r.body());
  }

  public static PrometheusText parse(String text) {
    PrometheusText p = new PrometheusText();
    int n = 0;
    for (String line : text.split("\n", -1)) {
      n++;
      try {
        p.line(line);
      } catch (RuntimeException e) {
        throw new IllegalArgumentException("line " + n + ": '" + line + "': " + e.getMessage(), e);
      }
    }
    return p;
  }

  private void line(String line) {
    if (line.isBlank()) {
      return;
    }
    if (line.startsWith("#")) {
      String[] parts = line.split(" ", 4);
      if (parts.length >= 3 && parts[1].equals("HELP")) {
        requireName(parts[2]);
        help.put(parts[2], parts.length == 4 ? unescape(parts[3], false) : "");
      } else if (parts.length >= 3 && parts[1].equals("TYPE")) {
        requireName(parts[2]);
        String type = parts.length == 4 ? parts[3] : "";
        if (!List.of("counter", "gauge", "histogram", "summary", "untyped").contains(type)) {
          throw new IllegalArgumentException("unknown type " + type);
        }
        if (types.put(parts[2], type) != null) {
          throw new IllegalArgumentException("second TYPE for " + parts[2]);
        }
      }
      return; // other comments are allowed
    }
    int i = 0;
    while (i < line.length() && line.charAt(i) != '{' && line.charAt(i) != ' ') {
      i++;
    }
    String name = line.substring(0, i);
    requireName(name);
    Map<String, String> labels = new LinkedHashMap<>();
    if (i < line.length() && line.charAt(i) == '{') {
      i++;
      while (line.charAt(i) != '}') {
        int eq = line.indexOf('=', i);
        String label = line.substring(i, eq);
        requireName(label);
        if (line.charAt(eq + 1) != '"') {
          throw new IllegalArgumentException("label value of " + label + " is not quoted");
        }
        StringBuilder v = new StringBuilder();
        int j = eq + 2;
        for (; line.charAt(j) != '"'; j++) {
          char c = line.charAt(j);
          if (c == '\\') {
            char e = line.charAt(++j);
            v.append(
                switch (e) {
                  case '\\' -> '\\';
                  case '"' -> '"';
                  case 'n' -> '\n';
                  default -> throw new IllegalArgumentException("bad escape \\" + e);
                });
          } else {
            v.append(c);
          }
        }
        if (labels.put(label, v.toString()) != null) {
          throw new IllegalArgumentException("label " + label + " twice");
        }
        i = j + 1;
        if (line.charAt(i) == ',') {
          i++;
        }
      }
      i++;
    }
    String[] rest = line.substring(i).trim().split(" ");
    if (rest.length < 1 || rest.length > 2 || rest[0].isEmpty()) {
      throw new IllegalArgumentException("expected: value [timestamp]");
    }
    if (rest.length == 2) {
      Long.parseLong(rest[1]);
    }
    samples.add(new Sample(name, Map.copyOf(labels), value(rest[0])));
  }

  private static double value(String s) {
    return switch (s) {
      case "+Inf" -> Double.POSITIVE_INFINITY;
      case "-Inf" -> Double.NEGATIVE_INFINITY;
      case "NaN" -> Double.NaN;
      default -> Double.parseDouble(s);
    };
  }

  private static void requireName(String name) {
    if (!name.matches("[a-zA-Z_:][a-zA-Z0-9_:]*")) {
      throw new IllegalArgumentException("not a metric or label name: '" + name + "'");
    }
  }

  private static String unescape(String s, boolean quotes) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '\\' && i + 1 < s.length()) {
        char e = s.charAt(++i);
        if (e == 'n') {
          b.append('\n');
        } else if (e == '\\' || (quotes && e == '"')) {
          b.append(e);
        } else {
          throw new IllegalArgumentException("bad escape \\" + e);
        }
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }

  public List<Sample> samples() {
    return List.copyOf(samples);
  }

  /** The TYPE declared for a metric family, or null. */
  public String type(String family) {
    return types.get(family);
  }

  /** The HELP text of a metric family, or null. */
  public String help(String family) {
    return help.get(family);
  }

  /** The samples named {@code name} whose labels include every pair of {@code match}. */
  public List<Sample> find(String name, Map<String, String> match) {
    List<Sample> out = new ArrayList<>();
    for (Sample s : samples) {
      if (s.name().equals(name) && s.labels().entrySet().containsAll(match.entrySet())) {
        out.add(s);
      }
    }
    return out;
  }

  /** The sum of the samples {@link #find} returns (0 if none). */
  public double sum(String name, Map<String, String> match) {
    double t = 0;
    for (Sample s : find(name, match)) {
      t += s.value();
    }
    return t;
  }

  /**
   * The one sample named {@code name} matching {@code match}; fails if there is not exactly one.
   */
  public double value(String name, Map<String, String> match) {
    List<Sample> f = find(name, match);
    if (f.size() != 1) {
      throw new AssertionError(f.size() + " samples " + name + match + " (expected: 1)");
    }
    return f.get(0).value();
  }
}
