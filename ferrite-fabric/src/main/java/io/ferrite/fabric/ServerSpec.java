package io.ferrite.fabric;

import java.nio.file.Path;

/**
 * What a fabric needs to serve one endpoint.
 *
 * @param nodeId the id this endpoint announces in the handshake (a memory server's id; 0 for the
 *     master)
 * @param credentials cluster id and secret that clients must prove
 * @param regions the regions one-sided ops may reach (empty for an RPC-only endpoint)
 * @param rpc the handler of two-sided calls
 * @param host the address to bind (tcp); "127.0.0.1" for loopback
 * @param port the port to bind (tcp), 0 for any free port
 * @param socketDir where a shm endpoint puts its Unix domain socket; null for other fabrics
 * @param serviceThreads the size of the bounded service executor ("server cores")
 * @param serviceQueue how many RPCs may wait for a service thread before new ones get {@link
 *     ErrorCode#BUSY}
 * @param maxFrameBytes the largest frame accepted; a longer length closes the connection
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
    int maxFrameBytes) {

  /** 4 MiB of payload plus headers: large ops are split by clients into frames of this size. */
  public static final int DEFAULT_MAX_FRAME = (4 << 20) + 4096;

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
  }

  /** A loopback endpoint on any free port with default limits. */
  public static ServerSpec loopback(
      int nodeId, Credentials credentials, RegionTable regions, RpcHandler rpc, Path socketDir) {
    return new ServerSpec(
        nodeId, credentials, regions, rpc, "127.0.0.1", 0, socketDir, 2, 1024, DEFAULT_MAX_FRAME);
  }
}
