package io.ferrite.nodes;

/**
 * How a node is created.
 *
 * @param storageClass the preferred storage class (affinity, paper §4): blocks come from it first
 *     and spill to the next class in the cluster's order only when it is full cluster-wide; ""
 *     follows the cluster's order (dram, then disk)
 * @param location a location hint ("" for none): the node's blocks come first from the memory
 *     servers it names — a server name, a host identity ({@code hostname/boot-id/net:inode}, or its
 *     {@code hostname/boot-id} prefix) or a host name — within each storage class, and from the
 *     others only when those are full (paper §4: a location class)
 * @param enumerable false for a non-enumerable Table (listing returns nothing, creates are cheaper)
 */
public record CreateOptions(String storageClass, String location, boolean enumerable) {
  public static final CreateOptions DEFAULT = new CreateOptions("", "", true);

  public CreateOptions {
    if (storageClass == null || location == null) {
      throw new IllegalArgumentException(
          "storageClass and location: null (expected: \"\" for none)");
    }
  }

  public static CreateOptions inClass(String storageClass) {
    return new CreateOptions(storageClass, "", true);
  }

  /** Blocks preferably on the servers {@code location} names (see the record's description). */
  public static CreateOptions at(String location) {
    return new CreateOptions("", location, true);
  }

  public CreateOptions withLocation(String location) {
    return new CreateOptions(storageClass, location, enumerable);
  }

  public CreateOptions nonEnumerable() {
    return new CreateOptions(storageClass, location, false);
  }
}
