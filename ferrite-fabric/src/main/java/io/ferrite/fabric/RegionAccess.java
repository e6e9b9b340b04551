package io.ferrite.fabric;

/** The checks every fabric makes before a one-sided op touches a region. */
public final class RegionAccess {
  private RegionAccess() {}

  /**
   * Returns region {@code regionId} of {@code table} if {@code rkey} grants {@code access} on
   * {@code [offset, offset + len)} ({@link MappedRegion#check}); otherwise throws the {@link
   * FerriteException} to answer with. Touches no memory.
   */
  public static MappedRegion resolve(
      RegionTable table, int regionId, long rkey, long offset, long len, Access access) {
    MappedRegion r = table.get(regionId);
    if (r == null) {
      throw new FerriteException(ErrorCode.NO_SUCH_REGION, "no region " + regionId);
    }
    ErrorCode c = r.check(rkey, offset, len, access);
    if (c != ErrorCode.OK) {
      throw new FerriteException(c, r.describe(c, offset, len));
    }
    return r;
  }
}
