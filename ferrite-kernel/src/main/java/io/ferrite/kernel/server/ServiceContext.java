package io.ferrite.kernel.server;

import io.ferrite.fabric.MappedRegion;
import io.ferrite.fabric.RegionRef;
import io.ferrite.kernel.config.FerriteConfig;
import io.ferrite.kernel.proto.MasterStub;
import java.nio.file.Path;

/** What a hosted {@link FerriteService} gets from its memory server. Thread-safe. */
public interface ServiceContext {
  /** The memory server's id, as assigned by the master. */
  int serverId();

  /**
   * This server process's incarnation, random per process and never 0: what it registers with
   * ({@link MasterStub#register}), so a master extension can tell whether a service's call comes
   * from the process it saw register (the kv face's {@code LOG_LOST}). 0 where unknown.
   */
  default long incarnation() {
    return 0;
  }

  /** The memory server's configuration. */
  FerriteConfig config();

  /**
   * Creates a region of {@code length} bytes in {@code storageClass} ({@code dram} or {@code disk})
   * owned by this service: registered with every fabric of the server (so one-sided ops reach it)
   * and with the master's region directory (never handed out as blocks). It is deleted when the
   * server stops. It counts against the server's {@code capacity.<class>}, with the block pool:
   * empty block-pool regions are retired to make room, and the space goes back to the pool when the
   * region is freed. Its file gets its space now.
   *
   * @throws io.ferrite.fabric.FerriteException NO_SPACE, before anything is made, if the capacity
   *     has no room (block-pool regions with blocks in use and other service regions hold it), or
   *     if the file system is full
   */
  MappedRegion createRegion(String storageClass, long length);

  /**
   * As {@link #createRegion(String, long)}, registered with master group {@code group} only (docs/
   * RESILIENCE.md, "Master groups"): the group that holds what the region serves (a kv table's
   * shard lives in its table's group), so that group, and no other, accounts for it and hears of
   * its loss. {@link #freeRegion} tells the same group.
   *
   * @throws io.ferrite.fabric.FerriteException INVALID_ARGUMENT if {@code group} is not one of the
   *     server's {@link #groups()}
   */
  default MappedRegion createRegion(String storageClass, long length, int group) {
    if (group != 0) {
      throw new io.ferrite.fabric.FerriteException(
          io.ferrite.fabric.ErrorCode.INVALID_ARGUMENT,
          "master group " + group + " (expected: 0: this server serves one group)");
    }
    return createRegion(storageClass, length);
  }

  /** How many master groups this server serves (its master URI's; 1 for one group). */
  default int groups() {
    return 1;
  }

  /**
   * The master group that holds {@code name} of {@code kind} ({@link
   * io.ferrite.kernel.proto.PlacementProtocol}, e.g. a kv table's name): group 0's placement
   * directory's answer, asked once per call (callers keep it: a placement never changes); 0 for a
   * name never placed (made before the cluster had groups, or not yet) and with one group, which
   * asks nothing.
   *
   * @throws io.ferrite.fabric.FerriteException UNAVAILABLE while group 0's master does not answer;
   *     INVALID_ARGUMENT if the name lives in a group this server's URI does not name
   */
  default int placement(String kind, String name) {
    return 0;
  }

  /**
   * Frees {@code region}, a region this service created: every fabric stops serving it (ops that
   * look it up from now on fail with {@link io.ferrite.fabric.ErrorCode#NO_SUCH_REGION}), its file
   * is deleted, the master's region directory forgets it, and the mapping is unmapped once no op in
   * flight holds it ({@link MappedRegion#release()}). The caller must have made whatever clients
   * may still read there safe to read (e.g. poisoned) and must not touch the region afterwards. Its
   * id is never given to another region by this process.
   *
   * @throws io.ferrite.fabric.FerriteException NO_SUCH_REGION if it is not a live region of this
   *     server (freed already), INVALID_ARGUMENT if it belongs to another service or the block pool
   */
  void freeRegion(MappedRegion region);

  /** The number of live regions this service created and their total length in bytes. */
  long[] regionUsage();

  /** The ref (with the owner key: every op) clients need to reach {@code region}. */
  RegionRef ref(MappedRegion region);

