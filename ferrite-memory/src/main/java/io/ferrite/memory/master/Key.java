package io.ferrite.memory.master;

import io.ferrite.kernel.proto.BlockRef;

/** A block's identity (its rkey and length come with the {@link BlockRef}). */
record Key(int server, int region, long offset) implements Comparable<Key> {
  static Key of(BlockRef b) {
    return new Key(b.serverId(), b.regionId(), b.offset());
  }

  @Override
  public int compareTo(Key o) {
    int c = Integer.compare(server, o.server);
    if (c == 0) {
      c = Integer.compare(region, o.region);
    }
    return c != 0 ? c : Long.compare(offset, o.offset);
  }
}
