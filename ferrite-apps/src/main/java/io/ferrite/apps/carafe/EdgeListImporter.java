package io.ferrite.apps.carafe;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.memory.RStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
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
      EdgeListParser[] parts = parse(file, options, ch, size, block, threads, progress);
      // The parts in file order: the first failure in the file is the one reported, with its
      // line number in the whole file (a part counts its own lines).
      long offset = 0;
      int weighted = -1;
      long firstEdgeLine = 0;
      int[] counts = new int[parts.length];
      long m = 0;
      long maxSeen = -1;
      for (int k = 0; k < parts.length; k++) {
        EdgeListParser p = parts[k];
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
        EdgeListParser p = parts[k];
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
  private static EdgeListParser[] parse(
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
    EdgeListParser[] parts = new EdgeListParser[threads];
    for (int k = 0; k < threads; k++) {
      parts[k] = new EdgeListParser(file, options, starts[k], starts[k + 1], block, k == 0, read);
    }
    Thread[] helpers = new Thread[threads - 1];
    for (int k = 1; k < threads; k++) {
      EdgeListParser p = parts[k];
      helpers[k - 1] = new Thread(() -> p.run(ch, CarafeGraph.Progress.NONE), "carafe-import-" + k);
      helpers[k - 1].setDaemon(true);
      helpers[k - 1].start();
    }
    parts[0].run(ch, (phase, done, total) -> progress.report(phase, read.get(), size));
    Helpers.joinAll(helpers);
    for (EdgeListParser p : parts) {
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
        file
            + ": line "
            + line
            + ": "
            + EdgeListParser.mixedWhat(hasWeight, firstEdgeLine)
            + ": '"
            + text
            + "'");
  }
}
