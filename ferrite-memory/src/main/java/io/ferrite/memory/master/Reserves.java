package io.ferrite.memory.master;

import io.ferrite.fabric.ErrorCode;
import io.ferrite.fabric.FerriteException;
import io.ferrite.kernel.master.MasterContext;
import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MasterProtocol;
import io.ferrite.kernel.proto.Wire;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Memory prepared for a namespace (RStore §IV-B): {@code reserve} takes ready blocks from the
 * face's cache (the namespace's own first) before fresh ones from the kernel, {@code release} and
 * delete put whole free blocks in the cache, and the cache keeps at most {@code cacheLimitBlocks}
 * (the rest goes back to the kernel). See {@link MemoryState} for whose data a cached block holds.
 */
final class Reserves {
  private final MasterContext ctx;
  private final MemoryState state;
  private final int cacheLimitBlocks;

  Reserves(MasterContext ctx, MemoryState state, int cacheLimitBlocks) {
    this.ctx = ctx;
    this.state = state;
    this.cacheLimitBlocks = cacheLimitBlocks;
  }

  ByteBuffer reserve(Wire.Reader r) {
    long nsId = r.i64("nsId");
    long bytes = MemoryMaster.positive("reserve bytes", r.i64("bytes"));
    long session = r.i64("session");
    r.end();
    long bs = ctx.blockSize();
    long count = (bytes + bs - 1) / bs;
    if (count > MasterProtocol.MAX_LIST) {
      throw new FerriteException(
          ErrorCode.TOO_LARGE,
          "reserve: " + bytes + " B (expected: at most " + MasterProtocol.MAX_LIST * bs + " B)");
    }
    return ctx.mutate(
        m -> {
          Ns ns = state.ns(nsId);
          MemoryMaster.session(m, session);
          // The namespace's own cached blocks first: they hold only its own bytes and go back as
          // they are. Any other cached block is zeroed by the client with the fresh ones (see
          // MemoryState: no bytes leak from one namespace to another through the cache).
          List<BlockRef> cached = new ArrayList<>();
          List<BlockRef> foreign = new ArrayList<>();
          for (Map.Entry<Key, BlockRef> e : state.cache.entrySet()) {
            if (cached.size() == count) {
              break;
            }
            if (Long.valueOf(ns.id).equals(state.cacheFrom.get(e.getKey()))) {
              cached.add(e.getValue());
            }
          }
          for (Map.Entry<Key, BlockRef> e : state.cache.entrySet()) {
            if (cached.size() + foreign.size() == count) {
              break;
            }
            if (!Long.valueOf(ns.id).equals(state.cacheFrom.get(e.getKey()))) {
              foreign.add(e.getValue());
            }
          }
          int fromCache = cached.size() + foreign.size();
          List<BlockRef> fresh = List.of();
          int more = (int) count - fromCache;
          if (more > 0) {
            try {
              fresh = m.allocate(session, more, "", false, MemoryState.OWNER);
            } catch (FerriteException e) {
              throw new FerriteException(
                  e.code(),
                  "reserve "
                      + bytes
                      + " B for namespace '"
                      + ns.name
                      + "' ("
                      + fromCache
                      + " cached block(s) ready, "
                      + more
                      + " more needed): "
                      + e.detail(),
                  e);
            }
          }
          List<BlockRef> all = new ArrayList<>(cached);
          all.addAll(foreign);
          all.addAll(fresh);
          m.commit(MemoryRecords.reserve(ns.id, all));
          List<BlockRef> prepare = new ArrayList<>(foreign);
          prepare.addAll(fresh);
          Wire.Writer w = new Wire.Writer().i64(ns.reservedBytes()).i32(fromCache);
          MasterProtocol.writeBlocks(w, prepare);
          return w.toBuffer();
        });
  }

  ByteBuffer release(Wire.Reader r) {
    long nsId = r.i64("nsId");
    long bytes = MemoryMaster.positive("release bytes", r.i64("bytes"));
    r.end();
    long bs = ctx.blockSize();
    long count = (bytes + bs - 1) / bs;
    return ctx.mutate(
        m -> {
          Ns ns = state.ns(nsId);
          List<Key> keys = ns.freeBlocks((int) Math.min(count, 1 << 30));
          if (keys.size() < count) {
            throw new FerriteException(
                ErrorCode.CONFLICT,
                "release "
                    + bytes
                    + " B from namespace '"
                    + ns.name
                    + "': only "
                    + keys.size() * bs
                    + " B of its "
                    + ns.reservedBytes()
                    + " B reserve are in blocks with nothing allocated (free allocations first)");
          }
          m.commit(MemoryRecords.release(ns.id, keys));
          trimCache(m);
          return new Wire.Writer().i64(ns.reservedBytes()).toBuffer();
        });
  }

  /** Gives cached blocks beyond the limit back to the kernel. */
  void trimCache(MasterContext.Mutation m) {
    int over = state.cache.size() - cacheLimitBlocks;
    if (over <= 0) {
      return;
    }
    List<BlockRef> drop = new ArrayList<>(over);
    List<Key> keys = new ArrayList<>(over);
    for (Map.Entry<Key, BlockRef> e : state.cache.entrySet()) {
      if (drop.size() == over) {
        break;
      }
      drop.add(e.getValue());
      keys.add(e.getKey());
    }
    m.free(MemoryState.OWNER, drop);
    m.commit(MemoryRecords.cacheDrop(keys));
  }
}
