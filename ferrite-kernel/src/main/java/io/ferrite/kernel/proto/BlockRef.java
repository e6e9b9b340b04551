package io.ferrite.kernel.proto;

import io.ferrite.fabric.RegionRef;

/**
 * One block handed out by the master: a slice {@code [offset, offset + length)} of a region. The
 * region ref carries the rkey, so a block ref is a capability: whoever holds it can read and write
 * the block through any fabric.
 *
 * @param region the region holding the block
 * @param offset the block's start within the region (a multiple of the block size)
 * @param length the block's length (the cluster's block size)
 * @param storageClass the storage class of the region, e.g. {@code dram} or {@code disk}
 */
public record BlockRef(RegionRef region, long offset, long length, String storageClass) {
  public BlockRef {
    if (offset < 0 || length <= 0 || offset > region.length() - length) {
      throw new IllegalArgumentException(
          "block offset: "
              + offset
              + ", length: "
              + length
              + " (expected: inside region of "
              + region.length()
              + " B)");
    }
  }

  public int serverId() {
    return region.serverId();
  }

  public int regionId() {
    return region.regionId();
  }

  @Override
  public String toString() {
    return "block "
        + region.serverId()
        + "/"
        + region.regionId()
        + "@"
        + offset
        + " ("
        + length
        + " B, "
        + storageClass
        + ")";
  }
}
