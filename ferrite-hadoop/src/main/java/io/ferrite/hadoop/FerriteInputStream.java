package io.ferrite.hadoop;

import io.ferrite.fabric.Futures;
import io.ferrite.nodes.NodeReader;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Objects;
import org.apache.hadoop.fs.FSExceptionMessages;
import org.apache.hadoop.fs.FSInputStream;
import org.apache.hadoop.fs.FileSystem;

/**
 * A Hadoop input stream over a {@link NodeReader}: sequential reads go through the reader's {@link
 * NodeReader.SeekableInputStream} (read-ahead of a few chunks, seek within what it holds without a
 * transfer), positioned reads ({@link #read(long, byte[], int, int)}, {@link #readFully(long,
 * byte[], int, int)}) go straight to {@link NodeReader#read} and neither move nor disturb the
 * sequential position, so they are safe from several threads at once.
 *
 * <p>The stream reads the bytes that were published when the file was opened (its size then).
 * Seeking before 0 or past that size fails with {@link EOFException}; reading at the end returns
 * -1; every call but {@link #close} and {@link #getPos} fails with an IOException after close.
 */
final class FerriteInputStream extends FSInputStream {
  private final NodeReader reader;
  private final NodeReader.SeekableInputStream in;
  private final FileSystem.Statistics statistics;
  private final String path;
  private volatile boolean closed;

  FerriteInputStream(NodeReader reader, FileSystem.Statistics statistics, String path) {
    this.reader = reader;
    this.in = reader.inputStream();
    this.statistics = statistics;
    this.path = path;
  }

  private void checkOpen() throws IOException {
    if (closed) {
      throw new IOException(FSExceptionMessages.STREAM_IS_CLOSED + " " + path);
    }
  }

  private void count(int n) {
    if (n > 0 && statistics != null) {
      statistics.incrementBytesRead(n);
    }
  }

  @Override
  public synchronized void seek(long pos) throws IOException {
    checkOpen();
    if (pos < 0) {
      throw new EOFException(FSExceptionMessages.NEGATIVE_SEEK + " " + pos + " in " + path);
    }
    if (pos > reader.size()) {
      throw new EOFException(
          FSExceptionMessages.CANNOT_SEEK_PAST_EOF
              + " "
              + pos
              + " in "
              + path
              + " of "
              + reader.size()
              + " B");
    }
    in.seek(pos);
  }

  @Override
  public synchronized long getPos() {
    return in.position();
  }

  @Override
  public boolean seekToNewSource(long targetPos) {
    return false; // one copy of every block
  }

  @Override
  public synchronized int read() throws IOException {
    checkOpen();
    int b = in.read();
    count(b < 0 ? 0 : 1);
    return b;
  }

  @Override
  public synchronized int read(byte[] b, int off, int len) throws IOException {
    checkOpen();
    Objects.checkFromIndexSize(off, len, b.length);
    int n = in.read(b, off, len);
    count(n);
    return n;
  }

  @Override
  public synchronized long skip(long n) throws IOException {
    checkOpen();
    if (n <= 0) {
      return 0;
    }
    long from = in.position();
    long to = Math.min(reader.size(), from + n);
    in.seek(to);
    return to - from;
  }

  @Override
  public synchronized int available() throws IOException {
    checkOpen();
    return in.available();
  }

  /** A positioned read: up to {@code length} bytes at {@code position}; -1 at or past the end. */
  @Override
  public int read(long position, byte[] buffer, int offset, int length) throws IOException {
    checkOpen();
    validatePositionedReadArgs(position, buffer, offset, length);
    Objects.checkFromIndexSize(offset, length, buffer.length);
    if (length == 0) {
      return 0;
    }
    if (position >= reader.size()) {
      return -1;
    }
    int n = positioned(position, buffer, offset, length);
    count(n);
    return n;
  }

  /** Exactly {@code length} bytes at {@code position}, or EOFException if the file is shorter. */
  @Override
  public void readFully(long position, byte[] buffer, int offset, int length) throws IOException {
    checkOpen();
    validatePositionedReadArgs(position, buffer, offset, length);
    Objects.checkFromIndexSize(offset, length, buffer.length);
    if (position > reader.size() - length) {
      throw new EOFException(
          FSExceptionMessages.EOF_IN_READ_FULLY
              + ": "
              + length
              + " B at "
              + position
              + " of "
              + path
              + " ("
              + reader.size()
              + " B)");
    }
    if (length == 0) {
      return;
    }
    int n = positioned(position, buffer, offset, length);
    if (n != length) { // the reader reads min(length, size - position) in one call
      throw new EOFException(FSExceptionMessages.EOF_IN_READ_FULLY + " at " + position);
    }
    count(n);
  }

  private int positioned(long position, byte[] buffer, int offset, int length) throws IOException {
    try {
      return Futures.join(reader.read(position, ByteBuffer.wrap(buffer, offset, length)));
    } catch (RuntimeException e) {
      throw IOErrors.translate(e, "read", path);
    }
  }

  @Override
  public void close() {
    closed = true;
    synchronized (this) {
      in.close();
    }
  }

  @Override
  public String toString() {
    return "FerriteInputStream[" + path + ", " + reader.size() + " B]";
  }
}
