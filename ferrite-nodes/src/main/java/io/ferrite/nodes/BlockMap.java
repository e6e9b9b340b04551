package io.ferrite.nodes;

import io.ferrite.kernel.proto.BlockRef;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A client's cache of one node's block mapping (logical block index -> its copies: one block, or
 * {@link NodeInfo#replicas} on distinct servers, in the master's order), filled by the master's
 * {@code map} RPC. While one block transfers, the mapping of the next is already being fetched
 * (paper §4.4): callers {@link #prefetch} the block after the one they use. Fetches ask for a
 * window of blocks that doubles up to {@value #MAX_WINDOW}, so a long sequential transfer costs a
 * handful of RPCs. A writer's map allocates the blocks it asks for. Thread-safe.
 */
final class BlockMap {
  static final int MAX_WINDOW = 64;

  private final Nodes nodes;
  private final long id;
  private final boolean writer;
  private final int replicas;
  private final List<List<BlockRef>> blocks = new ArrayList<>();
  private final Map<Integer, CompletableFuture<Void>> inflight = new HashMap<>();
  private int window;

  /** For readers: how many blocks the node has (a read past them is past the end). */
  private int known;

  BlockMap(Nodes nodes, NodeInfo info, boolean writer) {
    this.nodes = nodes;
    this.id = info.id();
    this.writer = writer;
    this.known = info.blockCount();
    this.window = writer ? 1 : 8;
    this.replicas = info.replicas();
    setAll(info.firstBlock(), info.blocks());
  }

  /** Caches {@code refs} (replicas per block) from logical block {@code first} on. */
  private void setAll(int first, List<BlockRef> refs) {
    for (int i = 0; i + replicas <= refs.size(); i += replicas) {
      set(first + i / replicas, List.copyOf(refs.subList(i, i + replicas)));
    }
  }

  private void set(int index, List<BlockRef> b) {
    while (blocks.size() <= index) {
      blocks.add(null);
    }
    blocks.set(index, b);
  }

  private synchronized List<BlockRef> cached(int index) {
    return index < blocks.size() ? blocks.get(index) : null;
  }

  /**
   * The copies of the block at {@code index} (one without replicas): cached, or fetched (and, for a
   * writer, allocated).
   */
  CompletableFuture<List<BlockRef>> block(int index) {
    List<BlockRef> b = cached(index);
    if (b != null) {
      return CompletableFuture.completedFuture(b);
    }
    return fetch(index)
        .thenApply(
            v -> {
              List<BlockRef> got = cached(index);
              if (got == null) {
                throw new NodesException(
                    NodesException.Reason.PAST_END,
                    "block " + index + " of node " + id + " is past the end of its data");
              }
              return got;
            });
  }

  /** Starts fetching the mapping of {@code index} if it is not cached (§4.4 overlap). */
  void prefetch(int index) {
    if (cached(index) == null && (writer || index < known)) {
      fetch(index);
    }
  }

  /**
   * Fetches the window starting at {@code index}, unless a fetch covering it is running: then waits
   * for that one and fetches again only if it did not cover {@code index}.
   */
  private synchronized CompletableFuture<Void> fetch(int index) {
    for (Map.Entry<Integer, CompletableFuture<Void>> e : inflight.entrySet()) {
      if (e.getKey() <= index && index < e.getKey() + MAX_WINDOW && !e.getValue().isDone()) {
        return e.getValue()
            .handle((v, t) -> null)
            .thenCompose(
                v ->
                    cached(index) != null
                        ? CompletableFuture.completedFuture(null)
                        : fetchNow(index));
      }
    }
    return fetchNow(index);
  }

  private synchronized CompletableFuture<Void> fetchNow(int index) {
    int count = window;
    window = Math.min(MAX_WINDOW, window * 2);
    CompletableFuture<Void> f =
        nodes
            .mapAsync(id, index, count, writer)
            .thenAccept(
                r -> {
                  synchronized (this) {
                    setAll(r.first(), r.blocks());
                    known = Math.max(known, r.first() + r.blocks().size() / replicas);
                  }
                });
    inflight.put(index, f);
    f.whenComplete(
        (v, t) -> {
          synchronized (this) {
            inflight.remove(index, f);
          }
        });
    return f;
  }
}
