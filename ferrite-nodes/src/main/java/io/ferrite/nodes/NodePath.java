package io.ferrite.nodes;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Path names of the namespace: absolute, normalised, real names (never hashes). A valid path is
 * {@code /} or {@code /c1/c2/...} where each component is 1 to {@value #MAX_COMPONENT_BYTES} bytes
 * of UTF-8, not {@code .} or {@code ..}, without {@code /} or NUL; the whole path is at most
 * {@value #MAX_PATH_BYTES} bytes. Nothing is silently normalised: {@code /a//b}, {@code /a/./b},
 * {@code /a/} and {@code a/b} are rejected, so one node has exactly one spelling.
 */
public final class NodePath {
  public static final int MAX_COMPONENT_BYTES = 255;
  public static final int MAX_PATH_BYTES = 4096;
  public static final int MAX_DEPTH = 256;

  private NodePath() {}

  /** The components of {@code path}; empty for the root. */
  public static List<String> parse(String path) {
    if (path == null || path.isEmpty()) {
      throw invalid(path, "empty path");
    }
    if (path.charAt(0) != '/') {
      throw invalid(path, "relative path (expected: absolute, starting with /)");
    }
    if (path.indexOf('\0') >= 0) {
      throw invalid(path, "contains a NUL character");
    }
    int bytes = path.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > MAX_PATH_BYTES) {
      throw invalid(path, bytes + " bytes long (expected: <= " + MAX_PATH_BYTES + ")");
    }
    List<String> out = new ArrayList<>();
    if (path.length() == 1) {
      return out;
    }
    int start = 1;
    while (true) {
      int slash = path.indexOf('/', start);
      String c = slash < 0 ? path.substring(start) : path.substring(start, slash);
      if (c.isEmpty()) {
        throw invalid(path, slash < 0 ? "trailing /" : "empty component (//)");
      }
      if (c.equals(".") || c.equals("..")) {
        throw invalid(path, "component '" + c + "' (expected: a normalised path)");
      }
      int cb = c.getBytes(StandardCharsets.UTF_8).length;
      if (cb > MAX_COMPONENT_BYTES) {
        throw invalid(
            path, "component of " + cb + " bytes (expected: <= " + MAX_COMPONENT_BYTES + ")");
      }
      out.add(c);
      if (out.size() > MAX_DEPTH) {
        throw invalid(path, "deeper than " + MAX_DEPTH + " components");
      }
      if (slash < 0) {
        return out;
      }
      start = slash + 1;
    }
  }

  /** Checks {@code path}; returns it. */
  public static String check(String path) {
    parse(path);
    return path;
  }

  /** The parent path of a valid non-root path. */
  public static String parent(String path) {
    int i = path.lastIndexOf('/');
    return i == 0 ? "/" : path.substring(0, i);
  }

  /** The last component of a valid non-root path. */
  public static String name(String path) {
    return path.substring(path.lastIndexOf('/') + 1);
  }

  /** {@code dir} + "/" + {@code name}. */
  public static String join(String dir, String name) {
    return dir.equals("/") ? "/" + name : dir + "/" + name;
  }

  private static NodesException invalid(String path, String why) {
    String shown =
        path == null ? "null" : path.length() > 80 ? path.substring(0, 77) + "..." : path;
    return new NodesException(
        NodesException.Reason.INVALID_PATH, "path '" + shown.replace("\0", "\\0") + "': " + why);
  }
}
