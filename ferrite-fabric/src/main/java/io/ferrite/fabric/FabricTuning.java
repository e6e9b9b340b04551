package io.ferrite.fabric;

/**
 * The fabrics' tuning switches, fixed when a fabric is made and passed down to its servers and
 * connections (there is no global setting). The kernel builds one from its configuration keys
 * ({@code netty.lanes}, {@code netty.loop.writes.only}, {@code shm.rings}, {@code
 * shm.waiter.spin.nanos}, {@code shm.poller.spin.nanos}); {@link #DEFAULTS} are what a fabric made
 * without one uses. Most exist to measure one design against the other.
 *
 * @param lanes blocking lanes (plain sockets beside the channel, for small synchronous reads) per
 *     tcp connection, at most; 0 switches lanes off and every answer comes through the event loop
 * @param directWrites whether caller threads write frames to the socket themselves (true) or hand
 *     them to the event loop (false), on both sides of a byte-stream connection
 * @param shmRings whether shm servers offer RPC rings and shm clients ask for them; false keeps
 *     every RPC on the socket
 * @param shmWaiterSpinNanos the part of a ring caller's wait spent busy-spinning before it yields
 * @param shmPollerSpinNanos the part of a ring poller's idle budget spent busy-spinning
 */
public record FabricTuning(
    int lanes,
    boolean directWrites,
    boolean shmRings,
    long shmWaiterSpinNanos,
    long shmPollerSpinNanos) {
  /** 16 lanes, direct writes, shm rings, no busy spinning. */
  public static final FabricTuning DEFAULTS = new FabricTuning(16, true, true, 0, 0);

  public FabricTuning {
    if (lanes < 0) {
      throw new IllegalArgumentException("lanes: " + lanes + " (expected: >= 0)");
    }
    if (shmWaiterSpinNanos < 0 || shmPollerSpinNanos < 0) {
      throw new IllegalArgumentException(
          "spin nanos: " + shmWaiterSpinNanos + ", " + shmPollerSpinNanos + " (expected: >= 0)");
    }
  }

  public FabricTuning withLanes(int n) {
    return new FabricTuning(n, directWrites, shmRings, shmWaiterSpinNanos, shmPollerSpinNanos);
  }

  public FabricTuning withDirectWrites(boolean on) {
    return new FabricTuning(lanes, on, shmRings, shmWaiterSpinNanos, shmPollerSpinNanos);
  }

  public FabricTuning withShmRings(boolean on) {
    return new FabricTuning(lanes, directWrites, on, shmWaiterSpinNanos, shmPollerSpinNanos);
  }

  public FabricTuning withShmSpins(long waiterNanos, long pollerNanos) {
    return new FabricTuning(lanes, directWrites, shmRings, waiterNanos, pollerNanos);
  }
}
