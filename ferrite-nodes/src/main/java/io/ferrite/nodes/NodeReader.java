package io.ferrite.nodes;

import io.ferrite.fabric.Futures;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Reads a File or KeyValue: positional, asynchronous reads of the bytes visible when it was opened
 * (its size then), cut at block boundaries into one-sided reads; the mapping of the next block is
 * fetched while the current one transfers (paper §4.4). Thread-safe; {@link #inputStream} adds a
 * sequential stream with read-ahead and seek.
 */
public final class NodeReader {
  private final Nodes nodes;
  private final NodeInfo info;
  private final BlockMap map;
  private final long bs;

  /** How many blocks ahead of a read the mapping is fetched, besides the next block. */
  static final int PREFETCH_AHEAD = 8;

  NodeReader(Nodes nodes, NodeInfo info) {
    this.nodes = nodes;
    this.info = info;
    this.map = new BlockMap(nodes, info, false);
    this.bs = nodes.blockSize();
  }

  public NodeInfo info() {
    return info;
  }

  /** Bytes readable. */
  public long size() {
    return info.size();
  }

  /**
   * Reads up to {@code dst.remaining()} bytes at {@code position}; completes with the count, or -1
   * at the end. A position past the end fails with PAST_END. {@code dst} must not be touched until
   * the future completes.
   */
  public CompletableFuture<Integer> read(long position, ByteBuffer dst) {
    long size = info.size();
    if (position < 0 || position > size) {
      return CompletableFuture.failedFuture(
          new NodesException(
              NodesException.Reason.PAST_END,
              "read at "
                  + position
                  + " of "
                  + info.path()
                  + " (expected: 0 to its size "
                  + size
                  + ")"));
    }
    if (dst.remaining() == 0) {
      return CompletableFuture.completedFuture(0);
    }
    if (position == size) {
      return CompletableFuture.completedFuture(-1);
    }
    int len = (int) Math.min(dst.remaining(), size - position);
    NodeInfo.LostRange lost = info.lostIn(position, position + len);
    if (lost != null) {
      // Never read a lost block: its ref names a region that is gone (or, with the same id and a
      // new rkey, someone else's memory), so the answer would be BAD_RKEY or NO_SUCH_REGION.
      return CompletableFuture.failedFuture(lost(info, lost));
    }
    if (info.inline() != null) {
      dst.put(info.inline(), (int) position, len);
      return CompletableFuture.completedFuture(len);
    }
    List<CompletableFuture<Void>> parts = new ArrayList<>(2);
    int done = 0;
    int base = dst.position();
    while (done < len) {
      long pos = position + done;
      int index = (int) (pos / bs);
      long off = pos % bs;
      int n = (int) Math.min(len - done, bs - off);
      ByteBuffer slice = dst.duplicate();
      slice.position(base + done).limit(base + done + n);
      parts.add(
          map.block(index)
              .thenCompose(
                  b ->
                      b.size() == 1
                          ? nodes.readBlock(b.get(0), off, slice)
                          : nodes.readCopies(b, off, slice)));
      map.prefetch(index + 1);
      // Also well ahead: a sequential reader then finds each window of the mapping fetched before
      // it gets there, rather than issuing at a window's first block a read that waits on the
      // master (which also ends a File stream's one-copy path for a few reads).
      map.prefetch(index + PREFETCH_AHEAD);
      done += n;
    }
    dst.position(base + len);
    CompletableFuture<Void> all =
        parts.size() == 1
            ? parts.get(0)
            : CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]));
    return all.handle((v, t) -> t)
        .thenCompose(
            t -> t == null ? CompletableFuture.completedFuture(len) : failed(t, position, len));
  }

  /**
   * A failed read. A ref the server no longer honours (BAD_RKEY, NO_SUCH_REGION) may be one the
   * master declared lost after this reader's lookup: ask the master once (only on this failure
   * path, so reads cost nothing more) and answer DATA_LOST if the bytes are among the lost ones.
   */
  private CompletableFuture<Integer> failed(Throwable t, long position, int len) {
    io.ferrite.fabric.FerriteException e = NodesException.from(t);
    if (!Nodes.staleRef(e) || info.path().isEmpty()) {
      return CompletableFuture.failedFuture(e);
    }
    return nodes
        .lookupAsync(info.path(), 0)
        .handle(
            (now, t2) -> {
              NodeInfo.LostRange l =
                  t2 == null && now.id() == info.id() ? now.lostIn(position, position + len) : null;
              throw l != null ? lost(now, l) : e;
            });
  }

  /** DATA_LOST for a read of {@code info} that touches {@code range}. */
  static NodesException lost(NodeInfo info, NodeInfo.LostRange range) {
    return new NodesException(
        NodesException.Reason.DATA_LOST,
        info.path()
            + ": "
            + range
            + " of its "
            + info.size()
            + " B were lost (their memory server came back without them; "
            + info.lostBlocks()
            + " block(s) lost in all)");
  }

  /** Reads exactly {@code dst.remaining()} bytes at {@code position}, or fails with PAST_END. */
  public void readFully(long position, ByteBuffer dst) {
    if (position < 0 || position + dst.remaining() > info.size()) {
      throw new NodesException(
          NodesException.Reason.PAST_END,
          "read of "
              + dst.remaining()
              + " B at "
              + position
              + " of "
              + info.path()
              + " (expected: within its "
              + info.size()
              + " B)");
    }
    try {
      Futures.join(read(position, dst));
    } catch (RuntimeException e) {
      throw NodesException.from(e);
    }
  }

  /** A sequential stream from position 0, with read-ahead of one block. */
  public SeekableInputStream inputStream() {
    return new SeekableInputStream(this, (int) Math.min(bs, 1 << 20), SeekableInputStream.DEPTH);
  }

  /**
   * A sequential stream from position 0 that keeps up to {@code depth} reads of {@code piece} bytes
   * in flight ahead of the caller.
   *
   * @throws IllegalArgumentException unless {@code piece} is 1 B to 64 MiB and {@code depth} 1 to
   *     64
   */
  public SeekableInputStream inputStream(int piece, int depth) {
    if (piece < 1 || piece > (64 << 20) || depth < 1 || depth > 64) {
      throw new IllegalArgumentException(
          "piece: " + piece + ", depth: " + depth + " (expected: 1 to 67108864, 1 to 64)");
    }
    return new SeekableInputStream(this, piece, depth);
  }

  /**
   * A sequential {@link InputStream} over a reader: keeps up to {@value #DEPTH} chunk reads in
   * flight ahead of the caller (over tcp the transfers overlap; paper §4.4 overlaps the mapping as
   * well). When the fabric completes reads synchronously (shm, local: a read is a memcpy) a read of
   * at least a chunk goes straight into the caller's array, one copy. Not thread-safe.
   */
  public static final class SeekableInputStream extends InputStream {
    static final int DEPTH = 4;

    /** Reads complete at issue, in a row, that make the stream read straight into the array. */
    static final int SYNC_STREAK = 4;

    private record Ahead(ByteBuffer buf, long pos, CompletableFuture<Integer> read) {}

    private final NodeReader reader;
    private final int chunk;
    private final int depth;
    private final java.util.ArrayDeque<Ahead> ahead = new java.util.ArrayDeque<>();
    private final java.util.ArrayDeque<ByteBuffer> free = new java.util.ArrayDeque<>();
    private final ByteBuffer empty = ByteBuffer.allocate(0);
    private ByteBuffer current = empty;
    private long currentEnd; // file position after current's last byte
    private long nextIssue;
    private long position;

    /**
     * Reads in a row that were complete when issued: a fabric that completes reads in the caller's
     * thread (shm, local) makes every read so, a network fabric almost none, but a tcp read can
     * complete between its issue and the check when the caller is descheduled there. So the
     * straight-into-the-array path needs {@link #SYNC_STREAK} such reads in a row, and any read
     * found incomplete ends the streak: one misjudged read costs one unpipelined read, never the
     * rest of the stream (it once latched on a single such race and read every later MiB one at a
     * time through a heap buffer).
     */
    private int syncStreak;

    private boolean closed;

    SeekableInputStream(NodeReader reader, int chunk, int depth) {
      this.reader = reader;
      this.chunk = chunk;
      this.depth = depth;
    }

    public long position() {
      return position;
    }

    /**
     * Reads issued ahead and not yet consumed (for tests: 0 after a read straight into an array).
     */
    int readsAhead() {
      return ahead.size();
    }

    /** Moves to {@code pos} (0 to the size); the next read starts there. */
    public void seek(long pos) throws IOException {
      checkOpen();
      if (pos < 0 || pos > reader.size()) {
        throw new IOException(
            new NodesException(
                NodesException.Reason.PAST_END,
                "seek to " + pos + " (expected: 0 to " + reader.size() + ")"));
      }
      long currentStart = currentEnd - current.limit();
      if (pos >= currentStart && pos <= currentEnd) {
        current.position((int) (pos - currentStart));
      } else {
        release(current);
        current = empty;
        currentEnd = pos;
      }
      position = pos;
    }

    /** Returns a read-ahead buffer whose bytes are no longer needed to the pool. */
    private void release(ByteBuffer b) {
      if (b.isDirect() && b.capacity() == chunk) {
        free.add(b);
      }
    }

    private void checkOpen() throws IOException {
      if (closed) {
        throw new IOException(new NodesException(NodesException.Reason.CLOSED, "stream closed"));
      }
    }

    /** Issues chunk reads from {@code nextIssue} until {@value #DEPTH} are in flight. */
    private void topUp() {
      while (ahead.size() < depth && nextIssue < reader.size()) {
        ByteBuffer b = free.isEmpty() ? ByteBuffer.allocateDirect(chunk) : free.poll();
        b.clear();
        CompletableFuture<Integer> f = reader.read(nextIssue, b);
        syncStreak = f.isDone() ? syncStreak + 1 : 0;
        ahead.add(new Ahead(b, nextIssue, f));
        nextIssue += chunk;
      }
    }

    /** Makes current hold bytes at {@code position}; false at the end. */
    private boolean fill() throws IOException {
      if (current.hasRemaining()) {
        return true;
      }
      if (position >= reader.size()) {
        return false;
      }
      if (ahead.isEmpty() || ahead.peek().pos() != position) {
        ahead.clear(); // reads for other positions: their buffers are dropped, never reused
        nextIssue = position;
      }
      topUp();
      Ahead a = ahead.poll();
      int n;
      try {
        n = Futures.join(a.read());
      } catch (RuntimeException e) {
        throw new IOException(NodesException.from(e));
      }
      release(current);
      current = a.buf();
      current.flip();
      currentEnd = a.pos() + n;
      topUp();
      return n > 0;
    }

    @Override
    public int read() throws IOException {
      checkOpen();
      if (!fill()) {
        return -1;
      }
      position++;
      return current.get() & 0xFF;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      checkOpen();
      java.util.Objects.checkFromIndexSize(off, len, b.length);
      if (len == 0) {
        return 0;
      }
      if (syncStreak >= SYNC_STREAK
          && !current.hasRemaining()
          && len >= chunk
          && position < reader.size()) {
        // A memcpy fabric: straight into the caller's array, one copy, nothing ahead to wait for.
        try {
          ahead.clear();
          CompletableFuture<Integer> f = reader.read(position, ByteBuffer.wrap(b, off, len));
          syncStreak = f.isDone() ? syncStreak + 1 : 0;
          int n = Futures.join(f);
          if (n > 0) {
            position += n;
          }
          // Nothing buffered now: a seek must not find the old buffer's bytes at the new position
          // (currentEnd moved, so its start would be computed from the wrong end).
          release(current);
          current = empty;
          currentEnd = position;
          return n;
        } catch (RuntimeException e) {
          throw new IOException(NodesException.from(e));
        }
      }
      if (!fill()) {
        return -1;
      }
      int n = Math.min(len, current.remaining());
      current.get(b, off, n);
      position += n;
      return n;
    }

    @Override
    public long skip(long n) throws IOException {
      // No overflow: skip(Long.MAX_VALUE) means "to the end".
      long to = n <= 0 ? position : position + Math.min(n, reader.size() - position);
      long skipped = to - position;
      seek(to);
      return skipped;
    }

    @Override
    public int available() {
      return (int) Math.min(Integer.MAX_VALUE, reader.size() - position);
    }

    @Override
    public void close() {
      closed = true;
      ahead.clear();
    }
  }
}
