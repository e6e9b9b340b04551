package io.ferrite.kernel.proto;

import io.ferrite.fabric.RegionRef;

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
}
