package io.ferrite.apps.carafe;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Writes a {@link Csr} as a SNAP edge list that {@link EdgeListImporter} reads back as the same
 * {@link Csr}: a {@code # Nodes: N Edges: M} header, then one {@code src dst} line per edge in
 * external ids, with a weight column only if the graph is weighted (an integral weight as an
 * integer, any other as {@link Float#toString}, which parses back to the same float).
 *
 * <p>A directed graph is written entry by entry, grouped by source in stored order. An undirected
 * graph is written once per edge: vertex u's entries u &rarr; v with u &lt; v, and every second of
 * its self-loop entries (a self-loop is stored twice). Imported again with {@code undirected} it
 * gives the same adjacency multiset per vertex, and the very same {@link Csr} when the graph was
 * built from edges ordered by their smaller end (as {@link RmatGenerator} builds them).
 *
 * <p>Cost: bytes into a 1 MiB buffer, digits by hand; no String per line except for a weight that
 * is not integral.
 */
public final class EdgeListWriter {
  private EdgeListWriter() {}

  private static final int BUFFER = 1 << 20;

  /** Writes {@code csr} to {@code file} (replacing it). Progress phase {@code write} (entries). */
  public static void write(Csr csr, Path file, CarafeGraph.Progress progress) {
    long lines = lines(csr);
    try (OutputStream out = Files.newOutputStream(file)) {
      Out o = new Out(out);
      o.ascii("# Carafe graph: " + (csr.undirected() ? "undirected" : "directed"));
      o.ascii(
          csr.weights() != null
              ? ", weighted\n# FromNodeId\tToNodeId\tWeight\n"
              : "\n# FromNodeId\tToNodeId\n");
      o.ascii("# Nodes: " + csr.vertices() + " Edges: " + lines + "\n");
      long[] ext = csr.externalIds();
      long[] first = csr.firstEdge();
      int[] t = csr.targets();
      float[] w = csr.weights();
      int n = csr.vertices();
      long m = csr.edges();
      long step = 1 << 22;
      long nextReport = step;
      for (int u = 0; u < n; u++) {
        boolean loopOdd = false;
        for (int e = (int) first[u]; e < first[u + 1]; e++) {
          int v = t[e];
          if (csr.undirected()) {
            if (v < u) {
              continue;
            }
            if (v == u) {
              loopOdd = !loopOdd;
              if (!loopOdd) {
                continue;
              }
            }
          }
          o.number(ext[u]);
          o.put((byte) '\t');
          o.number(ext[v]);
          if (w != null) {
            o.put((byte) '\t');
            o.weight(w[e]);
          }
          o.put((byte) '\n');
        }
        if (first[u + 1] >= nextReport) {
          progress.report("write", first[u + 1], m);
          nextReport = first[u + 1] + step;
        }
      }
      o.flush();
      progress.report("write", m, m);
    } catch (IOException e) {
      throw new UncheckedIOException("writing " + file, e);
    }
  }

  /** The edge lines {@link #write} writes for {@code csr}. */
  public static long lines(Csr csr) {
    if (!csr.undirected()) {
      return csr.edges();
    }
    long lines = 0;
    for (int u = 0; u < csr.vertices(); u++) {
      long loops = 0;
      for (long e = csr.firstEdge()[u]; e < csr.firstEdge()[u + 1]; e++) {
        int v = csr.targets()[(int) e];
        if (v > u) {
          lines++;
        } else if (v == u) {
          loops++;
        }
      }
      lines += (loops + 1) / 2;
    }
    return lines;
  }

  /** A byte buffer in front of the stream. */
  private static final class Out {
    private final OutputStream out;
    private final byte[] buf = new byte[BUFFER];
    private final byte[] digits = new byte[20];
    private int len;

    Out(OutputStream out) {
      this.out = out;
    }

    void put(byte b) throws IOException {
      if (len == buf.length) {
        flush();
      }
      buf[len++] = b;
    }

    void ascii(String s) throws IOException {
      for (byte b : s.getBytes(StandardCharsets.US_ASCII)) {
        put(b);
      }
    }

    /** A non-negative long in decimal. */
    void number(long v) throws IOException {
      int k = digits.length;
      do {
        digits[--k] = (byte) ('0' + v % 10);
        v /= 10;
      } while (v != 0);
      if (len + digits.length > buf.length) {
        flush();
      }
      System.arraycopy(digits, k, buf, len, digits.length - k);
      len += digits.length - k;
    }

    void weight(float w) throws IOException {
      if (w == (long) w && w < (1 << 24) && w >= 0) {
        number((long) w);
      } else {
        ascii(Float.toString(w));
      }
    }

    void flush() throws IOException {
      out.write(buf, 0, len);
      len = 0;
    }
  }
}
