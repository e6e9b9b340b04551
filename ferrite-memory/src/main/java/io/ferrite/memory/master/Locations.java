package io.ferrite.memory.master;

import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.Wire;
import io.ferrite.memory.proto.MemoryProtocol;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Chunk locations as (region index, offset) pairs over one table of region refs: one ref per block,
 * since each block's ref carries that block's own key (a block key grants nothing in the next block
 * of the same region, so chunks of two blocks never share an entry).
 */
final class Locations {
  private final Ns ns;
  private final Map<Key, Integer> index = new HashMap<>();
  private final List<RegionRef> regions = new ArrayList<>();

  Locations(Ns ns) {
    this.ns = ns;
  }

  Wire.Writer chunks(List<Chunk> list) {
    Wire.Writer w = new Wire.Writer(list.size() * 12 + 4).i32(list.size());
    for (Chunk c : list) {
      BlockRef b = ns.blocks.get(c.block());
      Key rk = new Key(b.serverId(), b.regionId(), b.offset());
      Integer idx = index.get(rk);
      if (idx == null) {
        idx = regions.size();
        index.put(rk, idx);
        regions.add(b.region());
      }
      w.i32(idx).i64(b.offset() + c.inBlock());
    }
    return w;
  }

  void regions(Wire.Writer w) {
    w.i32(regions.size());
    for (RegionRef rr : regions) {
      MemoryProtocol.writeRegion(w, rr);
    }
  }

  /** The parts of an answer, one after the other. */
  static ByteBuffer concat(Wire.Writer... parts) {
    List<ByteBuffer> bufs = new ArrayList<>();
    int n = 0;
    for (Wire.Writer p : parts) {
      ByteBuffer b = p.toBuffer();
      bufs.add(b);
      n += b.remaining();
    }
    ByteBuffer out = ByteBuffer.allocate(n).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    bufs.forEach(out::put);
    return out.flip();
  }
}
