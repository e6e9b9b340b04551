package io.ferrite.kernel.master;

import io.ferrite.kernel.proto.BlockRef;
import io.ferrite.kernel.proto.MemberInfo;
import java.util.List;
import java.util.function.Function;

/** What a {@link MasterExtension} can do on the master. */
public interface MasterContext {
  /**
   * Runs {@code body} under the master's metadata lock, so that what the extension checks and what
   * it commits form one atomic step with respect to every other mutation of the cluster's metadata.
   * Keep bodies short: they block every metadata operation while they run. The lock is held across
   * the journal's write of each record, not its fsync (group commit).
   */
  <T> T mutate(Function<Mutation, T> body);

  /**
   * The master's meters (served at {@code /metrics}), where the extension registers its {@code
   * ferrite.face.ops} (see {@link io.ferrite.kernel.ops.FaceMeters}). The default is a registry
   * that keeps nothing.
   */
  default io.micrometer.core.instrument.MeterRegistry metrics() {
    return io.ferrite.kernel.ops.Metrics.none();
  }

  /** The block size of the cluster, in bytes. */
  long blockSize();

  /**
   * The master process's configuration, where an extension reads its own keys ({@link
   * io.ferrite.kernel.config.ConfigKeys}); the defaults for a master state made without one
   * (tests).
   */
  default io.ferrite.kernel.config.FerriteConfig config() {
    return io.ferrite.kernel.config.FerriteConfig.defaults();
  }

  /**
   * Creates a region of {@code length} bytes (a multiple of 8) that the master itself serves on its
   * endpoints as node 0, for clients to read one-sided (over shm: plain memory loads on their own
   * mapping of the file); the extension writes it through {@link MasterRegion#memory}. Transient:
   * gone when the master stops, and a restarted master makes a new one under a new rkey, so what a
   * client kept of the old one fails to read. Call from {@link MasterExtension#start}.
   *
   * @throws io.ferrite.fabric.FerriteException {@code UNSUPPORTED} where the master has no place
   *     for one (an extension should then work without it)
   */
  default MasterRegion createRegion(String name, long length) {
    throw new io.ferrite.fabric.FerriteException(
        io.ferrite.fabric.ErrorCode.UNSUPPORTED, "this master serves no regions");
  }

  /**
   * A region served by the master.
   *
   * @param memory the master's mapping, to write what clients read
   * @param ref what clients present to read it (server id 0): the region's read key, which reads
   *     every byte and writes none
   */
  record MasterRegion(io.ferrite.fabric.MappedRegion memory, io.ferrite.fabric.RegionRef ref) {}

  /**
   * Opens a fabric connection to memory server {@code serverId} with the master's credentials (as
   * the master's revocations do), on a fabric the server listens on (shm last): for an extension's
   * own one-sided reads and writes of blocks it owns (copying a block to a new one). Blocks while
   * it connects: never call it under the metadata lock ({@link #mutate}). The caller closes it.
   *
   * @throws io.ferrite.fabric.FerriteException {@code UNAVAILABLE} when the server is unknown, DEAD
   *     or unreachable; {@code UNSUPPORTED} where the master has no fabrics (tests)
   */
  default io.ferrite.fabric.FabricConnection connect(int serverId) {
    throw new io.ferrite.fabric.FerriteException(
        io.ferrite.fabric.ErrorCode.UNSUPPORTED, "this master connects to no server");
  }

  /** The steps a mutation may take. Valid only inside the {@code mutate} body that received it. */
  interface Mutation {
    /**
     * Journals {@code record} for this extension, then {@link MasterExtension#apply}s it. The
     * record is written now and fsynced by the journal's group commit; no RPC answer of the master
     * leaves before the fsync covering every record written when the handler completed, so the
     * extension's answers (and everyone's reads of what it applied) are acknowledged only once
     * durable. An effect outside an RPC answer (a write to a master region, a call out) is not held
     * back: it may show state that a crash then loses.
     */
    void commit(byte[] record);

    /**
     * Allocates {@code count} blocks owned persistently by {@code owner} (which should start with
     * the extension's name), all or none, on behalf of {@code sessionId} (which must be open). See
     * {@link MasterState#allocate} for class preference and spill.
     */
    default List<BlockRef> allocate(
        long sessionId, int count, String storageClass, boolean strict, String owner) {
      return allocate(sessionId, count, storageClass, strict, owner, "");
    }

    /**
     * Like {@link #allocate(long, int, String, boolean, String)}, on the servers {@code location}
     * names first (a server name, a host identity {@code hostname/boot-id}, or a host name; "" for
     * no preference), within each storage class; the other servers only when those are full.
     */
    List<BlockRef> allocate(
        long sessionId,
        int count,
        String storageClass,
        boolean strict,
        String owner,
        String location);

    /** Frees blocks that {@code owner} owns, all or none; returns how many. */
    int free(String owner, List<BlockRef> blocks);

    /** The blocks {@code owner} owns. */
    List<BlockRef> owned(String owner);

    /** Whether {@code sessionId} is an open session. */
    boolean sessionOpen(long sessionId);

    /** The memory servers with their state. */
    List<MemberInfo> members();
  }
}
