package io.ferrite.fabric;

import java.util.Collection;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The regions a server has registered with its fabrics, by id. Lookups are lock-free; fabrics call
 * {@link #get} on every one-sided op.
 */
public final class RegionTable {
  private final ConcurrentHashMap<Integer, MappedRegion> regions = new ConcurrentHashMap<>();

  /** Registers {@code region}; fails with {@link ErrorCode#CONFLICT} if its id is taken. */
  public void register(MappedRegion region) {
    if (regions.putIfAbsent(region.id(), region) != null) {
      throw new FerriteException(ErrorCode.CONFLICT, "region id " + region.id() + " is taken");
    }
  }

  /** Removes region {@code id}; later ops on it fail with {@link ErrorCode#NO_SUCH_REGION}. */
  public MappedRegion deregister(int id) {
    return regions.remove(id);
  }

  /** The region, or null. */
  public MappedRegion get(int id) {
    return regions.get(id);
  }

  public Collection<MappedRegion> all() {
    return regions.values();
  }

  /** A ref carrying region {@code regionId}'s read key: reads of the whole region. */
  public RegionRef readRef(int serverId, int regionId) {
    MappedRegion r = regions.get(regionId);
    if (r == null) {
      throw new FerriteException(ErrorCode.NO_SUCH_REGION, "no region " + regionId);
    }
    return new RegionRef(serverId, r.id(), r.readKey(), r.length());
  }

  /** A ref carrying region {@code regionId}'s owner key: every op on the whole region. */
  public RegionRef ref(int serverId, int regionId) {
    MappedRegion r = regions.get(regionId);
    if (r == null) {
      throw new FerriteException(ErrorCode.NO_SUCH_REGION, "no region " + regionId);
    }
    return new RegionRef(serverId, r.id(), r.rkey(), r.length());
  }
}
