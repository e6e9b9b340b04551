package io.ferrite.fabric;

/**
 * The fabrics' tuning switches, fixed when a fabric is made and passed down to its servers and
 * connections (there is no global setting). The kernel builds one from its configuration keys
 * ({@code netty.lanes}, {@code netty.loop.writes.only}, {@code shm.rings}, {@code
 * shm.waiter.spin.nanos}, {@code shm.poller.spin.nanos}, {@code tcp.poll.spin.nanos}); {@link
 * #DEFAULTS} are what a fabric made without one uses. Most exist to measure one design against the
 * other.
 *
 * @param lanes blocking lanes (plain sockets beside the channel, for small synchronous reads) per
 *     tcp connection, at most; 0 switches lanes off and every answer comes through the event loop
 * @param directWrites whether caller threads write frames to the socket themselves (true) or hand
 *     them to the event loop (false), on both sides of a byte-stream connection
 * @param shmRings whether shm servers offer RPC rings and shm clients ask for them; false keeps
 *     every RPC on the socket
 * @param shmWaiterSpinNanos the part of a ring caller's wait spent busy-spinning before it yields
 * @param shmPollerSpinNanos the part of a ring poller's idle budget spent busy-spinning
 * @param tcpPollSpinNanos how long a tcp thread that waits for a message keeps polling (yielding
 *     between polls) after its last one before it blocks: the servers' event loops after they last
 *     had work, a lane caller before its blocking read of an answer; 0 blocks at once
 */
public record FabricTuning(
    int lanes,
    boolean directWrites,
    boolean shmRings,
    long shmWaiterSpinNanos,
    long shmPollerSpinNanos,
    long tcpPollSpinNanos) {
  /** The default of {@link #tcpPollSpinNanos}: 50 µs, the dispatch threads' spin. */
  public static final long DEFAULT_TCP_POLL_SPIN_NANOS = 50_000;

  /** 16 lanes, direct writes, shm rings, no busy spinning, tcp pollers that yield for 50 µs. */
  public static final FabricTuning DEFAULTS =
      new FabricTuning(16, true, true, 0, 0, DEFAULT_TCP_POLL_SPIN_NANOS);

  public FabricTuning {
    if (lanes < 0) {
      throw new IllegalArgumentException("lanes: " + lanes + " (expected: >= 0)");
    }
    if (shmWaiterSpinNanos < 0 || shmPollerSpinNanos < 0) {
      throw new IllegalArgumentException(
          "spin nanos: " + shmWaiterSpinNanos + ", " + shmPollerSpinNanos + " (expected: >= 0)");
    }
    if (tcpPollSpinNanos < 0) {
      throw new IllegalArgumentException(
          "tcpPollSpinNanos: " + tcpPollSpinNanos + " (expected: >= 0)");
    }
  }

  /** With the default {@link #tcpPollSpinNanos}. */
  public FabricTuning(
      int lanes,
      boolean directWrites,
      boolean shmRings,
      long shmWaiterSpinNanos,
      long shmPollerSpinNanos) {
    this(
        lanes,
        directWrites,
        shmRings,
        shmWaiterSpinNanos,
        shmPollerSpinNanos,
        DEFAULT_TCP_POLL_SPIN_NANOS);
  }

  public FabricTuning withLanes(int n) {
    return new FabricTuning(
        n, directWrites, shmRings, shmWaiterSpinNanos, shmPollerSpinNanos, tcpPollSpinNanos);
  }

  public FabricTuning withDirectWrites(boolean on) {
    return new FabricTuning(
        lanes, on, shmRings, shmWaiterSpinNanos, shmPollerSpinNanos, tcpPollSpinNanos);
  }

  public FabricTuning withShmRings(boolean on) {
    return new FabricTuning(
        lanes, directWrites, on, shmWaiterSpinNanos, shmPollerSpinNanos, tcpPollSpinNanos);
  }

  public FabricTuning withShmSpins(long waiterNanos, long pollerNanos) {
    return new FabricTuning(
        lanes, directWrites, shmRings, waiterNanos, pollerNanos, tcpPollSpinNanos);
  }

  public FabricTuning withTcpPollSpin(long nanos) {
    return new FabricTuning(
        lanes, directWrites, shmRings, shmWaiterSpinNanos, shmPollerSpinNanos, nanos);
  }
}
