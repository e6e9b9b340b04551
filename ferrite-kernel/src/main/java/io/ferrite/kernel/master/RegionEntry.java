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

  RegionEntry(RegionInfo info, long blockSize) {
    this.info = info;
    this.blocks = info.isBlockPool() ? (int) (info.ref().length() / blockSize) : 0;
    this.used = new BitSet(blocks);
    this.session = new long[blocks];
    this.owner = new String[blocks];
  }

  int free() {
    return blocks - usedCount;
  }
}
