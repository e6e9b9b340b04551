package io.ferrite.kernel.proto;

import java.util.Locale;
import java.util.Map;

/**
 * Writes JSON from maps, lists, numbers, strings and booleans (no dependency for the few shapes
 * Ferrite sends: {@code ferrite status --json}, the console's API). Non-finite doubles become
 * {@code null}.
 */
public final class Json {
  private Json() {}

  public static String write(Object value) {
    StringBuilder sb = new StringBuilder(256);
    write(sb, value);
    return sb.toString();
  }

  public static void write(StringBuilder sb, Object v) {
    if (v == null) {
      sb.append("null");
    } else if (v instanceof String s) {
      string(sb, s);
    } else if (v instanceof Double d) {
      sb.append(d.isNaN() || d.isInfinite() ? "null" : number(d));
    } else if (v instanceof Float f) {
      write(sb, f.doubleValue());
    } else if (v instanceof Number || v instanceof Boolean) {
      sb.append(v);
    } else if (v instanceof Map<?, ?> m) {
      sb.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (!first) {
          sb.append(',');
        }
        first = false;
        string(sb, String.valueOf(e.getKey()));
        sb.append(':');
        write(sb, e.getValue());
      }
      sb.append('}');
    } else if (v instanceof Iterable<?> it) {
      sb.append('[');
      boolean first = true;
      for (Object o : it) {
        if (!first) {
          sb.append(',');
        }
        first = false;
        write(sb, o);
      }
      sb.append(']');
    } else if (v instanceof long[] a) {
      sb.append('[');
      for (int i = 0; i < a.length; i++) {
        sb.append(i > 0 ? "," : "").append(a[i]);
      }
      sb.append(']');
    } else if (v instanceof int[] a) {
      sb.append('[');
      for (int i = 0; i < a.length; i++) {
        sb.append(i > 0 ? "," : "").append(a[i]);
      }
      sb.append(']');
    } else {
      string(sb, v.toString());
    }
  }

  private static String number(double d) {
    if (d == Math.rint(d) && Math.abs(d) < 1e15) {
      return Long.toString((long) d);
    }
    return String.format(Locale.ROOT, "%.3f", d);
  }

  /** {@code s} as a JSON string literal, quotes included. */
  public static String quote(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 2);
    string(sb, s);
    return sb.toString();
  }

  /** Appends {@code s} as a JSON string literal. */
  public static void string(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char ch = s.charAt(i);
      switch (ch) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        case '<' -> sb.append("\\u003c"); // never closes a script element the JSON is put in
        default -> {
          if (ch < 0x20 || ch == 0x2028 || ch == 0x2029) {
            sb.append(String.format(Locale.ROOT, "\\u%04x", (int) ch));
          } else {
            sb.append(ch);
          }
        }
      }
    }
    sb.append('"');
  }
}
