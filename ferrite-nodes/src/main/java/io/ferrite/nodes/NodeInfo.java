package io.ferrite.nodes;

import io.ferrite.kernel.proto.BlockRef;
import java.util.List;

/**
 * What the master says about a node: a snapshot at the time of the call.
 *
 * @param id the node's stable id (its blocks are owned by {@code nodes:<id>})
 * @param path the path it was found at
 * @param type its type
 * @param size bytes of data visible to readers (File, KeyValue); children for containers
 * @param mtime last modification, epoch milliseconds
 * @param checksum {@link io.ferrite.fabric.verify.Checksum64} of a KeyValue's value (0 otherwise)
 * @param storageClass preferred storage class ("" = the cluster's order)
 * @param location location hint ("" = none)
 * @param enumerable false for a non-enumerable Table
 * @param writing whether a session holds the write lease
 * @param blockCount blocks mapped to the node
 * @param firstBlock index of {@code blocks.get(0)}
 * @param blocks some of the node's blocks, from {@code firstBlock} on
 * @param inline a small KeyValue's value kept in the metadata, or null
 * @param lostBlocks how many of its blocks were lost (their server came back without them): 0 for a
 *     node whose data is all there
 * @param lost the byte ranges of its data that were lost, in order (empty when none, or when the
 *     lost blocks lay past its size: held ahead by a writer); reads of them answer {@code
 *     DATA_LOST}, reads of the rest work
 * @param replicas copies of each block (1, 2 or 3), each on another memory server; {@code blocks}
 *     then holds {@code replicas} refs per block, copy {@code k} of block {@code firstBlock + i} at
 *     {@code i * replicas + k}
 * @param missingCopies copies not there now (lost, or on a server declared DEAD) that
 *     re-replication is making again: 0 for a node at its full count (and for one copy: a loss
 *     there is {@code lost})
 * @param ephemeral whether this is an ephemeral Directory: removed with everything in it when the
 *     session that created it ends ({@link CreateOptions#ephemeral})
 */
public record NodeInfo(
    long id,
    String path,
    NodeType type,
    long size,
    long mtime,
    long checksum,
    String storageClass,
    String location,
    boolean enumerable,
    boolean writing,
    int blockCount,
    int firstBlock,
    List<BlockRef> blocks,
    byte[] inline,
    int lostBlocks,
    List<LostRange> lost,
    int replicas,
    int missingCopies,
    boolean ephemeral) {

  /** Whether some copies are missing (see {@link #missingCopies}). */
  public boolean underReplicated() {
    return missingCopies > 0;
  }

  /** Bytes {@code [from, to)} of a node's data that were lost. */
  public record LostRange(long from, long to) {
    @Override
    public String toString() {
      return "bytes " + from + "-" + to;
    }
  }

  /** Whether some of the node's blocks were lost (see {@link #lost}). */
  public boolean isLost() {
    return lostBlocks > 0;
  }

  /** The first lost range that overlaps {@code [from, to)}, or null. */
  public LostRange lostIn(long from, long to) {
    for (LostRange r : lost) {
      if (r.from() < to && from < r.to()) {
        return r;
      }
    }
    return null;
  }

  /** Bytes of data lost (the sum of {@link #lost}). */
  public long lostBytes() {
    long b = 0;
    for (LostRange r : lost) {
      b += r.to() - r.from();
    }
    return b;
  }
}
