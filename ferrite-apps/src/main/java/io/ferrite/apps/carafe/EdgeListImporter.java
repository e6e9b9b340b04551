package io.ferrite.apps.carafe;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.memory.RStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;

/**
 * Reads a graph from an edge-list text file in SNAP's format into a {@link Csr}.
 *
 * <pre>
 * # Directed graph (each unordered pair of nodes is saved once): soc-LiveJournal1.txt
 * # Nodes: 4847571 Edges: 68993773
 * # FromNodeId	ToNodeId
 * 0	1
 * 0	2	0.5        (an optional weight)
 * </pre>
 *
 * <ul>
 *   <li>{@code #} starts a comment line; blank lines are skipped; tokens are separated by spaces or
 *       tabs; a line ends with {@code \n} or {@code \r\n}; the last line needs no newline.
 *   <li>An edge line is {@code src dst} or {@code src dst weight}: ids are non-negative decimal
 *       longs, the weight a finite non-negative float ({@link Float#parseFloat} syntax). The graph
 *       is weighted iff its first edge line has a weight, and then every line must have one.
 *   <li>Vertices are the ids that appear; internal ids are given in ascending external-id order.
 *       Duplicate edges and self-loops are kept. {@link Options#undirected} stores every edge in
 *       both directions (a self-loop twice): see {@link CsrBuilder}.
 *   <li>SNAP's {@code # Nodes: N Edges: M} header (before the first edge) is a size hint only: M
 *       presizes the edge arrays (no regrowth on a well-formed file). It is not checked, because
 *       SNAP's counts do not always match the lines (some undirected files count each pair once and
 *       list it twice), and N is a count, not an id range. {@link Options#maxId} is the check.
 * </ul>
 *
 * <p>Cost: the bytes are parsed in place in 4 MiB blocks (no String per line, no regex; a String
 * only for comment lines and for a weight that is not a short decimal), into primitive arrays of 16
 * bytes per edge (+4 if weighted); the build then sorts by source with a counting sort ({@link
 * CsrBuilder}). Progress phases: {@code read} (bytes), {@code ids}, {@code sort} (entries).
 */
public final class EdgeListImporter {
  private EdgeListImporter() {}

  /**
   * How to read a file.
   *
   * @param undirected store each edge in both directions
   * @param maxId the largest id the file may hold (an id above it is an error), or -1 for no limit
   */
  public record Options(boolean undirected, long maxId) {
    public static final Options DIRECTED = new Options(false, -1);
    public static final Options UNDIRECTED = new Options(true, -1);

