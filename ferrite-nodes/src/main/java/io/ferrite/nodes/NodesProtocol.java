package io.ferrite.nodes;

import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.Wire;
import java.util.ArrayList;
import java.util.List;

/**
 * The nodes face's RPC service on the master (the paper's metadata plane, §3.2.1). All bodies are
 * little-endian {@link Wire} encodings.
 *
 * <pre>
 * CREATE      path str | type u8 | flags u8 (1 = enumerable) | class str | location str
 *             | session i64 | preallocate i32 (blocks) | inline bytes (KeyValue only, else empty)
 *             -> node
 * LOOKUP      path str | blocks i32 (how many block refs to include)        -> node
 * REMOVE      path str | recursive u8                                        -> removed i32
 * MOVE        src str | dst str                                              -> node
 * MAP         id i64 | session i64 | index i32 | count i32 | allocate u8    -> first i32 | blocks
 * PUBLISH     id i64 | session i64 | size i64 | checksum i64 | close u8    -> node
 * OPEN_WRITE  path str | session i64                                         -> node
 * LIST        path str | after str | max i32 | blocks u8                     -> more u8 | n i32 | entry*
 * ABORT       id i64 | session i64                                           -> empty
 * LOOKUP_VERSIONED  path str | blocks i32
 *             -> node | cacheable u8 [| regionId i32 | rkey i64 | length i64 | count i32
 *                                      | { slot i32 | word i64 }* ]   (the path's nodes, root
 *                excluded, in order: see "Cached gets" in docs/NODES.md; served by node 0)
 * LOOKUP_LEASED     path str | blocks i32 | holder i64
 *             -> node | epoch i64 | seq i64 | lease i64 (ns, 0 = not leased) | count i32
 *                | id i64 *   (the path's nodes, root excluded: "Leased lookups" in docs/NODES.md)
 * WATCH       holder i64 (0 = register) | epoch i64 | acked i64 (invalidations applied)
 *             | hold i64 (ns the client lets it be parked: below its RPC timeout)
 *             -> holder i64 | epoch i64 | seq i64 | lease i64 (ns, 0 = not renewed) | count i32
 *                | id i64 *   (nodes whose leases were revoked; parked up to min(hold, lease / 3))
 * LOST_SUMMARY (empty) -> nodes i64 | bytes i64 | blocks i64 | n i32 | path str * (up to 32
 *             lost nodes' paths, sorted): what "Lost memory" in docs/NODES.md marks
 *
 * node  = id i64 | path str | type u8 | size i64 | mtime i64 | checksum i64 | class str
 *         | location str | flags u8 (1 enumerable, 2 writing, 4 lost) | blockCount i32 | first i32
 *         | blocks | inline (u8 present, bytes)
 *         [| lostBlocks i32 | n i32 | { from i64 | to i64 }* ]   (flag 4 only: lost byte ranges)
 *         [| replicas u8 | missing i32 ]   (flag 8 only: a replicated node; blocks then holds
 *                                           replicas refs per block, copy k of block i at
 *                                           (i - first) * replicas + k; MAP answers likewise)
 * entry = node with path = the child's name; blocks only when asked for
 * </pre>
 */
public final class NodesProtocol {
  private NodesProtocol() {}

  /** The service id on the master (kernel 1-15; other faces use other ids). */
  public static final int SERVICE = 24;

  public static final int CREATE = 1;
  public static final int LOOKUP = 2;
  public static final int REMOVE = 3;
  public static final int MOVE = 4;
  public static final int MAP = 5;
  public static final int PUBLISH = 6;
  public static final int OPEN_WRITE = 7;
  public static final int LIST = 8;
  public static final int ABORT = 9;
  public static final int LOOKUP_VERSIONED = 10;
  public static final int LOOKUP_LEASED = 11;
  public static final int WATCH = 12;
  public static final int LOST_SUMMARY = 13;

  public static final int FLAG_ENUMERABLE = 1;
  public static final int FLAG_WRITING = 2;
  public static final int FLAG_LOST = 4;
  public static final int FLAG_REPLICATED = 8;

