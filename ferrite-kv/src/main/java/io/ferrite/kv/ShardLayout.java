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
