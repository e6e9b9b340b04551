package io.ferrite.hadoop;

import io.ferrite.fabric.FerriteException;
import io.ferrite.nodes.NodeWriter;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Locale;
import org.apache.hadoop.fs.FSExceptionMessages;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.fs.Syncable;

/**
 * A Hadoop output stream over a {@link NodeWriter} that holds the file's write lease: bytes gather
 * into chunks written one-sided to the file's blocks, a few chunks in flight ({@link
 * NodeWriter#outputStream()}).
 *
 * <p>{@link #flush()} and {@link #hflush()} wait for the chunks and publish the size, so a reader
 * that opens the file afterwards sees every byte written so far (HDFS's hflush). {@link #hsync()}
 * does the same and no more: the bytes are in the memory servers' DRAM (or their disk tier), not
 * forced to a disk, so the stream declares {@code hflush} but not {@link StreamCapabilities#HSYNC}.
 * {@link #close()} publishes and gives up the lease (if it fails, the lease is given up and what
 * the last flush published stays); a second close does nothing; a write after close fails.
 */
final class FerriteOutputStream extends OutputStream implements Syncable, StreamCapabilities {
  /** {@code StreamCapabilities.HFLUSH}, whose constant Hadoop deprecated but still probes. */
  static final String HFLUSH = "hflush";

  private final NodeWriter writer;
  private final OutputStream out;
  private final String path;
  private boolean closed;

  FerriteOutputStream(NodeWriter writer, String path) {
    this.writer = writer;
    this.out = writer.outputStream();
    this.path = path;
  }

  private void checkOpen() throws IOException {
    if (closed) {
      throw new IOException(FSExceptionMessages.STREAM_IS_CLOSED + " " + path);
    }
  }

  /** The write's IOException with its Ferrite cause mapped to the Hadoop exception type. */
  private IOException translate(IOException e, String op) {
    return e.getCause() instanceof FerriteException f ? IOErrors.translate(f, op, path) : e;
  }

  @Override
  public synchronized void write(int b) throws IOException {
    checkOpen();
    try {
      out.write(b);
    } catch (IOException e) {
      throw translate(e, "write");
    }
  }

  @Override
  public synchronized void write(byte[] b, int off, int len) throws IOException {
    checkOpen();
    try {
      out.write(b, off, len);
    } catch (IOException e) {
      throw translate(e, "write");
    }
  }

  /** Publishes what was written so far; after close, nothing is buffered and this does nothing. */
  @Override
  public synchronized void flush() throws IOException {
    if (closed) {
      return;
    }
    try {
      out.flush();
    } catch (IOException e) {
      throw translate(e, "flush");
    }
  }

  @Override
  public synchronized void hflush() throws IOException {
    checkOpen();
    flush();
  }

  /** As {@link #hflush()}: visible to new readers, in the memory servers, not forced to disk. */
  @Override
  public synchronized void hsync() throws IOException {
    hflush();
  }

  @Override
  public boolean hasCapability(String capability) {
    return HFLUSH.equals(capability.toLowerCase(Locale.ROOT));
  }

  @Override
  public synchronized void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    try {
      out.close();
    } catch (IOException e) {
      // Give the lease back; what was published before (at the last flush) stays readable.
      try {
        writer.abort();
      } catch (RuntimeException again) {
        e.addSuppressed(again);
      }
      throw translate(e, "close");
    }
  }

  @Override
  public String toString() {
    return "FerriteOutputStream[" + path + "]";
  }
}