  /**
   * A ref carrying {@code region}'s read key ({@link io.ferrite.fabric.Capabilities#readOnly} of
   * its owner key): one-sided reads of the whole region, nothing else. Hand this to clients that
   * only read (kv readers).
   */
  default RegionRef readRef(MappedRegion region) {
    RegionRef owner = ref(region);
    return new RegionRef(owner.serverId(), owner.regionId(), region.readKey(), owner.length());
  }

  /**
   * When (System.nanoTime()) this server sent the newest registration or heartbeat its master
   * acknowledged, or empty before the first; with several master groups, the oldest of the groups'
   * newest (each group declares the server DEAD on its own), empty until every group acknowledged
   * one. No master can have declared this server DEAD before {@code server.dead.timeout} after that
   * instant: a face that must never serve after being declared DEAD (kv replicated shards,
   * docs/KV.md "Leases") serves only within a lease shorter than that, counted from here.
   */
  default java.util.OptionalLong masterAckSentNanos() {
    return java.util.OptionalLong.empty();
  }

  /**
   * The shortest {@code server.dead.timeout} (ms) a master of this server told it at registration,
   * or empty before one did (or from an older master): a face's lease derived from its own
   * configuration is cut to stay under it (a master configured with a shorter timeout than its
   * servers would otherwise promote a backup while the deposed copy still holds a lease).
   */
  default java.util.OptionalLong masterDeadTimeoutMillis() {
    return java.util.OptionalLong.empty();
  }

  /**
   * The master, over the server's current connection.
   *
   * @throws io.ferrite.fabric.FerriteException UNAVAILABLE while the server is reconnecting
   */
  MasterStub master();

  /**
   * The master of group {@code group} (docs/RESILIENCE.md "Master groups"), over the server's
   * current connection to it; group 0 is {@link #master()}.
   *
   * @throws io.ferrite.fabric.FerriteException INVALID_ARGUMENT if {@code group} is not one of the
   *     server's {@link #groups()}; UNAVAILABLE while that link is reconnecting
   */
  default MasterStub master(int group) {
    if (group != 0) {
      throw new io.ferrite.fabric.FerriteException(
          io.ferrite.fabric.ErrorCode.INVALID_ARGUMENT,
          "master group " + group + " (expected: 0: this server serves one group)");
    }
    return master();
  }

  /**
   * A connection to memory server {@code serverId}, for a service's calls to its peer service there
   * (a tree meganode split copying its right half to another server). The caller proves role SERVER
   * (this server's own credentials, as its master link), so the peer's server-only opcodes ({@link
   * io.ferrite.kernel.proto.Permissions}) admit it and still refuse a CLIENT. Pooled: one
   * connection per server, shared, never closed by the caller; one that closed (the peer stopped or
   * re-registered at a new address) is dialed again at the address the master's membership names
   * then. Blocks while it connects: call it from a service's own thread, not an inline handler.
   *
   * @throws io.ferrite.fabric.FerriteException UNAVAILABLE when the server is unknown, DEAD or
   *     unreachable, or this server is stopping; INVALID_ARGUMENT for this server's own id;
   *     UNSUPPORTED where the context has no fabrics (tests)
   */
  default io.ferrite.fabric.FabricConnection peer(int serverId) {
    throw new io.ferrite.fabric.FerriteException(
        io.ferrite.fabric.ErrorCode.UNSUPPORTED, "this server connects to no other server");
  }

  /**
   * The pooled connection to memory server {@code serverId} ({@link #peer}) if it is open now, else
   * null; never dials, never blocks (not even on the pool's lock, which a dialing thread holds):
   * for an inline handler that sends to a peer only when it can without waiting, and leaves the
   * rest to a thread of its own that may call {@link #peer}. Null too where the context has no
   * fabrics.
   */
  default io.ferrite.fabric.FabricConnection openPeer(int serverId) {
    return null;
  }

  /** A private directory for the service's own files, under the server's directory. */
  Path directory();

  /**
   * The memory server's meters (served at {@code /metrics}), where the service registers its {@code
   * ferrite.face.ops} and {@code ferrite.face.latency} (see {@link
   * io.ferrite.kernel.ops.FaceMeters}). The default is a registry that keeps nothing.
   */
  default io.micrometer.core.instrument.MeterRegistry metrics() {
    return io.ferrite.kernel.ops.Metrics.none();
  }
}
