package io.ferrite.kv;

import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.proto.Wire;
import java.util.ArrayList;
import java.util.List;

/**
 * What a client caches to read one shard one-sided: the entry region, the extent regions (a
 * pointer's region number indexes this list) and the layout epoch they belong to.
 */
public record ShardLayout(
    long tableId, int shard, long epoch, int slots, RegionRef entries, List<RegionRef> extents) {
  /**
   * Where a replicated shard's table region (either layout's header) holds its server's <b>lease
   * word</b> (docs/KV.md "Leases"): the {@code System.nanoTime()} until which the server may serve
   * the shard, 0 while it may not (lapsed, not granted yet, retired). The server writes it with
   * release ordering (its {@code KvLease} thread, on every renewal); a same-host client reading the
   * region from its own mapping (shm), which the server's per-op lease check does not reach, reads
   * it after its data and refuses the data past it. Native byte order (the server's {@code
   * MappedRegion.putLongRelease}): the word never leaves the host. Unreplicated shards leave it 0
   * and nobody reads it.
   */
  public static final int LEASE_OFFSET = 32;

  public void write(Wire.Writer w) {
    w.i64(tableId).i32(shard).i64(epoch).i32(slots);
    ref(w, entries);
    w.i32(extents.size());
    for (RegionRef r : extents) {
      ref(w, r);
    }
  }

  private static void ref(Wire.Writer w, RegionRef r) {
    w.i32(r.regionId()).i64(r.rkey()).i64(r.length());
  }

  private static RegionRef ref(Wire.Reader r, int serverId) {
    return new RegionRef(serverId, r.i32("regionId"), r.i64("rkey"), r.i64("length"));
  }

  public static ShardLayout read(Wire.Reader r, int serverId) {
    long id = r.i64("tableId");
    int shard = r.i32("shard");
    long epoch = r.i64("epoch");
    int slots = r.i32("slots");
    RegionRef entries = ref(r, serverId);
    int n = r.count("extents", 1024);
    List<RegionRef> ext = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      ext.add(ref(r, serverId));
    }
    return new ShardLayout(id, shard, epoch, slots, entries, List.copyOf(ext));
  }
}
