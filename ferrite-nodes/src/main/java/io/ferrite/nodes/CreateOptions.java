package io.ferrite.nodes;

/**
 * How a node is created.
 *
 * @param storageClass the preferred storage class (affinity, paper §4): blocks come from it first
 *     and spill to the next class in the cluster's order only when it is full cluster-wide; ""
 *     follows the cluster's order (dram, then disk)
 * @param location a location hint kept with the node ("" for none); the kernel's allocator does not
 *     place by location yet
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

  public CreateOptions nonEnumerable() {
    return new CreateOptions(storageClass, location, false);
  }
}
