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
 * @param replicas copies of each block of a File, 1 (the default) to {@value
 *     NodesProtocol#MAX_REPLICAS}, each on another memory server: writes complete at every copy,
 *     reads fall back to another copy, and the master makes lost copies again (docs/NODES.md,
 *     "Replication")
 * @param ephemeral for a Directory only: owned by the creating client's session, and removed with
 *     its whole subtree by the master when that session ends — closed, or its lease expired because
 *     the client died (ZooKeeper's ephemeral nodes; docs/NODES.md, "Ephemeral directories"). Files
 *     being written inside by other sessions are aborted, and every block is freed.
 */
public record CreateOptions(
    String storageClass, String location, boolean enumerable, int replicas, boolean ephemeral) {
  public static final CreateOptions DEFAULT = new CreateOptions("", "", true, 1, false);

  public CreateOptions {
    if (storageClass == null || location == null) {
      throw new IllegalArgumentException(
          "storageClass and location: null (expected: \"\" for none)");
    }
    if (replicas < 1 || replicas > NodesProtocol.MAX_REPLICAS) {
      throw new IllegalArgumentException(
          "replicas: " + replicas + " (expected: 1 to " + NodesProtocol.MAX_REPLICAS + ")");
    }
  }

  /** Not ephemeral. */
  public CreateOptions(String storageClass, String location, boolean enumerable, int replicas) {
    this(storageClass, location, enumerable, replicas, false);
  }

  /** Without replicas (one copy of each block). */
  public CreateOptions(String storageClass, String location, boolean enumerable) {
    this(storageClass, location, enumerable, 1);
  }

  public static CreateOptions inClass(String storageClass) {
    return new CreateOptions(storageClass, "", true);
  }

  /** Blocks preferably on the servers {@code location} names (see the record's description). */
  public static CreateOptions at(String location) {
    return new CreateOptions("", location, true);
  }

  /** {@code n} copies of each block, each on another memory server (see {@link #replicas}). */
  public static CreateOptions replicated(int n) {
    return DEFAULT.withReplicas(n);
  }

  public CreateOptions withLocation(String location) {
    return new CreateOptions(storageClass, location, enumerable, replicas, ephemeral);
  }

  public CreateOptions withReplicas(int n) {
    return new CreateOptions(storageClass, location, enumerable, n, ephemeral);
  }

  public CreateOptions nonEnumerable() {
    return new CreateOptions(storageClass, location, false, replicas, ephemeral);
  }

  /** An ephemeral Directory (see {@link #ephemeral}); the master refuses it for other types. */
  public CreateOptions withEphemeral() {
    return new CreateOptions(storageClass, location, enumerable, replicas, true);
  }
}
