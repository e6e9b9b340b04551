package io.ferrite.memory.master;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.TreeSet;

/** An allocation: an address range of a namespace bound to chunks (RStore §III-C). */
final class Alloc {
  /** {@code alloc} flag: a copy-on-write allocation (§III-G). */
  static final int FLAG_COW = 1;

  final long address;
  final long length;
  final int flags;

  /** Data chunks in address order; for COW, then the metadata chunks (8 B per data chunk). */
  final List<Chunk> chunks;

  final int dataChunks;
  int maps;

  /** COW: the published generation (0 = as allocated). */
  long generation;

  /** COW: locations replaced by the publish of generation G, kept for mappings older than G. */
  final TreeMap<Long, List<Chunk>> retired = new TreeMap<>();

  /** COW: the writer lease, 0 = none. */
  long lease;

  /** Memory servers declared DEAD that held a chunk of this allocation; empty = intact. */
  final TreeSet<Integer> lostServers = new TreeSet<>();

  /**
   * Blocks holding a chunk of this allocation that the kernel declared lost (their region is gone:
   * a clean stop or restart of the server deletes its DRAM regions): lost for good. Their chunks
   * are in no namespace's free list and never go back to one (the same block key may come back with
   * a new rkey and belong to someone else).
   */
  final TreeSet<Key> lostBlocks = new TreeSet<>();

  Alloc(long address, long length, int flags, List<Chunk> chunks, int dataChunks) {
    this.address = address;
    this.length = length;
    this.flags = flags;
    this.chunks = new ArrayList<>(chunks);
    this.dataChunks = dataChunks;
  }

  boolean cow() {
    return (flags & FLAG_COW) != 0;
  }

  boolean lost() {
    return !lostServers.isEmpty() || !lostBlocks.isEmpty();
  }

  /** "server 1 region 7, server 2 region 3": the regions of {@link #lostBlocks}. */
  String lostRegions() {
    java.util.Set<String> out = new java.util.LinkedHashSet<>();
    for (Key k : lostBlocks) {
      out.add("server " + k.server() + " region " + k.region());
    }
    return String.join(", ", out);
  }

  @Override
  public String toString() {
    return "[0x" + Long.toHexString(address) + ", +" + length + ")";
  }
}