  /**
   * A Directory owned by the creating client's session ({@link CreateOptions#ephemeral}): in a
   * CREATE's flags, and in a node's answer.
   */
  public static final int FLAG_EPHEMERAL = 16;

  /** The most copies of a block ({@link CreateOptions#replicas}). */
  public static final int MAX_REPLICAS = 3;

  /** KeyValues up to this size live in the master's metadata: a put or get is one RPC. */
  public static final int MAX_INLINE = 1024;

  /** Block refs a LOOKUP returns by default, so that small nodes need no MAP. */
  public static final int LOOKUP_BLOCKS = 8;

  /** The most entries in one LIST page. */
  public static final int MAX_LIST_PAGE = 4096;

  public static void writeNode(Wire.Writer w, NodeInfo n) {
    w.i64(n.id())
        .str(n.path())
        .u8(n.type().wire())
        .i64(n.size())
        .i64(n.mtime())
        .i64(n.checksum())
        .str(n.storageClass())
        .str(n.location())
        .u8(
            (n.enumerable() ? FLAG_ENUMERABLE : 0)
                | (n.writing() ? FLAG_WRITING : 0)
                | (n.isLost() ? FLAG_LOST : 0)
                | (n.replicas() > 1 ? FLAG_REPLICATED : 0)
                | (n.ephemeral() ? FLAG_EPHEMERAL : 0))
        .i32(n.blockCount())
        .i32(n.firstBlock());
    MasterProtocol.writeBlocks(w, n.blocks());
    if (n.inline() == null) {
      w.u8(0);
    } else {
      w.u8(1).bytes(n.inline());
    }
    if (n.isLost()) {
      w.i32(n.lostBlocks()).i32(n.lost().size());
      for (NodeInfo.LostRange l : n.lost()) {
        w.i64(l.from()).i64(l.to());
      }
    }
    if (n.replicas() > 1) {
      w.u8(n.replicas()).i32(n.missingCopies());
    }
  }

  public static NodeInfo readNode(Wire.Reader r) {
    long id = r.i64("id");
    String path = r.str("path");
    NodeType type = NodeType.fromWire(r.u8("type"));
    long size = r.i64("size");
    long mtime = r.i64("mtime");
    long checksum = r.i64("checksum");
    String cls = r.str("class");
    String loc = r.str("location");
    int flags = r.u8("flags");
    int blockCount = r.i32("blockCount");
    int first = r.i32("firstBlock");
    List<BlockRef> blocks = MasterProtocol.readBlocks(r);
    byte[] inline = r.u8("inline?") == 1 ? r.bytes("inline") : null;
    int lostBlocks = 0;
    List<NodeInfo.LostRange> lost = List.of();
    if ((flags & FLAG_LOST) != 0) {
      lostBlocks = r.i32("lostBlocks");
      int k = r.count("lost ranges", Integer.MAX_VALUE / 16);
      List<NodeInfo.LostRange> ls = new ArrayList<>(k);
      for (int i = 0; i < k; i++) {
        ls.add(new NodeInfo.LostRange(r.i64("from"), r.i64("to")));
      }
      lost = List.copyOf(ls);
    }
    int replicas = 1;
    int missing = 0;
    if ((flags & FLAG_REPLICATED) != 0) {
      replicas = r.u8("replicas");
      missing = r.i32("missing");
    }
    return new NodeInfo(
        id,
        path,
        type,
        size,
        mtime,
        checksum,
        cls,
        loc,
        (flags & FLAG_ENUMERABLE) != 0,
        (flags & FLAG_WRITING) != 0,
        blockCount,
        first,
        blocks,
        inline,
        lostBlocks,
        lost,
        replicas,
        missing,
        (flags & FLAG_EPHEMERAL) != 0);
  }

  /** One page of a LIST. */
  public record Page(boolean more, List<NodeInfo> entries) {}

  public static Page readPage(Wire.Reader r) {
    boolean more = r.u8("more") == 1;
    int n = r.count("entries", MAX_LIST_PAGE);
    List<NodeInfo> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(readNode(r));
    }
    r.end();
    return new Page(more, out);
  }
}
