package io.ferrite.kernel.master;

import io.ferrite.kernel.proto.RegionInfo;
import java.util.BitSet;

/**
 * The master's record of one region: which of its blocks are allocated, and to whom (a session id,
 * or a persistent owner name). A service region has no blocks. Guarded by the {@link MasterState}
 * lock.
 */
final class RegionEntry {
  final RegionInfo info;
  final int blocks;
  final BitSet used;
  final long[] session;
  final String[] owner;
  int usedCount;

  /**
   * Per block, its generation: bumped by every free, so the block's key ({@link
   * io.ferrite.kernel.proto.BlockKeyMint}) changes. Journaled (replay bumps it again; snapshots
   * carry it).
   */
  final int[] generation;

  /**
   * Free blocks whose server may still honour an earlier generation's key: not allocated until a
   * REVOKE succeeded or the server registered again. Transient (recomputed on recovery).
   */
  final BitSet quarantined;

  int quarantinedCount;

  RegionEntry(RegionInfo info, long blockSize) {
    this.info = info;
    this.blocks = info.isBlockPool() ? (int) (info.ref().length() / blockSize) : 0;
    this.used = new BitSet(blocks);
    this.session = new long[blocks];
    this.owner = new String[blocks];
    this.generation = new int[blocks];
    this.quarantined = new BitSet(blocks);
  }

  /** Blocks that can be allocated now: neither used nor quarantined. */
  int free() {
    return blocks - usedCount - quarantinedCount;
  }

  void quarantine(int i) {
    if (!quarantined.get(i)) {
      quarantined.set(i);
      quarantinedCount++;
    }
  }

  void unquarantine(int i) {
    if (quarantined.get(i)) {
      quarantined.clear(i);
      quarantinedCount--;
    }
  }

  /** The first block at or after {@code from} that can be allocated, or {@code blocks}. */
  int nextAllocatable(int from) {
    int i = used.nextClearBit(from);
    while (i < blocks && quarantined.get(i)) {
      i = used.nextClearBit(i + 1);
    }
    return Math.min(i, blocks);
  }
}
