package io.ferrite.kernel.ops.console;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A strict little JSON reader for the console's answers: maps, lists, doubles, strings. */
final class MiniJson {
  private final String s;
  private int i;

  private MiniJson(String s) {
    this.s = s;
  }

  static Object parse(String text) {
    MiniJson p = new MiniJson(text);
    Object v = p.value();
    p.ws();
    if (p.i != text.length()) {
      throw p.error("trailing text");
    }
    return v;
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> map(Object v) {
    return (Map<String, Object>) v;
  }

  @SuppressWarnings("unchecked")
  static List<Object> list(Object v) {
    return (List<Object>) v;
  }

  private Object value() {
    ws();
    char c = s.charAt(i);
    switch (c) {
      case '{' -> {
        i++;
        Map<String, Object> m = new LinkedHashMap<>();
        ws();
        if (s.charAt(i) == '}') {
          i++;
          return m;
        }
        while (true) {
          ws();
          String k = string();
          ws();
          expect(':');
          m.put(k, value());
          ws();
          if (s.charAt(i) == ',') {
            i++;
          } else {
            expect('}');
            return m;
          }
        }
      }
      case '[' -> {
        i++;
        List<Object> l = new ArrayList<>();
        ws();
        if (s.charAt(i) == ']') {
          i++;
          return l;
        }
        while (true) {
          l.add(value());
          ws();
          if (s.charAt(i) == ',') {
            i++;
          } else {
            expect(']');
            return l;
          }
        }
      }
      case '"' -> {
        return string();
      }
      default -> {
        if (s.startsWith("true", i)) {
          i += 4;
          return Boolean.TRUE;
        }
        if (s.startsWith("false", i)) {
          i += 5;
          return Boolean.FALSE;
        }
        if (s.startsWith("null", i)) {
          i += 4;
          return null;
        }
        int start = i;
        while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
          i++;
        }
        if (start == i) {
          throw error("unexpected character");
        }
        return Double.parseDouble(s.substring(start, i));
      }
    }
  }

  private String string() {
    expect('"');
    StringBuilder sb = new StringBuilder();
    while (true) {
      char c = s.charAt(i++);
      if (c == '"') {
        return sb.toString();
      }
      if (c == '\\') {
        char e = s.charAt(i++);
        switch (e) {
          case 'n' -> sb.append('\n');
          case 'r' -> sb.append('\r');
          case 't' -> sb.append('\t');
          case 'u' -> {
            sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
            i += 4;
          }
          default -> sb.append(e);
        }
      } else {
        sb.append(c);
      }
    }
  }

  private void expect(char c) {
    if (s.charAt(i) != c) {
      throw error("expected '" + c + "'");
    }
    i++;
  }

  private void ws() {
    while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
      i++;
    }
  }

  private IllegalArgumentException error(String what) {
    return new IllegalArgumentException(what + " at " + i + " in " + s);
  }
}
