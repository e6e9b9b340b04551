package io.ferrite.nodes;

import io.ferrite.fabric.Futures;
import io.ferrite.kernel.proto.BlockRef;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Appends to a File this client holds the write lease of (one writer at a time). Writes are cut at
 * block boundaries into one-sided writes; blocks are mapped (allocated by the master, round-robin
 * over the memory servers of the node's storage class) a growing window ahead. Readers see the
 * bytes up to the size last published by {@link #flush} or {@link #close}; a File that was never
 * published stays invisible and is dropped if this client's session ends.
 *
 * <p>Thread-safe for issuing writes; their order of issue is their order in the file.
 */
public final class NodeWriter implements AutoCloseable {
  private final Nodes nodes;
  private final NodeInfo info;
  private final BlockMap map;
  private final long bs;
  private final List<CompletableFuture<Void>> pending = new ArrayList<>();
  private long position;
  private boolean closed;

  /**
   * What the first {@link #closeAsync}/{@link #close} publishes, its failure turned into null:
   * later closes return it (a close is idempotent, as {@link AutoCloseable} asks; the first reports
   * a failure, the later ones do not again). Completed with null by {@link #abort}. Guarded by
   * this.
   */
  private CompletableFuture<NodeInfo> closing;

  NodeWriter(Nodes nodes, NodeInfo info, long position) {
    this.nodes = nodes;
    this.info = info;
    this.map = new BlockMap(nodes, info, true);
    this.bs = nodes.blockSize();
    this.position = position;
  }

  public NodeInfo info() {
    return info;
  }

  /** Where the next write goes (the file's size once all writes are done). */
  public synchronized long position() {
    return position;
  }

  /**
   * Appends {@code src.remaining()} bytes; completes when they are in the blocks. {@code src} must
   * not be touched until then. Fails with CLOSED after {@link #close}, NO_SPACE when no storage
   * class has a block left (what was written before stays).
   */
  public CompletableFuture<Void> write(ByteBuffer src) {
    List<CompletableFuture<Void>> parts = new ArrayList<>(2);
    synchronized (this) {
      if (closed) {
        return CompletableFuture.failedFuture(
            new NodesException(
                NodesException.Reason.CLOSED, "write to " + info.path() + " after close"));
      }
      int len = src.remaining();
      int base = src.position();
      int done = 0;
      while (done < len) {
        long pos = position + done;
        int index = (int) (pos / bs);
        long off = pos % bs;
        int n = (int) Math.min(len - done, bs - off);
        ByteBuffer slice = src.duplicate();
        slice.position(base + done).limit(base + done + n);
        parts.add(map.block(index).thenCompose(b -> writeCopies(b, off, slice)));
        if (off + n == bs || off == 0) {
          map.prefetch(index + 1);
        }
        done += n;
      }
      position += len;
      src.position(base + len);
    }
    CompletableFuture<Void> all =
        parts.size() == 1
            ? parts.get(0)
            : CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]));
    CompletableFuture<Void> result =
        all.handle(
            (v, t) -> {
              if (t != null) {
                throw NodesException.from(t);
              }
              return null;
            });
    synchronized (this) {
      pending.removeIf(CompletableFuture::isDone);
      pending.add(result);
    }
    return result;
  }

  /**
   * Writes {@code slice} at {@code off} of every copy of a block; completes when all did (a write
   * is acknowledged only once it is at every copy), fails if one failed: the writer then publishes
   * nothing more (its close fails), so no published size covers bytes some copy lacks.
   */
  private CompletableFuture<Void> writeCopies(List<BlockRef> copies, long off, ByteBuffer slice) {
    if (copies.size() == 1) {
      return nodes.writeBlock(copies.get(0), off, slice);
    }
    CompletableFuture<?>[] all = new CompletableFuture<?>[copies.size()];
    for (int k = 0; k < all.length; k++) {
      all[k] = nodes.writeBlock(copies.get(k), off, slice.duplicate());
    }
    return CompletableFuture.allOf(all);
  }

  public void writeSync(ByteBuffer src) {
    join(write(src));
  }

  private static <T> T join(CompletableFuture<T> f) {
    try {
      return Futures.join(f);
    } catch (RuntimeException e) {
      throw NodesException.from(e);
    }
  }

  private CompletableFuture<NodeInfo> publish(boolean close) {
    return publish(close, false);
  }

  /**
   * Publishes once the writes issued so far are done; {@code sync}: on this thread, which waits
   * anyway, so the PUBLISH is a blocking call (over tcp on a lane, no event-loop hand-off).
   */
  private CompletableFuture<NodeInfo> publish(boolean close, boolean sync) {
    CompletableFuture<?>[] wait;
    long size;
    CompletableFuture<NodeInfo> first = null;
    synchronized (this) {
      if (closed) {
        if (close) {
          return closing; // closed already: a no-op, with the first close's result
        }
        return CompletableFuture.failedFuture(
            new NodesException(NodesException.Reason.CLOSED, info.path() + " is closed"));
      }
      closed = close;
      if (close) {
        first = new CompletableFuture<>();
        closing = first.handle((v, t) -> t == null ? v : null);
      }
      wait = pending.toArray(new CompletableFuture<?>[0]);
      pending.clear();
      size = position;
    }
    CompletableFuture<NodeInfo> published;
    if (sync) {
      try {
        CompletableFuture.allOf(wait).join();
        published = CompletableFuture.completedFuture(nodes.publishSync(info.id(), size, 0, close));
      } catch (RuntimeException e) {
        published = CompletableFuture.failedFuture(e);
      }
    } else {
      published =
          CompletableFuture.allOf(wait)
              .thenCompose(v -> nodes.publishAsync(info.id(), size, 0, close));
    }
    CompletableFuture<NodeInfo> result =
        published.handle(
            (v, t) -> {
              if (t != null) {
                throw NodesException.context(
                    t, (close ? "closing " : "flushing ") + info.path() + " at " + size + " B");
              }
              return v;
            });
    if (first != null) {
      CompletableFuture<NodeInfo> f = first;
      result.whenComplete(
          (v, t) -> {
            if (t != null) {
              f.completeExceptionally(t);
            } else {
              f.complete(v);
            }
          });
    }
    return result;
  }

  /** Waits for the writes issued so far and makes them visible to readers; keeps the lease. */
  public NodeInfo flush() {
    return join(publish(false, true));
  }

  /**
   * Waits for the writes, publishes the size and gives up the write lease. Once closed (or
   * aborted), a no-op: the first close's result again (null if it failed or after an abort).
   */
  public CompletableFuture<NodeInfo> closeAsync() {
    return publish(true);
  }

  /**
   * {@link #closeAsync} and waits. Idempotent: a second close (e.g. by try-with-resources after
   * {@link #outputStream()}'s close, which closes this writer) does nothing.
   */
  @Override
  public void close() {
    join(publish(true, true));
  }

  /** Gives up without publishing what was written since the last flush. A no-op once closed. */
  public void abort() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      closing = CompletableFuture.completedFuture(null);
    }
    join(nodes.abortAsync(info.id()));
  }

  /** Chunk writes an {@link #outputStream()} keeps in flight. */
  static final int STREAM_DEPTH = 4;

  /**
   * An {@link OutputStream} that gathers small writes into chunks of up to 1 MiB and writes them
   * one-sided, up to {@value #STREAM_DEPTH} chunks in flight while the next fills; {@code close}
   * publishes and releases (closes this writer; closing either again is a no-op).
   */
  public OutputStream outputStream() {
    int chunk = (int) Math.min(bs, 1 << 20);
    return new OutputStream() {
      private final java.util.ArrayDeque<ByteBuffer> inFlightBufs = new java.util.ArrayDeque<>();
      private final java.util.ArrayDeque<CompletableFuture<Void>> inFlight =
          new java.util.ArrayDeque<>();
      private ByteBuffer fill = ByteBuffer.allocateDirect(chunk);
      private boolean done;

      private void awaitOldest() throws IOException {
        CompletableFuture<Void> f = inFlight.poll();
        ByteBuffer b = inFlightBufs.poll();
        try {
          Futures.join(f);
        } catch (RuntimeException e) {
          throw new IOException(NodesException.from(e));
        }
        fill = b;
        fill.clear();
      }

      private void send() throws IOException {
        if (fill.position() == 0) {
          return;
        }
        fill.flip();
        inFlight.add(NodeWriter.this.write(fill));
        inFlightBufs.add(fill);
        if (inFlight.size() >= STREAM_DEPTH) {
          awaitOldest();
        } else {
          fill = ByteBuffer.allocateDirect(chunk);
        }
      }

      private void drain() throws IOException {
        while (!inFlight.isEmpty()) {
          awaitOldest();
        }
      }

      @Override
      public void write(int b) throws IOException {
        if (!fill.hasRemaining()) {
          send();
        }
        fill.put((byte) b);
      }

      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        java.util.Objects.checkFromIndexSize(off, len, b.length);
        while (len > 0) {
          if (!fill.hasRemaining()) {
            send();
          }
          int n = Math.min(len, fill.remaining());
          fill.put(b, off, n);
          off += n;
          len -= n;
        }
      }

      @Override
      public void flush() throws IOException {
        send();
        drain();
        try {
          NodeWriter.this.flush();
        } catch (RuntimeException e) {
          throw new IOException(NodesException.from(e));
        }
      }

      @Override
      public void close() throws IOException {
        if (done) {
          return;
        }
        done = true;
        send();
        drain();
        try {
          NodeWriter.this.close();
        } catch (RuntimeException e) {
          throw new IOException(NodesException.from(e));
        }
      }
    };
  }
}
