package io.ferrite.kernel.proto;

import io.ferrite.fabric.RegionRef;
import java.util.Map;
import java.util.TreeMap;

/**
 * One entry of the master's region directory.
 *
 * @param ref the region (server, id, rkey, length)
 * @param storageClass {@code dram}, {@code disk} or a user-defined class
 * @param service empty for a region of the block pool; otherwise the name of the hosted service
 *     that created it (its blocks are never handed out by the master)
 */
public record RegionInfo(RegionRef ref, String storageClass, String service) {
  public boolean isBlockPool() {
    return service.isEmpty();
  }

  /**
   * Bytes of the service regions among {@code regions}, per storage class and service (the face
   * that created them: {@code kv}, ...), both sorted by name; block-pool regions are left out. The
   * one place this sum is made: the memory server's accounting ({@code RegionStore}) and the
   * master's {@link ClusterStatus} both call it, so they cannot disagree.
   */
  public static Map<String, Map<String, Long>> serviceBytes(Iterable<RegionInfo> regions) {
    Map<String, Map<String, Long>> out = new TreeMap<>();
    for (RegionInfo r : regions) {
      if (!r.isBlockPool()) {
        out.computeIfAbsent(r.storageClass(), c -> new TreeMap<>())
            .merge(r.service(), r.ref().length(), Long::sum);
      }
    }
    return out;
  }
}
