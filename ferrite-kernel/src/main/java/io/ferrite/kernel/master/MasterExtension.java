package io.ferrite.kernel.master;

import io.ferrite.fabric.RpcContext;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The master half of a face: its node types, i.e. its own metadata journaled with the master's, and
 * its own RPC service on the master's endpoint. Found by {@link java.util.ServiceLoader} (list the
 * class in {@code META-INF/services/io.ferrite.kernel.master.MasterExtension}) or passed explicitly
 * to {@link Master#start}; the kernel knows no face.
 *
 * <h2>State and the journal</h2>
 *
 * An extension's metadata changes only through records it commits with {@link
 * MasterContext.Mutation#commit}: the record is made durable in the master's journal, then handed
 * to {@link #apply}. On restart the master replays the same records into {@link #apply} before
 * {@link #start}; a snapshot stores what {@link #snapshot} returns, which must rebuild the whole
 * state when applied to an empty extension. So {@code apply} must be deterministic and must not
 * fail on a record it once accepted.
 *
 * <p>Records of an extension that is not installed when the master recovers are kept verbatim (and
 * written into every snapshot), so running a master without a face loses none of its data.
 *
 * <h2>Threading</h2>
 *
 * {@link #apply}, {@link #snapshot}, {@link #sessionClosed}, {@link #serverDead} and {@link
 * #serverRegistered} run under the master's metadata lock, as does the body of every {@link
 * MasterContext#mutate}: the extension needs no lock of its own for state it only touches there.
 * {@link #handle} runs on the master's service executor, concurrently; {@link #handleInline} on the
 * thread that received the call.
 *
 * <p>The metadata lock is held across the journal's write of every mutation (not its fsync: group
 * commit) and by every mutation and the ticker, so an operation that takes it may wait. A read-only
 * operation that should not (an inline one) keeps what it reads under a lock of the extension's own
 * that {@link #apply} takes only while it changes memory. Whatever the handler, the master sends
 * its answer only once the journal is durable up to what was written when it completed, except an
 * answer {@link #handle} returns as a {@link ProvisionalAnswer}.
 */
public interface MasterExtension {
  /** The RPC service id on the master; 1 to 15 are the kernel's, faces use 16 and up. */
  int serviceId();

  /** A short name for logs, e.g. {@code nodes}. */
  String name();

  /** Applies one committed or replayed record (little-endian, position 0, read-only). */
  void apply(ByteBuffer record);

  /** Records that rebuild the current state from empty: the extension's part of a snapshot. */
  List<byte[]> snapshot();

  /** Runs once after recovery, before the master serves anyone. */
  void start(MasterContext context);

  /**
   * Handles one call to this extension's service. The request is valid until the returned future
   * completes; failing it with a {@link io.ferrite.fabric.FerriteException} sends that error.
   */
  CompletableFuture<ByteBuffer> handle(RpcContext caller, int opcode, ByteBuffer request);

  /**
   * Handles a call on the thread that received it (a fabric I/O thread or the shm ring poller), or
   * declines with {@code null}, after which {@link #handle} runs on the service executor. Only for
   * cheap read-only operations that never block: never {@link MasterContext#mutate} here (it waits
   * for the metadata lock, held by every mutation), only locks of the extension's own taken with
   * {@code tryLock}, declining when they are busy. See {@link
   * io.ferrite.fabric.RpcHandler#handleInline}. The default declines everything.
   */
  default CompletableFuture<ByteBuffer> handleInline(
      RpcContext caller, int opcode, ByteBuffer request) {
    return null;
  }

  /**
   * A client session ended (closed, or its lease expired). The extension drops what the session
   * held (leases, references, mappings) by committing records through {@code mutation}.
   */
  default void sessionClosed(long sessionId, MasterContext.Mutation mutation) {}

  /**
   * A region and the blocks allocated in it as they were when the region was lost.
   *
   * @param region the region as the master knew it (its old rkey and size)
   * @param blocksByOwner the blocks that were allocated in it, by the owner they were allocated to
   *     (the {@code owner} of {@link MasterContext.Mutation#allocate}; "" for none): they are no
   *     longer allocated, and what they held is gone
   */
  record LostRegion(
      io.ferrite.kernel.proto.RegionInfo region,
      java.util.Map<String, List<io.ferrite.kernel.proto.BlockRef>> blocksByOwner) {}

  /**
   * Memory was lost, declared by the kernel, never guessed: server {@code serverId} came back
   * without these regions or with them changed (a clean stop or a reboot deletes a server's DRAM
   * region files; a new process makes new ones with new rkeys), or a service region was removed.
   * The regions are journaled as removed and their blocks are free again before this is called; the
   * face must drop every reference it keeps to them (caches, reserves, free lists), mark what used
   * them as lost (reads answer {@code DATA_LOST} naming it) and journal that through {@code
   * mutation}. Called before {@link #serverRegistered} for the same registration. A master that
   * restarts does not call it again for a loss it journaled earlier: a face reconciles what it
   * holds with {@link MasterContext.Mutation#owned} in {@link #start}.
   */
  default void regionsLost(int serverId, List<LostRegion> lost, MasterContext.Mutation mutation) {}

  /**
   * What this face holds that was lost ({@link #regionsLost}, or found at start): a few named
   * counts, e.g. {@code allocations} and {@code bytes}; empty when nothing is lost. {@code ferrite
   * status} prints them. Runs under the metadata lock like {@link #describe}: cheap, read-only.
   */
  default java.util.Map<String, Long> lost() {
    return java.util.Map.of();
  }

  /** A memory server was declared dead. */
  default void serverDead(int serverId, MasterContext.Mutation mutation) {}

  /**
   * A memory server registered (first time, or again: after a restart of either side, or after it
   * was declared dead) and is ALIVE, its regions settled: those it came back without, or changed
   * (another rkey or size), are gone with their blocks; the blocks of those it kept are as they
   * were. {@code incarnation} is random per server process (0 = unknown: an older server): the same
   * value means the same process came back (a pause), so memory it held is intact; another value
   * means a new process.
   */
  default void serverRegistered(int serverId, long incarnation, MasterContext.Mutation mutation) {}

  /**
   * What the web console shows of this face's objects (tables, namespaces, nodes, ...): names to
   * numbers, strings, lists and maps of those, rendered as JSON. Runs under the metadata lock (like
   * {@link #apply}), on an HTTP thread, once a second while a console is open: keep it cheap
   * (counts and short lists, no I/O) and read-only. The default shows nothing.
   */
  default java.util.Map<String, Object> describe() {
    return java.util.Map.of();
  }

  /** Runs once when the master stops. */
  default void stop() {}

  /**
   * Whether this extension holds the top-level name {@code name} of {@code kind} (e.g. {@code
   * nodes}), placed or not: asked by the placement directory of master group 0, under the metadata
   * lock, before it places a new name, so that a name made before the cluster had several groups
   * stays in group 0 (docs/RESILIENCE.md, "Master groups"). The default holds nothing.
   */
  default boolean holdsName(String kind, String name) {
    return false;
  }
}