    public Options {
      if (maxId < -1) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT, "maxId: " + maxId + " (expected: >= 0, or -1 for none)");
      }
    }
  }

  static final int BLOCK = 4 << 20;

  /** A line longer than this is refused (the read buffer grows to hold one line up to it). */
  static final int MAX_LINE = 64 << 20;

  private static final int SNIPPET = 120;

  /**
   * Reads {@code file}.
   *
   * @throws FerriteException NOT_FOUND if the file does not exist; INVALID_ARGUMENT naming the
   *     file, the line number and the line's text for a malformed line, an id above {@code
   *     options.maxId}, a mix of weighted and unweighted lines; INVALID_ARGUMENT for a file with no
   *     edges ("empty graph: FILE has no edges") or a graph too large for the layout
   */
  public static Csr read(Path file, Options options, CarafeGraph.Progress progress) {
    return read(file, options, progress, BLOCK);
  }

  /**
   * Reads {@code file} and stores it as graph {@code name} ({@link CarafeGraph#create}), after
   * checking that the name is free, so that a clash is found before minutes of parsing. A file that
   * fails to parse leaves nothing in the cluster (the cluster is touched only once it parsed), and
   * a failed store deletes what it made.
   *
   * @throws FerriteException CONFLICT if graph {@code name} exists (either namespace), and as
   *     {@link #read} and {@link CarafeGraph#create} throw
   */
  public static CarafeGraph importGraph(
      RStore store, String name, Path file, Options options, CarafeGraph.Progress progress) {
    for (String ns :
        new String[] {GraphLayout.verticesNamespace(name), GraphLayout.edgesNamespace(name)}) {
      boolean exists;
      try {
        store.joinNamespace(ns);
        exists = true;
      } catch (FerriteException e) {
        if (e.code() != ErrorCode.NOT_FOUND) {
          throw e;
        }
        exists = false;
      }
      if (exists) {
        throw new FerriteException(
            ErrorCode.CONFLICT,
            "graph '"
                + name
                + "' exists (namespace '"
                + ns
                + "'): delete it first ('ferrite graph delete "
                + name
                + "') or choose another name");
      }
    }
    return CarafeGraph.create(store, name, read(file, options, progress), progress);
  }

  /** {@link #read} with a read block of {@code block} bytes (tests: lines across blocks). */
  static Csr read(Path file, Options options, CarafeGraph.Progress progress, int block) {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      Parser p = new Parser(file, options, ch.size(), block);
      p.parse(ch, progress);
      if (p.m == 0) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT, "empty graph: " + file + " has no edges");
      }
      return CsrBuilder.fromLongIds(
          p.src, p.dst, p.weights, p.m, p.maxSeen, options.undirected(), progress);
    } catch (NoSuchFileException e) {
      throw new FerriteException(ErrorCode.NOT_FOUND, "no such file: " + file, e);
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + file, e);
    }
  }

  /** One file's parse state: the edges so far, in external ids. */
  private static final class Parser {
    final Path file;
    final Options options;
    final long size;
    long[] src;
    long[] dst;
    float[] weights;
    int m;
    long maxSeen = -1;

    /** 1 weighted, 0 unweighted, -1 not known yet (no edge line so far). */
    int weighted = -1;

    long firstEdgeLine;
    long line;
    byte[] buf;

    Parser(Path file, Options options, long size, int block) {
      this.buf = new byte[block];
      this.file = file;
      this.options = options;
      this.size = size;
      // About 12 bytes per line in SNAP files: a first guess the header may replace.
      int guess = (int) Math.min(CsrBuilder.MAX_ENTRIES, Math.max(1024, size / 12));
      src = new long[guess];
      dst = new long[guess];
    }

    void parse(FileChannel ch, CarafeGraph.Progress progress) throws IOException {
      int len = 0; // valid bytes in buf
      long read = 0;
      boolean eof = false;
      while (true) {
        if (!eof) {
          if (len == buf.length) {
            if (buf.length >= MAX_LINE) {
              throw bad(line + 1, "line longer than " + MAX_LINE + " bytes", 0, SNIPPET);
            }
            buf = Arrays.copyOf(buf, Math.min(MAX_LINE, 2 * buf.length));
          }
          int r = ch.read(ByteBuffer.wrap(buf, len, buf.length - len));
          if (r < 0) {
            eof = true;
          } else {
            len += r;
            read += r;
            progress.report("read", read, size);
          }
        }
        int p = 0;
        while (true) {
          int nl = indexOf(buf, p, len, (byte) '\n');
          if (nl < 0) {
            if (eof && p < len) {
              line++;
              parseLine(p, len);
              p = len;
            }
            break;
          }
          line++;
          parseLine(p, nl);
          p = nl + 1;
        }
        if (eof) {
          return;
        }
        System.arraycopy(buf, p, buf, 0, len - p);
        len -= p;
      }
    }

    private static int indexOf(byte[] b, int from, int to, byte c) {
      for (int i = from; i < to; i++) {
        if (b[i] == c) {
          return i;
        }
      }
      return -1;
    }

    /** Parses {@code buf[from, to)}, one line without its {@code \n}. */
    private void parseLine(int from, int to) {
      byte[] b = buf;
      if (to > from && b[to - 1] == '\r') {
        to--;
      }
      int i = skipSpace(b, from, to);
      if (i == to) {
        return;
      }
      if (b[i] == '#') {
        if (weighted < 0) {
          header(from, to);
        }
        return;
      }
      long s = parseId(i, from, to);
      i = skipToken(b, i, to);
      int j = skipSpace(b, i, to);
      if (j == to) {
        throw bad(line, "one token (expected: 'src dst' or 'src dst weight')", from, to);
      }
      long d = parseId(j, from, to);
      i = skipSpace(b, skipToken(b, j, to), to);
      int hasWeight = i < to ? 1 : 0;
      float w = 1f;
      if (hasWeight == 1) {
        int e = skipToken(b, i, to);
        w = parseWeight(i, e, from, to);
        if (skipSpace(b, e, to) != to) {
          throw bad(line, "extra tokens (expected: 'src dst' or 'src dst weight')", from, to);
        }
      }
      if (weighted < 0) {
        weighted = hasWeight;
        firstEdgeLine = line;
        if (weighted == 1) {
          weights = new float[src.length];
        }
      } else if (weighted != hasWeight) {
        throw bad(
            line,
            (hasWeight == 1 ? "a weight, but line " : "no weight, but line ")
                + firstEdgeLine
                + (hasWeight == 1 ? " has none" : " has one")
                + " (expected: every edge weighted or none)",
            from,
            to);
      }
      if (m == src.length) {
        grow();
      }
      src[m] = s;
      dst[m] = d;
      if (weights != null) {
        weights[m] = w;
      }
      m++;
      maxSeen = Math.max(maxSeen, Math.max(s, d));
    }

    private void grow() {
      if (m >= CsrBuilder.MAX_ENTRIES) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            file + ": more than " + CsrBuilder.MAX_ENTRIES + " edges (the layout's limit)");
      }
      int cap = (int) Math.min(CsrBuilder.MAX_ENTRIES, src.length + (src.length >> 1) + 16);
      src = Arrays.copyOf(src, cap);
      dst = Arrays.copyOf(dst, cap);
      if (weights != null) {
        weights = Arrays.copyOf(weights, cap);
      }
    }

    /**
     * SNAP's "# Nodes: N Edges: M": M presizes the arrays. Rare (comments), so a String is fine.
     */
    private void header(int from, int to) {
      String text = new String(buf, from, to - from, StandardCharsets.ISO_8859_1);
      int at = text.indexOf("Edges:");
      if (at < 0 || !text.contains("Nodes:")) {
        return;
      }
      int i = at + "Edges:".length();
      while (i < text.length() && (text.charAt(i) == ' ' || text.charAt(i) == '\t')) {
        i++;
      }
      long edges = 0;
      int digits = 0;
      while (i < text.length() && Character.isDigit(text.charAt(i)) && digits < 12) {
        edges = edges * 10 + (text.charAt(i++) - '0');
        digits++;
      }
      if (digits > 0 && m == 0 && edges > 0 && edges <= CsrBuilder.MAX_ENTRIES) {
        // Before the first edge: the arrays are empty, so replace the guess outright.
        src = new long[(int) edges];
        dst = new long[(int) edges];
      }
    }

    private static int skipSpace(byte[] b, int i, int to) {
      while (i < to && (b[i] == ' ' || b[i] == '\t')) {
        i++;
      }
      return i;
    }

    private static int skipToken(byte[] b, int i, int to) {
      while (i < to && b[i] != ' ' && b[i] != '\t') {
        i++;
      }
      return i;
    }

    private long parseId(int i, int from, int to) {
      byte[] b = buf;
      int end = skipToken(b, i, to);
      if (b[i] == '-' && end > i + 1 && isDigits(b, i + 1, end)) {
        throw bad(line, "negative id", from, to);
      }
      if (!isDigits(b, i, end)) {
        throw bad(line, "not a non-negative integer id", from, to);
      }
      long v = 0;
      for (int k = i; k < end; k++) {
        int digit = b[k] - '0';
        if (v > (Long.MAX_VALUE - digit) / 10) {
          throw bad(line, "id above " + Long.MAX_VALUE, from, to);
        }
        v = v * 10 + digit;
      }
      if (options.maxId() >= 0 && v > options.maxId()) {
        throw bad(
            line,
            "id " + v + " above the declared range (maxId " + options.maxId() + ")",
            from,
            to);
      }
      return v;
    }

    private static boolean isDigits(byte[] b, int from, int to) {
      if (from == to) {
        return false;
      }
      for (int k = from; k < to; k++) {
        if (b[k] < '0' || b[k] > '9') {
          return false;
        }
      }
      return true;
    }

    /**
     * A weight: {@code digits[.digits]} with at most 7 significant digits and 10 decimals is exact
     * as a float quotient ({@code m < 2^24} and {@code 10^k <= 10^10} are exact floats, and one
     * float division rounds correctly, so this equals {@link Float#parseFloat}); anything else goes
     * through {@link Float#parseFloat} on a String (rare: EdgeListWriter writes integral weights as
     * integers and others as {@link Float#toString}, mostly short).
     */
    private float parseWeight(int i, int end, int from, int to) {
      byte[] b = buf;
      long mant = 0;
      int scale = -1;
      boolean fast = true;
      int digits = 0;
      for (int k = i; k < end && fast; k++) {
        byte c = b[k];
        if (c >= '0' && c <= '9') {
          mant = mant * 10 + (c - '0');
          digits++;
          if (scale >= 0) {
            scale++;
          }
          fast = mant < (1 << 24);
        } else if (c == '.' && scale < 0) {
          scale = 0;
        } else {
          fast = false;
        }
      }
      float w;
      if (fast && digits > 0 && scale <= 10) {
        w = scale <= 0 ? (float) mant : (float) mant / POW10[scale];
      } else {
        try {
          w = Float.parseFloat(new String(b, i, end - i, StandardCharsets.ISO_8859_1));
        } catch (NumberFormatException e) {
          throw bad(line, "weight is not a number", from, to);
        }
      }
      if (Float.isNaN(w)) {
        throw bad(line, "weight is NaN", from, to);
      }
      if (w < 0 || Float.isInfinite(w)) {
        throw bad(line, "weight " + w + " (expected: finite and >= 0)", from, to);
      }
      return w + 0f; // -0 becomes 0: one zero, whatever the file says
    }

    private FerriteException bad(long lineNo, String what, int from, int to) {
      int n = Math.min(to - from, SNIPPET);
      String text = new String(buf, from, Math.max(0, n), StandardCharsets.ISO_8859_1);
      return new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          file
              + ": line "
              + lineNo
              + ": "
              + what
              + ": '"
              + text
              + (to - from > SNIPPET ? "...'" : "'"));
    }
  }

  private static final float[] POW10 = {
    1f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f
  };
}
