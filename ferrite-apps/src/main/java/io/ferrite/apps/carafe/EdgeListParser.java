package io.ferrite.apps.carafe;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One range of the file's lines and its parse state: the edges so far, in external ids; lines
 * counted from the range's start.
 *
 * <p>{@link EdgeListImporter} runs one per range (per thread) and puts the parts together; the line
 * syntax is the one its Javadoc gives.
 */
final class EdgeListParser {
  /** Characters of a bad line quoted in its error. */
  static final int SNIPPET = 120;

  /** A line longer than this is refused (the read buffer grows to hold one line up to it). */
  static final int MAX_LINE = 64 << 20;

  final Path file;
  final EdgeListImporter.Options options;
  final long start;
  final long end;
  final boolean first;
  final AtomicLong readBytes;

  /** Ids while every one fits an int (SNAP's do): 8 bytes per edge. */
  int[] srcInt;

  int[] dstInt;

  /** Ids once one does not: 16 bytes per edge (then the int arrays are null). */
  long[] srcLong;

  long[] dstLong;
  float[] weights;
  int m;
  long maxSeen = -1;

  /** 1 weighted, 0 unweighted, -1 not known yet (no edge line so far). */
  int weighted = -1;

  long firstEdgeLine;
  String firstText = "";
  long line;
  byte[] buf;

  /** The malformed line that stopped the parse, or null. */
  BadLine failure;

  /** Anything else that stopped it (an IOException, an OutOfMemoryError), or null. */
  Throwable crash;

  EdgeListParser(
      Path file,
      EdgeListImporter.Options options,
      long start,
      long end,
      int block,
      boolean first,
      AtomicLong readBytes) {
    this.buf = new byte[block];
    this.file = file;
    this.options = options;
    this.start = start;
    this.end = end;
    this.first = first;
    this.readBytes = readBytes;
    // About 12 bytes per line in SNAP files: a first guess the header may replace.
    int guess = (int) Math.min(CsrBuilder.MAX_ENTRIES, Math.max(1024, (end - start) / 12));
    srcInt = new int[guess];
    dstInt = new int[guess];
  }

  int capacity() {
    return srcLong != null ? srcLong.length : srcInt.length;
  }

  /** An id above Integer.MAX_VALUE: from now on this part keeps longs. */
  private void widen() {
    srcLong = new long[srcInt.length];
    dstLong = new long[srcInt.length];
    for (int i = 0; i < m; i++) {
      srcLong[i] = srcInt[i];
      dstLong[i] = dstInt[i];
    }
    srcInt = null;
    dstInt = null;
  }

  /** Parses the range; a failure is kept in {@link #failure} or {@link #crash}. */
  void run(FileChannel ch, CarafeGraph.Progress progress) {
    try {
      parse(ch, progress);
    } catch (BadLine e) {
      failure = e;
    } catch (Throwable t) {
      crash = t;
    }
  }

  private void parse(FileChannel ch, CarafeGraph.Progress progress) throws IOException {
    int len = 0; // valid bytes in buf
    long at = start; // the next byte to read
    boolean eof = false;
    while (true) {
      if (!eof) {
        if (len == buf.length) {
          if (buf.length >= MAX_LINE) {
            throw bad(line + 1, "line longer than " + MAX_LINE + " bytes", 0, SNIPPET);
          }
          buf = Arrays.copyOf(buf, Math.min(MAX_LINE, 2 * buf.length));
        }
        int want = (int) Math.min(buf.length - len, end - at);
        int r = want == 0 ? -1 : ch.read(ByteBuffer.wrap(buf, len, want), at);
        if (r < 0) {
          eof = true;
        } else {
          len += r;
          at += r;
          readBytes.addAndGet(r);
          progress.report("read", at - start, end - start);
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
      if (weighted < 0 && first) {
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
      firstText = snippet(from, to);
      if (weighted == 1) {
        weights = new float[capacity()];
      }
    } else if (weighted != hasWeight) {
      throw new BadLine(line, null, firstEdgeLine, hasWeight == 1, snippet(from, to));
    }
    if (srcLong == null && (s > Integer.MAX_VALUE || d > Integer.MAX_VALUE)) {
      widen();
    }
    if (m == capacity()) {
      grow();
    }
    if (srcLong == null) {
      srcInt[m] = (int) s;
      dstInt[m] = (int) d;
    } else {
      srcLong[m] = s;
      dstLong[m] = d;
    }
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
    int cap = (int) Math.min(CsrBuilder.MAX_ENTRIES, capacity() + (capacity() >> 1) + 16);
    if (srcLong == null) {
      srcInt = Arrays.copyOf(srcInt, cap);
      dstInt = Arrays.copyOf(dstInt, cap);
    } else {
      srcLong = Arrays.copyOf(srcLong, cap);
      dstLong = Arrays.copyOf(dstLong, cap);
    }
    if (weights != null) {
      weights = Arrays.copyOf(weights, cap);
    }
  }

  /** SNAP's "# Nodes: N Edges: M": M presizes the arrays. Rare (comments), so a String is fine. */
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
      srcInt = new int[(int) edges];
      dstInt = new int[(int) edges];
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
          line, "id " + v + " above the declared range (maxId " + options.maxId() + ")", from, to);
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
   * A weight: {@code digits[.digits]} with at most 7 significant digits and 10 decimals is exact as
   * a float quotient ({@code m < 2^24} and {@code 10^k <= 10^10} are exact floats, and one float
   * division rounds correctly, so this equals {@link Float#parseFloat}); anything else goes through
   * {@link Float#parseFloat} on a String (rare: EdgeListWriter writes integral weights as integers
   * and others as {@link Float#toString}, mostly short).
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

  private BadLine bad(long lineNo, String what, int from, int to) {
    return new BadLine(lineNo, what, -1, false, snippet(from, to));
  }

  private String snippet(int from, int to) {
    int n = Math.max(0, Math.min(to - from, SNIPPET));
    return new String(buf, from, n, StandardCharsets.ISO_8859_1)
        + (to - from > SNIPPET ? "..." : "");
  }

  static String mixedWhat(boolean hasWeight, long firstEdgeLine) {
    return (hasWeight ? "a weight, but line " : "no weight, but line ")
        + firstEdgeLine
        + (hasWeight ? " has none" : " has one")
        + " (expected: every edge weighted or none)";
  }

  /**
   * A malformed line, its number (and that of the line it disagrees with, if any) counted from its
   * part's start until the part's place in the file is known.
   */
  static final class BadLine extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final long line;
    final String what; // null: a weighted/unweighted mix, against refLine
    final long refLine;
    final boolean hasWeight;
    final String text;

    BadLine(long line, String what, long refLine, boolean hasWeight, String text) {
      super(what, null, false, false);
      this.line = line;
      this.what = what;
      this.refLine = refLine;
      this.hasWeight = hasWeight;
      this.text = text;
    }

    /** The exception for the whole file; {@code fileFirstEdge}: its first edge's line, or -1. */
    FerriteException toException(Path file, long offset, long fileFirstEdge) {
      String problem =
          what != null
              ? what
              : mixedWhat(hasWeight, fileFirstEdge >= 0 ? fileFirstEdge : offset + refLine);
      return new FerriteException(
          ErrorCode.INVALID_ARGUMENT,
          file + ": line " + (offset + line) + ": " + problem + ": '" + text + "'");
    }
  }

  private static final float[] POW10 = {
    1f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f
  };
}
