package io.ferrite.fabric;

import java.nio.file.Path;

/**
 * What a fabric needs to serve one endpoint.
 *
 * <h2>Sizing the dispatch threads</h2>
 *
 * A call handed to a spinning dispatch thread costs no wake-up; one handed to a parked thread costs
 * a wake-up (5 to 50 µs on a loaded VM). Spinning costs a core while it lasts (it yields to any
 * thread that wants the core).
 *
 * <ul>
 *   <li>2 cores (the default, {@link #loopback}): 2 threads (a handler that blocks on a journal
 *       fsync must not stop the other calls), {@link #DEFAULT_DISPATCH_SPIN_NANOS}: long enough to
 *       catch a client's next round trip, short enough to give the core back between bursts;
 *   <li>64 cores: as many threads as the handlers can keep busy, about half the cores (32), and 50
 *       to 100 µs of spin: 4 threads spin at a time and the I/O threads keep cores of their own.
 * </ul>
 *
 * @param nodeId the id this endpoint announces in the handshake (a memory server's id; 0 for the
 *     master)
 * @param credentials cluster id and secret that clients must prove
 * @param regions the regions one-sided ops may reach (empty for an RPC-only endpoint)
 * @param rpc the handler of two-sided calls
 * @param host the address to bind (tcp); "127.0.0.1" for loopback
 * @param port the port to bind (tcp), 0 for any free port
 * @param socketDir where a shm endpoint puts its Unix domain socket; null for other fabrics
 * @param serviceThreads how many dispatch threads ("server cores") run the RPCs that cannot be
 *     answered where they land ({@link RpcHandler#handle}); started with the endpoint
 * @param serviceQueue how many RPCs may wait for a dispatch thread before new ones get {@link
 *     ErrorCode#BUSY}
 * @param maxFrameBytes the largest frame accepted; a longer length closes the connection
 * @param dispatchSpinNanos how long an idle dispatch thread polls for the next call (yielding
 *     between looks) before it parks (at most one thread in eight spins at a time); 0 parks at once
 */
public record ServerSpec(
    int nodeId,
    Credentials credentials,
    RegionTable regions,
    RpcHandler rpc,
    String host,
    int port,
    Path socketDir,
    int serviceThreads,
    int serviceQueue,
    int maxFrameBytes,
    long dispatchSpinNanos) {

  /** 4 MiB of payload plus headers: large ops are split by clients into frames of this size. */
  public static final int DEFAULT_MAX_FRAME = (4 << 20) + 4096;

  /** Default of {@link #dispatchSpinNanos()}: 50 µs. */
  public static final long DEFAULT_DISPATCH_SPIN_NANOS = 50_000;

  public ServerSpec {
    if (serviceThreads < 1) {
      throw new IllegalArgumentException("serviceThreads: " + serviceThreads + " (expected: >= 1)");
    }
    if (serviceQueue < 0) {
      throw new IllegalArgumentException("serviceQueue: " + serviceQueue + " (expected: >= 0)");
    }
    if (maxFrameBytes < 4096) {
      throw new IllegalArgumentException(
          "maxFrameBytes: " + maxFrameBytes + " (expected: >= 4096)");
    }
    if (dispatchSpinNanos < 0) {
      throw new IllegalArgumentException(
          "dispatchSpinNanos: " + dispatchSpinNanos + " (expected: >= 0)");
    }
  }

  /** An endpoint whose dispatch threads spin {@link #DEFAULT_DISPATCH_SPIN_NANOS}. */
  public ServerSpec(
      int nodeId,
      Credentials credentials,
      RegionTable regions,
      RpcHandler rpc,
      String host,
      int port,
      Path socketDir,
      int serviceThreads,
      int serviceQueue,
      int maxFrameBytes) {
    this(
        nodeId,
        credentials,
        regions,
        rpc,
        host,
        port,
        socketDir,
        serviceThreads,
        serviceQueue,
        maxFrameBytes,
        DEFAULT_DISPATCH_SPIN_NANOS);
  }

  /** The same endpoint with dispatch threads that spin {@code nanos} before parking. */
  public ServerSpec withDispatchSpinNanos(long nanos) {
    return new ServerSpec(
        nodeId,
        credentials,
        regions,
        rpc,
        host,
        port,
        socketDir,
        serviceThreads,
        serviceQueue,
        maxFrameBytes,
        nanos);
  }

  /** The same endpoint with {@code threads} dispatch threads and room for {@code queue} more. */
  public ServerSpec withServiceThreads(int threads, int queue) {
    return new ServerSpec(
        nodeId,
        credentials,
        regions,
        rpc,
        host,
        port,
        socketDir,
        threads,
        queue,
        maxFrameBytes,
        dispatchSpinNanos);
  }

  /** A loopback endpoint on any free port with default limits. */
  public static ServerSpec loopback(
      int nodeId, Credentials credentials, RegionTable regions, RpcHandler rpc, Path socketDir) {
    return new ServerSpec(
        nodeId, credentials, regions, rpc, "127.0.0.1", 0, socketDir, 2, 1024, DEFAULT_MAX_FRAME);
  }
}
