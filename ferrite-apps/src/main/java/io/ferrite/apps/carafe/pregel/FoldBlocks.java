package io.ferrite.apps.carafe.pregel;

import java.util.Arrays;

/**
 * A partition's out-edges regrouped by target range for a cache-blocked fold (propagation
 * blocking): the targets of the whole graph are cut into blocks of {@link #BLOCK} ids that never
 * straddle a partition bound, and block b's edges are {@code source[start[b] .. start[b + 1])} (the
 * sending vertex, local) and {@code target[..]} (offset from the block's first id), in the
 * partition's own edge order (by source, then adjacency position). Built once per worker in the
 * load; immutable; shared by the job's partition and its warm-up's.
 *
 * <p>Why: folding a superstep's sends edge by edge in source order ({@code acc[target[e]] +=
 * share}) writes an n-wide accumulator at random, 8 bytes used of every 64-byte line fetched: with
 * 2^20 targets the accumulator is 8 MiB, beyond the 2 MiB L2 of a core here, so each edge costs a
 * line from the shared L3 or memory, and two workers on two cores fight for that. Folding block by
 * block keeps the block's accumulator (512 KiB) in the core's L2 while its edges stream in
 * sequentially; the extra cost is the source stream (4 bytes an edge; the target is 2) and one read
 * of the sender's share per edge, in ascending order inside a block. The fold then emits the
 * block's messages while its accumulator is still in cache. Same order of additions per target as
 * the edge-by-edge fold (edges of a block keep the partition's order), so the sums are the same
 * bits.
 */
final class FoldBlocks {
  /**
   * Target ids per block: 2^16, so a target is a 2-byte offset inside its block (512 KiB of 8-byte
   * accumulators, a quarter of a core's L2 here).
   */
  static final int BLOCK = 1 << 16;

  /**
   * W + 1: the first block of each partition's targets (blocks of partition j: firstBlock[j] ..).
   */
  final int[] firstBlock;

  /** blocks + 1: the first target id of each block (the last entry: the vertex count). */
  final int[] blockFirst;

  /** blocks + 1: where each block's edges start in {@link #source} and {@link #target}. */
  final int[] start;

  final int[] source;

  /** The target's offset from its block's first id ({@link #blockFirst}). */
  final char[] target;

  /**
   * blocks + 1: where each block's reached targets start in {@link #reached}; block b's distinct
   * targets number {@code reachStart[b + 1] - reachStart[b]}.
   */
  final int[] reachStart;

  /**
   * The distinct targets the partition's edges reach, block by block, ascending inside a block, as
   * offsets from the block's first id: the emit walks these, not every id of a block (a partition
   * with few targets in a block, or none, pays for those it has, not for the block's 2^16 ids).
   */
  final char[] reached;

  FoldBlocks(int[] bounds, int[] off, int[] targets, int size) {
    this(bounds, off, targets, size, BLOCK);
  }

  /**
   * @param bounds the W + 1 partition bounds (global ids)
   * @param off the partition's {@code size + 1} offsets into {@code targets}
   * @param targets its adjacency entries' targets (global ids, checked in range by the caller)
   * @param block target ids per block (tests use small ones)
   */
  FoldBlocks(int[] bounds, int[] off, int[] targets, int size, int block) {
    if (block < 1 || block > BLOCK) {
      throw new IllegalArgumentException(
          "block: " + block + " (expected: 1 to " + BLOCK + ", offsets are 16 bits)");
    }
    int workers = bounds.length - 1;
    firstBlock = new int[workers + 1];
    for (int j = 0; j < workers; j++) {
      int ids = bounds[j + 1] - bounds[j];
      firstBlock[j + 1] = firstBlock[j] + (ids + block - 1) / block;
    }
    int blocks = firstBlock[workers];
    blockFirst = new int[blocks + 1];
    for (int j = 0; j < workers; j++) {
      for (int b = firstBlock[j]; b < firstBlock[j + 1]; b++) {
        blockFirst[b] = bounds[j] + (b - firstBlock[j]) * block;
      }
    }
    blockFirst[blocks] = bounds[workers];
    // The block of an edge: its target's partition's first block plus the offset's quotient.
    int m = off[size];
    start = new int[blocks + 1];
    int[] blockOf = new int[m];
    for (int e = 0; e < m; e++) {
      int t = targets[e];
      int j = 0;
      while (t >= bounds[j + 1]) {
        j++;
      }
      int b = firstBlock[j] + (t - bounds[j]) / block;
      blockOf[e] = b;
      start[b + 1]++;
    }
    for (int b = 0; b < blocks; b++) {
      start[b + 1] += start[b];
    }
    int[] cursor = Arrays.copyOf(start, blocks);
    source = new int[m];
    target = new char[m];
    for (int v = 0; v < size; v++) {
      for (int e = off[v]; e < off[v + 1]; e++) {
        int b = blockOf[e];
        int k = cursor[b]++;
        source[k] = v;
        target[k] = (char) (targets[e] - blockFirst[b]);
      }
    }
    // The reached targets: one pass over the edges to mark, one over the ids to list.
    int n = bounds[workers];
    boolean[] seen = new boolean[n];
    int distinct = 0;
    for (int e = 0; e < m; e++) {
      int t = targets[e];
      if (!seen[t]) {
        seen[t] = true;
        distinct++;
      }
    }
    reachStart = new int[blocks + 1];
    reached = new char[distinct];
    int r = 0;
    for (int b = 0; b < blocks; b++) {
      int base = blockFirst[b];
      for (int t = base; t < blockFirst[b + 1]; t++) {
        if (seen[t]) {
          reached[r++] = (char) (t - base);
        }
      }
      reachStart[b + 1] = r;
    }
  }

  /** The distinct targets in partition j that the edges reach (its mailbox segment's need). */
  int reachedIn(int j) {
    return reachStart[firstBlock[j + 1]] - reachStart[firstBlock[j]];
  }
}
