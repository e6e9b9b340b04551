package io.ferrite.fabric;

/**
 * Names one registered region and carries the capability to access it, like an RDMA (address,
 * steering tag) pair.
 *
 * @param serverId the memory server that owns the region
 * @param regionId the region's id, unique within its server
 * @param rkey the 64-bit key checked on every one-sided op: the region's owner key, its read key,
 *     or a block's key (see {@link Capabilities})
 * @param length the region's size in bytes
 */
public record RegionRef(int serverId, int regionId, long rkey, long length) {
  public RegionRef {
    if (length < 0) {
      throw new IllegalArgumentException("length: " + length + " (expected: >= 0)");
    }
  }

  @Override
  public String toString() {
    // Never print the rkey: it is a capability.
    return "region " + serverId + "/" + regionId + " (" + length + " B)";
  }
}
