package io.ferrite.spark;

import io.ferrite.nodes.NodeInfo;
import io.ferrite.nodes.NodeReader;
import io.ferrite.nodes.Nodes;
import io.ferrite.nodes.NodesException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.apache.spark.storage.BlockManagerId;

/**
 * Fetches a reducer's byte range [off[start], off[end]) from each winning map output, keeping up to
 * {@code depth} outputs in flight (each a lookup, a read of the n+1 offsets it needs from the
 * File's index, then one read of the range: see {@link MapOutputFile} for the layout). Memory: at
 * most {@code depth} ranges are held at once. Not thread-safe: one reduce task.
 */
final class MapOutputFetcher {
  /** A winning map attempt, as the MapOutputTracker named it. */
  record MapOutput(BlockManagerId location, long mapId, int mapIndex, String path) {}

  /** One map output's range, and where in it each asked partition starts. */
  record Fetched(MapOutput output, ByteBuffer data, long[] offsets) {}

  private final Nodes nodes;
  private final int partitions;
  private final int start;
  private final int end;
  private final int depth;
  private final ArrayDeque<MapOutput> pending;
  private final ArrayDeque<Pending> inFlight = new ArrayDeque<>();

  private record Pending(MapOutput output, CompletableFuture<Fetched> fetch) {}

  MapOutputFetcher(
      Nodes nodes, int partitions, int start, int end, int depth, List<MapOutput> outputs) {
    this.nodes = nodes;
    this.partitions = partitions;
    this.start = start;
    this.end = end;
    this.depth = depth;
    this.pending = new ArrayDeque<>(outputs);
  }

  boolean hasNext() {
    return !pending.isEmpty() || !inFlight.isEmpty();
  }

  /**
   * The next output's range, in the order fetches complete at the head (issue order); issues more
   * fetches to keep {@code depth} in flight.
   *
   * @throws FetchFailure naming the output when its File is gone, short, lost or unreadable
   */
  Fetched next() throws FetchFailure {
    fill();
    Pending p = inFlight.poll();
    Fetched f;
    try {
      f = p.fetch.get();
    } catch (ExecutionException e) {
      throw new FetchFailure(p.output, e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new FetchFailure(p.output, e);
    }
    fill();
    return f;
  }

  private void fill() {
    while (inFlight.size() < depth && !pending.isEmpty()) {
      MapOutput o = pending.poll();
      inFlight.add(new Pending(o, fetch(o)));
    }
  }

  /** Fails every fetch still in flight's wait; their buffers are dropped with them. */
  void close() {
    pending.clear();
    inFlight.clear();
  }

  private CompletableFuture<Fetched> fetch(MapOutput o) {
    int n = partitions;
    return nodes
        .lookupAsync(o.path)
        .thenCompose(
            info -> {
              NodeReader r = nodes.open(info);
              long indexAt = info.size() - 8L * (n + 1);
              if (indexAt < 0) {
                throw corrupt(info, "shorter than its index of " + (n + 1) + " offsets");
              }
              ByteBuffer index = ByteBuffer.allocate(8 * (end - start + 1));
              return readFully(r, indexAt + 8L * start, index)
                  .thenCompose(
                      v -> {
                        index.flip();
                        long[] offsets = new long[end - start + 1];
                        for (int i = 0; i < offsets.length; i++) {
                          offsets[i] = index.getLong();
                        }
                        long from = offsets[0];
                        long to = offsets[offsets.length - 1];
                        if (from < 0 || to < from || to > indexAt) {
                          throw corrupt(info, "offsets " + from + ".." + to + " past " + indexAt);
                        }
                        if (to - from > Integer.MAX_VALUE - 16) {
                          throw new IllegalStateException(
                              info.path()
                                  + ": partitions "
                                  + start
                                  + ".."
                                  + (end - 1)
                                  + " hold "
                                  + (to - from)
                                  + " B (expected: < 2 GiB per map output and reduce task; use"
                                  + " more partitions)");
                        }
                        ByteBuffer data = ByteBuffer.allocate((int) (to - from));
                        return readFully(r, from, data)
                            .thenApply(w -> new Fetched(o, data.flip(), offsets));
                      });
            });
  }

  private static IllegalStateException corrupt(NodeInfo info, String what) {
    return new IllegalStateException(info.path() + " is not a map output: " + what);
  }

  /** Reads until {@code dst} is full (a read may return fewer bytes, e.g. at a block's end). */
  private static CompletableFuture<Void> readFully(NodeReader r, long pos, ByteBuffer dst) {
    if (!dst.hasRemaining()) {
      return CompletableFuture.completedFuture(null);
    }
    return r.read(pos, dst)
        .thenCompose(
            got -> {
              if (got < 0) {
                throw new CompletionException(
                    new NodesException(
                        NodesException.Reason.PAST_END,
                        r.info().path()
                            + " ended at "
                            + pos
                            + " with "
                            + dst.remaining()
                            + " B to read"));
              }
              return readFully(r, pos + got, dst);
            });
  }

  /** A map output could not be read: the reader turns it into Spark's FetchFailedException. */
  static final class FetchFailure extends Exception {
    private static final long serialVersionUID = 1L;
    final transient MapOutput output;

    FetchFailure(MapOutput output, Throwable cause) {
      super("map output " + output.path + " could not be read: " + cause, cause);
      this.output = output;
    }
  }
}
