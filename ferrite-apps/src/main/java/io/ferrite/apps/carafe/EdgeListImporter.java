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
import java.util.concurrent.atomic.AtomicLong;

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

  /** Files from this size on are parsed by all cores, each a range of lines. */
  static final long PARALLEL_FROM = 32 << 20;

  /** {@link #read} with a read block of {@code block} bytes (tests: lines across blocks). */
  static Csr read(Path file, Options options, CarafeGraph.Progress progress, int block) {
    return read(file, options, progress, block, 0);
  }

  /**
   * {@link #read} with read blocks of {@code block} bytes on {@code threads} threads (0: one for a
   * file under {@link #PARALLEL_FROM}, every core otherwise).
   */
  static Csr read(
      Path file, Options options, CarafeGraph.Progress progress, int block, int threads) {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      long size = ch.size();
      if (threads <= 0) {
        threads = size < PARALLEL_FROM ? 1 : Runtime.getRuntime().availableProcessors();
      }
      Parser[] parts = parse(file, options, ch, size, block, threads, progress);
      // The parts in file order: the first failure in the file is the one reported, with its
      // line number in the whole file (a part counts its own lines).
      long offset = 0;
      int weighted = -1;
      long firstEdgeLine = 0;
      int[] counts = new int[parts.length];
      long m = 0;
      long maxSeen = -1;
      for (int k = 0; k < parts.length; k++) {
        Parser p = parts[k];
        if (p.weighted >= 0 && weighted >= 0 && p.weighted != weighted) {
          throw mixed(file, offset + p.firstEdgeLine, p.weighted == 1, firstEdgeLine, p.firstText);
        }
        if (p.failure != null) {
          // A mix inside a part names the file's first edge, as one parse of the whole would.
          throw p.failure.toException(file, offset, weighted >= 0 ? firstEdgeLine : -1);
        }
        if (p.weighted >= 0 && weighted < 0) {
          weighted = p.weighted;
          firstEdgeLine = offset + p.firstEdgeLine;
        }
        offset += p.line;
        counts[k] = p.m;
        m += p.m;
        maxSeen = Math.max(maxSeen, p.maxSeen);
      }
      if (m == 0) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT, "empty graph: " + file + " has no edges");
      }
      if (m > CsrBuilder.MAX_ENTRIES) {
        throw new FerriteException(
            ErrorCode.INVALID_ARGUMENT,
            file + ": more than " + CsrBuilder.MAX_ENTRIES + " edges (the layout's limit)");
      }
      CsrBuilder.Part[] edges = new CsrBuilder.Part[parts.length];
      float[] weights = weighted == 1 ? new float[(int) m] : null;
      int at = 0;
      for (int k = 0; k < parts.length; k++) {
        Parser p = parts[k];
        edges[k] = new CsrBuilder.Part(p.srcInt, p.dstInt, p.srcLong, p.dstLong, p.m);
        if (weights != null && counts[k] > 0) { // a part of comments only has no weights
          System.arraycopy(parts[k].weights, 0, weights, at, counts[k]);
        }
        at += counts[k];
        parts[k] = null;
      }
      return CsrBuilder.fromParts(edges, weights, maxSeen, options.undirected(), progress);
    } catch (NoSuchFileException e) {
      throw new FerriteException(ErrorCode.NOT_FOUND, "no such file: " + file, e);
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + file, e);
    }
  }

  /**
   * Parses {@code [0, size)} in {@code threads} ranges that start after a newline: the caller
   * parses the first and reports progress (bytes read by all), named threads the others.
   */
  private static Parser[] parse(
      Path file,
      Options options,
      FileChannel ch,
      long size,
      int block,
      int threads,
      CarafeGraph.Progress progress)
      throws IOException {
    long[] starts = new long[threads + 1];
    starts[threads] = size;
    for (int k = 1; k < threads; k++) {
      starts[k] = Math.max(starts[k - 1], afterNewline(ch, size * k / threads, size));
    }
    AtomicLong read = new AtomicLong();
    Parser[] parts = new Parser[threads];
    for (int k = 0; k < threads; k++) {
      parts[k] = new Parser(file, options, starts[k], starts[k + 1], block, k == 0, read);
    }
    Thread[] helpers = new Thread[threads - 1];
    for (int k = 1; k < threads; k++) {
      Parser p = parts[k];
      helpers[k - 1] = new Thread(() -> p.run(ch, CarafeGraph.Progress.NONE), "carafe-import-" + k);
      helpers[k - 1].setDaemon(true);
      helpers[k - 1].start();
    }
    parts[0].run(ch, (phase, done, total) -> progress.report(phase, read.get(), size));
    boolean interrupted = false;
    for (Thread t : helpers) {
      while (true) {
        try {
          t.join();
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    for (Parser p : parts) {
      if (p.crash instanceof FerriteException e) {
        throw e;
      }
      if (p.crash != null) {
        throw new FerriteException(ErrorCode.INTERNAL, "parsing " + file + ": " + p.crash, p.crash);
      }
    }
    progress.report("read", size, size);
    return parts;
  }

  /** The offset after the first newline at or after {@code from} (or {@code size}). */
  private static long afterNewline(FileChannel ch, long from, long size) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(64 << 10);
    long at = from;
    while (at < size) {
      b.clear();
      int r = ch.read(b, at);
      if (r <= 0) {
        return size;
      }
      for (int i = 0; i < r; i++) {
        if (b.get(i) == '\n') {
          return at + i + 1;
        }
      }
      at += r;
    }
    return size;
  }

  private static FerriteException mixed(
      Path file, long line, boolean hasWeight, long firstEdgeLine, String text) {
    return new FerriteException(
        ErrorCode.INVALID_ARGUMENT,
        file + ": line " + line + ": " + mixedWhat(hasWeight, firstEdgeLine) + ": '" + text + "'");
  }

  private static String mixedWhat(boolean hasWeight, long firstEdgeLine) {
    return (hasWeight ? "a weight, but line " : "no weight, but line ")
        + firstEdgeLine
        + (hasWeight ? " has none" : " has one")
        + " (expected: every edge weighted or none)";
  }

  /**
   * A malformed line, its number (and that of the line it disagrees with, if any) counted from its
   * part's start until the part's place in the file is known.
   */
  private static final class BadLine extends RuntimeException {
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

  /**
   * One range of the file's lines and its parse state: the edges so far, in external ids; lines
   * counted from the range's start.
   */
  private static final class Parser {
    final Path file;
    final Options options;
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

    Parser(
        Path file,
        Options options,
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

    private BadLine bad(long lineNo, String what, int from, int to) {
      return new BadLine(lineNo, what, -1, false, snippet(from, to));
    }

    private String snippet(int from, int to) {
      int n = Math.max(0, Math.min(to - from, SNIPPET));
      return new String(buf, from, n, StandardCharsets.ISO_8859_1)
          + (to - from > SNIPPET ? "..." : "");
    }
  }

  private static final float[] POW10 = {
    1f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f
  };
}
