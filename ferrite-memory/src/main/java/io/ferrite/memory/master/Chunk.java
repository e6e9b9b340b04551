package io.ferrite.memory.master;

/** A chunk: {@code chunkSize} bytes at {@code inBlock} within a reserved block. */
record Chunk(Key block, long inBlock) implements Comparable<Chunk> {
  @Override
  public int compareTo(Chunk o) {
    int c = block.compareTo(o.block);
    return c != 0 ? c : Long.compare(inBlock, o.inBlock);
  }
}
